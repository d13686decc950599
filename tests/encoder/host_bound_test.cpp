// The eager host model of the encoder on the virtual clock: the idle gaps follow from
// the event rules and the host model's per-class costs, every attention kernel variant is its own
// op, and the device costs count bf16 elements.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "harness/device/device.hpp"
#include "harness/device/host_model.hpp"
#include "harness/device/sim_profile.hpp"
#include "harness/encoder/encoder.hpp"
#include "harness/timeline/gaps.hpp"

using namespace encbench;
using namespace encbench::encoder;

namespace {

std::unique_ptr<device::Device> eager_sim(const std::string& host_model = "torch-npu-eager") {
  device::DeviceOptions o;
  o.spec = "sim:ascend-910b";
  o.clock = device::ClockMode::virtual_time;
  o.host_time = device::HostTime::model;
  o.host_model = std::make_shared<const device::HostModel>(
      device::load_host_model(host_model, device::default_profiles_dir()));
  o.record = true;
  return device::make_device(o);
}

struct Forward {
  ForwardReport report;
  timeline::Timeline timeline;
};

Forward run(device::Device& dev, const Toggles& toggles, const char* image, bool mlp = true, int images = 1) {
  EncoderConfig cfg;
  cfg.model = load_model("qwen3-vl-8b");
  cfg.toggles = toggles;
  cfg.mlp = mlp;
  cfg.keep_host_weights = false;
  EncoderRunner runner(cfg, dev);
  const std::vector<vision::GridTHW> grids(static_cast<std::size_t>(images), grid_for(parse_image_spec(image), cfg.model));
  (void)runner.forward(grids);  // warm: workspaces allocated
  Forward f{runner.forward(grids), {}};
  f.timeline = runner.last_timeline();
  return f;
}

Toggles pr7104_before() { return parse_preset_spec("pr7104+seq-lens=d2h-per-layer"); }

}  // namespace

TEST(HostBound, Pr7104BeforeLargestGapOfEachLayerIsTheSyncBeforeAttention) {
  auto dev = eager_sim();
  const Forward f = run(*dev, pr7104_before(), "1024x640");
  std::map<std::uint64_t, const timeline::DeviceOp*> by_id;
  for (const auto& op : f.timeline.device_ops) by_id[op.id] = &op;
  // Per layer: the largest gap and where the layer's attention kernel starts.
  std::map<int, const timeline::Gap*> largest;
  for (const auto& gap : f.report.gaps.gaps) {
    const timeline::Gap*& best = largest[gap.layer];
    if (best == nullptr || gap.duration_ns() > best->duration_ns()) best = &gap;
  }
  std::map<int, Nanos> attention_start;
  for (const auto& op : f.timeline.device_ops)
    if (op.name.starts_with("attention_")) attention_start[op.layer] = op.start_ns;
  ASSERT_EQ(attention_start.size(), 27u);
  for (int layer = 0; layer < 27; ++layer) {
    ASSERT_TRUE(largest.contains(layer)) << "layer " << layer << " has no gap";
    const timeline::Gap& gap = *largest.at(layer);
    EXPECT_EQ(gap.gap_class, timeline::GapClass::sync_stall) << "layer " << layer << ": " << gap.cause;
    // It closes on the first op after the seq_lens D2H, before the attention kernel.
    EXPECT_EQ(by_id.at(gap.prev_op)->name, "seq_lens_d2h") << "layer " << layer;
    EXPECT_LE(gap.end_ns, attention_start.at(layer)) << "layer " << layer;
  }
  EXPECT_EQ(f.report.syncs, 27u);
  // The gap is the host's work between the wake-up and the next submit, from the host model:
  // wake-up + cumsum (host_math) + the views + the attention kernel's torch call + its launch
  // (the device is idle all along). The pad and the output allocation come before the D2H, as
  // vllm-ascend's forward_oot orders them, so they are not in the gap.
  const device::HostModel* hm = dev->host_model();
  ASSERT_NE(hm, nullptr);
  const device::SimProfile profile = device::load_sim_profile("ascend-910b", device::default_profiles_dir());
  using device::HostOpClass;
  const Nanos expected = static_cast<Nanos>(profile.host_wakeup_ns.value) + hm->cost(HostOpClass::host_math) +
                         3 * hm->cost(HostOpClass::tensor_view) + hm->cost(HostOpClass::torch_dispatch) +
                         hm->cost(HostOpClass::kernel_launch);
  EXPECT_EQ(largest.at(13)->duration_ns(), expected);
}

TEST(HostBound, After7104HasNoSyncGapsAndLessIdle) {
  auto dev = eager_sim();
  const Forward before = run(*dev, pr7104_before(), "1024x640");
  const Forward after = run(*dev, preset("pr7104"), "1024x640");
  EXPECT_EQ(after.report.syncs, 0u);
  EXPECT_EQ(after.report.gaps.idle_ns_by_class.at(timeline::GapClass::sync_stall), 0);
  EXPECT_GT(before.report.gaps.idle_ns_by_class.at(timeline::GapClass::sync_stall), 27 * 30'000);
  EXPECT_LT(after.report.forward_ns, before.report.forward_ns);
}

// The forward's end wait (what host work after the forward can hide behind): the device work still
// queued when the host issued the last op. A forward that syncs in every layer ends with the host
// caught up, so only the last layer's ops after its sync and the mergers are left; one that never
// syncs ends with the host far ahead of a device-bound device.
TEST(HostBound, ForwardEndWaitIsTheDeviceWorkLeftWhenTheHostFinishedIssuing) {
  auto dev = eager_sim();
  for (const char* arm : {"before", "after"}) {
    const Forward f = run(*dev, arm == std::string("before") ? pr7104_before() : preset("pr7104"), "1024x640", true, 4);
    // The same figure from the recording: the closing synchronize's host wait, which starts after
    // the synchronize call's own host cost (the host model's stream_sync, 2 us).
    Nanos closing_wait = -1;
    for (const auto& span : f.timeline.host_spans)
      if (span.kind == timeline::HostSpanKind::wait && span.name == "forward_end") closing_wait = span.end_ns - span.start_ns;
    EXPECT_GE(f.report.end_wait_ns, closing_wait) << arm;
    EXPECT_LE(f.report.end_wait_ns, closing_wait + 5'000) << arm;
    EXPECT_GT(f.report.end_wait_ns, 0) << arm;
    EXPECT_LT(f.report.end_wait_ns, f.report.forward_ns) << arm;
    if (arm == std::string("before")) {
      // At most the device time of the ops after the last seq_lens D2H (layer 26's attention
      // onwards and the mergers), plus the host's wake-up.
      Nanos last_sync_end = 0, tail_device = 0;
      for (const auto& op : f.timeline.device_ops)
        if (op.name == "seq_lens_d2h") last_sync_end = std::max(last_sync_end, op.end_ns);
      for (const auto& op : f.timeline.device_ops)
        if (op.start_ns >= last_sync_end) tail_device += op.end_ns - op.start_ns;
      EXPECT_GT(tail_device, 0);
      EXPECT_LE(f.report.end_wait_ns, tail_device + 20'000);
    } else {
      // No sync: 4 images keep the device behind the host for much of the forward.
      EXPECT_GT(f.report.end_wait_ns, f.report.forward_ns / 4);
    }
  }
}

TEST(HostBound, SmallImagesAreHostBoundLargeOnesDeviceBound) {
  // The host's work per layer does not depend on the image; the device's does. A 448x448 image
  // (784 patches) leaves the device idle most of each layer, a 1024x640 one (2,560) far less.
  auto dev = eager_sim();
  const Forward small = run(*dev, pr7104_before(), "448x448");
  const Forward large = run(*dev, pr7104_before(), "1024x640");
  EXPECT_GT(small.report.idle_fraction, 0.3);
  EXPECT_LT(large.report.idle_fraction, small.report.idle_fraction / 2);
  // Host work per layer is (nearly) the same for both.
  EXPECT_NEAR(small.report.host_us_per_layer, large.report.host_us_per_layer, 0.05 * large.report.host_us_per_layer);
}

TEST(HostBound, DispatchOnlyChargesNoEagerHostWork) {
  // The serving model's host model charges no class: the torch calls and views cost nothing, so
  // the same forward is shorter and has the same device ops.
  auto eager = eager_sim();
  auto dispatch_only = eager_sim("dispatch-only");
  const Forward e = run(*eager, pr7104_before(), "448x448");
  const Forward d = run(*dispatch_only, pr7104_before(), "448x448");
  EXPECT_EQ(e.report.device_ops, d.report.device_ops);
  EXPECT_LT(d.report.forward_ns, e.report.forward_ns);
  EXPECT_LT(d.report.idle_fraction, e.report.idle_fraction);
}

TEST(HostBound, EveryAttentionKernelVariantHasItsOwnOpNameAndCost) {
  auto dev = eager_sim();
  struct Variant {
    const char* spec;
    const char* op;
  };
  const Variant variants[] = {
      {"pr6448", "attention_flash_unpad_pad128"},
      {"pr7104", "attention_fusion_pad128"},
      {"optimized", "attention_fusion"},
  };
  std::set<Nanos> durations;
  for (const Variant& v : variants) {
    const Forward f = run(*dev, parse_preset_spec(v.spec), "448x448", false);
    std::set<std::string> names;
    Nanos duration = 0;
    for (const auto& op : f.timeline.device_ops)
      if (op.name.starts_with("attention")) {
        names.insert(op.name);
        duration = op.end_ns - op.start_ns;
      }
    EXPECT_EQ(names, std::set<std::string>{v.op}) << v.spec;
    durations.insert(duration);
  }
  EXPECT_EQ(durations.size(), 3u);  // three variants, three costs
}

TEST(HostBound, DeviceCostsCountBf16Elements) {
  auto dev = eager_sim();
  const Forward f = run(*dev, preset("pr7104"), "448x448", false);
  const double T = 784, hidden = 1152;
  bool seen = false;
  for (const auto& op : f.timeline.device_ops)
    if (op.name == "qkv_proj") {
      seen = true;
      EXPECT_DOUBLE_EQ(op.flops, 2.0 * T * hidden * 3 * hidden);
      EXPECT_DOUBLE_EQ(op.bytes, 2.0 * (T * hidden + hidden * 3 * hidden + T * 3 * hidden + 3 * hidden));
    }
  EXPECT_TRUE(seen);
}

namespace {

Nanos forward_ns(const Forward& f) {
  Nanos first = f.timeline.device_ops.front().start_ns, last = 0;
  for (const auto& op : f.timeline.device_ops) {
    first = std::min(first, op.start_ns);
    last = std::max(last, op.end_ns);
  }
  return last - first;
}

Nanos device_time_of(const Forward& f, const std::string& name) {
  Nanos sum = 0;
  for (const auto& op : f.timeline.device_ops)
    if (op.name == name) sum += op.end_ns - op.start_ns;
  return sum;
}

}  // namespace

// #6204's stacked pad saves one torch call + allocation + launch per layer and one
// view costs it back in part; its torch.stack is one more device copy of q/k/v. Where the device
// waits for the host (a small image) the saving shows in full; where the host waits for the device
// (the serving loop's batched forwards) the stack copy's device time shows, less at most the saving.
TEST(HostBound, StackedPadSavesItsHostCallsOnlyWhereTheDeviceWaitsForTheHost) {
  auto dev = eager_sim();
  const device::HostModel* hm = dev->host_model();
  ASSERT_NE(hm, nullptr);
  using device::HostOpClass;
  const Nanos saved_per_layer = hm->cost(HostOpClass::torch_dispatch) + hm->cost(HostOpClass::kernel_launch) +
                                hm->cost(HostOpClass::allocation) - hm->cost(HostOpClass::tensor_view);
  const Toggles three = parse_preset_spec("baseline");
  const Toggles stacked = parse_preset_spec("baseline+pad-method=stacked");
  // 448x448: 784 patches, host-bound: exactly the host saving, 27 layers.
  const Forward small_three = run(*dev, three, "448x448"), small_stacked = run(*dev, stacked, "448x448");
  EXPECT_NEAR(static_cast<double>(forward_ns(small_three) - forward_ns(small_stacked)),
              static_cast<double>(27 * saved_per_layer), 1000.0);
  // 8 x 1024x640 in one forward (20,480 patches, as an encoder step of the serving loop batches
  // them): device-bound, slower by the stack copies' device time less at most the host saving.
  const Forward big_three = run(*dev, three, "1024x640", true, 8), big_stacked = run(*dev, stacked, "1024x640", true, 8);
  const Nanos stack = device_time_of(big_stacked, "stack_qkv");
  ASSERT_GT(stack, 27 * saved_per_layer);
  const Nanos slower = forward_ns(big_stacked) - forward_ns(big_three);
  EXPECT_LE(slower, stack);
  EXPECT_GE(slower, stack - 27 * saved_per_layer);
}

// The head split as vLLM v0.14-v0.16's Qwen2_5_VisionAttention.forward runs it
// (rearrange and slices are views; q and k are copied contiguous, v when the pad reads it): one
// device copy of q, k and v per layer, read and written once in bf16, and no second copy of q and
// k for a torch.cat (the older form's `qk_cat`).
TEST(HostBound, HeadSplitCopiesQkvOncePerLayerAsVllmV014Does) {
  auto dev = eager_sim();
  const Forward f = run(*dev, preset("baseline"), "448x448", false);
  const double n = 784.0 * 16 * 72;  // patches x heads x head_dim of one of q, k, v
  int splits = 0;
  for (const auto& op : f.timeline.device_ops) {
    EXPECT_NE(op.name, "qk_cat");
    if (op.name != "split_heads") continue;
    ++splits;
    EXPECT_DOUBLE_EQ(op.bytes, 2.0 * (3 * n + 3 * n));  // read q, k, v strided, write them contiguous
    EXPECT_DOUBLE_EQ(op.flops, 0.0);
  }
  EXPECT_EQ(splits, 27);  // one per layer
}
