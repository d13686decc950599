// The kernel-name map (device/op_name_map.hpp) and the `mapped` lookup of a trace device: the
// shipped map gives real torch_npu / CUDA kernel names encbench's roles, a torch_npu-format trace
// with real kernel names (fixtures/torch_npu_vit_forward.json) times encbench's ops through it,
// and a malformed map is refused with the entry and field named.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "harness/core/error.hpp"
#include "harness/device/measured_op_times.hpp"
#include "harness/device/op_name_map.hpp"
#include "harness/device/sim_profile.hpp"
#include "tests/trace/trace_test_support.hpp"

using encbench::InvalidInput;
using encbench::trace::support::fixture;
using encbench::trace::support::source_dir;
using encbench::trace::support::us;
namespace device = encbench::device;
using encbench::timeline::OpCategory;

namespace {

device::OpNameMap shipped_map() {
  return device::load_op_name_map(device::default_op_name_map_path(source_dir() / "scenarios" / "devices"));
}

// What parse_op_name_map throws for `json`, or "" when it accepts it.
std::string refusal(const nlohmann::json& json) {
  try {
    (void)device::parse_op_name_map(json, "m.json");
  } catch (const InvalidInput& e) {
    return e.what();
  }
  return "";
}

nlohmann::json minimal_map() {
  return {{"schema", "encbench-op-name-map"},
          {"version", 1},
          {"encbench_ops", {{{"ops", "attention"}, {"role", "attention"}}}},
          {"trace_kernels", {{{"kernels", "FlashAttentionScore"}, {"role", "attention"}, {"source", "test"}}}}};
}

}  // namespace

TEST(OpNameMap, ShippedMapGivesRealKernelNamesTheirRoles) {
  const device::OpNameMap map = shipped_map();
  const std::pair<const char*, const char*> kernels[] = {
      {"FlashAttentionScore", "attention"},
      {"aclnnFlashAttentionScore_FlashAttentionScore_FlashAttentionScore", "attention"},
      {"MatMulV2", "gemm"},
      {"MatMulV3", "gemm"},
      {"LayerNorm", "norm"},
      {"RmsNorm", "norm"},
      {"Gelu", "activation"},
      {"Add", "add"},
      {"Transpose", "layout_copy"},
      {"Cast", "layout_copy"},
      {"MemCopy", "copy_d2h"},
      {"void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t>>(Flash_fwd_params)", "attention"},
      {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas", "gemm"},
      {"ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_32x5_tn", "gemm"},
      {"void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, at::detail::Array<char*, 3>>(int, at::native::CUDAFunctor_add<c10::BFloat16>, at::detail::Array<char*, 3>)", "add"},
      {"Memcpy DtoH (Device -> Pageable)", "copy_d2h"},
      {"Memcpy HtoD (Pageable -> Device)", "copy_h2d"},
  };
  for (const auto& [kernel, role] : kernels) EXPECT_EQ(map.role_of_trace_kernel(kernel), role) << kernel;
  EXPECT_EQ(map.role_of_trace_kernel("SomethingElse"), "");
  const std::pair<const char*, const char*> ops[] = {
      {"attention", "attention"}, {"qkv_proj", "gemm"},          {"mlp_fc2", "gemm"},
      {"deepstack_merger1_fc1", "gemm"}, {"norm1", "norm"},       {"merger_norm", "norm"},
      {"residual_add", "add"},    {"mlp_act", "activation"},      {"seq_lens_d2h", "copy_d2h"},
      {"pixels_h2d", "copy_h2d"}, {"split_heads", "layout_copy"}, {"seq_lens_diff", "sub"}};
  for (const auto& [op, role] : ops) EXPECT_EQ(map.role_of_encbench_op(op), role) << op;
}

TEST(OpNameMap, MalformedMapsNameTheEntryAndField) {
  EXPECT_EQ(refusal(minimal_map()), "");
  EXPECT_NE(refusal(nlohmann::json::array()).find("must be a JSON object"), std::string::npos);
  nlohmann::json j = minimal_map();
  j["schema"] = "other";
  EXPECT_NE(refusal(j).find("'schema'"), std::string::npos);
  j = minimal_map();
  j["version"] = 2;
  EXPECT_NE(refusal(j).find("'version' must be 1"), std::string::npos);
  j = minimal_map();
  j.erase("trace_kernels");
  EXPECT_NE(refusal(j).find("missing array 'trace_kernels'"), std::string::npos);
  j = minimal_map();
  j["trace_kernels"][0].erase("source");
  EXPECT_NE(refusal(j).find("trace_kernels[0]: missing string 'source'"), std::string::npos);
  j = minimal_map();
  j["encbench_ops"][0]["role"] = 7;
  EXPECT_NE(refusal(j).find("encbench_ops[0]: 'role' must be a string"), std::string::npos);
  j = minimal_map();
  j["trace_kernels"][0]["role"] = "atention";
  EXPECT_NE(refusal(j).find("role 'atention', which no encbench_ops entry has"), std::string::npos);
  j = minimal_map();
  j["encbench_ops"][0]["ops"] = "";
  EXPECT_NE(refusal(j).find("'ops' must not be empty"), std::string::npos);
}

TEST(OpNameMap, TorchNpuKernelsTimeEncbenchOpsAsMapped) {
  const device::OpNameMap map = shipped_map();
  const auto trace = fixture("torch_npu_vit_forward.json");
  const device::SimProfile profile =
      device::load_sim_profile("ascend-910b", source_dir() / "scenarios" / "devices");
  const auto table = device::load_measured_op_times(trace, &map);
  // The fixture's durations (make_npu_vit_forward.py): the role's median, whatever the op's cost.
  EXPECT_EQ(table->lookup(profile, "attention", OpCategory::kernel, 1e9, 1e7), us(31));
  EXPECT_EQ(table->lookup(profile, "qkv_proj", OpCategory::kernel, 5e9, 1e7), us(34));
  EXPECT_EQ(table->lookup(profile, "norm2", OpCategory::kernel, 1e6, 1e6), us(11));
  EXPECT_EQ(table->lookup(profile, "seq_lens_d2h", OpCategory::memcpy_d2h, 0, 16), us(24));
  // Pooled: Transpose 22, PadV3 13 (x3), StridedSlice 13 per layer -> median 13 us.
  EXPECT_EQ(table->lookup(profile, "split_heads", OpCategory::kernel, 0, 1e6), us(13));
  EXPECT_FALSE(table->lookup(profile, "pixels_h2d", OpCategory::memcpy_h2d, 0, 1e6).has_value());
  const device::OpTimeCounts counts = table->counts();
  EXPECT_EQ(counts.mapped, 5u);
  EXPECT_EQ(counts.fell_back, 1u);
  EXPECT_EQ(counts.exact + counts.scaled + counts.name_only, 0u);
  EXPECT_NE(device::describe(*table).find("5 mapped by kernel role, 1 fell back"), std::string::npos);
  const nlohmann::json j = device::to_json(*table);
  EXPECT_EQ(j["mapped"], 5);
  EXPECT_NE(j["mapped_kernels"].dump().find("FlashAttentionScore -> attention"), std::string::npos);

  // The same trace without a map: none of its kernel names is an encbench op name.
  const auto unmapped = device::load_measured_op_times(trace);
  EXPECT_FALSE(unmapped->lookup(profile, "attention", OpCategory::kernel, 1e9, 1e7).has_value());
  EXPECT_EQ(unmapped->counts().fell_back, 1u);
  EXPECT_EQ(unmapped->counts().mapped, 0u);
}
