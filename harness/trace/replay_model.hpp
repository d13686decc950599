#pragma once
// The replay model of a measured trace: what `encbench trace whatif` edits and replays.
//
// A device's imported timeline (trace_import.hpp) becomes plain data with the dependencies the
// trace shows, and nothing else:
//   - host actions per host thread, in program order: launches (a runtime call that submits a
//     device op, linked by correlation id or flow) and blocking waits (synchronize calls, blocking
//     copies, encbench's D2H waits). The host time between two actions of a thread is host work
//     (`host_gap_ns`), the thing `--host-scale` scales.
//   - device ops per stream, in stream order, each with its measured duration, launch latency
//     (submit to start when the host was late) and queue gap (previous op's end to start when
//     the op was already queued).
//   - edges: host order on a thread, launch (action -> op), stream order (op -> next op on its
//     stream), sync (awaited op -> wait action). HTA's critical-path graph has the same four kinds.
//   - forwards: ProfilerStep#N style host spans (else vLLM's execute_model annotations), else
//     ranges closed by a `forward_end` wait (encbench encode), else the whole trace.
// Building never replays; replay.hpp does.
#include <cstdint>
#include <string>
#include <vector>

#include "harness/timeline/trace_event.hpp"
#include "harness/trace_read/trace_import.hpp"

namespace encbench::trace {

inline constexpr std::int64_t kNone = -1;

struct HostAction {
  bool launches = false;            // submits `op` (a blocking copy both launches and waits)
  bool waits = false;               // blocks until `awaited_op` ends
  std::uint32_t thread = 0;
  std::uint32_t name = 0;           // index into ReplayModel::names
  int layer = -1;
  std::int64_t op = kNone;          // launched op
  // A call that launched more ops than `op` (a CUDA graph launch: one correlation id on many
  // kernels): the others, each also with `launch` = this action.
  std::vector<std::int64_t> also_launches;
  std::int64_t awaited_op = kNone;  // op the wait blocks on (kNone: nothing, the call just costs time)
  std::int64_t thread_prev = kNone; // previous action of the same thread
  Nanos trace_start_ns = 0, trace_end_ns = 0;
  Nanos host_gap_ns = 0;            // host work since the previous action of this thread ended
  Nanos call_ns = 0;                // the call's own time (launch API; a wait that did not block)
  Nanos submit_offset_ns = 0;       // launch: the op is submitted this long after the call starts
  Nanos wakeup_ns = 0;              // wait: the host resumes this long after the awaited op ends
};

// Calls f(op) for every op an action launched: its op, then a graph launch's others.
template <class F>
void for_each_launched(const HostAction& a, F&& f) {
  if (!a.launches) return;
  f(a.op);
  for (const std::int64_t op : a.also_launches) f(op);
}

struct ReplayOp {
  std::uint32_t name = 0;
  timeline::OpCategory category = timeline::OpCategory::kernel;
  int stream = 0;
  int layer = -1;
  std::int64_t launch = kNone;      // action that submitted it (kNone: queued before the trace)
  std::int64_t stream_prev = kNone; // previous op on the same stream
  Nanos trace_submit_ns = 0, trace_start_ns = 0, trace_end_ns = 0;
  Nanos duration_ns = 0;
  // The op reaches the device launch_latency after its submit, and can follow the previous op
  // of its stream queue_gap after that one ends. The term that set the op's start in the trace
  // is measured; the other is the trace's typical value, capped so that it never makes the
  // unedited replay later than the trace. (A cross-stream event wait the trace does not show
  // as an edge is part of the measured term.)
  Nanos launch_latency_ns = 0;
  Nanos queue_gap_ns = 0;
  double flops = 0, bytes = 0;
  bool collective = false;          // HCCL/NCCL collective (its own label on the critical path)
  // The queue gap before this op was its stream waiting for another stream (a device-side event
  // wait covering it): the op on another stream that released it, by name (kNoReleaser: none).
  std::uint32_t released_by = kNoReleaser;
  static constexpr std::uint32_t kNoReleaser = 0xffffffffu;
};

// A collective by name (NCCL kernels, HCCL's hcom_* ops) or by torch_npu's HCCL lane stream.
bool is_collective_op(std::string_view name, int stream);

// Host work span (framework op, user annotation) kept to know which host work only dropped
// calls need: a span that encloses dropped calls and no kept one goes with them.
struct WorkSpan {
  std::uint32_t thread = 0;
  Nanos start_ns = 0, end_ns = 0;
};

struct ForwardRange {
  std::string name;                 // "forward 0", "ProfilerStep#3"
  std::size_t first_action = 0, end_action = 0;  // [first, end) into ReplayModel::actions
  Nanos trace_start_ns = 0;         // host begins the forward
  Nanos trace_end_ns = 0;           // last action or device op of the forward ends
  Nanos lead_ns = 0;                // host work from the forward's start to its first action
  Nanos tail_ns = 0;                // host work after its last action (inside a step marker)
  bool closed_by_wait = false;      // the last action is the forward's closing synchronize
};

struct ModelCounts {
  std::size_t launches = 0, waits = 0;
  std::size_t waits_without_target = 0;   // synchronize with no op submitted before it
  std::size_t ops_without_launch = 0;     // no correlation/flow: queued at the trace start
  std::size_t graph_ops = 0;              // launched by a call that launched another op first (graphs)
  std::size_t nested_calls_folded = 0;    // runtime calls inside another call (driver under runtime)
};

inline constexpr std::string_view kDefaultStepMarker = "ProfilerStep#*";

// The step markers tried in turn for `marker` (the first that matches a host span wins). For
// the default, ProfilerStep#*, then vLLM's own markers: vLLM starts the profiler without a
// schedule, so its traces have no ProfilerStep, but its GPU worker annotates each
// execute_model call (gpu_worker.py annotate_profile: "execute_new_N_cached_M", later
// "execute_context_N(T)_generation_M(T)", with the profiler's detailed_trace_annotation
// "execute_T_context_N(sq..sk..)_generation_M(sq..sk..)"), and its model runner each forward
// ("gpu_model_runner: forward", inside the former). Any other marker is tried alone.
std::vector<std::string> step_marker_candidates(std::string_view marker);

struct ModelOptions {
  std::string forward_marker = std::string(kDefaultStepMarker);  // glob for host spans delimiting forwards
  std::string forward_end = "forward_end";        // a wait of this name closes a forward
};

struct ReplayModel {
  std::string source;
  std::string device_label;
  TraceLayout layout = TraceLayout::kineto;
  std::vector<std::string> names;
  std::vector<HostAction> actions;  // sorted by trace start (global program order)
  std::vector<ReplayOp> ops;        // sorted by trace start
  std::vector<WorkSpan> work_spans;
  std::vector<ForwardRange> forwards;
  std::vector<int> streams;         // stream ids, sorted
  std::uint32_t host_threads = 0;
  Nanos origin_ns = 0;              // trace time that replay time 0 stands for
  ModelCounts counts;
};

// Builds the model of one device of an imported trace (the device with the most ops when
// `device` is negative). Throws InvalidInput when the device has no ops or no op can be tied
// to the host (no correlation ids or flows at all).
ReplayModel build_replay_model(const ImportedTrace& trace, int device, const ModelOptions& options = {});

// Shell-style glob: '*' any run, '?' one character; alternatives separated by '|'.
bool glob_match(std::string_view pattern, std::string_view text);

}  // namespace encbench::trace
