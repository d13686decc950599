// The encoder forward on real devices: every toggle combination against the reference, the
// layer-0 cache bug, syncs per forward, and the host/device accounting on the timeline.
#include <gtest/gtest.h>
#include "tests/support/sanitized.hpp"

#include <cstdlib>
#include <sstream>

#include "harness/core/error.hpp"
#include "harness/core/result_json.hpp"

#include <filesystem>
#include <unistd.h>
#include "harness/encoder/encode_run.hpp"
#include "harness/encoder/encoder.hpp"
#include "kernels/thread_pool.hpp"
#include "harness/encoder/verify.hpp"
#include "tests/support/devices.hpp"

using namespace encbench;
using namespace encbench::encoder;

namespace {

bool sanitized() { return encbench::testing::sanitized(); }

std::unique_ptr<device::Device> cpu_device() { return encbench::testing::cpu_test_device(2); }

struct Checked {
  ForwardReport report;
  AccuracyReport accuracy;
};

Checked run_and_verify(device::Device& dev, const ModelConfig& model, const Toggles& t,
                       const std::vector<vision::GridTHW>& grids, bool mlp = false,
                       kernels::WorkerPool* shared_pool = nullptr) {
  EncoderConfig cfg;
  cfg.model = model;
  cfg.toggles = t;
  cfg.mlp = mlp;
  cfg.seed = 7;
  EncoderRunner runner(cfg, dev);
  LayerSnapshots snaps;
  Checked c;
  c.report = runner.forward_with_snapshots(grids, snaps);
  kernels::SerialPool serial;
  kernels::WorkerPool& pool = shared_pool ? *shared_pool : serial;
  c.accuracy = verify_forward(pool, runner, plan_inputs(grids, model), snaps, c.report.attention);
  return c;
}

}  // namespace

// Every valid combination on the tiny Qwen2-VL and Qwen3-VL shapes (one cu_seqlens for every
// layer) must match the reference, including the layer-0 cache (correct there).
TEST(EncoderForward, EveryToggleCombinationMatchesTheReferenceWithoutWindows) {
  auto dev = cpu_device();
  kernels::ThreadPool pool(2);
  const auto combos = all_valid_toggles();
  // Two images so there is more than one segment; a video frame pair on Qwen3-VL.
  for (const std::string name : {"tiny-qwen2-vl", "tiny-qwen3-vl", "tiny-qwen3-vl-4b"}) {
    // The two shapes get every combination; head_dim 64 (no padding) a stride of them.
    const bool every = name != "tiny-qwen3-vl-4b";
    const auto model = load_model(name);
    const std::vector<vision::GridTHW> grids = model.patch_size == 14
                                           ? std::vector<vision::GridTHW>{{1, 8, 8}, {1, 4, 6}}
                                           : std::vector<vision::GridTHW>{{2, 4, 4}, {1, 6, 4}};
    const std::size_t step = sanitized() ? 11 : (every ? 1 : 7);
    for (std::size_t i = 0; i < combos.size(); i += step) {
      const auto c = run_and_verify(*dev, model, combos[i], grids, false, &pool);
      EXPECT_EQ(c.accuracy.verdict, "PASS") << name << " " << describe(combos[i]) << ": " << c.accuracy.reason;
      EXPECT_LT(c.accuracy.max_rel_error, 1e-4) << name << " " << describe(combos[i]);
    }
  }
}

TEST(EncoderForward, Layer0CacheFailsOnWindowModelNamingFullAttentionLayers) {
  auto dev = cpu_device();
  const auto model = load_model("tiny-qwen2.5-vl");
  const std::vector<vision::GridTHW> grids{{1, 16, 16}};  // 224x224: 4 windows of 64 patches
  const auto bad = run_and_verify(*dev, model, preset("pr6448"), grids);
  EXPECT_EQ(bad.accuracy.verdict, "FAIL");
  EXPECT_EQ(bad.accuracy.failed_layers, (std::vector<int>{3, 7}));
  EXPECT_NE(bad.accuracy.reason.find("full-attention layers 3, 7 ran with window lengths"), std::string::npos)
      << bad.accuracy.reason;
  // The window layers themselves are fine (teacher-forced per-layer check).
  for (const auto& l : bad.accuracy.layers)
    if (l.layer != 3 && l.layer != 7) {
      EXPECT_TRUE(l.ok) << l.layer << " " << l.rel_error;
    }

  // The correct fixes pass on the same model.
  for (const std::string p : {"baseline", "pr7104", "optimized"}) {
    const auto ok = run_and_verify(*dev, model, preset(p), grids);
    EXPECT_EQ(ok.accuracy.verdict, "PASS") << p << ": " << ok.accuracy.reason;
  }
  Toggles host = preset("baseline");
  host.seq_lens = SeqLensMode::host_precomputed;
  EXPECT_EQ(run_and_verify(*dev, model, host, grids).accuracy.verdict, "PASS");
  Toggles value = preset("baseline");
  value.seq_lens = SeqLensMode::value_cache;
  EXPECT_EQ(run_and_verify(*dev, model, value, grids).accuracy.verdict, "PASS");
  Toggles devcu = preset("optimized");
  devcu.seq_lens = SeqLensMode::device_cumulative;
  EXPECT_EQ(run_and_verify(*dev, model, devcu, grids, /*mlp=*/true).accuracy.verdict, "PASS");
}

TEST(EncoderForward, WindowModelEveryCombinationExceptLayer0CacheMatches) {
  auto dev = cpu_device();
  const auto model = load_model("tiny-qwen2.5-vl");
  // Sizes not multiple of the window, two items (one a 2-frame video).
  const std::vector<vision::GridTHW> grids{{1, 20, 12}, {2, 8, 8}};
  const auto combos = all_valid_toggles();
  kernels::ThreadPool pool(2);
  // A stride coprime with the toggle counts still visits every value of every toggle.
  const std::size_t step = sanitized() ? 13 : 7;
  for (std::size_t i = 0; i < combos.size(); i += step) {
    const auto c = run_and_verify(*dev, model, combos[i], grids, false, &pool);
    const bool buggy = combos[i].seq_lens == SeqLensMode::layer0_cache;
    EXPECT_EQ(c.accuracy.verdict, buggy ? "FAIL" : "PASS") << describe(combos[i]) << ": " << c.accuracy.reason;
  }
}

TEST(EncoderForward, SyncsPerForward) {
  auto dev = cpu_device();
  for (const std::string name : {"tiny-qwen2-vl", "tiny-qwen2.5-vl"}) {
    const auto model = load_model(name);
    const std::vector<vision::GridTHW> grids{{1, 16, 16}};
    auto syncs = [&](Toggles t) {
      EncoderConfig cfg;
      cfg.model = model;
      cfg.toggles = t;
      EncoderRunner runner(cfg, *dev);
      (void)runner.forward(grids);
      const ForwardReport r = runner.forward(grids);
      // Cross-check with the recording: blocking waits attributed to layers.
      std::size_t waits = 0;
      for (const auto& s : runner.last_timeline().host_spans)
        if (s.kind == timeline::HostSpanKind::wait && s.layer >= 0) ++waits;
      EXPECT_EQ(waits, r.syncs) << name << " " << describe(t);
      return r.syncs;
    };
    Toggles t = preset("baseline");
    EXPECT_EQ(syncs(t), static_cast<std::size_t>(model.depth)) << name;
    t.seq_lens = SeqLensMode::host_precomputed;
    EXPECT_EQ(syncs(t), 0u) << name;
    t.seq_lens = SeqLensMode::device_cumulative;
    t.kernel = KernelKind::fused_varlen;
    EXPECT_EQ(syncs(t), 0u) << name;
    t = preset("pr6448");
    EXPECT_EQ(syncs(t), 1u) << name;
    t.seq_lens = SeqLensMode::value_cache;
    // One refresh per forward without windows; with windows one per switch between the window
    // and the full set: layer 0 (window), 3 (full), 4 (window), 7 (full).
    EXPECT_EQ(syncs(t), model.has_windows() ? 4u : 1u) << name;
  }
}

TEST(EncoderForward, SimDeviceIsModelledAndBaselineStallsOnSyncs) {
  device::DeviceOptions o;
  o.spec = "sim:ascend-910b";
  auto dev = device::make_device(o);
  ASSERT_TRUE(dev->info().modelled);
  const auto model = load_model("tiny-qwen2.5-vl");
  const std::vector<vision::GridTHW> grids{{1, 32, 32}};
  EncoderConfig cfg;
  cfg.model = model;
  cfg.toggles = preset("baseline");
  EncoderRunner base(cfg, *dev);
  auto rb = base.forward(grids);
  EXPECT_EQ(rb.syncs, static_cast<std::size_t>(model.depth));
  EXPECT_GT(rb.gaps.idle_ns_by_class[timeline::GapClass::sync_stall], 0);
  // Every sync-stall gap inside the layers follows the seq-lens D2H the host blocked on.
  std::size_t stalls = 0;
  for (const auto& g : rb.gaps.gaps) {
    if (g.gap_class != timeline::GapClass::sync_stall || g.layer < 0) continue;
    ++stalls;
    std::string prev;
    for (const auto& op : base.last_timeline().device_ops)
      if (op.id == g.prev_op) prev = op.name;
    EXPECT_EQ(prev, "seq_lens_d2h") << g.cause;
  }
  EXPECT_GE(stalls, static_cast<std::size_t>(model.depth - 1));
  cfg.toggles = preset("optimized");
  EncoderRunner opt(cfg, *dev);
  auto ro = opt.forward(grids);
  EXPECT_EQ(ro.syncs, 0u);
  EXPECT_EQ(ro.gaps.idle_ns_by_class[timeline::GapClass::sync_stall], 0);
  // Same model, fewer device ops (no pads, no diff, no unpad).
  EXPECT_LT(ro.device_ops, rb.device_ops);
}

TEST(EncodeRun, JsonLayoutAndExitCodes) {
  const auto dir = std::filesystem::temp_directory_path();
  const auto json_path = (dir / ("encbench_encode_test_" + std::to_string(::getpid()) + ".json")).string();
  EncodeOptions o;
  o.run.model = "tiny-qwen2.5-vl";
  o.run.images = {"224x224"};
  o.run.device = "sim:ascend-910b";
  o.run.forwards = 2;
  o.run.warmup = 0;
  o.run.verify = true;
  o.run.json_path = json_path;
  o.preset = "pr6448";
  std::ostringstream out;
  EXPECT_EQ(run_encode(o, {"encbench", "encode"}, out), 1) << out.str();
  EXPECT_NE(out.str().find("MODELLED"), std::string::npos);
  EXPECT_NE(out.str().find("FAIL"), std::string::npos);
  const auto j = read_json_file(json_path);
  EXPECT_EQ(j["schema"], "encbench-encode");
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_EQ(j["device"]["modelled"], true);
  EXPECT_EQ(j["toggles"]["seq_lens"], "layer0-cache");
  EXPECT_EQ(j["samples"]["forward_ms"].size(), 2u);
  // The device work left when the host issued the last op: part of the forward, not more.
  ASSERT_EQ(j["samples"]["end_wait_ms"].size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_GT(j["samples"]["end_wait_ms"][i].get<double>(), 0.0);
    EXPECT_LT(j["samples"]["end_wait_ms"][i].get<double>(), j["samples"]["forward_ms"][i].get<double>());
  }
  EXPECT_EQ(j["accuracy"]["verdict"], "FAIL");
  EXPECT_EQ(j["accuracy"]["failed_layers"], nlohmann::json({3, 7}));
  for (const char* key : {"forward_ms", "idle_fraction", "syncs_per_forward", "host_us_per_layer", "device_busy_ms",
                          "gap_count", "gap_p50_us", "gap_p99_us", "gap_max_us", "idle_ms_by_class"})
    EXPECT_TRUE(j["summary"].contains(key)) << key;
  EXPECT_EQ(j["summary"]["syncs_per_forward"], 1.0);
  EXPECT_EQ(j["launch_overhead_us"], 0.0);
  EXPECT_TRUE(j["inputs"].contains("grid_thw"));
  std::filesystem::remove(json_path);

  o.preset = "optimized";
  o.run.json_path.clear();
  std::ostringstream out2;
  EXPECT_EQ(run_encode(o, {"encbench", "encode"}, out2), 0) << out2.str();
}

TEST(EncodeRun, BadInputsAreClearErrors) {
  EncodeOptions o;
  o.run.model = "tiny-qwen2-vl";
  o.run.images = {"0x448"};
  std::ostringstream out;
  EXPECT_THROW(run_encode(o, {}, out), InvalidInput);
  o.run.images = {"448x448"};
  o.run.model = "no-such-model";
  EXPECT_THROW(run_encode(o, {}, out), InvalidInput);
  o.run.model = "tiny-qwen2-vl";
  o.overrides.seq_lens = "device-cumulative";  // with the baseline's flash-unpad
  try {
    run_encode(o, {}, out);
    FAIL() << "conflicting toggles accepted";
  } catch (const InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find("conflicting toggles"), std::string::npos) << e.what();
  }
  o.overrides = {};
  o.run.images = {"200000x200000"};
  EXPECT_THROW(run_encode(o, {}, out), InvalidInput);
  o.run.images = {};
  EXPECT_THROW(run_encode(o, {}, out), InvalidInput);
  o.run.images = {"448x448"};
  o.run.device = "sim:no-such-profile";
  EXPECT_THROW(run_encode(o, {}, out), InvalidInput);
}

TEST(AbRun, InterleavedTableAndJson) {
  AbOptions o;
  o.run.model = "tiny-qwen2-vl";
  o.run.images = {"224x224"};
  o.run.device = "sim:ascend-910b";
  o.run.forwards = 4;
  o.run.warmup = 0;
  o.run.launch_overhead_us = 5;
  const auto json_path = (std::filesystem::temp_directory_path() /
                          ("encbench_ab_test_" + std::to_string(::getpid()) + ".json")).string();
  o.run.json_path = json_path;
  std::ostringstream out;
  EXPECT_EQ(run_ab(o, {"encbench", "ab"}, out), 0);
  EXPECT_NE(out.str().find("| Metric | Before (baseline) | After (optimized) |"), std::string::npos) << out.str();
  const auto j = read_json_file(json_path);
  EXPECT_EQ(j["schema"], "encbench-ab");
  EXPECT_EQ(j["a"]["samples"]["forward_ms"].size(), 4u);
  EXPECT_EQ(j["b"]["toggles"]["kernel"], "fused-varlen");
  EXPECT_EQ(j["comparison"]["syncs_per_forward"]["a_median"], 4.0);
  EXPECT_EQ(j["comparison"]["syncs_per_forward"]["b_median"], 0.0);
  EXPECT_EQ(j["comparison"]["syncs_per_forward"]["significant"], true);
  EXPECT_EQ(j["comparison"]["syncs_per_forward"]["verdict"], "FASTER");  // 4 -> 0, constant: by the threshold
  EXPECT_EQ(j["comparison"]["syncs_per_forward"]["test"], "deterministic");
  EXPECT_EQ(j["a"]["launch_overhead_us"], 5.0);
  std::filesystem::remove(json_path);
}
