// vLLM serving traces (Kineto, CUDA graphs, no ProfilerStep) on the hand-built
// fixtures/kineto_vllm_cuda_graph.json, whose every figure is worked out in fixtures/README.md:
// forwards come from vLLM's own execute_model annotations, the profiler's own span is not host
// work, and a copy call that returned only after its copy ended is a wait, so the critical path
// runs through the device ops the host waited for.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "harness/core/result_json.hpp"
#include "harness/trace/replay.hpp"
#include "harness/trace/trace_diff.hpp"
#include "harness/trace/trace_analysis.hpp"
#include "tests/trace/trace_test_support.hpp"

namespace encbench::trace {
namespace {

using support::fixture;
using support::us;
using timeline::GapClass;
using timeline::HostSpanKind;

ImportedTrace vllm_trace() { return import_trace_file(fixture("kineto_vllm_cuda_graph.json")); }

const timeline::HostSpan& span_at(const ImportedTrace& t, const std::string& name, Nanos start) {
  const auto& spans = t.devices.at(0).timeline.host_spans;
  const auto it = std::find_if(spans.begin(), spans.end(),
                               [&](const timeline::HostSpan& s) { return s.name == name && s.start_ns == start; });
  if (it == spans.end()) throw std::runtime_error("no host span " + name);
  return *it;
}

Nanos segment_ns(const CriticalPath& p, const std::string& kind, const std::string& name) {
  Nanos total = 0;
  for (const CriticalSegment& s : p.segments) total += s.kind == kind && s.name == name ? s.total_ns : 0;
  return total;
}

TEST(VllmTrace, ProfilerSpanIsNoHostWorkAndBlockingCopiesAreWaits) {
  const ImportedTrace t = vllm_trace();
  EXPECT_EQ(t.counts.device_ops, 8u);
  EXPECT_EQ(t.counts.skipped_profiler_spans, 1u);
  EXPECT_EQ(t.counts.blocking_copy_calls, 2u);
  for (const timeline::HostSpan& s : t.devices[0].timeline.host_spans) EXPECT_NE(s.name, "PyTorch Profiler (0)");
  // The D2H calls return after their copy (1630 >= 1625, 2320 >= 2315): the host waited.
  EXPECT_EQ(span_at(t, "cudaMemcpyAsync", us(1220)).kind, HostSpanKind::wait);
  EXPECT_EQ(span_at(t, "cudaMemcpyAsync", us(2030)).kind, HostSpanKind::wait);
  // The H2D call returns at 1020, its copy runs 1030..1040: an ordinary launch.
  EXPECT_EQ(span_at(t, "cudaMemcpyAsync", us(1010)).kind, HostSpanKind::api);
}

TEST(VllmTrace, ForwardsAreVllmsExecuteModelAnnotations) {
  const ReplayModel m = build_replay_model(vllm_trace(), -1);
  ASSERT_EQ(m.forwards.size(), 2u);
  EXPECT_EQ(m.forwards[0].name, "execute_new_1_cached_0");
  EXPECT_EQ(m.forwards[1].name, "execute_new_0_cached_1");
  const auto times = trace_forward_times(m);
  EXPECT_EQ(times[0].duration_ns(), us(700));  // 1000 .. the annotation's end 1700
  EXPECT_EQ(times[1].duration_ns(), us(500));  // 2000 .. 2500; the cudaEventQuery polls after it are outside
  EXPECT_EQ(m.origin_ns, us(1000));            // not the profiler span's start at 0
  // A user's marker that matches nothing is not replaced by vLLM's.
  ModelOptions own;
  own.forward_marker = "my_step*";
  const ReplayModel whole = build_replay_model(vllm_trace(), -1, own);
  ASSERT_EQ(whole.forwards.size(), 1u);
  EXPECT_EQ(whole.forwards[0].name, "whole trace");
}

TEST(VllmTrace, CriticalPathRunsThroughTheDeviceOpsTheHostWaitedFor) {
  const ReplayModel m = build_replay_model(vllm_trace(), -1);
  const ReplayTimes t = replay(m);
  for (std::size_t i = 0; i < m.ops.size(); ++i) EXPECT_EQ(t.op_end[i] + m.origin_ns, m.ops[i].trace_end_ns) << i;
  const ReplayMetrics r = measure_replay(m, t, us(30), 20);
  ASSERT_EQ(r.forwards.size(), 2u);
  const CriticalPath& p = r.forwards[0].critical_path;
  // tail 70 (1630..1700) <- wake-up 5 <- DtoH 15 <- sampler 10 <- graph mlp 200 <- graph attention
  // 260 <- launch latency 30 <- cudaGraphLaunch <- host 90 <- H2D call 10 <- host 10 (from 1000).
  EXPECT_EQ(p.length_ns, us(700));
  EXPECT_EQ(p.device_ns, us(485));
  EXPECT_EQ(p.host_ns, us(170));
  EXPECT_EQ(p.latency_ns, us(30));
  EXPECT_EQ(p.wait_ns, us(15));
  EXPECT_EQ(segment_ns(p, "wait_wakeup", "cudaMemcpyAsync"), us(5));
  EXPECT_EQ(segment_ns(p, "device_op", "Memcpy DtoH (Device -> Pageable)"), us(15));
  EXPECT_EQ(segment_ns(p, "launch_call", "cudaMemcpyAsync"), us(10));  // only the H2D launch
}

TEST(VllmTrace, StepWindowFromVllmMarkersAndTheBlockedHostIsASyncStall) {
  const TraceReport r = analyze_trace(vllm_trace(), {});
  ASSERT_EQ(r.devices.size(), 1u);
  const DeviceReport& d = r.devices[0];
  // From the first op launched in the first step (1030) to the second step's end (2500).
  EXPECT_EQ(d.window.start_ns, us(1030));
  EXPECT_EQ(d.window.end_ns, us(2500));
  EXPECT_EQ(d.window.source.rfind("execute_new_*_cached_*", 0), 0u) << d.window.source;
  ASSERT_EQ(d.gaps.gaps.size(), 2u);
  // 1040..1140: the graph launch came at 1110, the host was not blocked: host_wait.
  EXPECT_EQ(d.gaps.gaps[0].start_ns, us(1040));
  EXPECT_EQ(d.gaps.gaps[0].gap_class, GapClass::host_wait);
  // 1625..2030: the host sat in the blocking D2H copy (1220..1630) when the device drained.
  EXPECT_EQ(d.gaps.gaps[1].start_ns, us(1625));
  EXPECT_EQ(d.gaps.gaps[1].duration_ns(), us(405));
  EXPECT_EQ(d.gaps.gaps[1].gap_class, GapClass::sync_stall);
}

}  // namespace
}  // namespace encbench::trace

// Real vLLM serving steps on an MI300X under HIP graphs (AMD-AGI/TraceLens's test traces,
// fixtures/tracelens_vllm/README.md), against the figures expected_figures.py there computes from
// the raw events without encbench's code: one FULL-graph decode step (1 hipGraphLaunch replays
// 421 of its 434 ops) and one piecewise prefill+decode step (25 graph launches, attention eager).
namespace encbench::trace {
namespace {

std::filesystem::path tracelens_dir() { return support::fixture("tracelens_vllm"); }

const nlohmann::json& tracelens_expected() {
  static const nlohmann::json j = read_json_file(tracelens_dir() / "expected.json");
  return j;
}

TEST(VllmRealTrace, IdleIsExactlyTheIndependentFigure) {
  for (const auto& e : tracelens_expected()["traces"]) {
    SCOPED_TRACE(e["trace"].get<std::string>());
    const ImportedTrace t = import_trace_file(tracelens_dir() / e["trace"].get<std::string>());
    EXPECT_EQ(t.layout, TraceLayout::kineto);
    EXPECT_EQ(t.counts.device_ops, e["device_ops"].get<std::size_t>());
    EXPECT_EQ(t.counts.linked_by_correlation, e["linked_by_correlation"].get<std::size_t>());
    EXPECT_EQ(t.devices.at(0).ops_without_launch, 0u);
    const TraceReport r = analyze_trace(t, {});
    ASSERT_EQ(r.devices.size(), 1u);
    const DeviceReport& d = r.devices[0];
    EXPECT_EQ(d.device, e["devices"][0].get<int>());
    // The step window comes from vLLM's execute_model annotation (no ProfilerStep in the trace).
    EXPECT_NE(d.window.source.find("execute_"), std::string::npos) << d.window.source;
    EXPECT_EQ(d.window.start_ns, e["window_start_ns"].get<Nanos>());
    EXPECT_EQ(d.window.end_ns, e["window_end_ns"].get<Nanos>());
    for (const auto& [g, x] : {std::pair{&d.gaps, &e["window"]}, std::pair{&*d.whole_trace, &e["whole_trace"]}}) {
      EXPECT_EQ(g->op_count, (*x)["op_count"].get<std::size_t>());
      EXPECT_EQ(g->span_start_ns, (*x)["span_start_ns"].get<Nanos>());
      EXPECT_EQ(g->span_end_ns, (*x)["span_end_ns"].get<Nanos>());
      EXPECT_EQ(g->busy_ns, (*x)["busy_ns"].get<Nanos>());
      EXPECT_EQ(g->idle_ns, (*x)["idle_ns"].get<Nanos>());
      EXPECT_EQ(g->gaps.size(), (*x)["gaps"].get<std::size_t>());
    }
  }
}

// Graph-replayed ops are ops: a forward counts every kernel its graph launches ran (before: one
// per launch call: 14 calls on the decode step that runs 434 ops).
TEST(VllmRealTrace, OpsPerForwardCountsTheOpsGraphsReplay) {
  for (const auto& e : tracelens_expected()["traces"]) {
    SCOPED_TRACE(e["trace"].get<std::string>());
    const ImportedTrace t = import_trace_file(tracelens_dir() / e["trace"].get<std::string>());
    const ReplayModel m = build_replay_model(t, -1);
    ASSERT_EQ(m.forwards.size(), 1u);
    EXPECT_EQ(m.forwards[0].name.rfind("execute_", 0), 0u) << m.forwards[0].name;
    const TraceSummary s = summarize_trace(t, m, us(30));
    ASSERT_EQ(s.forwards.size(), 1u);
    const std::size_t ops = e["ops_per_forward"].get<std::size_t>();
    EXPECT_EQ(s.forwards[0].ops, ops);
    EXPECT_DOUBLE_EQ(s.metrics.at("ops_per_forward"), static_cast<double>(ops));
    EXPECT_EQ(s.forwards[0].launches, e["launch_calls_per_forward"].get<std::size_t>());
    EXPECT_GT(e["graph_replayed_ops"].get<std::size_t>(), ops / 2);  // the graphs hold most ops
    std::size_t named = 0;
    for (const OpNameStats& n : s.by_name) named += n.count;
    EXPECT_EQ(named, ops);  // the per-name table sums to the same count
  }
}

// The device is busy 99.8 % of the step: the critical path runs through device ops, not all
// through the host.
TEST(VllmRealTrace, CriticalPathHasTheDeviceOpsOnIt) {
  for (const auto& e : tracelens_expected()["traces"]) {
    SCOPED_TRACE(e["trace"].get<std::string>());
    const ReplayModel m = build_replay_model(import_trace_file(tracelens_dir() / e["trace"].get<std::string>()), -1);
    const ReplayMetrics r = measure_replay(m, replay(m), us(30), 20);
    ASSERT_EQ(r.forwards.size(), 1u);
    const CriticalPath& p = r.forwards[0].critical_path;
    EXPECT_EQ(p.length_ns, p.device_ns + p.host_ns + p.wait_ns + p.latency_ns);
    // At most the forward's device time; at least half of it (the ops run back to back).
    EXPECT_LE(p.device_ns, e["forward_busy_ns"].get<Nanos>());
    EXPECT_GE(p.device_ns, e["forward_busy_ns"].get<Nanos>() / 2);
    EXPECT_GT(p.device_ns, p.host_ns);
  }
}

TEST(VllmRealTrace, ExpectedFiguresAreCurrent) {
  if (std::system("python3 -c 'import json' > /dev/null 2>&1") != 0) GTEST_SKIP() << "no python3";
  const std::string command = "python3 '" + (tracelens_dir() / "expected_figures.py").string() + "' --check";
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
}

}  // namespace
}  // namespace encbench::trace
