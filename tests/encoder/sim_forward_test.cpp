// The encoder on the sim device's virtual clock: bounded host memory, exact modelled sync gaps,
// figures that a busy machine cannot move.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "harness/device/device.hpp"
#include "harness/device/sim_profile.hpp"
#include "harness/encoder/encoder.hpp"
#include "harness/timeline/gaps.hpp"
#include "tests/support/busy_neighbours.hpp"
#include "tests/support/devices.hpp"
#include "tests/support/process.hpp"

using namespace encbench;
using namespace encbench::encoder;

namespace {

std::size_t resident_bytes() { return static_cast<std::size_t>(std::max<std::int64_t>(0, encbench::testing::rss_bytes())); }

std::unique_ptr<device::Device> virtual_sim(device::HostTime host_time = device::HostTime::model) {
  return encbench::testing::virtual_sim_device(host_time);
}

std::vector<vision::GridTHW> images(const ModelConfig& model, int count, const char* spec) {
  return std::vector<vision::GridTHW>(static_cast<std::size_t>(count), grid_for(parse_image_spec(spec), model));
}

}  // namespace

TEST(SimForward, HostMemoryStaysFlatAsImagesGrow) {
  auto dev = virtual_sim();
  EncoderConfig cfg;
  cfg.model = load_model("qwen3-vl-8b");
  cfg.toggles = preset("optimized");
  cfg.mlp = true;
  cfg.keep_host_weights = false;
  EncoderRunner runner(cfg, *dev);
  const ForwardReport one = runner.forward(images(cfg.model, 1, "640x480"));
  const std::size_t rss_one = resident_bytes();
  const ForwardReport sixteen = runner.forward(images(cfg.model, 16, "640x480"));
  const std::size_t rss_sixteen = resident_bytes();
  // The device accounts the weights (same in both) plus 16x the activations (> 2 GiB more; the
  // out-buffer=reuse attention output is one buffer for all layers, not one per layer) ...
  EXPECT_GT(sixteen.peak_bytes_in_use, one.peak_bytes_in_use + (std::uint64_t{2} << 30));
  // ... while the process holds only O(ops) host memory (the timeline, small control tensors).
  EXPECT_LT(rss_sixteen, rss_one + (std::size_t{48} << 20)) << "RSS grew from " << rss_one << " to " << rss_sixteen;
  EXPECT_GT(sixteen.forward_ns, 8 * one.forward_ns);  // the modelled time does scale
}

TEST(SimForward, BaselineSyncGapsAreExactlyTheModelledWakeup) {
  // No host time (none): every sync gap is exactly the profile's host wake-up, because the d2h
  // copy is the device's last queued op and the next submit follows at once.
  auto dev = virtual_sim(device::HostTime::none);
  const device::SimProfile profile =
      device::load_sim_profile("ascend-910b", device::default_profiles_dir());
  EncoderConfig cfg;
  cfg.model = load_model("qwen2.5-vl-7b");
  cfg.toggles = preset("baseline");
  cfg.keep_host_weights = false;
  EncoderRunner runner(cfg, *dev);
  const ForwardReport r = runner.forward(images(cfg.model, 1, "448x448"));
  EXPECT_EQ(r.syncs, 32u);
  std::size_t sync_gaps = 0;
  for (const auto& gap : r.gaps.gaps) {
    if (gap.gap_class != timeline::GapClass::sync_stall) continue;
    ++sync_gaps;
    EXPECT_EQ(gap.duration_ns(), static_cast<Nanos>(profile.host_wakeup_ns.value)) << gap.cause;
  }
  EXPECT_EQ(sync_gaps, 32u);
  // And the optimized preset never waits: no sync gaps at all, same device work minus the
  // seq-lens ops.
  cfg.toggles = preset("optimized");
  EncoderRunner optimized(cfg, *dev);
  const ForwardReport o = optimized.forward(images(cfg.model, 1, "448x448"));
  EXPECT_EQ(o.syncs, 0u);
  EXPECT_LT(o.forward_ns, r.forward_ns);
}

TEST(SimForward, VirtualForwardTimeIsTheSameOnABusyMachine) {
  EncoderConfig cfg;
  cfg.model = load_model("qwen2.5-vl-7b");
  cfg.toggles = preset("baseline");
  cfg.keep_host_weights = false;
  auto median_forward = [&] {
    auto dev = virtual_sim();
    EncoderRunner runner(cfg, *dev);
    const auto grids = images(cfg.model, 1, "448x448");
    (void)runner.forward(grids);
    std::vector<Nanos> times;
    for (int i = 0; i < 5; ++i) times.push_back(runner.forward(grids).forward_ns);
    std::sort(times.begin(), times.end());
    return times[2];
  };
  const Nanos quiet = median_forward();
  Nanos loaded = 0;
  {
    const testing_support::BusyNeighbours busy(2);
    loaded = median_forward();
  }
  // Modelled host time reads no machine clock: the same bits on a busy machine and under any
  // build (Release, sanitizers).
  EXPECT_EQ(loaded, quiet);
  EXPECT_GT(quiet, 1'000'000);  // a real forward of modelled time, not a no-op
}

TEST(SimForward, ToggleHostStepsCostTheirModelledClass) {
  // baseline computes scale and the pad decision per call (host_scalar each, per layer);
  // --scale init / --pad-decision init do them once at start-up. The difference in modelled
  // host time per forward is exactly depth x 2 x host_scalar, the device work being the same.
  EncoderConfig cfg;
  cfg.model = load_model("qwen2.5-vl-7b");
  cfg.keep_host_weights = false;
  const auto host_ns = [&](const Toggles& t) {
    auto dev = virtual_sim();
    cfg.toggles = t;
    EncoderRunner runner(cfg, *dev);
    const auto grids = images(cfg.model, 1, "448x448");
    (void)runner.forward(grids);
    (void)runner.forward(grids);
    Nanos work = 0;
    for (const auto& span : runner.last_timeline().host_spans)
      if (span.kind == timeline::HostSpanKind::work && (span.name == "scale" || span.name == "pad_decision"))
        work += span.end_ns - span.start_ns;
    return std::pair{work, dev->host_model()->cost(device::HostOpClass::host_scalar)};
  };
  Toggles per_call = preset("baseline");
  per_call.scale = ScaleMode::per_call;
  per_call.pad_decision = PadDecision::per_call;
  Toggles at_init = per_call;
  at_init.scale = ScaleMode::init;
  at_init.pad_decision = PadDecision::init;
  const auto [per_call_work, scalar_ns] = host_ns(per_call);
  const auto [init_work, unused] = host_ns(at_init);
  (void)unused;
  EXPECT_GT(scalar_ns, 0);
  EXPECT_EQ(per_call_work, 2 * cfg.model.depth * scalar_ns);
  EXPECT_EQ(init_work, 0);
}

namespace {

Toggles attention_only(KernelKind kernel, PadMethod pad) {
  Toggles t = preset("pr7104");  // host lengths, init-time scale/pad: only memory differs below
  t.kernel = kernel;
  t.pad_method = pad;
  t.out_buffer = OutBuffer::alloc_per_call;
  return t;
}

std::unique_ptr<device::Device> budgeted_sim(std::uint64_t budget_bytes) {
  return encbench::testing::virtual_sim_device(device::HostTime::model, budget_bytes);
}

ForwardReport forward_on(device::Device& dev, const Toggles& t) {
  EncoderConfig cfg;
  cfg.model = load_model("qwen2.5-vl-7b");
  cfg.toggles = t;
  cfg.keep_host_weights = false;
  EncoderRunner runner(cfg, dev);
  return runner.forward(images(cfg.model, 1, "448x448"));
}

}  // namespace

// The seeds' OOM argument: the flash path pads head_dim 80 to 128 and keeps padded q, k, v and
// out per call; the fused kernel keeps one unpadded out.
TEST(SimForward, FlashUnpadPeakExceedsFusedByItsPadding) {
  auto dev_flash = budgeted_sim(0);
  auto dev_fused = budgeted_sim(0);
  const ForwardReport flash = forward_on(*dev_flash, attention_only(KernelKind::flash_unpad, PadMethod::three_pads));
  const ForwardReport fused = forward_on(*dev_fused, attention_only(KernelKind::fused_varlen, PadMethod::none));
  // Worked out from the shapes alone: T = (448/14)^2 = 1024 tokens, 16 heads, padded to 128:
  // per layer the flash path holds pad_q, pad_k, pad_v and a padded out (4 x T*H*128 fp32) plus
  // the unpadded copy (T*H*80) where the fused path holds one unpadded out (T*H*80).
  const double T = 1024, H = 16;
  const double expected_extra = 4.0 * T * H * 128 * 4;
  const double extra = static_cast<double>(flash.peak_bytes_in_use) - static_cast<double>(fused.peak_bytes_in_use);
  EXPECT_NEAR(extra, expected_extra, 0.01 * expected_extra)
      << "flash " << flash.peak_bytes_in_use << " B, fused " << fused.peak_bytes_in_use << " B";
  // The per-call buffers are first allocated in layer 0 and reused after it: that is the peak.
  EXPECT_EQ(flash.peak_memory_layer, 0);
}

TEST(SimForward, ABudgetBetweenThePeaksFailsFlashUnpadWithTheSiteAndPassesFused) {
  auto probe_flash = budgeted_sim(0);
  auto probe_fused = budgeted_sim(0);
  const auto flash_toggles = attention_only(KernelKind::flash_unpad, PadMethod::three_pads);
  const auto fused_toggles = attention_only(KernelKind::fused_varlen, PadMethod::none);
  const std::uint64_t flash_peak = forward_on(*probe_flash, flash_toggles).peak_bytes_reserved;
  const std::uint64_t fused_peak = forward_on(*probe_fused, fused_toggles).peak_bytes_reserved;
  ASSERT_GT(flash_peak, fused_peak);
  const std::uint64_t budget = (flash_peak + fused_peak) / 2;
  auto dev_fused = budgeted_sim(budget);
  EXPECT_NO_THROW((void)forward_on(*dev_fused, fused_toggles));
  auto dev_flash = budgeted_sim(budget);
  try {
    (void)forward_on(*dev_flash, flash_toggles);
    FAIL() << "expected OutOfDeviceMemoryAt";
  } catch (const OutOfDeviceMemoryAt& oom) {
    const std::string message = oom.what();
    EXPECT_NE(message.find("out of device memory at layer 0, op alloc"), std::string::npos) << message;
    EXPECT_EQ(oom.budget, budget);
    EXPECT_EQ(oom.layer, 0);  // the first layer's per-call buffers are the first that do not fit
  }
}
