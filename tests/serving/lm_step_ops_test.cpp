// Issue 59: the LM forward of a step as host work and device work from its op list. The launch
// host time and the device gaps against hand computations from the op counts and the host model's
// class costs (torch-npu-eager, read from its file here, not restated); the step rule with them
// (a host-bound decode step at small batch); the reader's errors, each naming the file, the key
// and the accepted range.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "harness/core/error.hpp"
#include "harness/device/host_model.hpp"
#include "harness/device/sim_profile.hpp"
#include "harness/serving/serving_model.hpp"
#include "harness/serving/step_cost.hpp"

namespace encbench::serving {
namespace {

namespace fs = std::filesystem;

fs::path profiles_dir() { return fs::path(ENCBENCH_TEST_SOURCE_DIR) / "scenarios/devices"; }

nlohmann::json ops_block() {
  return nlohmann::json::parse(R"({
    "source": "test op list",
    "host_model": {"name": "torch-npu-eager", "source": "test"},
    "decode_step": {"name": "graph", "source": "test"},
    "mixed_step": {"name": "eager", "source": "test"},
    "device_kernels": {"per_layer": 10, "per_layer_qk_norm": 2, "per_step": 23, "source": "test"},
    "op_sets": {
      "graph": {"per_layer": {"torch_dispatch": 1, "kernel_launch": 1, "event_record": 1, "event_wait": 1,
                              "host_scalar": 2},
                "per_step": {"torch_dispatch": 24, "kernel_launch": 24}, "source": "test"},
      "eager": {"per_layer": {"torch_dispatch": 11, "kernel_launch": 10, "tensor_view": 7, "host_scalar": 4},
                "per_layer_qk_norm": {"torch_dispatch": 2, "kernel_launch": 2, "tensor_view": 4},
                "per_step": {"torch_dispatch": 23, "kernel_launch": 23}, "source": "test"}}})");
}

ServingModel model_with(const nlohmann::json& ops) {
  nlohmann::json doc = {{"schema", "encbench-serving-model"},
                        {"lm_fixed_ms", {{"value", 0}, {"source", "test"}}},
                        {"achieved_bandwidth_fraction", {{"value", 0.5}, {"source", "test"}}}};
  if (!ops.is_null()) doc["lm_step_ops"] = ops;
  return parse_serving_model(doc, "model.json");
}

LanguageModelDims dims(int layers, bool qk_norm) {
  LanguageModelDims d{.layers = layers, .hidden = 64, .intermediate = 128, .heads = 4, .kv_heads = 2,
                      .head_dim = 16, .vocab = 1000};
  d.qk_norm = qk_norm;
  d.source = "test";
  return d;
}

double us(const device::HostModel& h, device::HostOpClass c) { return static_cast<double>(h.cost(c)) / 1e3; }

TEST(LmStepOps, LaunchHostAndDeviceGapsAreTheOpCountsAtTheClassCosts) {
  const device::SimProfile profile = device::load_sim_profile("ascend-910b", profiles_dir());
  const device::HostModel h = device::load_host_model("torch-npu-eager", profiles_dir());
  using C = device::HostOpClass;
  for (const bool qk : {false, true}) {
    const LanguageModelDims d = dims(36, qk);
    const StepCostModel plain = step_cost_model(model_with(nullptr), d, profile, true, profiles_dir());
    const StepCostModel ops = step_cost_model(model_with(ops_block()), d, profile, true, profiles_dir());
    // Decode: a replay plus the per-layer attention update, by hand from the class costs.
    const double update_us = us(h, C::torch_dispatch) + us(h, C::kernel_launch) + us(h, C::event_record) +
                             us(h, C::event_wait) + 2 * us(h, C::host_scalar);
    const double eager_op_us = us(h, C::torch_dispatch) + us(h, C::kernel_launch);
    EXPECT_NEAR(ops.lm_launch.decode_ms, (36 * update_us + 24 * eager_op_us) / 1e3, 1e-9) << qk;
    // Mixed: every op eager, Qwen3's two norms and four views more a layer.
    const double layer_us = 11 * us(h, C::torch_dispatch) + 10 * us(h, C::kernel_launch) + 7 * us(h, C::tensor_view) +
                            4 * us(h, C::host_scalar) + (qk ? 2 * eager_op_us + 4 * us(h, C::tensor_view) : 0);
    EXPECT_NEAR(ops.lm_launch.mixed_ms, (36 * layer_us + 23 * eager_op_us) / 1e3, 1e-9) << qk;
    // With torch-npu-eager's 15 + 10 us a torch op the eager Qwen3 layer is 372 us: 13.4 ms a step of
    // 36 layers before the 23 step ops, several times the graph replay's 1.6 ms.
    if (qk) EXPECT_NEAR(layer_us, 372, 1e-9);
    EXPECT_GT(ops.lm_launch.mixed_ms, 5 * ops.lm_launch.decode_ms);
    // Device: every kernel pays the profile's gap (4 us a kernel on ascend-910b).
    const double kernels = 36 * (10 + (qk ? 2 : 0)) + 23;
    EXPECT_NEAR(ops.base_ms - plain.base_ms, kernels * profile.kernel_fixed_ns.value / 1e6, 1e-9) << qk;
    EXPECT_EQ(plain.lm_launch.decode_ms, 0);  // without the block the rule is what it was
    EXPECT_EQ(plain.lm_launch.mixed_ms, 0);
  }
}

TEST(LmStepOps, TheLaunchSetsTheStepOnlyWhereItOutlastsTheDevice) {
  StepCostModel c{.base_ms = 10, .per_seq_ms = 0, .per_prefill_token_ms = 0.01};
  c.host_parts = {{"schedule", 1.0, 0, true, false}, {"launch", 0.5, 0, true, true}};
  c.lm_launch = {.decode_ms = 2, .mixed_ms = 14};
  for (const bool async : {true, false}) {
    c.async_scheduling = async;
    const double serial = async ? 0 : 1.0, overlapped = async ? 1.5 : 0.5;
    // A decode step: the replay hides behind 10 ms of device work.
    EXPECT_NEAR(c.step_ms(4, 0), serial + std::max(10.0, overlapped + 2), 1e-12) << async;
    // A step with 100 prompt tokens: 11 ms on the device, the eager launch 14 ms: host-bound.
    EXPECT_NEAR(c.step_ms(4, 100), serial + overlapped + 14, 1e-12) << async;
    EXPECT_NEAR(c.host_ms(4, 100) - c.host_ms(4, 0), 12, 1e-12) << async;
  }
}

std::string error_of(const nlohmann::json& ops) {
  try {
    const ServingModel m = model_with(ops);
    (void)step_cost_model(m, dims(2, true), device::load_sim_profile("ascend-910b", profiles_dir()), true,
                          profiles_dir());
  } catch (const InvalidInput& e) {
    return e.what();
  }
  return "accepted";
}

TEST(LmStepOps, BadBlocksNameTheFileTheKeyAndTheAcceptedRange) {
  nlohmann::json unknown = ops_block();
  unknown["op_sets"]["eager"]["per_layer"]["kernel_lunch"] = 1;
  std::string m = error_of(unknown);
  EXPECT_NE(m.find("model.json"), std::string::npos) << m;
  EXPECT_NE(m.find("op_sets.eager.per_layer.kernel_lunch"), std::string::npos) << m;
  EXPECT_NE(m.find("unknown host op class"), std::string::npos) << m;
  EXPECT_NE(m.find("torch_dispatch"), std::string::npos) << m;  // the accepted names are listed

  nlohmann::json negative = ops_block();
  negative["op_sets"]["graph"]["per_step"]["kernel_launch"] = -1;
  m = error_of(negative);
  EXPECT_NE(m.find("op_sets.graph.per_step.kernel_launch"), std::string::npos) << m;
  EXPECT_NE(m.find("[0, 10000]"), std::string::npos) << m;

  nlohmann::json kernels = ops_block();
  kernels["device_kernels"]["per_layer"] = -3;
  m = error_of(kernels);
  EXPECT_NE(m.find("device_kernels.per_layer must be a number in [0, 10000]"), std::string::npos) << m;

  nlohmann::json no_source = ops_block();
  no_source["op_sets"]["eager"].erase("source");
  m = error_of(no_source);
  EXPECT_NE(m.find("op_sets.eager.source must be a non-empty string"), std::string::npos) << m;

  nlohmann::json missing_set = ops_block();
  missing_set["decode_step"]["name"] = "full_graph";
  m = error_of(missing_set);
  EXPECT_NE(m.find("decode_step.name \"full_graph\" is not an op set (known: eager, graph)"), std::string::npos) << m;

  nlohmann::json extra = ops_block();
  extra["launch_ms"] = 3;
  m = error_of(extra);
  EXPECT_NE(m.find("unknown key \"launch_ms\""), std::string::npos) << m;

  EXPECT_EQ(error_of(ops_block()), "accepted");
}

TEST(LmStepOps, TheBlockReadsBackThroughItsJson) {
  const ServingModel m = model_with(ops_block());
  const nlohmann::json back = to_json(m.lm_step_ops);
  const LmStepOps again = parse_lm_step_ops(back, "round trip");
  EXPECT_EQ(again.op_sets.size(), 2u);
  EXPECT_EQ(again.op_sets.at("eager").per_layer_qk_norm.at("tensor_view"), 4);
  EXPECT_EQ(again.kernels_per_step, 23);
  EXPECT_EQ(again.decode_step, "graph");
  EXPECT_TRUE(to_json(m).contains("lm_step_ops"));
  EXPECT_FALSE(to_json(model_with(nullptr)).contains("lm_step_ops"));
}

}  // namespace
}  // namespace encbench::serving
