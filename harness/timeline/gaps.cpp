#include "harness/timeline/gaps.hpp"

#include <algorithm>
#include <iomanip>
#include <limits>
#include <sstream>
#include <tuple>

#include "harness/core/error.hpp"
#include "harness/core/stats.hpp"

namespace encbench::timeline {

std::string_view to_string(GapClass gap_class) {
  switch (gap_class) {
    case GapClass::host_wait: return "host_wait";
    case GapClass::sync_stall: return "sync_stall";
    case GapClass::kernel_wait: return "kernel_wait";
    case GapClass::other: return "other";
    case GapClass::cross_stream_wait: return "cross_stream_wait";
  }
  return "unknown";
}

std::string describe_cause(const GapCause& cause) {
  std::string text = cause.name + " (" + std::string(to_string(cause.kind)) + ")";
  if (cause.layer >= 0) text += ", layer " + std::to_string(cause.layer);
  return text;
}

namespace {

constexpr std::size_t kMaxCauses = 4;

struct Window {
  Nanos start = std::numeric_limits<Nanos>::min();
  Nanos end = std::numeric_limits<Nanos>::max();
};

Window window_of(const GapOptions& options) {
  Window window;
  if (options.window_start_ns != 0) window.start = options.window_start_ns;
  if (options.window_end_ns != 0) window.end = options.window_end_ns;
  return window;
}

// A device op clipped to the window.
struct ClippedOp {
  const DeviceOp* op;
  Nanos start;
  Nanos end;
};

struct BusyInterval {
  Nanos start;
  Nanos end;
  const DeviceOp* first;        // opens the interval
  const DeviceOp* last_ending;  // closes it
};

struct Span {
  Nanos start;
  Nanos end;
};

// Total length of the union of spans (sorted in place).
Nanos union_length(std::vector<Span>& spans) {
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.start < b.start; });
  Nanos total = 0;
  Nanos cur_start = 0, cur_end = 0;
  bool open = false;
  for (const Span& span : spans) {
    if (!open || span.start > cur_end) {
      if (open) total += cur_end - cur_start;
      cur_start = span.start;
      cur_end = span.end;
      open = true;
    } else {
      cur_end = std::max(cur_end, span.end);
    }
  }
  if (open) total += cur_end - cur_start;
  return total;
}

std::vector<ClippedOp> select_ops(const Timeline& timeline, int stream, const Window& window) {
  std::vector<ClippedOp> ops;
  ops.reserve(timeline.device_ops.size());
  for (const DeviceOp& op : timeline.device_ops) {
    if (op.category == OpCategory::sync) continue;  // markers do not occupy the device
    if (stream >= 0 && op.stream != stream) continue;
    const Nanos start = std::max(op.start_ns, window.start);
    const Nanos end = std::min(op.end_ns, window.end);
    if (end <= start) continue;  // outside the window or zero-length
    ops.push_back(ClippedOp{&op, start, end});
  }
  std::sort(ops.begin(), ops.end(), [](const ClippedOp& a, const ClippedOp& b) {
    return std::tie(a.start, a.op->submit_ns, a.op->id) < std::tie(b.start, b.op->submit_ns, b.op->id);
  });
  return ops;
}

std::vector<BusyInterval> merge_busy(const std::vector<ClippedOp>& ops) {
  std::vector<BusyInterval> intervals;
  for (const ClippedOp& op : ops) {
    if (intervals.empty() || op.start > intervals.back().end) {
      intervals.push_back(BusyInterval{op.start, op.end, op.op, op.op});
    } else if (op.end > intervals.back().end) {
      intervals.back().end = op.end;
      intervals.back().last_ending = op.op;
    }
  }
  return intervals;
}

bool in_window(const HostSpan& span, const Window& window) {
  return span.end_ns > window.start && span.start_ns < window.end;
}

bool sync_starts_in(const HostSpan& span, const Window& window) {
  return span.kind == HostSpanKind::wait && span.start_ns >= window.start && span.start_ns < window.end;
}

// Span, busy and idle time of the merged busy intervals, and the syncs that started in the window.
void summarise_busy(const Timeline& timeline, const std::vector<BusyInterval>& busy, const Window& window,
                    GapAnalysis& result) {
  for (const HostSpan& span : timeline.host_spans)
    if (sync_starts_in(span, window)) ++result.syncs;
  if (busy.empty()) return;
  result.span_start_ns = busy.front().start;
  result.span_end_ns = busy.back().end;
  for (const BusyInterval& interval : busy) result.busy_ns += interval.end - interval.start;
  result.idle_ns = (result.span_end_ns - result.span_start_ns) - result.busy_ns;
  const Nanos span_ns = result.span_end_ns - result.span_start_ns;
  result.idle_fraction = span_ns > 0 ? static_cast<double>(result.idle_ns) / static_cast<double>(span_ns) : 0.0;
}

// A gap between consecutive busy intervals (at least min_gap_ns long) and the op that ended it.
struct FoundGap {
  Gap gap;
  const DeviceOp* next;
};

std::vector<FoundGap> find_gaps(const std::vector<BusyInterval>& busy, Nanos min_gap_ns) {
  std::vector<FoundGap> found;
  for (std::size_t i = 1; i < busy.size(); ++i) {
    Gap gap;
    gap.start_ns = busy[i - 1].end;
    gap.end_ns = busy[i].start;
    if (gap.duration_ns() < min_gap_ns) continue;
    gap.prev_op = busy[i - 1].last_ending->id;
    gap.next_op = busy[i].first->id;
    gap.layer = busy[i].first->layer;
    found.push_back(FoundGap{std::move(gap), busy[i].first});
  }
  return found;
}

// Host spans overlapping each gap (closed intervals, so a wait ending exactly when the device
// went idle still counts). Gaps are disjoint and sorted, so each span touches a contiguous run.
std::vector<std::vector<const HostSpan*>> spans_touching(const Timeline& timeline, const std::vector<Gap>& gaps) {
  std::vector<std::vector<const HostSpan*>> touching(gaps.size());
  for (const HostSpan& span : timeline.host_spans) {
    auto it = std::lower_bound(gaps.begin(), gaps.end(), span.start_ns,
                               [](const Gap& gap, Nanos t) { return gap.end_ns < t; });
    for (; it != gaps.end() && it->start_ns <= span.end_ns; ++it) {
      touching[static_cast<std::size_t>(it - gaps.begin())].push_back(&span);
    }
  }
  return touching;
}

// Submitted late: the host was waiting (a sync of the submitting thread when idle began or ended
// in the gap) or busy elsewhere; submitted in time: the device waited on the kernel itself.
// The next op's stream was held by device-side waits for at least half of the gap, and the last
// of them ended at or after the op was submitted: the other stream, not the host, released it.
// Waits are sorted by stream, then start; one stream runs one task at a time, so their ends are
// sorted too.
bool held_by_stream_wait(const Timeline& timeline, const Gap& gap, const DeviceOp& next) {
  const auto& waits = timeline.stream_waits;
  auto it = std::upper_bound(waits.begin(), waits.end(), std::pair{next.stream, gap.start_ns},
                             [](const std::pair<int, Nanos>& key, const StreamWait& w) {
                               return key < std::pair{w.stream, w.end_ns};
                             });
  Nanos held = 0, last_end = 0;
  for (; it != waits.end() && it->stream == next.stream && it->start_ns < gap.end_ns; ++it) {
    held += std::min(it->end_ns, gap.end_ns) - std::max(it->start_ns, gap.start_ns);
    last_end = it->end_ns;
  }
  return held > 0 && 2 * held >= gap.duration_ns() && last_end >= next.submit_ns;
}

GapClass classify_gap(const Timeline& timeline, const Gap& gap, const DeviceOp& next,
                      const std::vector<const HostSpan*>& touching, Nanos kernel_wait_threshold_ns) {
  if (!timeline.stream_waits.empty() && held_by_stream_wait(timeline, gap, next)) return GapClass::cross_stream_wait;
  if (next.submit_ns <= gap.start_ns)
    return gap.duration_ns() < kernel_wait_threshold_ns ? GapClass::kernel_wait : GapClass::other;
  for (const HostSpan* span : touching) {
    if (span->kind != HostSpanKind::wait || span->thread != next.host_thread) continue;
    const bool active_when_idle = span->start_ns <= gap.start_ns && gap.start_ns <= span->end_ns;
    const bool ended_before_submit = gap.start_ns <= span->end_ns && span->end_ns <= next.submit_ns;
    if (active_when_idle || ended_before_submit) return GapClass::sync_stall;
  }
  return GapClass::host_wait;
}

// The host spans most overlapping the gap (ties: the submitting thread's, then the shorter span).
std::vector<GapCause> rank_causes(const Gap& gap, const DeviceOp& next, const std::vector<const HostSpan*>& touching) {
  std::vector<std::pair<Nanos, const HostSpan*>> ranked;
  for (const HostSpan* span : touching) {
    const Nanos overlap = std::min(span->end_ns, gap.end_ns) - std::max(span->start_ns, gap.start_ns);
    if (overlap > 0) ranked.emplace_back(overlap, span);
  }
  std::sort(ranked.begin(), ranked.end(), [&](const auto& a, const auto& b) {
    if (a.first != b.first) return a.first > b.first;
    const bool a_submitter = a.second->thread == next.host_thread;
    const bool b_submitter = b.second->thread == next.host_thread;
    if (a_submitter != b_submitter) return a_submitter;
    return (a.second->end_ns - a.second->start_ns) < (b.second->end_ns - b.second->start_ns);
  });
  std::vector<GapCause> causes;
  for (std::size_t c = 0; c < ranked.size() && c < kMaxCauses; ++c) {
    const HostSpan& span = *ranked[c].second;
    causes.push_back(GapCause{span.name, span.kind, span.layer, span.thread, ranked[c].first});
  }
  return causes;
}

// Classifies and attributes every gap of `result`, adds them up by class, and their percentiles.
void explain_gaps(const Timeline& timeline, const std::vector<const DeviceOp*>& next_ops, const GapOptions& options,
                  GapAnalysis& result) {
  const std::vector<std::vector<const HostSpan*>> touching = spans_touching(timeline, result.gaps);
  std::vector<double> durations_us;
  durations_us.reserve(result.gaps.size());
  for (std::size_t g = 0; g < result.gaps.size(); ++g) {
    Gap& gap = result.gaps[g];
    gap.gap_class = classify_gap(timeline, gap, *next_ops[g], touching[g], options.kernel_wait_threshold_ns);
    if (options.attribute_causes) {
      gap.causes = rank_causes(gap, *next_ops[g], touching[g]);
      gap.cause = gap.causes.empty() ? std::string("no host span recorded") : describe_cause(gap.causes.front());
    }
    result.idle_ns_by_class[gap.gap_class] += gap.duration_ns();
    ++result.count_by_class[gap.gap_class];
    durations_us.push_back(ns_to_us(gap.duration_ns()));
  }
  std::sort(durations_us.begin(), durations_us.end());
  result.gap_p50_us = stats::percentile_sorted(durations_us, 50);
  result.gap_p99_us = stats::percentile_sorted(durations_us, 99);
  result.gap_max_us = durations_us.empty() ? 0.0 : durations_us.back();
}

// Per layer: device busy (union of its ops), idle (gaps it ended), host time (union per thread,
// summed over threads) and syncs, in layer order.
std::vector<LayerBreakdown> layer_breakdown(const Timeline& timeline, const std::vector<ClippedOp>& ops,
                                            const std::vector<Gap>& gaps, const Window& window) {
  std::map<int, LayerBreakdown> layers;
  std::map<int, std::vector<Span>> layer_busy;
  for (const ClippedOp& op : ops) layer_busy[op.op->layer].push_back(Span{op.start, op.end});
  for (auto& [layer, spans] : layer_busy) {
    layers[layer].layer = layer;
    layers[layer].device_busy_ns = union_length(spans);
  }
  for (const Gap& gap : gaps) {
    layers[gap.layer].layer = gap.layer;
    layers[gap.layer].idle_ns += gap.duration_ns();
  }
  std::map<std::pair<int, std::uint32_t>, std::vector<Span>> layer_host;
  for (const HostSpan& span : timeline.host_spans) {
    if (!in_window(span, window)) continue;
    layer_host[{span.layer, span.thread}].push_back(
        Span{std::max(span.start_ns, window.start), std::min(span.end_ns, window.end)});
    if (sync_starts_in(span, window)) {
      layers[span.layer].layer = span.layer;
      ++layers[span.layer].syncs;
    }
  }
  for (auto& [key, spans] : layer_host) {
    layers[key.first].layer = key.first;
    layers[key.first].host_ns += union_length(spans);
  }
  std::vector<LayerBreakdown> result;
  for (auto& [layer, breakdown] : layers) result.push_back(breakdown);
  return result;
}

GapAnalysis analyze(const Timeline& timeline, int stream, const GapOptions& options) {
  const Window window = window_of(options);
  GapAnalysis result;
  result.stream = stream;
  result.kernel_wait_threshold_ns = options.kernel_wait_threshold_ns;
  for (GapClass gap_class : kAllGapClasses) {
    result.idle_ns_by_class[gap_class] = 0;
    result.count_by_class[gap_class] = 0;
  }
  const std::vector<ClippedOp> ops = select_ops(timeline, stream, window);
  const std::vector<BusyInterval> busy = merge_busy(ops);
  result.op_count = ops.size();
  summarise_busy(timeline, busy, window, result);
  std::vector<const DeviceOp*> next_ops;
  for (FoundGap& found : find_gaps(busy, options.min_gap_ns)) {
    result.gaps.push_back(std::move(found.gap));
    next_ops.push_back(found.next);
  }
  explain_gaps(timeline, next_ops, options, result);
  result.layers = layer_breakdown(timeline, ops, result.gaps, window);
  return result;
}

}  // namespace

GapAnalysis analyze_gaps(const Timeline& timeline, const GapOptions& options) {
  return analyze(timeline, -1, options);
}

GapAnalysis analyze_stream_gaps(const Timeline& timeline, int stream, const GapOptions& options) {
  require(stream >= 0, "analyze_stream_gaps: stream index must be >= 0 (got " + std::to_string(stream) + ")");
  return analyze(timeline, stream, options);
}

std::string to_text(const GapAnalysis& analysis, int max_gaps) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(1);
  const double span_us = ns_to_us(analysis.span_end_ns - analysis.span_start_ns);
  out << (analysis.stream < 0 ? "device" : "stream " + std::to_string(analysis.stream)) << ": span " << span_us
      << " us, busy " << ns_to_us(analysis.busy_ns) << " us, idle " << ns_to_us(analysis.idle_ns) << " us ("
      << 100.0 * analysis.idle_fraction << "%), " << analysis.op_count << " ops, " << analysis.syncs << " syncs, "
      << analysis.gaps.size() << " gaps (p50 " << analysis.gap_p50_us << " us, p99 " << analysis.gap_p99_us
      << " us, max " << analysis.gap_max_us << " us)\n";
  out << "  idle by class:";
  for (GapClass gap_class : kAllGapClasses) {
    const auto idle = analysis.idle_ns_by_class.find(gap_class);
    const auto count = analysis.count_by_class.find(gap_class);
    out << " " << to_string(gap_class) << " " << ns_to_us(idle == analysis.idle_ns_by_class.end() ? 0 : idle->second)
        << " us (" << (count == analysis.count_by_class.end() ? 0 : count->second) << ")";
  }
  out << "\n";
  std::vector<const Gap*> largest;
  for (const Gap& gap : analysis.gaps) largest.push_back(&gap);
  std::stable_sort(largest.begin(), largest.end(),
                   [](const Gap* a, const Gap* b) { return a->duration_ns() > b->duration_ns(); });
  if (max_gaps >= 0 && largest.size() > static_cast<std::size_t>(max_gaps)) largest.resize(static_cast<std::size_t>(max_gaps));
  if (!largest.empty()) out << "  largest gaps:\n";
  for (const Gap* gap : largest) {
    out << "    " << ns_to_us(gap->duration_ns()) << " us  " << to_string(gap->gap_class) << "  before op "
        << gap->next_op;
    if (gap->layer >= 0) out << " (layer " << gap->layer << ")";
    out << ": " << gap->cause << "\n";
  }
  return out.str();
}

nlohmann::json to_json(const GapAnalysis& analysis, int max_gaps) {
  using nlohmann::json;
  json out;
  out["scope"] = analysis.stream < 0 ? "device" : "stream";
  if (analysis.stream >= 0) out["stream"] = analysis.stream;
  out["kernel_wait_threshold_us"] = ns_to_us(analysis.kernel_wait_threshold_ns);
  out["span_start_ns"] = analysis.span_start_ns;
  out["span_end_ns"] = analysis.span_end_ns;
  out["span_us"] = ns_to_us(analysis.span_end_ns - analysis.span_start_ns);
  out["busy_us"] = ns_to_us(analysis.busy_ns);
  out["idle_us"] = ns_to_us(analysis.idle_ns);
  out["idle_fraction"] = analysis.idle_fraction;
  out["op_count"] = analysis.op_count;
  out["syncs"] = analysis.syncs;
  out["gap_count"] = analysis.gaps.size();
  out["gap_p50_us"] = analysis.gap_p50_us;
  out["gap_p99_us"] = analysis.gap_p99_us;
  out["gap_max_us"] = analysis.gap_max_us;
  json idle_by_class = json::object(), count_by_class = json::object();
  for (GapClass gap_class : kAllGapClasses) {
    const std::string key(to_string(gap_class));
    const auto idle = analysis.idle_ns_by_class.find(gap_class);
    const auto count = analysis.count_by_class.find(gap_class);
    idle_by_class[key] = ns_to_us(idle == analysis.idle_ns_by_class.end() ? 0 : idle->second);
    count_by_class[key] = count == analysis.count_by_class.end() ? 0 : count->second;
  }
  out["idle_us_by_class"] = idle_by_class;
  out["gap_count_by_class"] = count_by_class;
  json layers = json::array();
  for (const LayerBreakdown& layer : analysis.layers) {
    layers.push_back({{"layer", layer.layer},
                      {"device_busy_us", ns_to_us(layer.device_busy_ns)},
                      {"idle_us", ns_to_us(layer.idle_ns)},
                      {"host_us", ns_to_us(layer.host_ns)},
                      {"syncs", layer.syncs}});
  }
  out["layers"] = layers;
  std::vector<const Gap*> largest;
  for (const Gap& gap : analysis.gaps) largest.push_back(&gap);
  std::stable_sort(largest.begin(), largest.end(),
                   [](const Gap* a, const Gap* b) { return a->duration_ns() > b->duration_ns(); });
  if (max_gaps >= 0 && largest.size() > static_cast<std::size_t>(max_gaps)) {
    largest.resize(static_cast<std::size_t>(max_gaps));
  }
  json gaps = json::array();
  for (const Gap* gap : largest) {
    json causes = json::array();
    for (const GapCause& cause : gap->causes) {
      causes.push_back({{"name", cause.name},
                        {"kind", std::string(to_string(cause.kind))},
                        {"layer", cause.layer},
                        {"thread", cause.thread},
                        {"overlap_us", ns_to_us(cause.overlap_ns)}});
    }
    gaps.push_back({{"start_ns", gap->start_ns},
                    {"end_ns", gap->end_ns},
                    {"duration_us", ns_to_us(gap->duration_ns())},
                    {"class", std::string(to_string(gap->gap_class))},
                    {"layer", gap->layer},
                    {"prev_op", gap->prev_op},
                    {"next_op", gap->next_op},
                    {"cause", gap->cause},
                    {"causes", causes}});
  }
  out["largest_gaps"] = gaps;
  out["gaps_listed"] = largest.size();
  return out;
}

LatenessSummary lateness_of(const Timeline& timeline) {
  std::vector<double> late_us;
  for (const DeviceOp& op : timeline.device_ops) {
    if (op.real_end_ns == 0) continue;
    late_us.push_back(ns_to_us(std::max<Nanos>(op.real_end_ns - op.end_ns, 0)));
  }
  LatenessSummary summary;
  summary.ops = late_us.size();
  if (late_us.empty()) return summary;
  std::sort(late_us.begin(), late_us.end());
  summary.p50_us = stats::percentile_sorted(late_us, 50);
  summary.p99_us = stats::percentile_sorted(late_us, 99);
  summary.max_us = late_us.back();
  return summary;
}

}  // namespace encbench::timeline
