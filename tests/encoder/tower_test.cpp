// The vision tower end to end: patch merger and deepstack mergers on the device, the output token
// count, and the independent --verify reference catching an injected mistake in each of rotary
// angle, window index, norm epsilon and merger weight layout (and passing the unperturbed run).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "harness/encoder/encode_run.hpp"
#include "harness/encoder/encoder.hpp"
#include "harness/encoder/verify.hpp"
#include "kernels/thread_pool.hpp"
#include "tests/support/devices.hpp"

using namespace encbench;
using namespace encbench::encoder;

namespace {

std::unique_ptr<device::Device> cpu_device() { return encbench::testing::cpu_test_device(2); }

struct Checked {
  ForwardReport report;
  LayerSnapshots snaps;
  AccuracyReport accuracy;
};

Checked run_checked(const std::string& model_name, const std::vector<vision::GridTHW>& grids,
                    const DevicePathFaults& faults = {}, const Toggles& toggles = preset("optimized")) {
  auto dev = cpu_device();
  EncoderConfig cfg;
  cfg.model = load_model(model_name);
  cfg.toggles = toggles;
  cfg.mlp = true;
  cfg.seed = 3;
  cfg.faults = faults;
  EncoderRunner runner(cfg, *dev);
  Checked c;
  c.report = runner.forward_with_snapshots(grids, c.snaps);
  kernels::ThreadPool pool(2);
  c.accuracy = verify_forward(pool, runner, plan_inputs(grids, cfg.model), c.snaps, c.report.attention);
  return c;
}

// Two images of different sizes: several segments, edge windows of several sizes.
const std::vector<vision::GridTHW> kQwen25Grids = {{1, 16, 12}, {1, 10, 18}};
const std::vector<vision::GridTHW> kQwen3Grids = {{1, 8, 6}, {2, 4, 4}};

}  // namespace

TEST(EncoderTower, UnperturbedTowerPassesIncludingMergers) {
  {
    const auto c = run_checked("tiny-qwen2.5-vl", kQwen25Grids);
    EXPECT_EQ(c.accuracy.verdict, "PASS") << c.accuracy.reason;
    EXPECT_LT(c.accuracy.max_rel_error, 1e-5);
    EXPECT_GT(c.accuracy.merger_rel_error, 0.0);  // fp32 device vs fp64 reference: never exact
    EXPECT_LT(c.accuracy.merger_rel_error, 1e-5);
    EXPECT_EQ(c.report.output_tokens, (16 * 12 + 10 * 18) / 4);
    EXPECT_EQ(c.snaps.merged.size(), static_cast<std::size_t>(c.report.output_tokens) * 256);
    EXPECT_TRUE(c.snaps.deepstack.empty());
    EXPECT_TRUE(c.accuracy.deepstack_rel_errors.empty());
    EXPECT_GT(c.report.merger_busy_ns, 0);
    EXPECT_LT(c.report.merger_busy_ns, c.report.device_busy_ns);
  }
  {
    const auto c = run_checked("tiny-qwen3-vl", kQwen3Grids);
    EXPECT_EQ(c.accuracy.verdict, "PASS") << c.accuracy.reason;
    EXPECT_LT(c.accuracy.max_rel_error, 1e-5);
    ASSERT_EQ(c.accuracy.deepstack_rel_errors.size(), 2u);  // deepstack_visual_indexes [1, 2]
    for (double e : c.accuracy.deepstack_rel_errors) {
      EXPECT_GT(e, 0.0);
      EXPECT_LT(e, 1e-5);
    }
    ASSERT_EQ(c.snaps.deepstack.size(), 2u);
    EXPECT_EQ(c.snaps.deepstack[0].size(), c.snaps.merged.size());
    EXPECT_NE(c.snaps.deepstack[0], c.snaps.deepstack[1]);
    EXPECT_EQ(c.report.output_tokens, (8 * 6 + 2 * 4 * 4) / 4);
  }
}

TEST(EncoderTower, VerifyCatchesAWrongRotaryAngle) {
  DevicePathFaults f;
  f.rotary_theta = 20000.0;  // a wrong rotary base: every angle but position 0's lane 0 changes
  const auto c = run_checked("tiny-qwen2.5-vl", kQwen25Grids, f);
  EXPECT_EQ(c.accuracy.verdict, "FAIL");
  EXPECT_EQ(c.accuracy.failed_layers.size(), 8u);  // every layer applies rotary
  EXPECT_LT(c.accuracy.merger_rel_error, 1e-5);    // the merger itself is right
  EXPECT_GT(c.accuracy.max_rel_error, 1e-3);
}

TEST(EncoderTower, VerifyCatchesAWrongWindowIndex) {
  DevicePathFaults f;
  f.swap_window_index = true;  // one merged token of window 0 traded with one of window 1
  const auto c = run_checked("tiny-qwen2.5-vl", kQwen25Grids, f);
  EXPECT_EQ(c.accuracy.verdict, "FAIL");
  // Only the window layers attend differently; full-attention layers 3 and 7 stay right.
  EXPECT_EQ(c.accuracy.failed_layers, (std::vector<int>{0, 1, 2, 4, 5, 6})) << c.accuracy.reason;
  for (const auto& l : c.accuracy.layers)
    if (l.full_attention) {
      EXPECT_LT(l.rel_error, 1e-5) << "layer " << l.layer;
    }
  EXPECT_LT(c.accuracy.merger_rel_error, 1e-5);  // the reverse index undoes the same permutation
}

TEST(EncoderTower, VerifyCatchesAWrongNormEpsilon) {
  for (const std::string model : {"tiny-qwen2.5-vl", "tiny-qwen3-vl"}) {  // RMSNorm and LayerNorm
    DevicePathFaults f;
    f.norm_eps = 0.1;
    const auto c = run_checked(model, model == "tiny-qwen3-vl" ? kQwen3Grids : kQwen25Grids, f);
    EXPECT_EQ(c.accuracy.verdict, "FAIL") << model;
    EXPECT_FALSE(c.accuracy.failed_layers.empty()) << model;
    EXPECT_GT(c.accuracy.merger_rel_error, 1e-3) << model;  // the merger norms too
  }
}

TEST(EncoderTower, VerifyCatchesAWrongMergerWeightLayout) {
  for (const std::string model : {"tiny-qwen2.5-vl", "tiny-qwen2-vl"}) {
    DevicePathFaults f;
    f.transpose_merger_fc1 = true;
    const auto c = run_checked(model, model == "tiny-qwen2-vl" ? std::vector<vision::GridTHW>{{1, 8, 8}} : kQwen25Grids, f);
    EXPECT_EQ(c.accuracy.verdict, "FAIL") << model;
    EXPECT_TRUE(c.accuracy.failed_layers.empty()) << model;  // the blocks are right
    EXPECT_GT(c.accuracy.merger_rel_error, 1e-2) << model;
    EXPECT_NE(c.accuracy.reason.find("patch merger"), std::string::npos) << c.accuracy.reason;
  }
}

TEST(EncoderTower, SimDeviceWithoutVerifyHoldsNoMergerWeightsOnTheHost) {
  device::DeviceOptions o;
  o.spec = "sim:ascend-910b";
  auto dev = device::make_device(o);
  ASSERT_FALSE(dev->info().computes_results);
  EncoderConfig cfg;
  cfg.model = load_model("tiny-qwen3-vl");
  cfg.toggles = preset("optimized");
  EncoderRunner runner(cfg, *dev);
  EXPECT_TRUE(runner.weights().merger.fc1_w.empty());
  EXPECT_TRUE(runner.weights().deepstack.empty());
  const std::vector<vision::GridTHW> grids = {{1, 8, 8}};
  const ForwardReport r = runner.forward(grids);
  EXPECT_EQ(r.output_tokens, 16);
  EXPECT_GT(r.merger_busy_ns, 0);
}

// The measured target: 448x448 on qwen2.5-vl-7b gives 256 LM tokens, and the mergers
// are a visible but minor share of the modelled device time.
TEST(EncoderTower, EncodeReportsOutputTokensAndMergerShare) {
  EncodeOptions o;
  o.run.model = "qwen2.5-vl-7b";
  o.run.images = {"448x448"};
  o.run.device = "sim:ascend-910b";
  o.run.forwards = 1;
  o.run.warmup = 0;
  o.preset = "optimized";
  const std::string path = ::testing::TempDir() + "/tower_encode.json";
  o.run.json_path = path;
  std::ostringstream out;
  ASSERT_EQ(run_encode(o, {"encode"}, out), 0);
  EXPECT_NE(out.str().find("output tokens     256"), std::string::npos) << out.str();
  std::ifstream in(path);
  const auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j["summary"]["output_tokens"].get<long long>(), 256);
  const double share = j["summary"]["merger_fraction"].get<double>();
  EXPECT_GT(share, 0.005);
  EXPECT_LT(share, 0.5);
  EXPECT_GT(j["summary"]["merger_ms"].get<double>(), 0.0);
}
