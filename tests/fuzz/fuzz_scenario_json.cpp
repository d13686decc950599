// libFuzzer target: scenario files of `encbench run` (harness/scenario/scenario_file.cpp): applied
// over the defaults, validated, written back. Property: options or an InvalidInput.
#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>

#include "harness/core/error.hpp"
#include "harness/scenario/closed_loop.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace encbench::scenario;
  const nlohmann::json doc = nlohmann::json::parse(data, data + size, nullptr, false);
  if (doc.is_discarded()) return 0;
  try {
    const ClosedLoopOptions options = apply_scenario_json(doc, "fuzz");
    validate(options);
    (void)to_json(options).dump();
  } catch (const encbench::InvalidInput&) {
  }
  return 0;
}
