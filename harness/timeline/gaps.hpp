#pragma once
// Idle-gap analysis of a recorded Timeline. Reads records only; never measures.
//
// Classes (names shared with CLI, JSON and docs):
//   host_wait   the next op had not been submitted when the device went idle (host too slow);
//   sync_stall  same, but the host was blocked in a D2H copy / synchronize / event wait when the
//               device went idle, so the gap is the cost of that sync (wake-up + host work after);
//   kernel_wait the next op was already queued; a short device-side delay (launch latency) below
//               kernel_wait_threshold_ns;
//   other       queued but idle for longer than the threshold (unexplained);
//   cross_stream_wait  the next op's stream was held by a device-side wait for another stream
//               (Timeline::stream_waits, torch_npu EVENT_WAIT_SQE) for at least half of the gap.
//
// Exact rules (docs/device.md repeats them). Busy = union of the device ops' [start, end) within
// the window (sync markers and zero-length ops do not occupy the device). A gap is the time
// between two consecutive busy intervals; prev = the op whose end closes the earlier interval,
// next = the op that opens the later one (earliest start, then earliest submit).
//   first: cross_stream_wait if StreamWaits on next.stream overlap the gap for at least half
//                                 its duration and the last of them ends at or after
//                                 next.submit_ns (the other stream released the op after the
//                                 host had submitted it: the wait, not the host, was last);
//   next.submit_ns >  gap start:  sync_stall if the submitting host thread (next.host_thread) has
//                                 a HostSpan kind=wait with start <= gap start <= end (active when
//                                 the device went idle) or with gap start <= end <= next.submit_ns
//                                 (ended within the gap before the submit); else host_wait.
//   next.submit_ns <= gap start:  kernel_wait if duration < kernel_wait_threshold_ns, else other.
// Cause: the host spans (any thread) overlapping the gap, largest overlap first (ties: the
// submitting thread, then the shorter span); `cause` renders the first as
// "<span name> (<kind>), layer N" (", layer N" omitted for layer -1).
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/timeline/trace_event.hpp"

namespace encbench::timeline {

enum class GapClass : std::uint8_t { host_wait, sync_stall, kernel_wait, other, cross_stream_wait };
std::string_view to_string(GapClass gap_class);
inline constexpr GapClass kAllGapClasses[] = {GapClass::host_wait, GapClass::sync_stall, GapClass::kernel_wait,
                                              GapClass::other, GapClass::cross_stream_wait};

struct GapOptions {
  // Queued gaps shorter than this are kernel_wait, longer ones other. Unit: nanoseconds.
  Nanos kernel_wait_threshold_ns = 30'000;
  // Analyse only [window_start_ns, window_end_ns); 0/0 = the whole timeline.
  Nanos window_start_ns = 0;
  Nanos window_end_ns = 0;
  // Gaps shorter than this are ignored entirely (clock granularity). Unit: nanoseconds.
  Nanos min_gap_ns = 0;
  // Name each gap's host causes (Gap::causes, Gap::cause). Off where only totals are wanted.
  bool attribute_causes = true;
};

// One host span that overlapped a gap.
struct GapCause {
  std::string name;
  HostSpanKind kind = HostSpanKind::work;
  int layer = -1;
  std::uint32_t thread = 0;
  Nanos overlap_ns = 0;
};

struct Gap {
  Nanos start_ns = 0;        // end of the previous device op (device-wide union)
  Nanos end_ns = 0;          // start of the next device op
  GapClass gap_class = GapClass::other;
  std::uint64_t prev_op = 0; // DeviceOp ids around the gap
  std::uint64_t next_op = 0;
  int layer = -1;            // layer of the next op
  std::string cause;         // host activity during the gap, e.g. "seq_lens_d2h (wait), layer 12"
  std::vector<GapCause> causes;  // overlapping host spans, largest overlap first (at most 4)
  Nanos duration_ns() const { return end_ns - start_ns; }
};

struct LayerBreakdown {
  int layer = -1;
  Nanos device_busy_ns = 0;  // union of the layer's device ops
  Nanos idle_ns = 0;         // gaps whose next op belongs to the layer
  Nanos host_ns = 0;         // host spans (api + work + wait) attributed to the layer
  std::size_t syncs = 0;     // blocking host waits attributed to the layer
};

struct GapAnalysis {
  int stream = -1;                           // -1: device-wide union of all streams
  Nanos kernel_wait_threshold_ns = 0;        // the option the gaps were classified with
  Nanos span_start_ns = 0, span_end_ns = 0;  // first device start .. last device end in window
  Nanos busy_ns = 0;                         // union of all device ops
  Nanos idle_ns = 0;                         // span - busy
  double idle_fraction = 0;                  // idle / span
  std::size_t op_count = 0;
  std::size_t syncs = 0;                     // host wait spans (D2H, synchronize, event waits)
  std::vector<Gap> gaps;                     // in time order
  std::map<GapClass, Nanos> idle_ns_by_class;  // every class present (0 when none)
  std::map<GapClass, std::size_t> count_by_class;
  double gap_p50_us = 0, gap_p99_us = 0, gap_max_us = 0;  // numpy-linear percentiles
  std::vector<LayerBreakdown> layers;        // sorted by layer; layer -1 = not layer-specific
};

// A sim device on the real clock records when each op really completed (DeviceOp::real_end_ns);
// lateness = real completion - modelled end: the machine failing to keep up with the model.
struct LatenessSummary {
  std::size_t ops = 0;  // ops with a real completion time (0: not measured, e.g. virtual clock)
  double p50_us = 0, p99_us = 0, max_us = 0;
};
LatenessSummary lateness_of(const Timeline& timeline);

// Device-wide analysis (union of all streams).
GapAnalysis analyze_gaps(const Timeline& timeline, const GapOptions& options = {});
// Only the ops of one stream (gaps are per-stream, as in HTA). InvalidInput for stream < 0.
GapAnalysis analyze_stream_gaps(const Timeline& timeline, int stream, const GapOptions& options = {});
// Renders a cause as "<name> (<kind>), layer N".
std::string describe_cause(const GapCause& cause);

// Human summary (a few lines): span, busy/idle, syncs, gap percentiles, idle by class and the
// `max_gaps` largest gaps with their class and cause.
std::string to_text(const GapAnalysis& analysis, int max_gaps = 5);

// JSON form; `max_gaps` largest gaps listed individually (all when < 0).
nlohmann::json to_json(const GapAnalysis& analysis, int max_gaps = 20);

}  // namespace encbench::timeline
