#include "harness/trace/trace_diff.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <iomanip>
#include <ostream>
#include <set>
#include <sstream>

#include "harness/core/error.hpp"

namespace encbench::trace {

using timeline::GapClass;

namespace {


const DeviceTrace& device_of_model(const ImportedTrace& trace, const ReplayModel& model) {
  for (const DeviceTrace& d : trace.devices) {
    if (d.label == model.device_label) return d;
  }
  return trace.devices.front();
}

std::vector<OpNameStats> stats_by_name(const ReplayModel& model) {
  std::vector<OpNameStats> by_id(model.names.size());
  for (const ReplayOp& op : model.ops) {
    by_id[op.name].count += 1;
    by_id[op.name].total_ns += op.duration_ns;
  }
  std::vector<OpNameStats> out;
  for (std::size_t i = 0; i < by_id.size(); ++i) {
    if (by_id[i].count == 0) continue;
    by_id[i].name = model.names[i];
    out.push_back(std::move(by_id[i]));
  }
  std::sort(out.begin(), out.end(), [](const auto& x, const auto& y) { return x.name < y.name; });
  return out;
}

ForwardSummary summarize_forward(const ReplayModel& model, const ForwardRange& range, const ForwardTimes& times,
                                 const timeline::Timeline& tl, Nanos threshold) {
  ForwardSummary f;
  f.name = times.name;
  f.duration_ns = times.duration_ns();
  f.ops = times.ops;
  f.launches = times.launches;
  f.syncs = times.waits - (range.closed_by_wait && times.waits > 0 ? 1 : 0);
  for (std::size_t i = range.first_action; i < range.end_action; ++i) {
    for_each_launched(model.actions[i], [&](std::int64_t op) {
      if (model.ops[op].category == timeline::OpCategory::memcpy_d2h) ++f.d2h_copies;
    });
  }
  timeline::GapOptions options;
  options.kernel_wait_threshold_ns = threshold;
  options.window_start_ns = model.origin_ns + times.start_ns;
  options.window_end_ns = model.origin_ns + times.end_ns;
  if (options.window_end_ns <= options.window_start_ns) return f;
  const timeline::GapAnalysis gaps = timeline::analyze_gaps(tl, options);
  f.device_busy_ns = gaps.busy_ns;
  f.device_idle_ns = gaps.idle_ns;
  f.idle_ns_by_class = gaps.idle_ns_by_class;
  return f;
}

void add_means(TraceSummary& s) {
  const double n = std::max<double>(1.0, static_cast<double>(s.forwards.size()));
  double forward = 0, syncs = 0, d2h = 0, launches = 0, ops = 0, busy = 0, idle = 0;
  std::map<GapClass, double> by_class;
  for (const ForwardSummary& f : s.forwards) {
    forward += f.duration_ns / 1e6;
    syncs += f.syncs;
    d2h += f.d2h_copies;
    launches += f.launches;
    ops += f.ops;
    busy += f.device_busy_ns / 1e6;
    idle += f.device_idle_ns / 1e6;
    for (const auto& [c, ns] : f.idle_ns_by_class) by_class[c] += ns / 1e6;
  }
  s.metrics["forward_ms"] = forward / n;
  s.metrics["syncs_per_forward"] = syncs / n;
  s.metrics["d2h_per_forward"] = d2h / n;
  s.metrics["launches_per_forward"] = launches / n;
  s.metrics["ops_per_forward"] = ops / n;
  s.metrics["device_busy_ms"] = busy / n;
  s.metrics["idle_ms"] = idle / n;
  s.metrics["idle_pct"] = busy + idle > 0 ? 100.0 * idle / (busy + idle) : 0.0;
  for (GapClass c : timeline::kAllGapClasses) s.metrics[std::string(to_string(c)) + "_ms"] = by_class[c] / n;
}

}  // namespace

TraceSummary summarize_trace(const ImportedTrace& trace, const ReplayModel& model, Nanos threshold) {
  TraceSummary s;
  s.source = trace.source;
  s.layout = std::string(to_string(trace.layout));
  s.device_label = model.device_label;
  std::set<int> layers;
  for (const ReplayOp& op : model.ops) {
    if (op.layer >= 0) layers.insert(op.layer);
  }
  s.layers = static_cast<int>(layers.size());
  const timeline::Timeline& tl = device_of_model(trace, model).timeline;
  timeline::GapOptions options;
  options.kernel_wait_threshold_ns = threshold;
  for (int stream : model.streams) {
    const timeline::GapAnalysis gaps = timeline::analyze_stream_gaps(tl, stream, options);
    s.streams.push_back({stream, gaps.op_count, gaps.busy_ns, gaps.idle_ns, gaps.idle_ns_by_class});
  }
  const std::vector<ForwardTimes> times = trace_forward_times(model);
  for (std::size_t i = 0; i < times.size(); ++i) {
    s.forwards.push_back(summarize_forward(model, model.forwards[i], times[i], tl, threshold));
  }
  s.by_name = stats_by_name(model);
  add_means(s);
  return s;
}

namespace {

void check_same_workload(const TraceSummary& a, const TraceSummary& b) {
  std::set<std::string> names_a, names_b, common;
  for (const auto& s : a.by_name) names_a.insert(s.name);
  for (const auto& s : b.by_name) names_b.insert(s.name);
  std::set_intersection(names_a.begin(), names_a.end(), names_b.begin(), names_b.end(),
                        std::inserter(common, common.begin()));
  const double union_size = static_cast<double>(names_a.size() + names_b.size() - common.size());
  const double shared = union_size > 0 ? static_cast<double>(common.size()) / union_size : 1.0;
  require(shared >= 0.5, "trace diff: " + a.source + " and " + b.source + " do not look like the same workload (" +
                             std::to_string(common.size()) + " of " + std::to_string(static_cast<int>(union_size)) +
                             " op names shared); pass --allow-different-workloads to compare anyway");
  require(a.layers == 0 || b.layers == 0 || a.layers == b.layers,
          "trace diff: " + a.source + " has " + std::to_string(a.layers) + " layers and " + b.source + " has " +
              std::to_string(b.layers) +
              ": traces of different models; pass --allow-different-workloads to compare anyway");
}

std::vector<OpNameChange> op_changes(const TraceSummary& a, const TraceSummary& b) {
  const double fa = std::max<double>(1.0, static_cast<double>(a.forwards.size()));
  const double fb = std::max<double>(1.0, static_cast<double>(b.forwards.size()));
  std::map<std::string, OpNameChange> by_name;
  for (const auto& s : a.by_name) {
    auto& c = by_name[s.name];
    c.count_a = s.count / fa;
    c.time_a_us = s.total_ns / 1e3 / fa;
  }
  for (const auto& s : b.by_name) {
    auto& c = by_name[s.name];
    c.count_b = s.count / fb;
    c.time_b_us = s.total_ns / 1e3 / fb;
  }
  std::vector<OpNameChange> out;
  for (auto& [name, c] : by_name) {
    c.name = name;
    const bool count_changed = std::abs(c.count_b - c.count_a) > 1e-9;
    const bool time_changed = std::abs(c.time_b_us - c.time_a_us) > 0.005 * std::max(c.time_a_us, 1e-3);
    if (count_changed || time_changed) out.push_back(c);
  }
  std::sort(out.begin(), out.end(), [](const auto& x, const auto& y) {
    return std::abs(x.time_b_us - x.time_a_us) > std::abs(y.time_b_us - y.time_a_us);
  });
  return out;
}

}  // namespace

TraceDiff diff_traces(TraceSummary a, TraceSummary b, bool allow_different_workloads) {
  if (!allow_different_workloads) check_same_workload(a, b);
  TraceDiff d;
  for (const auto& [name, value] : a.metrics) d.metrics.push_back({name, value, b.metrics[name]});
  d.op_changes = op_changes(a, b);
  d.a = std::move(a);
  d.b = std::move(b);
  return d;
}

std::vector<GateResult> evaluate_gates(const TraceDiff& diff, const std::vector<GateExpression>& gates) {
  std::vector<std::string> known;
  for (const MetricChange& m : diff.metrics) known.push_back(m.name);
  std::vector<GateResult> out;
  for (const GateExpression& g : gates) {
    require_known_gate_metric(g, known, "--gate");
    const auto it = std::find_if(diff.metrics.begin(), diff.metrics.end(),
                                 [&](const MetricChange& m) { return m.name == g.metric; });
    const GateObservation seen = evaluate_gate_expression(g, it->a, it->b);
    out.push_back({g, seen.observed, seen.passed});
  }
  return out;
}

}  // namespace encbench::trace
