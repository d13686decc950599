#include "harness/trace/trace_analysis.hpp"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <map>
#include <ostream>
#include <sstream>
#include <unordered_map>

#include "harness/core/error.hpp"
#include "harness/core/glob.hpp"
#include "harness/trace/replay_model.hpp"
#include "harness/core/number_format.hpp"
#include "harness/core/stats.hpp"
#include "harness/timeline/chrome_trace.hpp"

namespace encbench::trace {

using timeline::GapAnalysis;
using timeline::GapClass;
using timeline::HostSpanKind;

Distribution describe(std::vector<double> values) {
  Distribution d;
  d.count = values.size();
  if (values.empty()) return d;
  std::sort(values.begin(), values.end());
  d.mean = stats::mean(values);
  d.stdev = stats::stdev_population(values);
  d.min = values.front();
  d.max = values.back();
  d.p25 = stats::percentile_sorted(values, 25);
  d.p50 = stats::percentile_sorted(values, 50);
  d.p75 = stats::percentile_sorted(values, 75);
  d.p90 = stats::percentile_sorted(values, 90);
  d.p99 = stats::percentile_sorted(values, 99);
  return d;
}

nlohmann::json to_json(const Distribution& d) {
  return {{"count", d.count}, {"mean", d.mean}, {"std", d.stdev}, {"min", d.min}, {"p25", d.p25},
          {"p50", d.p50},     {"p75", d.p75},   {"p90", d.p90},   {"p99", d.p99}, {"max", d.max}};
}

HtaClasses hta_classes(const GapAnalysis& analysis) {
  auto ns = [&](GapClass c) {
    const auto it = analysis.idle_ns_by_class.find(c);
    return it == analysis.idle_ns_by_class.end() ? Nanos{0} : it->second;
  };
  auto count = [&](GapClass c) {
    const auto it = analysis.count_by_class.find(c);
    return it == analysis.count_by_class.end() ? std::size_t{0} : it->second;
  };
  HtaClasses h;
  h.host_wait_ns = ns(GapClass::host_wait) + ns(GapClass::sync_stall);
  h.host_wait_count = count(GapClass::host_wait) + count(GapClass::sync_stall);
  h.kernel_wait_ns = ns(GapClass::kernel_wait);
  h.kernel_wait_count = count(GapClass::kernel_wait);
  // HTA has no cross-stream class: such a gap's op was queued behind the wait, HTA's other.
  h.other_ns = ns(GapClass::other) + ns(GapClass::cross_stream_wait);
  h.other_count = count(GapClass::other) + count(GapClass::cross_stream_wait);
  return h;
}

namespace {

bool windowed(const AnalyzeOptions& o) { return o.window_end_ns > o.window_start_ns; }

bool in_window(const AnalyzeOptions& o, Nanos t) {
  return !windowed(o) || (t >= o.window_start_ns && t < o.window_end_ns);
}

LaunchStats launch_stats(const std::vector<const LaunchLink*>& links, const AnalyzeOptions& o) {
  LaunchStats s;
  std::vector<double> delays_us, api_us;
  for (const LaunchLink* link : links) {
    const Nanos api_dur = link->api_end_ns - link->api_start_ns;
    const Nanos delay = std::max<Nanos>(0, link->op_start_ns - link->api_end_ns);
    delays_us.push_back(ns_to_us(delay));
    api_us.push_back(ns_to_us(api_dur));
    if (link->op_end_ns - link->op_start_ns < api_dur) ++s.short_ops;
    if (api_dur > o.launch_api_cutoff_ns) ++s.api_outliers;
    if (delay > o.launch_delay_cutoff_ns) ++s.delay_outliers;
  }
  s.pairs = links.size();
  s.launch_delay_us = describe(std::move(delays_us));
  s.api_duration_us = describe(std::move(api_us));
  return s;
}

// HTA trace_counters: +1 at each launch call, -1 when its op starts; the cumulative sum is the
// number of ops submitted to the stream and not yet started. Ties: the start (-1) first.
QueueLengthStats queue_length(int stream, const std::vector<const LaunchLink*>& links,
                              const AnalyzeOptions& o) {
  QueueLengthStats q;
  q.stream = stream;
  std::vector<std::pair<Nanos, int>> deltas;
  deltas.reserve(links.size() * 2);
  for (const LaunchLink* link : links) {
    // Each +1 strictly before its own -1, so the running sum never drops below zero.
    if (link->op_start_ns <= link->api_start_ns) {
      if (in_window(o, link->op_start_ns)) ++q.left_out;
      continue;
    }
    deltas.emplace_back(link->api_start_ns, +1);
    deltas.emplace_back(link->op_start_ns, -1);
  }
  if (deltas.empty()) return q;
  std::sort(deltas.begin(), deltas.end());
  const Nanos span_start = windowed(o) ? o.window_start_ns : deltas.front().first;
  const Nanos span_end = windowed(o) ? o.window_end_ns : deltas.back().first;
  std::vector<double> samples;
  int length = 0;
  int length_at_span_start = 0;
  for (const auto& [t, delta] : deltas) {
    length += delta;
    if (t < span_start) {
      length_at_span_start = length;
      continue;
    }
    if (t >= span_end && windowed(o)) break;
    samples.push_back(length);
    if (!q.series.empty() && q.series.back().t_ns == t) {
      q.series.back().length = length;
    } else {
      q.series.push_back({t, length});
    }
  }
  // Time-weighted figures over [span_start, span_end].
  double weighted = 0;
  int current = length_at_span_start;
  Nanos at = span_start;
  q.max = current;
  auto account = [&](Nanos until) {
    const Nanos d = std::max<Nanos>(0, until - at);
    weighted += static_cast<double>(current) * static_cast<double>(d);
    if (current >= o.max_queue_gauge) q.time_at_max_gauge_ns += d;
  };
  for (const QueuePoint& p : q.series) {
    account(p.t_ns);
    at = p.t_ns;
    current = p.length;
    q.max = std::max(q.max, current);
  }
  account(span_end);
  const Nanos span = span_end - span_start;
  if (span > 0) {
    q.time_weighted_mean = weighted / static_cast<double>(span);
    q.time_at_max_gauge_fraction = static_cast<double>(q.time_at_max_gauge_ns) / static_cast<double>(span);
  }
  q.samples = describe(std::move(samples));
  return q;
}

int kind_rank(HostSpanKind kind) {
  switch (kind) {
    case HostSpanKind::wait: return 0;
    case HostSpanKind::api: return 1;
    case HostSpanKind::work: return 2;
  }
  return 3;
}

std::vector<HostEventRef> host_events_around(const timeline::Timeline& tl, Nanos start, Nanos end,
                                             int limit) {
  std::vector<HostEventRef> found;
  for (const auto& span : tl.host_spans) {
    if (span.start_ns >= end) break;  // sorted by start
    if (span.end_ns <= start) continue;
    found.push_back({span.name, span.kind, span.thread, span.start_ns, span.end_ns});
  }
  // Innermost and most telling first: waits, then API calls, then shorter work.
  std::stable_sort(found.begin(), found.end(), [](const HostEventRef& a, const HostEventRef& b) {
    if (kind_rank(a.kind) != kind_rank(b.kind)) return kind_rank(a.kind) < kind_rank(b.kind);
    return (a.end_ns - a.start_ns) < (b.end_ns - b.start_ns);
  });
  if (found.size() > static_cast<std::size_t>(std::max(0, limit))) found.resize(static_cast<std::size_t>(limit));
  return found;
}

double us_on_axis(Nanos ns) { return static_cast<double>(ns) / 1e3; }

// Host and device clocks of one machine disagree by microseconds (torch_npu: up to 13.6 us on
// msinsight level1); an op starting this long before its launch means the clocks are not
// comparable, not that the op ran before it was launched.
constexpr Nanos kExplainableSkewNs = 1'000'000;
bool clocks_inconsistent(const ImportCounts& c) { return c.max_skew_ns > kExplainableSkewNs; }

// The window of the host spans matching one step marker glob (nullopt when none matches).
std::optional<AnalysisWindow> marker_step_window(const DeviceTrace& device, std::string_view step_marker) {
  std::optional<AnalysisWindow> window;
  std::size_t steps = 0;
  for (const timeline::HostSpan& step : device.timeline.host_spans) {
    if (step.end_ns <= step.start_ns || !glob_match(step_marker, step.name)) continue;
    // Launches are sorted by their call's start: those inside the step are one run of them.
    const auto first = std::lower_bound(device.launches.begin(), device.launches.end(), step.start_ns,
                                        [](const LaunchLink& l, Nanos t) { return l.api_start_ns < t; });
    Nanos start = step.start_ns, end = step.end_ns;
    bool launched = false;
    for (auto it = first; it != device.launches.end() && it->api_start_ns <= step.end_ns; ++it) {
      start = launched ? std::min(start, it->op_start_ns) : it->op_start_ns;
      end = std::max(end, it->op_end_ns);
      launched = true;
    }
    ++steps;
    if (!window) window = AnalysisWindow{start, end, ""};
    window->start_ns = std::min(window->start_ns, start);
    window->end_ns = std::max(window->end_ns, end);
  }
  if (window) {
    window->source = std::string(step_marker) + " (" + std::to_string(steps) + (steps == 1 ? " step" : " steps") +
                     ", from the first op launched in a step to the later of its end and its ops' end)";
  }
  return window;
}

}  // namespace

std::optional<AnalysisWindow> framework_step_window(const DeviceTrace& device, std::string_view step_marker) {
  if (device.profiler_extent && device.profiler_extent->end_ns > device.profiler_extent->start_ns) {
    return AnalysisWindow{device.profiler_extent->start_ns, device.profiler_extent->end_ns, device.profiler_extent->source};
  }
  if (step_marker.empty()) return std::nullopt;
  for (const std::string& marker : step_marker_candidates(step_marker)) {
    if (auto window = marker_step_window(device, marker)) return window;
  }
  return std::nullopt;
}

timeline::Timeline selected_timeline(const DeviceTrace& device, const AnalyzeOptions& options) {
  timeline::Timeline tl = device.timeline;
  if (options.stream) {
    const int s = *options.stream;
    std::erase_if(tl.device_ops, [s](const timeline::DeviceOp& op) { return op.stream != s; });
    std::erase_if(tl.streams, [s](const timeline::StreamTrack& t) { return t.stream != s; });
  }
  return tl;
}

namespace {

timeline::GapOptions gap_options_of(const AnalyzeOptions& options) {
  timeline::GapOptions gap_options;
  gap_options.kernel_wait_threshold_ns = options.kernel_wait_threshold_ns;
  gap_options.window_start_ns = options.window_start_ns;
  gap_options.window_end_ns = options.window_end_ns;
  return gap_options;
}

// The device's launch links of the selected stream(s): by op (any API), and the runtime launches
// by stream and those in the window (the launch statistics count runtime launches only).
struct LaunchIndex {
  std::map<int, std::vector<const LaunchLink*>> runtime_by_stream;
  std::vector<const LaunchLink*> runtime_in_window;
  std::unordered_map<std::uint64_t, const LaunchLink*> by_op;
};

LaunchIndex index_launches(const DeviceTrace& device, const AnalyzeOptions& options) {
  LaunchIndex index;
  for (const LaunchLink& link : device.launches) {
    if (options.stream && link.stream != *options.stream) continue;
    index.by_op[link.op_id] = &link;
    if (!link.api_is_runtime) continue;
    index.runtime_by_stream[link.stream].push_back(&link);
    if (in_window(options, link.op_start_ns)) index.runtime_in_window.push_back(&link);
  }
  return index;
}

std::vector<StreamReport> stream_reports(const timeline::Timeline& tl, LaunchIndex& launches,
                                         const AnalyzeOptions& options, const timeline::GapOptions& gap_options) {
  std::vector<StreamReport> reports;
  for (const auto& track : tl.streams) {
    StreamReport sr;
    sr.stream = track.stream;
    sr.name = track.name;
    sr.gaps = timeline::analyze_stream_gaps(tl, track.stream, gap_options);
    const auto& links = launches.runtime_by_stream[track.stream];
    std::vector<const LaunchLink*> in_win;
    for (const LaunchLink* l : links) {
      if (in_window(options, l->op_start_ns)) in_win.push_back(l);
    }
    sr.launch = launch_stats(in_win, options);
    sr.queue = queue_length(track.stream, links, options);
    reports.push_back(std::move(sr));
  }
  return reports;
}

// The options.top_gaps longest gaps (ties: in time order), each with the ops around it, the
// launch that ended it and the host events during it.
std::vector<GapDetail> largest_gaps(const ImportedTrace& trace, const timeline::Timeline& tl,
                                    const std::vector<timeline::Gap>& gaps, const LaunchIndex& launches,
                                    const AnalyzeOptions& options) {
  std::unordered_map<std::uint64_t, const timeline::DeviceOp*> op_by_id;
  for (const auto& op : tl.device_ops) op_by_id[op.id] = &op;
  std::vector<const timeline::Gap*> by_size;
  for (const auto& gap : gaps) by_size.push_back(&gap);
  std::stable_sort(by_size.begin(), by_size.end(), [](const timeline::Gap* a, const timeline::Gap* b) {
    return a->duration_ns() > b->duration_ns();
  });
  if (by_size.size() > static_cast<std::size_t>(std::max(0, options.top_gaps))) {
    by_size.resize(static_cast<std::size_t>(std::max(0, options.top_gaps)));
  }
  std::vector<GapDetail> details;
  for (const timeline::Gap* gap : by_size) {
    GapDetail detail;
    detail.gap = *gap;
    if (const auto it = op_by_id.find(gap->prev_op); it != op_by_id.end()) detail.prev_op = it->second->name;
    if (const auto it = op_by_id.find(gap->next_op); it != op_by_id.end()) {
      detail.next_op = it->second->name;
      detail.next_stream = it->second->stream;
    }
    if (const auto it = launches.by_op.find(gap->next_op); it != launches.by_op.end()) {
      detail.next_submit_ns = it->second->api_start_ns;
      detail.next_launch_api = trace.names[it->second->api_name];
    }
    detail.host_events = host_events_around(tl, gap->start_ns, gap->end_ns, options.host_events_per_gap);
    details.push_back(std::move(detail));
  }
  return details;
}

bool any_op_in(const timeline::Timeline& tl, Nanos start, Nanos end) {
  return std::any_of(tl.device_ops.begin(), tl.device_ops.end(),
                     [&](const auto& op) { return end <= start || (op.end_ns > start && op.start_ns < end); });
}

// --window, else the device's step window when it holds an op of the selection, else all.
AnalysisWindow window_of_device(const DeviceTrace& device, const timeline::Timeline& tl, const AnalyzeOptions& options) {
  if (windowed(options)) return {options.window_start_ns, options.window_end_ns, "--window"};
  if (!options.whole_trace) {
    const auto step = framework_step_window(device, options.step_marker);
    if (step && any_op_in(tl, step->start_ns, step->end_ns)) return *step;
  }
  return {0, 0, "whole trace"};
}

DeviceReport device_report(const ImportedTrace& trace, const DeviceTrace& device, const timeline::Timeline& tl,
                           const AnalyzeOptions& trace_options) {
  DeviceReport dev;
  dev.window = window_of_device(device, tl, trace_options);
  AnalyzeOptions options = trace_options;
  options.window_start_ns = dev.window.start_ns;
  options.window_end_ns = dev.window.end_ns;
  const timeline::GapOptions gap_options = gap_options_of(options);
  dev.device = device.device;
  dev.label = device.label;
  dev.ops_without_launch = device.ops_without_launch;
  dev.skewed_ops = device.skewed_ops;
  dev.max_skew_ns = device.max_skew_ns;
  if (!dev.window.whole() && !windowed(trace_options)) {
    // Only the whole trace's totals are reported beside the window: no host causes (a string
    // per gap) for its gaps.
    timeline::GapOptions whole = gap_options;
    whole.window_start_ns = whole.window_end_ns = 0;
    whole.attribute_causes = false;
    dev.whole_trace = timeline::analyze_gaps(tl, whole);
  }
  dev.gaps = timeline::analyze_gaps(tl, gap_options);
  LaunchIndex launches = index_launches(device, options);
  dev.launch = launch_stats(launches.runtime_in_window, options);
  dev.streams = stream_reports(tl, launches, options, gap_options);
  dev.largest_gaps = largest_gaps(trace, tl, dev.gaps.gaps, launches, options);
  return dev;
}

// What the selection asked for and what the trace has instead.
std::string no_match_message(const AnalyzeOptions& options, const std::vector<std::string>& available) {
  std::string message = "no device ops match the selection";
  if (options.device) message += " (device " + std::to_string(*options.device) + ")";
  if (options.stream) message += " (stream " + std::to_string(*options.stream) + ")";
  if (windowed(options)) {
    message += " (window " + numbers::exact_us(options.window_start_ns) + ":" +
               numbers::exact_us(options.window_end_ns) + " us)";
  }
  message += "; the trace has:";
  for (const auto& a : available) message += " [" + a + "]";
  return message;
}

}  // namespace

TraceReport analyze_trace(const ImportedTrace& trace, const AnalyzeOptions& options) {
  require(options.kernel_wait_threshold_ns >= 0, "kernel-wait threshold must be >= 0");
  require(options.window_end_ns == 0 || options.window_end_ns > options.window_start_ns,
          "window end must be after window start");
  const Nanos started = now_ns();
  TraceReport report;
  report.options = options;
  std::vector<std::string> available;
  for (const DeviceTrace& device : trace.devices) {
    for (const auto& s : device.timeline.streams) {
      available.push_back(device.label + " stream " + std::to_string(s.stream));
    }
    if (options.device && *options.device != device.device) continue;
    // Copy only when a stream is selected: traces can hold millions of ops.
    timeline::Timeline filtered;
    if (options.stream) filtered = selected_timeline(device, options);
    const timeline::Timeline& tl = options.stream ? filtered : device.timeline;
    if (tl.device_ops.empty() || !any_op_in(tl, options.window_start_ns, options.window_end_ns)) continue;
    report.devices.push_back(device_report(trace, device, tl, options));
  }
  if (report.devices.empty()) throw InvalidInput(no_match_message(options, available));
  report.analysis_ns = now_ns() - started;
  return report;
}

namespace {

nlohmann::json hta_json(const GapAnalysis& analysis) {
  const HtaClasses h = hta_classes(analysis);
  const double total = static_cast<double>(h.host_wait_ns + h.kernel_wait_ns + h.other_ns);
  auto ratio = [total](Nanos v) { return total > 0 ? static_cast<double>(v) / total : 0.0; };
  return {{"host_wait_us", ns_to_us(h.host_wait_ns)},     {"host_wait_count", h.host_wait_count},
          {"host_wait_ratio", ratio(h.host_wait_ns)},     {"kernel_wait_us", ns_to_us(h.kernel_wait_ns)},
          {"kernel_wait_count", h.kernel_wait_count},     {"kernel_wait_ratio", ratio(h.kernel_wait_ns)},
          {"other_us", ns_to_us(h.other_ns)},             {"other_count", h.other_count},
          {"other_ratio", ratio(h.other_ns)}};
}

nlohmann::json launch_json(const LaunchStats& s, const AnalyzeOptions& o) {
  return {{"pairs", s.pairs},
          {"launch_delay_us", to_json(s.launch_delay_us)},
          {"api_duration_us", to_json(s.api_duration_us)},
          {"short_ops", s.short_ops},
          {"api_outliers", s.api_outliers},
          {"api_cutoff_us", ns_to_us(o.launch_api_cutoff_ns)},
          {"delay_outliers", s.delay_outliers},
          {"delay_cutoff_us", ns_to_us(o.launch_delay_cutoff_ns)}};
}

nlohmann::json queue_json(const QueueLengthStats& q, const AnalyzeOptions& o) {
  nlohmann::json t_us = nlohmann::json::array(), t_ns = nlohmann::json::array(), length = nlohmann::json::array();
  const std::size_t n = q.series.size();
  const std::size_t cap = std::max<std::size_t>(1, o.queue_series_max_points);
  // Thin long series by keeping every k-th change point plus the maximum's neighbourhood is not
  // needed for a readable plot; a uniform stride keeps the shape and the first/last points.
  const std::size_t stride = n > cap ? (n + cap - 1) / cap : 1;
  for (std::size_t i = 0; i < n; i += stride) {
    t_us.push_back(us_on_axis(q.series[i].t_ns));
    t_ns.push_back(q.series[i].t_ns);
    length.push_back(q.series[i].length);
  }
  if (n > 0 && (n - 1) % stride != 0) {
    t_us.push_back(us_on_axis(q.series.back().t_ns));
    t_ns.push_back(q.series.back().t_ns);
    length.push_back(q.series.back().length);
  }
  return {{"samples", to_json(q.samples)},
          {"left_out", q.left_out},
          {"time_weighted_mean", q.time_weighted_mean},
          {"max", q.max},
          {"max_gauge", o.max_queue_gauge},
          {"time_at_max_gauge_us", ns_to_us(q.time_at_max_gauge_ns)},
          {"time_at_max_gauge_fraction", q.time_at_max_gauge_fraction},
          {"series_points", n},
          {"series_stride", stride},
          {"series_t_us", std::move(t_us)},
          {"series_t_ns", std::move(t_ns)},
          {"series_length", std::move(length)}};
}

nlohmann::json gap_detail_json(const GapDetail& d) {
  nlohmann::json host = nlohmann::json::array();
  for (const auto& h : d.host_events) {
    host.push_back({{"name", h.name},
                    {"kind", timeline::to_string(h.kind)},
                    {"thread", h.thread},
                    {"start_us", us_on_axis(h.start_ns)},
                    {"start_ns", h.start_ns},
                    {"dur_us", ns_to_us(h.end_ns - h.start_ns)}});
  }
  nlohmann::json j = {{"start_us", us_on_axis(d.gap.start_ns)},
                      {"start_ns", d.gap.start_ns},
                      {"dur_us", ns_to_us(d.gap.duration_ns())},
                      {"class", timeline::to_string(d.gap.gap_class)},
                      {"prev_op", d.prev_op},
                      {"next_op", d.next_op},
                      {"next_stream", d.next_stream},
                      {"cause", d.gap.cause},
                      {"host_events", std::move(host)}};
  if (d.next_submit_ns) {
    j["next_launch_api"] = d.next_launch_api;
    j["next_launch_start_us"] = us_on_axis(*d.next_submit_ns);
    j["next_launch_start_ns"] = *d.next_submit_ns;
  }
  return j;
}

// Instants as microseconds (a double: ~16 digits) and exactly as integer nanoseconds.
nlohmann::json window_json(const AnalysisWindow& w) {
  if (w.whole()) {
    return {{"source", w.source}, {"start_us", nullptr}, {"end_us", nullptr}, {"start_ns", nullptr}, {"end_ns", nullptr}};
  }
  return {{"source", w.source},
          {"start_us", us_on_axis(w.start_ns)},
          {"end_us", us_on_axis(w.end_ns)},
          {"start_ns", w.start_ns},
          {"end_ns", w.end_ns}};
}

}  // namespace

nlohmann::json to_json(const ImportedTrace& trace, const TraceReport& report) {
  const auto& o = report.options;
  const double parse_s = ns_to_s(trace.read.parse_ns);
  nlohmann::json input = {
      {"path", trace.source},
      {"layout", to_string(trace.layout)},
      {"gzip", trace.read.gzip},
      {"file_bytes", trace.read.file_bytes},
      {"json_bytes", trace.read.json_bytes},
      {"events_total", trace.read.events_total},
      {"events_kept", trace.read.events_kept},
      {"events_dropped", trace.read.events_dropped},
      {"parse_s", parse_s},
      {"parse_mb_per_s", parse_s > 0 ? static_cast<double>(trace.read.json_bytes) / 1e6 / parse_s : 0.0},
      {"peak_rss_mib", trace.read.peak_rss_mib},
      {"peak_rss_mib_after_analysis", peak_rss_mib()}};
  const ImportCounts& c = trace.counts;
  nlohmann::json import = {{"device_ops", c.device_ops},
                           {"host_spans", c.host_spans},
                           {"linked_by_correlation", c.linked_by_correlation},
                           {"linked_by_flow", c.linked_by_flow},
                           {"recorded_submit", c.recorded_submit},
                           {"unlinked_ops", c.unlinked_ops},
                           {"skipped_device_sync", c.skipped_device_sync},
                           {"skipped_device_annotations", c.skipped_device_annotations},
                           {"collectives", c.collectives},
                           {"skipped_profiler_spans", c.skipped_profiler_spans},
                           {"blocking_copy_calls", c.blocking_copy_calls},
                           {"stream_wait_tasks", c.stream_wait_tasks},
                           {"skewed_ops", c.skewed_ops},
                           {"max_skew_us", ns_to_us(c.max_skew_ns)},
                           {"clocks_inconsistent", clocks_inconsistent(c)}};
  nlohmann::json options = {
      {"stream", o.stream ? nlohmann::json(*o.stream) : nlohmann::json(nullptr)},
      {"device", o.device ? nlohmann::json(*o.device) : nlohmann::json(nullptr)},
      {"window_start_us", o.window_end_ns > 0 ? nlohmann::json(us_on_axis(o.window_start_ns)) : nlohmann::json(nullptr)},
      {"window_end_us", o.window_end_ns > 0 ? nlohmann::json(us_on_axis(o.window_end_ns)) : nlohmann::json(nullptr)},
      {"window_start_ns", o.window_end_ns > 0 ? nlohmann::json(o.window_start_ns) : nlohmann::json(nullptr)},
      {"window_end_ns", o.window_end_ns > 0 ? nlohmann::json(o.window_end_ns) : nlohmann::json(nullptr)},
      {"whole_trace", o.whole_trace},
      {"step_marker", o.step_marker},
      {"kernel_wait_threshold_us", ns_to_us(o.kernel_wait_threshold_ns)},
      {"top", o.top_gaps}};
  nlohmann::json devices = nlohmann::json::array();
  for (std::size_t i = 0; i < report.devices.size(); ++i) {
    const DeviceReport& d = report.devices[i];
    nlohmann::json streams = nlohmann::json::array();
    for (const StreamReport& s : d.streams) {
      streams.push_back({{"stream", s.stream},
                         {"name", s.name},
                         {"idle", timeline::to_json(s.gaps, 0)},
                         {"hta_classes", hta_json(s.gaps)},
                         {"launch", launch_json(s.launch, o)},
                         {"queue_length", queue_json(s.queue, o)}});
    }
    nlohmann::json largest = nlohmann::json::array();
    for (const GapDetail& g : d.largest_gaps) largest.push_back(gap_detail_json(g));
    devices.push_back({{"device", d.device},
                       {"label", d.label},
                       {"window", window_json(d.window)},
                       {"ops_without_launch", d.ops_without_launch},
                       {"skewed_ops", d.skewed_ops},
                       {"max_skew_us", ns_to_us(d.max_skew_ns)},
                       {"idle", timeline::to_json(d.gaps, o.top_gaps)},
                       {"idle_whole_trace", d.whole_trace ? timeline::to_json(*d.whole_trace, 0) : nlohmann::json(nullptr)},
                       {"hta_classes", hta_json(d.gaps)},
                       {"launch", launch_json(d.launch, o)},
                       {"streams", std::move(streams)},
                       {"largest_gaps", std::move(largest)}});
  }
  return {{"input", std::move(input)},
          {"import", std::move(import)},
          {"options", std::move(options)},
          {"analysis_s", ns_to_s(report.analysis_ns)},
          {"time_axis", "trace ts in microseconds (as in the input file); *_ns instants: the same, exactly, in integer ns"},
          {"devices", std::move(devices)}};
}

namespace {

std::string fmt_ms(Nanos ns) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(3) << ns_to_ms(ns) << " ms";
  return s.str();
}

std::string fmt_us(double us, int precision = 1) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(precision) << us;
  return s.str();
}

Nanos class_ns(const GapAnalysis& a, GapClass c) {
  const auto it = a.idle_ns_by_class.find(c);
  return it == a.idle_ns_by_class.end() ? 0 : it->second;
}
std::size_t class_count(const GapAnalysis& a, GapClass c) {
  const auto it = a.count_by_class.find(c);
  return it == a.count_by_class.end() ? 0 : it->second;
}

}  // namespace

void print_summary(std::ostream& out, const ImportedTrace& trace, const TraceReport& report) {
  const auto& o = report.options;
  const double parse_s = ns_to_s(trace.read.parse_ns);
  out << "trace: " << trace.source << " (" << to_string(trace.layout) << (trace.read.gzip ? ", gzip" : "")
      << ", " << fmt_us(static_cast<double>(trace.read.json_bytes) / 1e6, 1) << " MB JSON, "
      << trace.read.events_total << " events)\n";
  out << "parse: " << fmt_us(parse_s, 3) << " s ("
      << fmt_us(parse_s > 0 ? static_cast<double>(trace.read.json_bytes) / 1e6 / parse_s : 0.0, 1)
      << " MB/s), peak RSS " << fmt_us(trace.read.peak_rss_mib, 1) << " MiB after parsing, "
      << fmt_us(peak_rss_mib(), 1) << " MiB after import and analysis\n";
  const ImportCounts& c = trace.counts;
  out << "import: " << c.device_ops << " device ops (" << c.linked_by_correlation << " linked by correlation, "
      << c.linked_by_flow << " by flow, " << c.unlinked_ops << " without launch), " << c.host_spans
      << " host spans; skipped " << c.skipped_device_sync << " device sync and "
      << c.skipped_device_annotations << " annotation events";
  if (c.collectives > 0) out << "; " << c.collectives << " collectives (HCCL lane) counted as busy";
  if (c.skipped_profiler_spans > 0) out << "; " << c.skipped_profiler_spans << " profiler span (not host work)";
  if (c.blocking_copy_calls > 0) out << "; " << c.blocking_copy_calls << " copy calls blocked until their copy ended (waits)";
  out << "\n";
  if (c.skewed_ops > 0) {
    out << "clock skew: " << c.skewed_ops << " ops start before their launch (max "
        << fmt_us(ns_to_us(c.max_skew_ns), 3) << " us); taken as launched at their start\n";
  }
  if (clocks_inconsistent(c)) {
    out << "warning: host and device clocks disagree: an op starts " << fmt_us(ns_to_us(c.max_skew_ns), 3)
        << " us before its launch, more than launch skew explains (" << fmt_us(ns_to_us(kExplainableSkewNs), 0)
        << " us); gap classes that compare launch times with op times (host_wait, sync_stall) are unreliable\n";
  }
  out << "kernel_wait threshold: " << fmt_us(ns_to_us(o.kernel_wait_threshold_ns), 3)
      << " us (queued gaps shorter than this are kernel_wait, longer are other)\n";
  for (const DeviceReport& d : report.devices) {
    const GapAnalysis& g = d.gaps;
    out << "\n" << d.label << ": " << (d.window.whole() ? "whole trace" : "window") << ": span "
        << fmt_ms(g.span_end_ns - g.span_start_ns) << ", busy " << fmt_ms(g.busy_ns) << ", idle "
        << fmt_ms(g.idle_ns) << " (" << fmt_us(100.0 * g.idle_fraction, 1) << " %), " << g.op_count << " ops, "
        << g.gaps.size() << " gaps\n";
    if (!d.window.whole()) {
      out << "  window " << numbers::exact_us(d.window.start_ns) << " .. " << numbers::exact_us(d.window.end_ns)
          << " us: " << d.window.source << "\n";
    }
    if (d.whole_trace) {
      const GapAnalysis& w = *d.whole_trace;
      out << "  whole trace: span " << fmt_ms(w.span_end_ns - w.span_start_ns) << ", busy " << fmt_ms(w.busy_ns)
          << ", idle " << fmt_ms(w.idle_ns) << " (" << fmt_us(100.0 * w.idle_fraction, 1) << " %), " << w.op_count
          << " ops (--window whole analyses it all)\n";
    }
    out << "  idle by class:";
    for (const GapClass cls : timeline::kAllGapClasses) {
      out << "  " << timeline::to_string(cls) << " " << fmt_ms(class_ns(g, cls)) << " (n=" << class_count(g, cls)
          << ")";
    }
    const HtaClasses h = hta_classes(g);
    out << "\n  HTA classes:   host_wait " << fmt_ms(h.host_wait_ns) << "  kernel_wait " << fmt_ms(h.kernel_wait_ns)
        << "  other " << fmt_ms(h.other_ns) << "\n";
    out << "  gaps: p50 " << fmt_us(g.gap_p50_us) << " us, p99 " << fmt_us(g.gap_p99_us) << " us, max "
        << fmt_us(g.gap_max_us) << " us\n";
    const LaunchStats& l = d.launch;
    out << "  launches: " << l.pairs << " pairs; delay p50 " << fmt_us(l.launch_delay_us.p50) << " / p99 "
        << fmt_us(l.launch_delay_us.p99) << " / max " << fmt_us(l.launch_delay_us.max) << " us; API p50 "
        << fmt_us(l.api_duration_us.p50) << " / p99 " << fmt_us(l.api_duration_us.p99) << " us; "
        << l.short_ops << " ops shorter than their launch, " << l.api_outliers << " API > "
        << fmt_us(ns_to_us(o.launch_api_cutoff_ns), 0) << " us, " << l.delay_outliers << " delays > "
        << fmt_us(ns_to_us(o.launch_delay_cutoff_ns), 0) << " us\n";
    out << "  " << std::left << std::setw(8) << "stream" << std::right << std::setw(7) << "ops" << std::setw(11)
        << "busy_ms" << std::setw(11) << "idle_ms" << std::setw(7) << "idle%" << std::setw(14) << "host_wait_ms"
        << std::setw(15) << "sync_stall_ms" << std::setw(16) << "kernel_wait_ms" << std::setw(10) << "other_ms"
        << std::setw(18) << "xstream_wait_ms" << std::setw(14) << "delay_p50_us" << std::setw(12) << "queue_mean" << std::setw(11) << "queue_max"
        << "\n";
    for (const StreamReport& s : d.streams) {
      const auto ms = [&s](GapClass c) { return fmt_us(ns_to_ms(class_ns(s.gaps, c)), 3); };
      out << "  " << std::left << std::setw(8) << s.stream << std::right << std::setw(7) << s.gaps.op_count
          << std::setw(11) << fmt_us(ns_to_ms(s.gaps.busy_ns), 3) << std::setw(11)
          << fmt_us(ns_to_ms(s.gaps.idle_ns), 3) << std::setw(7) << fmt_us(100.0 * s.gaps.idle_fraction, 1)
          << std::setw(14) << ms(GapClass::host_wait) << std::setw(15) << ms(GapClass::sync_stall) << std::setw(16)
          << ms(GapClass::kernel_wait) << std::setw(10) << ms(GapClass::other) << std::setw(18)
          << ms(GapClass::cross_stream_wait) << std::setw(14)
          << fmt_us(s.launch.launch_delay_us.p50) << std::setw(12) << fmt_us(s.queue.time_weighted_mean, 2)
          << std::setw(11) << s.queue.max << "\n";
    }
    out << "  (HTA's host_wait = host_wait + sync_stall, its other = other + cross_stream_wait; queue_mean is "
           "time-weighted)\n";
    if (!d.largest_gaps.empty()) out << "  largest gaps:\n";
    int rank = 1;
    for (const GapDetail& gd : d.largest_gaps) {
      out << "  " << std::setw(3) << rank++ << ". " << fmt_us(ns_to_us(gd.gap.duration_ns())) << " us at "
          << numbers::exact_us(gd.gap.start_ns) << " us, " << timeline::to_string(gd.gap.gap_class)
          << ", before '" << gd.next_op << "' (stream " << gd.next_stream << ")";
      if (gd.next_submit_ns) {
        out << ", launched by " << gd.next_launch_api << " at " << numbers::exact_us(*gd.next_submit_ns) << " us";
      }
      out << "\n";
      for (const HostEventRef& h : gd.host_events) {
        out << "         host: " << h.name << " (" << timeline::to_string(h.kind) << ", "
            << fmt_us(ns_to_us(h.end_ns - h.start_ns)) << " us from " << numbers::exact_us(h.start_ns) << ")\n";
      }
    }
  }
}

nlohmann::json annotated_chrome_trace(const ImportedTrace& trace, const TraceReport& report,
                                      std::size_t device_index, const nlohmann::json& metadata) {
  require(device_index < report.devices.size(), "no such analysed device");
  const DeviceReport& d = report.devices[device_index];
  const DeviceTrace* device = nullptr;
  for (const DeviceTrace& dt : trace.devices) {
    if (dt.device == d.device) device = &dt;
  }
  require(device != nullptr, "analysed device missing from the trace");
  const timeline::Timeline tl = selected_timeline(*device, report.options);
  timeline::ChromeTraceOptions chrome;
  chrome.gaps = &d.gaps;
  chrome.metadata = metadata;
  nlohmann::json out = timeline::to_chrome_trace(tl, chrome);
  // Queue length per stream as counter tracks on the device process, on the writer's time base.
  const Nanos base = out.value("baseTimeNanoseconds", Nanos{0});
  auto& events = out["traceEvents"];
  for (const StreamReport& s : d.streams) {
    const std::string name = "queue length stream " + std::to_string(s.stream);
    for (const QueuePoint& p : s.queue.series) {
      events.push_back({{"ph", "C"},
                        {"name", name},
                        {"pid", timeline::kDevicePid},
                        {"ts", static_cast<double>(p.t_ns - base) / 1e3},
                        {"args", {{"ops", p.length}}}});
    }
  }
  return out;
}

}  // namespace encbench::trace
