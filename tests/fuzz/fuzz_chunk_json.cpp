// libFuzzer target: the stream-event scanner (harness/client/chunk_json). Differential: whenever
// the fast scanner answers, its answer must equal the DOM reference's (nlohmann).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "harness/client/chunk_json.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace encbench::client;
  const std::string_view payload(reinterpret_cast<const char*>(data), size);
  const auto fast = chunk_fields_fast(payload);
  if (fast) {
    const auto reference = chunk_fields_reference(payload);
    if (!reference || !(*reference == *fast)) __builtin_trap();
  }
  (void)parse_chunk_fields(payload);
  return 0;
}
