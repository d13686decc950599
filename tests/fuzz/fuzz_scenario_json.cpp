// libFuzzer target: the JSON data files of `encbench run` and of its devices.
//   - scenario files (harness/scenario/scenario_file.cpp): applied over the defaults, validated,
//     written back. Property: options or an InvalidInput.
//   - op name maps (harness/device/op_name_map.cpp, --op-map; chosen by their "schema"): parsed,
//     then every pattern matched against kernel and op names, its own text included (the globs
//     run on every op of a trace device). Property: a map or an InvalidInput.
#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "harness/core/error.hpp"
#include "harness/device/op_name_map.hpp"
#include "harness/scenario/preset_ab.hpp"

namespace {

void exercise_op_name_map(const nlohmann::json& doc) {
  const encbench::device::OpNameMap map = encbench::device::parse_op_name_map(doc, "fuzz");
  constexpr std::string_view kNames[] = {"FlashAttentionScore", "MatMulV2", "attention", "qkv_proj", "", "*",
                                         "void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128>>(Flash_fwd_params)"};
  for (std::string_view name : kNames) {
    (void)map.role_of_trace_kernel(name);
    (void)map.role_of_encbench_op(name);
  }
  for (const auto* rules : {&map.encbench_ops, &map.trace_kernels})
    for (const encbench::device::OpNameRule& rule : *rules) (void)map.role_of_trace_kernel(rule.patterns);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace encbench::scenario;
  const nlohmann::json doc = nlohmann::json::parse(data, data + size, nullptr, false);
  if (doc.is_discarded()) return 0;
  try {
    if (doc.is_object() && doc.value("schema", nlohmann::json()) == "encbench-op-name-map") {
      exercise_op_name_map(doc);
      return 0;
    }
    const PresetAbOptions options = apply_scenario_json(doc, "fuzz");
    validate(options);
    (void)to_json(options).dump();
  } catch (const encbench::InvalidInput&) {
  }
  return 0;
}
