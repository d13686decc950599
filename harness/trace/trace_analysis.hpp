#pragma once
// Idle-gap analysis of an imported profiler trace.
//
// Busy/idle and the gap classes come from timeline::analyze_gaps / analyze_stream_gaps (the one
// gap analysis of the project), run per device (union of streams) and per stream. What only
// traces need is computed here:
//   - HTA's view of the classes: host_wait (encbench's host_wait + sync_stall), kernel_wait, other;
//   - launch delay and launch API duration (HTA cuda_kernel_launch_stats semantics:
//     launch_delay = op.start - (api.start + api.dur) clipped at 0);
//   - queue length over time per stream (HTA trace_counters semantics: +1 at each launch call,
//     -1 at the op's start, launches with a matched op only);
//   - the largest device gaps with the host events around them.
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/timeline/gaps.hpp"
#include "harness/trace_read/trace_import.hpp"

namespace encbench::trace {

struct AnalyzeOptions {
  std::optional<int> stream;              // analyse only this device stream
  std::optional<int> device;              // analyse only this device
  // --window T0:T1 on the trace's own time axis (ts * 1000). 0/0: each device's step window
  // (framework_step_window), or the whole trace when it has none or whole_trace is set.
  Nanos window_start_ns = 0;
  Nanos window_end_ns = 0;
  bool whole_trace = false;               // --window whole
  std::string step_marker = "ProfilerStep#*";  // host spans that are the framework's steps
  // Queued gaps shorter than this are kernel_wait (HTA's consecutive_kernel_delay). HTA documents
  // its default 30 as nanoseconds but compares it with microsecond gaps, so it acts as 30 us;
  // we keep that effective value and state the unit.
  Nanos kernel_wait_threshold_ns = 30'000;
  int top_gaps = 10;                      // largest gaps listed per device
  int host_events_per_gap = 6;            // host events listed around each of those gaps
  Nanos launch_api_cutoff_ns = 50'000;    // HTA runtime_cutoff (50 us)
  Nanos launch_delay_cutoff_ns = 100'000; // HTA launch_delay_cutoff (100 us)
  int max_queue_gauge = 1024;             // CUDA_MAX_LAUNCH_QUEUE_PER_STREAM
  std::size_t queue_series_max_points = 2000;  // series in the JSON are thinned to this
};

// count/mean/std(ddof=0)/min/percentiles/max, in microseconds (pandas describe() minus ddof).
struct Distribution {
  std::size_t count = 0;
  double mean = 0, stdev = 0, min = 0, p25 = 0, p50 = 0, p75 = 0, p90 = 0, p99 = 0, max = 0;
};
Distribution describe(std::vector<double> values);
nlohmann::json to_json(const Distribution& d);

struct LaunchStats {
  std::size_t pairs = 0;                 // launch API call + device op pairs in the window
  Distribution launch_delay_us;          // op.start - api.end, clipped at 0
  Distribution api_duration_us;          // api.end - api.start
  std::size_t short_ops = 0;             // op duration < api duration (launch-bound)
  std::size_t api_outliers = 0;          // api duration > launch_api_cutoff
  std::size_t delay_outliers = 0;        // launch delay > launch_delay_cutoff
};

struct QueuePoint {
  Nanos t_ns = 0;
  int length = 0;  // outstanding launched-but-not-started ops after this time
};

struct QueueLengthStats {
  int stream = 0;
  // Launches left out: their op started at or before the launch call began (host/device clock
  // skew; it spent no measurable time queued). Counting them would take the length below zero.
  std::size_t left_out = 0;
  Distribution samples;                   // HTA describe(): one sample per change point
  double time_weighted_mean = 0;          // over the analysed span
  int max = 0;
  Nanos time_at_max_gauge_ns = 0;         // time with length >= max_queue_gauge
  double time_at_max_gauge_fraction = 0;  // of the analysed span
  std::vector<QueuePoint> series;         // step function, every change point in the window
};

struct HostEventRef {
  std::string name;
  timeline::HostSpanKind kind = timeline::HostSpanKind::work;
  std::uint32_t thread = 0;
  Nanos start_ns = 0, end_ns = 0;
};

struct GapDetail {
  timeline::Gap gap;
  std::string prev_op, next_op;
  int next_stream = 0;
  std::optional<Nanos> next_submit_ns;   // launch call of the op after the gap
  std::string next_launch_api;
  std::vector<HostEventRef> host_events; // host spans overlapping the gap, innermost first
};

// HTA's three classes from encbench's four (sync_stall is HTA's host_wait).
struct HtaClasses {
  Nanos host_wait_ns = 0, kernel_wait_ns = 0, other_ns = 0;
  std::size_t host_wait_count = 0, kernel_wait_count = 0, other_count = 0;
};
HtaClasses hta_classes(const timeline::GapAnalysis& analysis);

struct StreamReport {
  int stream = 0;
  std::string name;
  timeline::GapAnalysis gaps;
  LaunchStats launch;
  QueueLengthStats queue;
};

// The time range a device's figures cover, and where it came from.
struct AnalysisWindow {
  Nanos start_ns = 0, end_ns = 0;      // trace ts axis; 0/0 = the whole trace
  std::string source;                  // "--window", "whole trace", "torch_npu Overlap Analysis ...", "ProfilerStep#* ..."
  bool whole() const { return end_ns <= start_ns; }
};

// The framework's own step window of a device, as the framework measures it:
//   1. torch_npu: the Overlap Analysis lane's extent (its Computing and Communication slices:
//      step_trace_time.csv's Stage, whose Free is the idle inside it);
//   2. host spans matching `step_marker` (ProfilerStep#N), mapped onto the device as torch_npu's
//      step_trace_time does (FwkCANNRelationParser.get_step_range): from the first op launched
//      inside a step to the later of the step's end and the end of the last op launched inside it;
//      several steps: from the first one's start to the last one's end;
//   nullopt when the trace has neither.
std::optional<AnalysisWindow> framework_step_window(const DeviceTrace& device, std::string_view step_marker);

struct DeviceReport {
  int device = 0;
  std::string label;
  AnalysisWindow window;               // what every figure below covers
  std::optional<timeline::GapAnalysis> whole_trace;  // beside a step window: the whole trace
  std::size_t skewed_ops = 0;          // ops starting before their launch (DeviceTrace::skewed_ops)
  Nanos max_skew_ns = 0;
  timeline::GapAnalysis gaps;          // union of the selected streams
  std::vector<StreamReport> streams;
  LaunchStats launch;                  // all selected streams
  std::vector<GapDetail> largest_gaps;
  std::size_t ops_without_launch = 0;
};

struct TraceReport {
  AnalyzeOptions options;
  std::vector<DeviceReport> devices;
  Nanos analysis_ns = 0;
};

// Throws InvalidInput when the selection (device, stream, window) matches no device op.
TraceReport analyze_trace(const ImportedTrace& trace, const AnalyzeOptions& options);

// The timeline the analysis ran on for one device (after --stream filtering).
timeline::Timeline selected_timeline(const DeviceTrace& device, const AnalyzeOptions& options);

// Result body (the caller adds the envelope): input, import, options, devices.
nlohmann::json to_json(const ImportedTrace& trace, const TraceReport& report);

// Human summary (what `encbench trace analyze` prints).
void print_summary(std::ostream& out, const ImportedTrace& trace, const TraceReport& report);

// Chrome trace of one device with the gaps annotated (timeline's writer) plus queue-length
// counter tracks ("C" events) per stream.
nlohmann::json annotated_chrome_trace(const ImportedTrace& trace, const TraceReport& report,
                                      std::size_t device_index, const nlohmann::json& metadata);

}  // namespace encbench::trace
