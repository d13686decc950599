// Known answers for every class and statistic on the hand-built traces (worked out by hand in
// tests/trace/fixtures/README.md), in both layouts.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <sstream>

#include "harness/core/error.hpp"
#include "harness/trace/trace_analysis.hpp"
#include "tests/trace/trace_test_support.hpp"

using namespace encbench;
using namespace encbench::trace;
using encbench::timeline::GapClass;
using encbench::trace::support::fixture;
using encbench::trace::support::us;

namespace {

Nanos class_ns(const timeline::GapAnalysis& a, GapClass c) {
  const auto it = a.idle_ns_by_class.find(c);
  return it == a.idle_ns_by_class.end() ? 0 : it->second;
}
std::size_t class_count(const timeline::GapAnalysis& a, GapClass c) {
  const auto it = a.count_by_class.find(c);
  return it == a.count_by_class.end() ? 0 : it->second;
}
const StreamReport& stream(const DeviceReport& d, int s) {
  const auto it = std::find_if(d.streams.begin(), d.streams.end(), [s](const auto& r) { return r.stream == s; });
  if (it == d.streams.end()) throw std::runtime_error("no stream " + std::to_string(s));
  return *it;
}

class KinetoTrace : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { trace_ = new ImportedTrace(import_trace_file(fixture("kineto_two_streams.json"))); }
  static void TearDownTestSuite() {
    delete trace_;
    trace_ = nullptr;
  }
  static const ImportedTrace& trace() { return *trace_; }
  static inline ImportedTrace* trace_ = nullptr;
};

}  // namespace

TEST_F(KinetoTrace, DeviceUnionBusyIdleAndClasses) {
  const TraceReport r = analyze_trace(trace(), {});
  ASSERT_EQ(r.devices.size(), 1u);
  const auto& g = r.devices[0].gaps;
  EXPECT_EQ(g.span_start_ns, us(20));
  EXPECT_EQ(g.span_end_ns, us(700));
  EXPECT_EQ(g.busy_ns, us(300));
  EXPECT_EQ(g.idle_ns, us(380));
  EXPECT_DOUBLE_EQ(g.idle_fraction, 380.0 / 680.0);
  EXPECT_EQ(g.op_count, 7u);
  ASSERT_EQ(g.gaps.size(), 4u);
  EXPECT_EQ(class_ns(g, GapClass::kernel_wait), us(10));   // 120..130, queued, < 30 us
  EXPECT_EQ(class_ns(g, GapClass::host_wait), us(170));    // 230..400, tiny_k3 launched at 300
  EXPECT_EQ(class_ns(g, GapClass::other), us(50));         // 410..460, queued, >= 30 us
  EXPECT_EQ(class_ns(g, GapClass::sync_stall), us(150));   // 500..650, host in cudaDeviceSynchronize
  for (const GapClass c : {GapClass::host_wait, GapClass::sync_stall, GapClass::kernel_wait, GapClass::other}) {
    EXPECT_EQ(class_count(g, c), 1u);
  }
  EXPECT_EQ(class_count(g, GapClass::cross_stream_wait), 0u);  // a Kineto trace shows no stream waits
  const HtaClasses h = hta_classes(g);
  EXPECT_EQ(h.host_wait_ns, us(320));
  EXPECT_EQ(h.host_wait_count, 2u);
  EXPECT_EQ(h.kernel_wait_ns, us(10));
  EXPECT_EQ(h.other_ns, us(50));
}

TEST_F(KinetoTrace, PerStreamGapsAsHta) {
  const TraceReport r = analyze_trace(trace(), {});
  const auto& s7 = stream(r.devices[0], 7).gaps;
  EXPECT_EQ(s7.span_end_ns - s7.span_start_ns, us(480));
  EXPECT_EQ(s7.busy_ns, us(250));
  EXPECT_EQ(s7.idle_ns, us(230));
  EXPECT_EQ(class_ns(s7, GapClass::kernel_wait), us(10));
  EXPECT_EQ(class_ns(s7, GapClass::host_wait), us(170));
  EXPECT_EQ(class_ns(s7, GapClass::other), us(50));
  EXPECT_EQ(class_ns(s7, GapClass::sync_stall), 0);
  const auto& s13 = stream(r.devices[0], 13).gaps;
  EXPECT_EQ(s13.span_end_ns - s13.span_start_ns, us(550));
  EXPECT_EQ(s13.busy_ns, us(110));
  EXPECT_EQ(s13.idle_ns, us(440));
  EXPECT_EQ(class_ns(s13, GapClass::kernel_wait), us(5));
  // 215..650: attention_k6 not launched yet (600), and its thread's cudaDeviceSynchronize
  // (400..505) ended inside the gap before that launch: sync_stall; HTA calls it host_wait.
  EXPECT_EQ(class_ns(s13, GapClass::sync_stall), us(435));
  EXPECT_EQ(class_ns(s13, GapClass::host_wait), 0);
  EXPECT_EQ(hta_classes(s13).host_wait_ns, us(435));
  EXPECT_EQ(class_ns(s13, GapClass::other), 0);
}

TEST_F(KinetoTrace, KernelWaitThresholdIsInMicroseconds) {
  AnalyzeOptions wide;
  wide.kernel_wait_threshold_ns = us(60);  // the 50 us queued gap becomes kernel_wait
  const TraceReport r60 = analyze_trace(trace(), wide);
  const auto& g60 = r60.devices[0].gaps;
  EXPECT_EQ(class_ns(g60, GapClass::kernel_wait), us(60));
  EXPECT_EQ(class_ns(g60, GapClass::other), 0);
  AnalyzeOptions narrow;
  narrow.kernel_wait_threshold_ns = us(5);  // 10 us queued gap is now other
  const TraceReport r5 = analyze_trace(trace(), narrow);
  const auto& g5 = r5.devices[0].gaps;
  EXPECT_EQ(class_ns(g5, GapClass::kernel_wait), 0);
  EXPECT_EQ(class_ns(g5, GapClass::other), us(60));
  // host_wait does not depend on the threshold.
  EXPECT_EQ(class_ns(g5, GapClass::host_wait), us(170));
}

TEST_F(KinetoTrace, LaunchStatsHtaSemantics) {
  const TraceReport r = analyze_trace(trace(), {});
  const LaunchStats& l = r.devices[0].launch;
  // delays (op start - api end): 10, 110, 40, 90 (stream 7); 42, 59, 40 (stream 13)
  EXPECT_EQ(l.pairs, 7u);
  EXPECT_EQ(l.launch_delay_us.count, 7u);
  EXPECT_DOUBLE_EQ(l.launch_delay_us.min, 10);
  EXPECT_DOUBLE_EQ(l.launch_delay_us.p50, 42);
  EXPECT_DOUBLE_EQ(l.launch_delay_us.max, 110);
  EXPECT_NEAR(l.launch_delay_us.mean, 391.0 / 7, 1e-9);
  EXPECT_NEAR(l.launch_delay_us.p99, 108.8, 1e-9);  // numpy linear: 90 + 0.94 * 20
  // API durations: 10, 5, 60, 5, 8, 6, 10
  EXPECT_DOUBLE_EQ(l.api_duration_us.p50, 8);
  EXPECT_DOUBLE_EQ(l.api_duration_us.max, 60);
  EXPECT_NEAR(l.api_duration_us.mean, 104.0 / 7, 1e-9);
  EXPECT_EQ(l.short_ops, 1u);       // tiny_k3: 10 us op, 60 us launch
  EXPECT_EQ(l.api_outliers, 1u);    // > 50 us
  EXPECT_EQ(l.delay_outliers, 1u);  // > 100 us
  const LaunchStats& s13 = stream(r.devices[0], 13).launch;
  EXPECT_EQ(s13.pairs, 3u);
  EXPECT_DOUBLE_EQ(s13.launch_delay_us.p50, 42);
}

TEST_F(KinetoTrace, QueueLengthOverTime) {
  const TraceReport r = analyze_trace(trace(), {});
  const QueueLengthStats& q7 = stream(r.devices[0], 7).queue;
  // +1 at 0, 15, 300, 365; -1 at 20, 130, 400, 460 -> 1 2 1 0 1 2 1 0
  ASSERT_EQ(q7.series.size(), 8u);
  EXPECT_EQ(q7.series[1].t_ns, us(15));
  EXPECT_EQ(q7.series[1].length, 2);
  EXPECT_EQ(q7.series.back().length, 0);
  EXPECT_EQ(q7.max, 2);
  EXPECT_EQ(q7.samples.count, 8u);
  EXPECT_DOUBLE_EQ(q7.samples.mean, 1.0);
  EXPECT_NEAR(q7.time_weighted_mean, 330.0 / 460.0, 1e-12);
  EXPECT_EQ(q7.time_at_max_gauge_ns, 0);
  const QueueLengthStats& q13 = stream(r.devices[0], 13).queue;
  EXPECT_EQ(q13.max, 2);
  EXPECT_NEAR(q13.samples.mean, 5.0 / 6.0, 1e-12);
  EXPECT_NEAR(q13.time_weighted_mean, 165.0 / 550.0, 1e-12);

  AnalyzeOptions full_at_two;
  full_at_two.max_queue_gauge = 2;  // time "blocked on a full queue" with a tiny queue
  const TraceReport small_queue = analyze_trace(trace(), full_at_two);
  const QueueLengthStats& blocked = stream(small_queue.devices[0], 7).queue;
  EXPECT_EQ(blocked.time_at_max_gauge_ns, us(5 + 35));  // 15..20 and 365..400
}

TEST_F(KinetoTrace, LargestGapsWithHostEventsAround) {
  AnalyzeOptions o;
  o.top_gaps = 2;
  const TraceReport r = analyze_trace(trace(), o);
  const auto& gaps = r.devices[0].largest_gaps;
  ASSERT_EQ(gaps.size(), 2u);
  EXPECT_EQ(gaps[0].gap.duration_ns(), us(170));
  EXPECT_EQ(gaps[0].gap.gap_class, GapClass::host_wait);
  EXPECT_EQ(gaps[0].prev_op, "softmax_k2");
  EXPECT_EQ(gaps[0].next_op, "tiny_k3");
  ASSERT_TRUE(gaps[0].next_submit_ns.has_value());
  EXPECT_EQ(*gaps[0].next_submit_ns, us(300));
  EXPECT_EQ(gaps[0].next_launch_api, "cudaLaunchKernel");
  // 230..400 overlaps: the two launches at 300 and 365 (api).
  ASSERT_EQ(gaps[0].host_events.size(), 2u);
  EXPECT_EQ(gaps[0].host_events[0].kind, timeline::HostSpanKind::api);

  EXPECT_EQ(gaps[1].gap.duration_ns(), us(150));
  EXPECT_EQ(gaps[1].gap.gap_class, GapClass::sync_stall);
  EXPECT_EQ(gaps[1].next_op, "attention_k6");
  EXPECT_EQ(gaps[1].next_stream, 13);
  ASSERT_GE(gaps[1].host_events.size(), 2u);
  EXPECT_EQ(gaps[1].host_events[0].name, "cudaDeviceSynchronize");  // waits listed first
  EXPECT_EQ(gaps[1].host_events[0].kind, timeline::HostSpanKind::wait);
  EXPECT_EQ(gaps[1].host_events[1].name, "cudaLaunchKernel");
}

TEST_F(KinetoTrace, StreamAndWindowSelection) {
  AnalyzeOptions only13;
  only13.stream = 13;
  const TraceReport r = analyze_trace(trace(), only13);
  ASSERT_EQ(r.devices[0].streams.size(), 1u);
  EXPECT_EQ(r.devices[0].gaps.busy_ns, us(110));  // the device view is the stream's ops only
  EXPECT_EQ(r.devices[0].launch.pairs, 3u);

  AnalyzeOptions window;
  window.window_start_ns = us(100);
  window.window_end_ns = us(450);
  const TraceReport w = analyze_trace(trace(), window);
  // Launch pairs whose op starts in [100, 450): softmax_k2, tiny_k3, the memcpy, rotary_k5.
  EXPECT_EQ(w.devices[0].launch.pairs, 4u);
  for (const auto& gap : w.devices[0].gaps.gaps) {
    EXPECT_GE(gap.start_ns, us(100));
    EXPECT_LE(gap.end_ns, us(450));
  }

  AnalyzeOptions missing;
  missing.stream = 99;
  try {
    analyze_trace(trace(), missing);
    FAIL() << "expected InvalidInput";
  } catch (const InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find("stream 13"), std::string::npos) << e.what();
  }
}

TEST_F(KinetoTrace, JsonAndSummaryCarryTheFigures) {
  const TraceReport r = analyze_trace(trace(), {});
  const nlohmann::json j = to_json(trace(), r);
  EXPECT_EQ(j["input"]["layout"], "kineto");
  EXPECT_EQ(j["options"]["kernel_wait_threshold_us"], 30.0);
  const auto& d = j["devices"][0];
  EXPECT_DOUBLE_EQ(d["hta_classes"]["host_wait_us"].get<double>(), 320.0);
  EXPECT_DOUBLE_EQ(d["hta_classes"]["kernel_wait_us"].get<double>(), 10.0);
  EXPECT_DOUBLE_EQ(d["hta_classes"]["other_us"].get<double>(), 50.0);
  EXPECT_EQ(d["streams"].size(), 2u);
  EXPECT_EQ(d["streams"][0]["queue_length"]["max"], 2);
  EXPECT_DOUBLE_EQ(d["launch"]["launch_delay_us"]["p50"].get<double>(), 42.0);
  EXPECT_DOUBLE_EQ(d["largest_gaps"][0]["dur_us"].get<double>(), 170.0);
  std::ostringstream text;
  print_summary(text, trace(), r);
  EXPECT_NE(text.str().find("sync_stall"), std::string::npos);
  EXPECT_NE(text.str().find("tiny_k3"), std::string::npos);
}

TEST(TorchNpuTrace, ClassesLaunchesAndQueue) {
  const ImportedTrace t = import_trace_file(fixture("torch_npu_two_streams.json"));
  const TraceReport r = analyze_trace(t, {});
  ASSERT_EQ(r.devices.size(), 1u);
  const auto& g = r.devices[0].gaps;
  const Nanos base = support::kNpuBaseNs;
  EXPECT_EQ(g.span_start_ns, base + us(20.5));
  EXPECT_EQ(g.span_end_ns, base + us(460));
  EXPECT_EQ(g.busy_ns, us(260));
  EXPECT_EQ(g.idle_ns, us(179.5));
  EXPECT_EQ(class_ns(g, GapClass::kernel_wait), us(5));    // 120.5..125.5
  EXPECT_EQ(class_ns(g, GapClass::other), us(124.5));      // 145.5..200 queued; 330..400 unlinked
  // 260..310: stream 2 sat in EVENT_WAIT until 300, after SoftmaxV2's launch at 280.
  EXPECT_EQ(class_ns(g, GapClass::cross_stream_wait), us(50));
  EXPECT_EQ(class_ns(g, GapClass::sync_stall), 0);
  EXPECT_EQ(class_ns(g, GapClass::host_wait), 0);
  EXPECT_EQ(class_count(g, GapClass::other), 2u);
  const HtaClasses h = hta_classes(g);
  EXPECT_EQ(h.host_wait_ns, 0);
  EXPECT_EQ(h.other_ns, us(174.5));  // HTA has no cross-stream class: its other

  const auto& s2 = stream(r.devices[0], 2).gaps;
  EXPECT_EQ(s2.busy_ns, us(200));
  EXPECT_EQ(s2.idle_ns, us(239.5));
  EXPECT_EQ(class_ns(s2, GapClass::cross_stream_wait), us(164.5));  // 145.5..310, EVENT_WAIT 146..300
  EXPECT_EQ(class_ns(s2, GapClass::sync_stall), 0);
  EXPECT_EQ(class_ns(s2, GapClass::kernel_wait), us(5));
  EXPECT_EQ(class_ns(s2, GapClass::other), us(70));
  const auto& s3 = stream(r.devices[0], 3).gaps;
  EXPECT_EQ(s3.busy_ns, us(60));
  EXPECT_EQ(s3.idle_ns, 0);

  const LaunchStats& l = r.devices[0].launch;
  EXPECT_EQ(l.pairs, 3u);  // node launches only
  EXPECT_DOUBLE_EQ(l.launch_delay_us.p50, 96);
  EXPECT_DOUBLE_EQ(l.launch_delay_us.min, 5.5);
  EXPECT_DOUBLE_EQ(l.launch_delay_us.max, 105.5);
  EXPECT_DOUBLE_EQ(l.api_duration_us.p50, 4);
  EXPECT_EQ(l.delay_outliers, 1u);
  EXPECT_EQ(l.api_outliers, 0u);
  EXPECT_EQ(l.short_ops, 0u);

  const QueueLengthStats& q2 = stream(r.devices[0], 2).queue;
  EXPECT_EQ(q2.max, 2);
  EXPECT_EQ(q2.series.size(), 4u);
  EXPECT_NEAR(q2.time_weighted_mean, 125.0 / 120.5, 1e-12);
}

// A step of 100 us with two kernels launched inside it, the second one starting 5 us before its
// launch call (host/device clock skew), and a third kernel launched after the step:
//   cudaLaunchKernel corr 1 [10, 15]   k1 [20, 50]
//   cudaLaunchKernel corr 2 [60, 65]   k2 [55, 75]   (starts 5 us before its launch)
//   cudaLaunchKernel corr 3 [200, 205] k3 [300, 310] (outside the step)
// Step window (torch_npu's rule): from k1's start 20 to max(step end 100, k2's end 75) = 100.
std::string skewed_step_trace() {
  return R"json({"traceEvents": [
  {"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":100,"tid":100,"ts":0,"dur":100},
  {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":100,"tid":100,"ts":10,"dur":5,"args":{"correlation":1}},
  {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":100,"tid":100,"ts":60,"dur":5,"args":{"correlation":2}},
  {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":100,"tid":100,"ts":200,"dur":5,"args":{"correlation":3}},
  {"ph":"X","cat":"kernel","name":"k1","pid":0,"tid":7,"ts":20,"dur":30,"args":{"correlation":1,"stream":7,"device":0}},
  {"ph":"X","cat":"kernel","name":"k2","pid":0,"tid":7,"ts":55,"dur":20,"args":{"correlation":2,"stream":7,"device":0}},
  {"ph":"X","cat":"kernel","name":"k3","pid":0,"tid":7,"ts":300,"dur":10,"args":{"correlation":3,"stream":7,"device":0}}]})json";
}

TEST(StepWindow, DefaultIsTheProfilerStepWithTheWholeTraceBeside) {
  const ImportedTrace t = import_trace_text(skewed_step_trace(), "step.json");
  const TraceReport r = analyze_trace(t, {});
  const DeviceReport& d = r.devices[0];
  EXPECT_EQ(d.window.start_ns, us(20));
  EXPECT_EQ(d.window.end_ns, us(100));
  EXPECT_NE(d.window.source.find("ProfilerStep#*"), std::string::npos) << d.window.source;
  EXPECT_EQ(d.gaps.op_count, 2u);
  EXPECT_EQ(d.gaps.busy_ns, us(50));
  EXPECT_EQ(d.gaps.idle_ns, us(5));
  ASSERT_TRUE(d.whole_trace.has_value());
  EXPECT_EQ(d.whole_trace->op_count, 3u);
  EXPECT_EQ(d.whole_trace->idle_ns, us(230));  // 20..310 minus 60 busy
  EXPECT_EQ(d.launch.pairs, 2u);               // k3 starts outside the window

  AnalyzeOptions whole;
  whole.whole_trace = true;
  const TraceReport w = analyze_trace(t, whole);
  EXPECT_TRUE(w.devices[0].window.whole());
  EXPECT_EQ(w.devices[0].gaps.idle_ns, us(230));
  AnalyzeOptions explicit_window;
  explicit_window.window_start_ns = us(290);
  explicit_window.window_end_ns = us(400);
  const TraceReport e = analyze_trace(t, explicit_window);
  EXPECT_EQ(e.devices[0].window.source, "--window");
  EXPECT_EQ(e.devices[0].gaps.op_count, 1u);
  EXPECT_FALSE(e.devices[0].whole_trace.has_value());  // asked for: no second figure

  std::ostringstream text;
  print_summary(text, t, r);
  EXPECT_NE(text.str().find("window 20.000 .. 100.000 us: ProfilerStep#*"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("whole trace: span 0.290 ms"), std::string::npos) << text.str();
}

TEST(ClockSkew, CountedAndQueueLengthNeverNegative) {
  const ImportedTrace t = import_trace_text(skewed_step_trace(), "step.json");
  EXPECT_EQ(t.counts.skewed_ops, 1u);
  EXPECT_EQ(t.counts.max_skew_ns, us(5));
  EXPECT_EQ(t.devices[0].skewed_ops, 1u);
  AnalyzeOptions whole;
  whole.whole_trace = true;
  const TraceReport r = analyze_trace(t, whole);
  const QueueLengthStats& q = stream(r.devices[0], 7).queue;
  // k2 (start 55 before its call at 60) is left out: +1 at 10, 200; -1 at 20, 300.
  EXPECT_EQ(q.left_out, 1u);
  ASSERT_EQ(q.series.size(), 4u);
  for (const QueuePoint& p : q.series) EXPECT_GE(p.length, 0) << p.t_ns;
  EXPECT_EQ(q.max, 1);
  // Its gap is still classed by its submit taken at its start: host_wait (launched after 50).
  EXPECT_EQ(class_ns(r.devices[0].gaps, GapClass::host_wait), us(5 + 225));
  const nlohmann::json j = to_json(t, r);
  EXPECT_EQ(j["import"]["skewed_ops"], 1);
  EXPECT_DOUBLE_EQ(j["import"]["max_skew_us"].get<double>(), 5.0);
  EXPECT_EQ(j["devices"][0]["streams"][0]["queue_length"]["left_out"], 1);
  std::ostringstream text;
  print_summary(text, t, r);
  EXPECT_NE(text.str().find("clock skew: 1 ops start before their launch (max 5.000 us)"), std::string::npos)
      << text.str();
}

// The same fixture with its EVENT_WAIT task changed: a wait that ended before the op's launch
// (146..246, launch at 280) left the host last, and a Notify Wait (another rank, not another
// stream) holds no stream: both gaps are the host's again (sync_stall: the host sat in
// aclrtSynchronizeStream 130..270).
TEST(TorchNpuTrace, CrossStreamWaitOnlyWhenTheWaitReleasedTheOp) {
  std::ifstream in(fixture("torch_npu_two_streams.json"));
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string wait = R"("ts": "1700000000000146.000", "dur": 154.0, "args": {"Task Type": "EVENT_WAIT")";
  ASSERT_NE(text.find(wait), std::string::npos);
  const auto variant = [&](const std::string& replacement) {
    std::string changed = text;
    changed.replace(changed.find(wait), wait.size(), replacement);
    return analyze_trace(import_trace_text(changed, "variant.json"), {});
  };
  const TraceReport early = variant(R"("ts": "1700000000000146.000", "dur": 100.0, "args": {"Task Type": "EVENT_WAIT")");
  EXPECT_EQ(class_ns(early.devices[0].gaps, GapClass::sync_stall), us(50));
  EXPECT_EQ(class_ns(early.devices[0].gaps, GapClass::cross_stream_wait), 0);
  EXPECT_EQ(class_ns(stream(early.devices[0], 2).gaps, GapClass::sync_stall), us(164.5));
  const TraceReport notify = variant(R"("ts": "1700000000000146.000", "dur": 154.0, "args": {"Task Type": "Notify Wait")");
  EXPECT_EQ(class_ns(notify.devices[0].gaps, GapClass::sync_stall), us(50));
  EXPECT_EQ(class_ns(notify.devices[0].gaps, GapClass::cross_stream_wait), 0);
  const ImportedTrace t = import_trace_file(fixture("torch_npu_two_streams.json"));
  EXPECT_EQ(t.counts.stream_wait_tasks, 1u);
}

// Host and device clocks that disagree beyond launch skew: a warning with the figure.
TEST(ClockSkew, BeyondExplainableSkewIsAWarningWithTheFigure) {
  std::string text = skewed_step_trace();
  const std::string k2 = R"("name":"k2","pid":0,"tid":7,"ts":55,"dur":20)";
  ASSERT_NE(text.find(k2), std::string::npos);
  const ImportedTrace small = import_trace_text(text, "step.json");
  std::ostringstream small_text;
  print_summary(small_text, small, analyze_trace(small, {}));
  EXPECT_EQ(small_text.str().find("warning: host and device clocks disagree"), std::string::npos);
  // k2 now starts 2,000 us before its launch at 60 (ts -1940).
  text.replace(text.find(k2), k2.size(), R"("name":"k2","pid":0,"tid":7,"ts":-1940,"dur":20)");
  const ImportedTrace t = import_trace_text(text, "step.json");
  std::ostringstream out;
  print_summary(out, t, analyze_trace(t, {}));
  EXPECT_NE(out.str().find("warning: host and device clocks disagree: an op starts 2000.000 us before its launch"),
            std::string::npos)
      << out.str();
}
