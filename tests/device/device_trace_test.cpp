// A real cpu-device recording exported as a Chrome trace: tracks, flows, round trip, and the gap
// analysis of a timeline with a known sync stall.
#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <thread>

#include "harness/device/device.hpp"
#include "harness/timeline/chrome_trace.hpp"
#include "harness/timeline/gaps.hpp"

using namespace encbench;
using namespace encbench::device;
using namespace encbench::timeline;

namespace {

void sleep_us(int us) { std::this_thread::sleep_for(std::chrono::microseconds(us)); }

// Per layer: a kernel, a D2H of "seq_lens" (the host blocks), host work, the next kernel.
Timeline record_small_run() {
  DeviceOptions options;
  options.device_threads = 1;
  auto device = make_device(options);
  device->recorder().name_thread("encoder host");
  Stream& stream = device->default_stream();
  Stream& side = device->create_stream("side");
  Buffer buffer = device->allocator().allocate(256);
  int host_lens[4] = {};
  for (int layer = 0; layer < 3; ++layer) {
    stream.launch(KernelLaunch{"qkv_proj", {1e6, 1e4}, layer, [](kernels::WorkerPool&) { sleep_us(300); }});
    stream.copy_d2h(host_lens, buffer, 0, sizeof(host_lens), "seq_lens_d2h", layer);
    {
      ScopedHostSpan work(&device->recorder(), "build seq_lens", HostSpanKind::work, layer);
      // Host work while the device idles; long enough to outweigh a late wake-up from the D2H
      // wait on a loaded machine (the gap is attributed to the host activity that fills it most).
      // 5 ms was not: under ASan beside six busy loops the first layer's wait took 12-15 ms.
      sleep_us(30000);
    }
    stream.launch(KernelLaunch{"attention", {2e6, 1e4}, layer, [](kernels::WorkerPool&) { sleep_us(200); }});
    side.memset(buffer, 0, 64, "side_memset", layer);
  }
  device->synchronize();
  return device->collect_timeline();
}

}  // namespace

TEST(DeviceTrace, ExportHasTracksFlowsAndRoundTrips) {
  const Timeline timeline = record_small_run();
  const GapAnalysis gaps = analyze_gaps(timeline);
  ChromeTraceOptions options;
  options.gaps = &gaps;
  const nlohmann::json trace = nlohmann::json::parse(to_chrome_trace(timeline, options).dump());

  std::set<std::string> thread_names;
  std::set<std::uint64_t> flow_starts, flow_ends;
  for (const auto& event : trace["traceEvents"]) {
    if (event["ph"] == "M" && event["name"] == "thread_name") thread_names.insert(event["args"]["name"]);
    if (event["ph"] == "s") flow_starts.insert(event["id"].get<std::uint64_t>());
    if (event["ph"] == "f") {
      EXPECT_EQ(event["bp"], "e");
      flow_ends.insert(event["id"].get<std::uint64_t>());
    }
  }
  EXPECT_TRUE(thread_names.contains("encoder host"));
  EXPECT_TRUE(thread_names.contains("stream 0 (default)"));
  EXPECT_TRUE(thread_names.contains("stream 1 (side)"));
  EXPECT_TRUE(thread_names.contains("idle gaps"));
  std::size_t non_markers = 0;
  for (const auto& op : timeline.device_ops) {
    if (op.category == OpCategory::sync) continue;
    ++non_markers;
    EXPECT_TRUE(flow_starts.contains(op.id));
    EXPECT_TRUE(flow_ends.contains(op.id));
  }
  EXPECT_EQ(flow_starts.size(), non_markers);

  const Timeline back = read_encbench_chrome_trace(trace);
  ASSERT_EQ(back.device_ops.size(), timeline.device_ops.size());
  for (std::size_t i = 0; i < back.device_ops.size(); ++i) {
    EXPECT_EQ(back.device_ops[i].id, timeline.device_ops[i].id);
    EXPECT_NEAR(back.device_ops[i].start_ns, timeline.device_ops[i].start_ns, 1);
    EXPECT_NEAR(back.device_ops[i].end_ns, timeline.device_ops[i].end_ns, 1);
    EXPECT_NEAR(back.device_ops[i].submit_ns, timeline.device_ops[i].submit_ns, 1);
  }
  EXPECT_EQ(back.host_spans.size(), timeline.host_spans.size());
}

TEST(DeviceTrace, RecordedSyncStallsAreClassified) {
  const Timeline timeline = record_small_run();
  const GapAnalysis stream0 = analyze_stream_gaps(timeline, 0);
  // After each layer's D2H the device waits for the host's "build seq_lens" (the host was
  // blocked in the copy when the device went idle): three sync stalls on stream 0.
  std::size_t stalls_with_cause = 0;
  for (const Gap& gap : stream0.gaps) {
    if (gap.gap_class == GapClass::sync_stall && gap.cause.starts_with("build seq_lens (work), layer ")) {
      ++stalls_with_cause;
    }
  }
  EXPECT_EQ(stalls_with_cause, 3u);
  EXPECT_EQ(stream0.syncs, 3u + 2u);  // three D2H waits + the final device synchronize (2 streams)
  ASSERT_GE(stream0.layers.size(), 3u);
}
