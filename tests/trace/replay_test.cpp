// The what-if replay on hand-built traces whose every time is worked out by hand: the unedited
// replay reproduces the trace, each edit moves exactly what it should, the critical path adds
// up to the forward, and bad input is refused with a message.
#include <gtest/gtest.h>

#include <string>

#include "harness/core/error.hpp"
#include "harness/core/glob.hpp"
#include "harness/trace/replay.hpp"
#include "harness/trace/trace_diff.hpp"
#include "tests/trace/trace_test_support.hpp"

namespace encbench::trace {
namespace {

using support::fixture;
using support::us;

// One host thread (pid 100 / tid 100), one stream (7), a ProfilerStep#1 of 270 us:
//   cudaLaunchKernel k1   [0, 5]      k1 on the stream   [10, 110]  (launch latency 10)
//   cudaMemcpyAsync       [10, 15]    Memcpy DtoH        [110, 115] (queued behind k1)
//   cudaStreamSynchronize [20, 120]   blocks until the copy ends at 115, wakes up 5 us later
//   host work 30 us
//   cudaLaunchKernel k2   [150, 155]  k2                 [160, 260] (launch latency 10)
//   the step ends at 270 (host work after the last call: 115 us)
std::string one_step_trace(const std::string& extra_events = "") {
  return R"json({"schemaVersion": 1, "traceEvents": [
  {"ph":"M","name":"process_name","pid":100,"tid":0,"args":{"name":"python3"}},
  {"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":100,"tid":100,"ts":0,"dur":270},
  {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":100,"tid":100,"ts":0,"dur":5,"args":{"correlation":1}},
  {"ph":"X","cat":"cuda_runtime","name":"cudaMemcpyAsync","pid":100,"tid":100,"ts":10,"dur":5,"args":{"correlation":2}},
  {"ph":"X","cat":"cuda_runtime","name":"cudaStreamSynchronize","pid":100,"tid":100,"ts":20,"dur":100,"args":{"correlation":3}},
  {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":100,"tid":100,"ts":150,"dur":5,"args":{"correlation":4}},
  {"ph":"X","cat":"kernel","name":"k1","pid":0,"tid":7,"ts":10,"dur":100,"args":{"correlation":1,"stream":7,"device":0}},
  {"ph":"X","cat":"gpu_memcpy","name":"Memcpy DtoH (Device -> Pageable)","pid":0,"tid":7,"ts":110,"dur":5,"args":{"correlation":2,"stream":7,"device":0}},
  {"ph":"X","cat":"kernel","name":"k2","pid":0,"tid":7,"ts":160,"dur":100,"args":{"correlation":4,"stream":7,"device":0}})json" +
         extra_events + "]}";
}

struct WhatifRun {
  ReplayModel model;
  ReplayModel edited;
  ReplayMetrics metrics;
};

WhatifRun whatif(const std::string& text, const ReplayEdits& edits) {
  WhatifRun r;
  r.model = build_replay_model(import_trace_text(text, "step.json"), -1);
  EditReport report;
  r.edited = apply_edits(r.model, edits, report);
  r.metrics = measure_replay(r.edited, replay(r.edited), us(30));
  return r;
}

TEST(TraceReplay, ModelHasTheTracesCallsAndDependencies) {
  const ReplayModel m = build_replay_model(import_trace_text(one_step_trace(), "step.json"), -1);
  ASSERT_EQ(m.ops.size(), 3u);
  ASSERT_EQ(m.actions.size(), 4u);
  EXPECT_EQ(m.counts.launches, 3u);
  EXPECT_EQ(m.counts.waits, 1u);
  EXPECT_EQ(m.counts.ops_without_launch, 0u);
  // The synchronize has no op id: it waits for what ended last among the ops submitted before it.
  EXPECT_EQ(m.names[m.ops[m.actions[2].awaited_op].name], "Memcpy DtoH (Device -> Pageable)");
  EXPECT_EQ(m.actions[2].wakeup_ns, us(5));
  EXPECT_EQ(m.actions[3].host_gap_ns, us(30));
  EXPECT_EQ(m.ops[2].launch_latency_ns, us(10));  // k2 was launched after the stream drained
  EXPECT_EQ(m.ops[1].queue_gap_ns, 0);            // the copy followed k1 at once
  EXPECT_EQ(m.ops[1].launch_latency_ns, us(10));  // its launch latency: the trace's typical one
  ASSERT_EQ(m.forwards.size(), 1u);
  EXPECT_EQ(m.forwards[0].name, "ProfilerStep#1");
  EXPECT_EQ(m.forwards[0].tail_ns, us(115));
}

TEST(TraceReplay, UneditedReplayReproducesTheTrace) {
  const WhatifRun r = whatif(one_step_trace(), {});
  const ReplayTimes t = replay(r.model);
  for (std::size_t i = 0; i < r.model.ops.size(); ++i) {
    EXPECT_EQ(t.op_start[i], r.model.ops[i].trace_start_ns - r.model.origin_ns) << i;
    EXPECT_EQ(t.op_end[i], r.model.ops[i].trace_end_ns - r.model.origin_ns) << i;
  }
  ASSERT_EQ(r.metrics.forwards.size(), 1u);
  EXPECT_EQ(r.metrics.forwards[0].duration_ns(), us(270));
  EXPECT_EQ(trace_forward_times(r.model)[0].duration_ns(), us(270));
  // The critical path adds up to the forward: tail 115 + k2 call 5 + host 30 + wake-up 5 + copy 5
  // + k1 100 + k1 latency 10.
  const CriticalPath& p = r.metrics.forwards[0].critical_path;
  EXPECT_EQ(p.length_ns, us(270));
  EXPECT_EQ(p.device_ns, us(105));
  EXPECT_EQ(p.host_ns, us(145));
  EXPECT_EQ(p.latency_ns, us(10));
}

TEST(TraceReplay, DroppingTheCopyAndSyncLetsTheHostRunAhead) {
  ReplayEdits edits;
  edits.drop = "Memcpy DtoH*|cudaStreamSynchronize";
  const WhatifRun r = whatif(one_step_trace(), edits);
  EXPECT_EQ(r.edited.ops.size(), 2u);
  EXPECT_EQ(r.edited.actions.size(), 2u);
  // k2 is launched at 45 (5 + 30 + the 10 us of host work before the dropped calls) and reaches
  // the device at 55, but queues behind k1 (ends 110; the trace's typical queue gap is 0):
  // [110, 210]. The host step ends at 50 + 115 = 165, so the device ends the forward.
  ASSERT_EQ(r.metrics.forwards.size(), 1u);
  EXPECT_EQ(r.metrics.forwards[0].duration_ns(), us(210));
  const CriticalPath& p = r.metrics.forwards[0].critical_path;
  EXPECT_EQ(p.length_ns, us(210));
  EXPECT_EQ(p.device_ns, us(200));
  EXPECT_EQ(p.latency_ns, us(10));
  EXPECT_EQ(p.host_ns, 0);
}

TEST(TraceReplay, HostScaleKernelAndLaunchEdits) {
  ReplayEdits half_host;
  half_host.host_scale = 0.5;
  // Host gaps halve: the sync starts at 15 and still ends at 120; k2 launches at 135, runs
  // [145, 245]; the step's host tail shrinks to 57.5 us, so the device ends the forward.
  EXPECT_EQ(whatif(one_step_trace(), half_host).metrics.forwards[0].duration_ns(), us(245));

  ReplayEdits faster_k2;
  faster_k2.kernels.push_back(parse_kernel_edit("k2=x0.5"));
  // k2 ends at 210, but the host step still runs to 270.
  EXPECT_EQ(whatif(one_step_trace(), faster_k2).metrics.forwards[0].duration_ns(), us(270));

  ReplayEdits slower_k1;
  slower_k1.kernels.push_back(parse_kernel_edit("k1=300us"));
  // k1 ends at 310, the copy at 315, the host wakes at 320; k2 launched at 350 runs [360, 460];
  // the host tail ends at 355 + 115 = 470.
  EXPECT_EQ(whatif(one_step_trace(), slower_k1).metrics.forwards[0].duration_ns(), us(470));

  ReplayEdits slow_launch;
  slow_launch.launch_overhead_ns = us(20);
  // Each launch takes 20 us: k1 call [0, 20], copy call [25, 45], sync [50, 120], k2 call
  // [150, 170], tail to 285.
  EXPECT_EQ(whatif(one_step_trace(), slow_launch).metrics.forwards[0].duration_ns(), us(285));
}

TEST(TraceReplay, KernelEditSyntax) {
  EXPECT_DOUBLE_EQ(parse_kernel_edit("FlashAttention*=x0.8").factor, 0.8);
  EXPECT_EQ(*parse_kernel_edit("attn=1.5ms").duration_ns, 1'500'000);
  EXPECT_EQ(*parse_kernel_edit("attn=800ns").duration_ns, 800);
  EXPECT_THROW(parse_kernel_edit("attn"), InvalidInput);
  EXPECT_THROW(parse_kernel_edit("attn=120"), InvalidInput);    // no unit
  EXPECT_THROW(parse_kernel_edit("attn=x-1"), InvalidInput);
  EXPECT_THROW(parse_kernel_edit("attn=xfast"), InvalidInput);
}

TEST(TraceReplay, GlobMatching) {
  EXPECT_TRUE(glob_match("aclrtSynchronize*", "aclrtSynchronizeStream"));
  EXPECT_TRUE(glob_match("seq_lens_d2h|aclrtSynchronize*", "seq_lens_d2h"));
  EXPECT_FALSE(glob_match("seq_lens_d2h", "seq_lens_d2h_2"));
  EXPECT_TRUE(glob_match("*Attention*", "FlashAttentionScore"));
  EXPECT_TRUE(glob_match("k?", "k2"));
  EXPECT_FALSE(glob_match("k?", "k22"));
}

TEST(TraceReplay, EditsThatMatchNothingAreRefused) {
  ReplayEdits drop;
  drop.drop = "no_such_op";
  try {
    whatif(one_step_trace(), drop);
    FAIL() << "expected InvalidInput";
  } catch (const InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find("matches no device op"), std::string::npos) << e.what();
  }
  ReplayEdits kernel;
  kernel.kernels.push_back(parse_kernel_edit("gemm*=x2"));
  EXPECT_THROW(whatif(one_step_trace(), kernel), InvalidInput);
}

TEST(TraceReplay, DependencyCycleIsReportedNotHung) {
  // The synchronize at 50 waits for B, which the stream runs after A, which is only launched at
  // 100, after the synchronize returns: no order satisfies all three.
  const std::string text = R"({"traceEvents": [
  {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":0,"dur":5,"args":{"correlation":2}},
  {"ph":"X","cat":"cuda_runtime","name":"cudaDeviceSynchronize","pid":1,"tid":1,"ts":50,"dur":20},
  {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":100,"dur":5,"args":{"correlation":1}},
  {"ph":"X","cat":"kernel","name":"A","pid":0,"tid":7,"ts":10,"dur":5,"args":{"correlation":1}},
  {"ph":"X","cat":"kernel","name":"B","pid":0,"tid":7,"ts":60,"dur":5,"args":{"correlation":2}}]})";
  const ReplayModel m = build_replay_model(import_trace_text(text, "cycle.json"), -1);
  try {
    replay(m);
    FAIL() << "expected InvalidInput";
  } catch (const InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find("cycle"), std::string::npos) << e.what();
  }
}

TEST(TraceReplay, TraceWithoutCorrelationIdsIsRefused) {
  const std::string text = R"({"traceEvents": [
  {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":0,"dur":5},
  {"ph":"X","cat":"kernel","name":"A","pid":0,"tid":7,"ts":10,"dur":5}]})";
  try {
    build_replay_model(import_trace_text(text, "nocorr.json"), -1);
    FAIL() << "expected InvalidInput";
  } catch (const InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find("correlation"), std::string::npos) << e.what();
  }
}

// The hand-built fixtures (two streams, two host threads, a flow-linked op, an unlinked op):
// every op's replayed start and end equal the trace's.
TEST(TraceReplay, FixturesReplayExactly) {
  for (const char* name : {"kineto_two_streams.json", "torch_npu_two_streams.json"}) {
    const ImportedTrace trace = import_trace_file(fixture(name));
    const ReplayModel m = build_replay_model(trace, -1);
    const ReplayTimes t = replay(m);
    for (std::size_t i = 0; i < m.ops.size(); ++i) {
      EXPECT_EQ(t.op_start[i] + m.origin_ns, m.ops[i].trace_start_ns) << name << " op " << i;
      EXPECT_EQ(t.op_end[i] + m.origin_ns, m.ops[i].trace_end_ns) << name << " op " << i;
    }
    const auto measured = trace_forward_times(m);
    const ReplayMetrics replayed = measure_replay(m, t, us(30));
    ASSERT_EQ(measured.size(), replayed.forwards.size()) << name;
    for (std::size_t f = 0; f < measured.size(); ++f) {
      EXPECT_EQ(replayed.forwards[f].duration_ns(), measured[f].duration_ns()) << name;
      EXPECT_GT(measured[f].duration_ns(), 0) << name;
    }
  }
}

TEST(TraceDiff, SyncsLaunchesAndGatesOnHandBuiltSteps) {
  const ImportedTrace with_sync = import_trace_text(one_step_trace(), "a.json");
  const ReplayModel a_model = build_replay_model(with_sync, -1);
  const TraceSummary a = summarize_trace(with_sync, a_model, us(30));
  EXPECT_DOUBLE_EQ(a.metrics.at("syncs_per_forward"), 1.0);
  EXPECT_DOUBLE_EQ(a.metrics.at("d2h_per_forward"), 1.0);
  EXPECT_DOUBLE_EQ(a.metrics.at("launches_per_forward"), 3.0);
  EXPECT_DOUBLE_EQ(a.metrics.at("forward_ms"), 0.270);
  // The device is idle [0,10) before k1 is not counted (the span starts at the first op):
  // idle = 260 - 10 - busy 205 = 45 us.
  EXPECT_NEAR(a.metrics.at("idle_ms"), 0.045, 1e-9);

  const TraceDiff same = diff_traces(a, a, false);
  const auto gates = evaluate_gates(same, {parse_gate_expression("syncs_per_forward<=0", "--gate"),
                                           parse_gate_expression("idle_pct<+1", "--gate")});
  ASSERT_EQ(gates.size(), 2u);
  EXPECT_FALSE(gates[0].passed);  // B still has its sync
  EXPECT_TRUE(gates[1].passed);   // no change in idle
  try {
    evaluate_gates(same, {parse_gate_expression("no_metric<1", "--gate")});
    ADD_FAILURE() << "an unknown metric was accepted";
  } catch (const InvalidInput& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("unknown metric 'no_metric' at column 1"), std::string::npos) << message;
    for (const auto& [name, value] : a.metrics) EXPECT_NE(message.find(name), std::string::npos) << name;
  }
}

// A CUDA graph launch: one cudaGraphLaunch (correlation 5) replays three kernels, g1 g2 g3;
// then one plain launch. Step [0, 200]:
//   cudaGraphLaunch  [0, 10]    g1 [20, 40]  g2 [45, 60]  g3 [62, 80]   (stream 7)
//   cudaLaunchKernel [100, 105] k  [110, 130]
std::string graph_step_trace() {
  return R"json({"traceEvents": [
  {"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":100,"tid":100,"ts":0,"dur":200},
  {"ph":"X","cat":"cuda_runtime","name":"cudaGraphLaunch","pid":100,"tid":100,"ts":0,"dur":10,"args":{"correlation":5}},
  {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":100,"tid":100,"ts":100,"dur":5,"args":{"correlation":6}},
  {"ph":"X","cat":"kernel","name":"g1","pid":0,"tid":7,"ts":20,"dur":20,"args":{"correlation":5,"stream":7,"device":0}},
  {"ph":"X","cat":"kernel","name":"g2","pid":0,"tid":7,"ts":45,"dur":15,"args":{"correlation":5,"stream":7,"device":0}},
  {"ph":"X","cat":"kernel","name":"g3","pid":0,"tid":7,"ts":62,"dur":18,"args":{"correlation":5,"stream":7,"device":0}},
  {"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":110,"dur":20,"args":{"correlation":6,"stream":7,"device":0}}]})json";
}

TEST(TraceReplay, GraphLaunchedOpsAreLaunchedOpsNotQueuedOnes) {
  const ImportedTrace trace = import_trace_text(graph_step_trace(), "graph.json");
  EXPECT_EQ(trace.devices[0].ops_without_launch, 0u);
  const ReplayModel m = build_replay_model(trace, -1);
  EXPECT_EQ(m.counts.ops_without_launch, 0u);
  EXPECT_EQ(m.counts.graph_ops, 2u);
  EXPECT_EQ(m.counts.launches, 2u);
  for (const ReplayOp& op : m.ops) EXPECT_NE(op.launch, kNone) << m.names[op.name];
  // The three graph kernels and the plain one are the step's ops; two launches.
  const auto times = trace_forward_times(m);
  ASSERT_EQ(times.size(), 1u);
  EXPECT_EQ(times[0].ops, 4u);
  EXPECT_EQ(times[0].launches, 2u);
  const TraceSummary s = summarize_trace(trace, m, us(30));
  EXPECT_DOUBLE_EQ(s.metrics.at("ops_per_forward"), 4.0);
  EXPECT_DOUBLE_EQ(s.metrics.at("launches_per_forward"), 2.0);
  // Unedited, every op replays where the trace has it.
  const ReplayTimes t = replay(m);
  for (std::size_t i = 0; i < m.ops.size(); ++i) {
    EXPECT_EQ(t.op_start[i] + m.origin_ns, m.ops[i].trace_start_ns) << m.names[m.ops[i].name];
    EXPECT_EQ(t.op_end[i] + m.origin_ns, m.ops[i].trace_end_ns) << m.names[m.ops[i].name];
  }
  // Dropping the graph launch drops its three kernels; dropping one kernel keeps the launch.
  EditReport dropped_graph;
  const ReplayModel without_graph = apply_edits(m, ReplayEdits{.drop = "cudaGraphLaunch"}, dropped_graph);
  EXPECT_EQ(dropped_graph.dropped_ops, 3u);
  EXPECT_EQ(dropped_graph.dropped_launches, 1u);
  EXPECT_EQ(without_graph.ops.size(), 1u);
  EditReport dropped_one;
  const ReplayModel without_g1 = apply_edits(m, ReplayEdits{.drop = "g1"}, dropped_one);
  EXPECT_EQ(dropped_one.dropped_ops, 1u);
  EXPECT_EQ(dropped_one.dropped_launches, 0u);
  ASSERT_EQ(without_g1.ops.size(), 3u);
  for (const ReplayOp& op : without_g1.ops) EXPECT_NE(op.launch, kNone) << without_g1.names[op.name];
  const auto edited = trace_forward_times(without_g1);
  EXPECT_EQ(edited[0].ops, 3u);
  EXPECT_NO_THROW(replay(without_g1));
}

TEST(TraceDiff, DifferentWorkloadsAreRefused) {
  const ImportedTrace a_trace = import_trace_text(one_step_trace(), "a.json");
  const ImportedTrace b_trace = import_trace_file(fixture("torch_npu_two_streams.json"));
  const TraceSummary a = summarize_trace(a_trace, build_replay_model(a_trace, -1), us(30));
  const TraceSummary b = summarize_trace(b_trace, build_replay_model(b_trace, -1), us(30));
  EXPECT_THROW(diff_traces(a, b, false), InvalidInput);
  EXPECT_NO_THROW(diff_traces(a, b, true));
}

}  // namespace
}  // namespace encbench::trace

namespace encbench::trace {
namespace {

// The worked example of docs/trace.md: a torch_npu-layout encoder forward with a per-layer
// seq_lens D2H (hand-built by fixtures/make_npu_encoder_forward.py, which also places the same
// program without the D2H by the sim device's rules: 293 us).
TEST(TraceReplay, TorchNpuEncoderForwardWithoutTheD2H) {
  const ImportedTrace trace = import_trace_file(fixture("torch_npu_encoder_forward.json"));
  const ReplayModel model = build_replay_model(trace, -1);
  ASSERT_EQ(model.forwards.size(), 1u);
  EXPECT_EQ(model.counts.waits, 5u);  // four per-layer syncs and the forward's last one
  EXPECT_EQ(trace_forward_times(model)[0].duration_ns(), us(489));
  EXPECT_EQ(measure_replay(model, replay(model), us(30)).forwards[0].duration_ns(), us(489));

  ReplayEdits edits;
  edits.drop = "Sub|MemCopy";  // the copy's launch, its synchronize and aten::tolist go with it
  EditReport report;
  const ReplayModel edited = apply_edits(model, edits, report);
  EXPECT_EQ(report.dropped_ops, 8u);
  EXPECT_EQ(report.dropped_waits, 4u);
  EXPECT_EQ(report.dropped_host_work_ns, us(40));  // tolist's own 10 us per layer
  const ReplayMetrics m = measure_replay(edited, replay(edited), us(30));
  EXPECT_EQ(m.forwards[0].duration_ns(), us(293));
  EXPECT_EQ(m.forwards[0].critical_path.length_ns, us(293));
  EXPECT_EQ(m.device_idle.idle_ns_by_class.at(timeline::GapClass::sync_stall), 0);
}

// The worked example's fixture (docs/trace.md): real kernel names, 19 tasks per layer; the what-if
// must give what make_npu_vit_forward.py places for the program without the D2H.
TEST(TraceReplay, TorchNpuVitForwardWithoutTheD2H) {
  const ImportedTrace trace = import_trace_file(fixture("torch_npu_vit_forward.json"));
  const ReplayModel model = build_replay_model(trace, -1);
  ASSERT_EQ(model.forwards.size(), 1u);
  EXPECT_EQ(trace_forward_times(model)[0].duration_ns(), us(1633));
  EXPECT_EQ(measure_replay(model, replay(model), us(30)).forwards[0].duration_ns(), us(1633));
  ReplayEdits edits;
  edits.drop = "Sub|MemCopy";
  EditReport report;
  const ReplayModel edited = apply_edits(model, edits, report);
  EXPECT_EQ(report.dropped_ops, 8u);
  EXPECT_EQ(measure_replay(edited, replay(edited), us(30)).forwards[0].duration_ns(), us(1417));
}

}  // namespace
}  // namespace encbench::trace

namespace encbench::trace {
namespace {

// torch_npu, one compute stream (2) and the HCCL lane: MatMul [20, 120] launched at 5, then an
// EVENT_WAIT [120, 300] for the allreduce on the collective stream [150, 298], then AddN, launched
// at 30 (queued), runs [305, 330]. ProfilerStep#1 is [0, 100]; the forward ends with AddN at 330.
// Critical path: AddN 25 <- its queue gap 185 (the stream waiting for the allreduce) <- MatMul 100
// <- launch latency 15 <- Node@launch <- host work 5.
std::string allreduce_wait_trace() {
  return R"json([
  {"ph":"M","name":"process_name","pid":1263616,"tid":0,"args":{"name":"Python"}},
  {"ph":"M","name":"process_name","pid":1263648,"tid":0,"args":{"name":"CANN"}},
  {"ph":"M","name":"process_name","pid":1263872,"tid":0,"args":{"name":"Ascend Hardware"}},
  {"ph":"M","name":"process_labels","pid":1263872,"tid":0,"args":{"labels":"NPU 0"}},
  {"ph":"M","name":"thread_name","pid":1263872,"tid":2,"args":{"name":"Stream 2"}},
  {"ph":"M","name":"process_name","pid":1263904,"tid":0,"args":{"name":"HCCL"}},
  {"ph":"M","name":"thread_name","pid":1263904,"tid":5,"args":{"name":"Group 1 Communication"}},
  {"ph":"X","name":"ProfilerStep#1","pid":1263616,"tid":1,"ts":"1700000000000000.000","dur":100.0},
  {"ph":"X","name":"Node@launch","pid":1263648,"tid":1,"ts":"1700000000000005.000","dur":10.0},
  {"ph":"X","name":"Node@launch","pid":1263648,"tid":1,"ts":"1700000000000030.000","dur":5.0},
  {"ph":"X","name":"MatMul","pid":1263872,"tid":2,"ts":"1700000000000020.000","dur":100.0,"args":{"Task Type":"AI_CORE","Physic Stream Id":2}},
  {"ph":"X","name":"EVENT_WAIT_SQE","pid":1263872,"tid":2,"ts":"1700000000000120.000","dur":180.0,"args":{"Task Type":"EVENT_WAIT_SQE","Physic Stream Id":2}},
  {"ph":"X","name":"AddN","pid":1263872,"tid":2,"ts":"1700000000000305.000","dur":25.0,"args":{"Task Type":"AI_VECTOR_CORE","Physic Stream Id":2}},
  {"ph":"X","name":"hcom_allReduce_1","pid":1263904,"tid":5,"ts":"1700000000000150.000","dur":148.0},
  {"ph":"s","cat":"HostToDevice","name":"HostToDevice","id":1,"pid":1263648,"tid":1,"ts":"1700000000000005.000","bp":"e"},
  {"ph":"f","cat":"HostToDevice","name":"HostToDevice","id":1,"pid":1263872,"tid":2,"ts":"1700000000000020.000","bp":"e"},
  {"ph":"s","cat":"HostToDevice","name":"HostToDevice","id":2,"pid":1263648,"tid":1,"ts":"1700000000000030.000","bp":"e"},
  {"ph":"f","cat":"HostToDevice","name":"HostToDevice","id":2,"pid":1263872,"tid":2,"ts":"1700000000000305.000","bp":"e"}])json";
}

TEST(TraceReplay, QueueGapHeldByAnAllreduceIsLabelledByIt) {
  const ImportedTrace imported = import_trace_text(allreduce_wait_trace(), "allreduce.json");
  const ReplayModel m = build_replay_model(imported, -1);
  // trace diff has the class as a metric (0 here: the device stays busy with the allreduce).
  EXPECT_EQ(summarize_trace(imported, m, us(30)).metrics.count("cross_stream_wait_ms"), 1u);
  std::size_t collectives = 0;
  for (const ReplayOp& op : m.ops) collectives += op.collective ? 1 : 0;
  EXPECT_EQ(collectives, 1u);
  const ReplayMetrics r = measure_replay(m, replay(m), us(30), 20);
  ASSERT_EQ(r.forwards.size(), 1u);
  const CriticalPath& p = r.forwards[0].critical_path;
  EXPECT_EQ(p.length_ns, us(330));
  Nanos held = 0, unlabelled = 0;
  for (const CriticalSegment& s : p.segments) {
    if (s.kind == "cross_stream_wait" && s.name == "hcom_allReduce_1") held += s.total_ns;
    if (s.kind == "queue_gap") unlabelled += s.total_ns;
  }
  EXPECT_EQ(held, us(185));
  EXPECT_EQ(unlabelled, 0);
  EXPECT_EQ(p.device_ns, us(125));
  EXPECT_EQ(p.latency_ns, us(200));  // 185 held + MatMul's 15 launch latency
}

}  // namespace
}  // namespace encbench::trace
