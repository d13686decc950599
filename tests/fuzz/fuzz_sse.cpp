// libFuzzer target: the SSE parser + response handler (docs/fuzzing.md). The first input byte
// picks how the rest is split into reads, so the fuzzer explores read boundaries as well as
// content. The gtest suite runs the same
// property over random splits and garbage (SseParserFuzz.RandomSplitsAndGarbage).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "harness/client/response_handler.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace encbench::client;
  if (size == 0) return 0;
  const std::size_t piece = 1 + data[0] % 64;
  std::string_view bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  RequestRecord record;
  record.http_status = 200;
  ResponseHandler handler(Backend::openai_chat, RequestMode::stream, record);
  encbench::Nanos t = 1;
  for (std::size_t off = 0; off < bytes.size(); off += piece) handler.on_body(bytes.substr(off, piece), ++t);
  handler.on_end(++t, "");
  if (!record.success && record.error.empty()) __builtin_trap();  // every failure has a reason
  return 0;
}
