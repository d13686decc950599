// libFuzzer target: the result readers of encbench compare/report/history (reports/result.*):
// every kind (encbench, vllm bench serve, Google Benchmark, ...) detected and parsed from JSON.
// Property: a RunResult or an InvalidInput naming the problem; nothing else escapes.
#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>

#include "harness/core/error.hpp"
#include "reports/result.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const nlohmann::json doc = nlohmann::json::parse(data, data + size, nullptr, false);
  if (doc.is_discarded()) return 0;
  try {
    const encbench::reports::RunResult run = encbench::reports::parse_result(doc, "fuzz");
    (void)run;
  } catch (const encbench::InvalidInput& e) {
    if (std::string_view(e.what()).empty()) __builtin_trap();
  }
  return 0;
}
