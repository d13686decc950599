#pragma once
// Discrete-event replay of a ReplayModel (replay_model.hpp), its edits, and what a replay
// yields: per-forward times, the device timeline (for the project's one gap analysis) and the
// critical path of each forward.
//
// Replay applies the virtual-clock sim device's rules (timeline/event_rules.hpp), not a copy:
//   op start    = op_start_ns(submit + launch latency, stream ready + queue gap)
//   wait end    = host_after_wait_ns(call start, awaited op end, wake-up), at least the call
//   action start = previous action of the thread ends + host work between them
// Unedited, it reproduces the trace (each rule's inputs are the trace's own times).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/timeline/gaps.hpp"
#include "harness/trace/replay_model.hpp"

namespace encbench::trace {

// ---- define: edits -------------------------------------------------------------------------

struct KernelEdit {
  std::string pattern;                // glob on op names
  double factor = 1.0;                // "=x0.8"
  std::optional<Nanos> duration_ns;   // "=120us" replaces the duration
};

struct ReplayEdits {
  std::string drop;                   // globs ('|'-separated) of ops and host calls to remove
  double host_scale = 1.0;            // multiplies the host work between calls
  std::optional<Nanos> launch_overhead_ns;  // replaces every launch call's duration
  std::vector<KernelEdit> kernels;
  bool empty() const {
    return drop.empty() && host_scale == 1.0 && !launch_overhead_ns && kernels.empty();
  }
};

// "FlashAttention*=x0.8" or "attention=120us" / "=0.5ms" / "=800ns". Throws InvalidInput.
KernelEdit parse_kernel_edit(std::string_view text);

struct EditReport {
  std::size_t dropped_ops = 0, dropped_launches = 0, dropped_waits = 0;
  Nanos dropped_host_work_ns = 0;     // host work that only dropped calls needed
  std::vector<std::size_t> kernel_matches;  // ops matched per --kernel edit
};

// Returns the edited model. Throws InvalidInput when --drop or a --kernel pattern matches nothing.
ReplayModel apply_edits(const ReplayModel& model, const ReplayEdits& edits, EditReport& report);

// ---- execute: replay -----------------------------------------------------------------------

enum class Bound : std::uint8_t { origin, host_order, launch, stream_order, awaited_op };

struct ReplayTimes {
  std::vector<Nanos> action_start, action_end, op_start, op_end;  // replay ns (0 = trace origin)
  std::vector<Bound> action_bound, op_bound;  // which dependency set each node's time
};

// Throws InvalidInput naming the nodes involved when the dependencies form a cycle.
ReplayTimes replay(const ReplayModel& model);

// ---- measure ----------------------------------------------------------------------------------

struct CriticalSegment {
  // host_work, launch_call, wait_call, wait_wakeup, launch_latency, queue_gap, device_op, collective
  // (an HCCL/NCCL op), cross_stream_wait (a queue gap held by an event wait; named after the op of
  // another stream that released it)
  std::string kind;
  std::string name;   // the call or op it belongs to
  Nanos total_ns = 0;
  std::size_t count = 0;
};

struct CriticalPath {
  Nanos length_ns = 0;                    // = the forward's time
  Nanos device_ns = 0, host_ns = 0, wait_ns = 0, latency_ns = 0;
  std::vector<CriticalSegment> segments;  // aggregated by (kind, name), largest first
};

struct ForwardTimes {
  std::string name;
  Nanos start_ns = 0, end_ns = 0;
  Nanos duration_ns() const { return end_ns - start_ns; }
  std::size_t ops = 0, launches = 0, waits = 0;
  CriticalPath critical_path;
};

struct ReplayMetrics {
  std::vector<ForwardTimes> forwards;
  timeline::GapAnalysis device_idle;      // over the forwards, device-wide
};

// Forward times of the trace itself (replay time axis: 0 = trace origin).
std::vector<ForwardTimes> trace_forward_times(const ReplayModel& model);
// The replay's device timeline: ops with their replayed submit/start/end, host calls as spans.
timeline::Timeline replay_timeline(const ReplayModel& model, const ReplayTimes& times);
ReplayMetrics measure_replay(const ReplayModel& model, const ReplayTimes& times, Nanos kernel_wait_threshold_ns,
                             std::size_t critical_path_top = 12);
CriticalPath critical_path(const ReplayModel& model, const ReplayTimes& times, const ForwardRange& forward,
                           Nanos forward_start_ns, std::size_t top);

nlohmann::json to_json(const CriticalPath& path);

}  // namespace encbench::trace
