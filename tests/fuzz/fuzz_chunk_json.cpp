// libFuzzer target: the stream-event scanner (harness/client/chunk_json). Differential: whenever
// the fast scanner answers, its answer must equal the DOM reference's (nlohmann).
// Also the other server-controlled JSON the client reads: /stop_profile's engine timeline
// (harness/client/server_timeline), as the whole answer and as its engine_timeline object.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "harness/client/chunk_json.hpp"
#include "harness/client/server_timeline.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace encbench::client;
  const std::string_view payload(reinterpret_cast<const char*>(data), size);
  const auto fast = chunk_fields_fast(payload);
  if (fast) {
    const auto reference = chunk_fields_reference(payload);
    if (!reference || !(*reference == *fast)) __builtin_trap();
  }
  (void)parse_chunk_fields(payload);
  const auto doc = nlohmann::json::parse(payload, nullptr, false);
  if (!doc.is_discarded()) {
    const encbench::ClockAnchor client{1'000'000'000, 1'700'000'000'000'000'000, "fuzz-boot"};
    (void)parse_server_timeline(doc, client);
    (void)parse_server_timeline(nlohmann::json{{"engine_timeline", doc}}, client);
  }
  return 0;
}
