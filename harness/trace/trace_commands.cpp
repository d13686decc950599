#include "harness/trace/trace_commands.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <ostream>
#include <sstream>

#include "harness/core/error.hpp"
#include "harness/core/result_json.hpp"
#include "harness/trace/trace_diff.hpp"

namespace encbench::trace {

namespace {

Nanos threshold_ns(const ForwardOptions& o) {
  require(std::isfinite(o.kernel_wait_threshold_us) && o.kernel_wait_threshold_us >= 0,
          "--kernel-wait-threshold-us must be a number >= 0");
  return static_cast<Nanos>(std::llround(o.kernel_wait_threshold_us * 1e3));
}

ModelOptions model_options(const ForwardOptions& o) {
  ModelOptions m;
  m.forward_marker = o.forward_marker;
  m.forward_end = o.forward_end;
  return m;
}

std::string ms(Nanos ns, int precision = 3) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(precision) << ns / 1e6;
  return s.str();
}

std::string pct(double v) {
  std::ostringstream s;
  s << std::showpos << std::fixed << std::setprecision(2) << v << " %";
  return s.str();
}

Nanos median_duration(const std::vector<ForwardTimes>& forwards) {
  std::vector<Nanos> d;
  for (const ForwardTimes& f : forwards) d.push_back(f.duration_ns());
  if (d.empty()) return 0;
  std::sort(d.begin(), d.end());
  return d[d.size() / 2];
}

double change_pct(Nanos from, Nanos to) { return from > 0 ? 100.0 * static_cast<double>(to - from) / from : 0.0; }

}  // namespace

// ---- diff -----------------------------------------------------------------------------------

int run_diff_command(const DiffCommandConfig& config, const std::vector<std::string>& argv, std::ostream& out) {
  require(config.format == "text" || config.format == "markdown", "--format must be text or markdown");
  std::vector<GateExpression> gates;
  for (const std::string& g : config.gates) gates.push_back(parse_gate_expression(g, "--gate"));
  const Nanos threshold = threshold_ns(config.forwards);
  auto summarize = [&](const std::filesystem::path& path) {
    const ImportedTrace trace = import_trace_file(path);
    const ReplayModel model = build_replay_model(trace, config.forwards.device, model_options(config.forwards));
    return summarize_trace(trace, model, threshold);
  };
  const TraceDiff diff = diff_traces(summarize(config.a), summarize(config.b), config.allow_different_workloads);
  const std::vector<GateResult> results = evaluate_gates(diff, gates);
  if (config.format == "markdown") print_diff_markdown(out, diff, results);
  else print_diff_text(out, diff, results);
  if (!config.markdown_out.empty()) {
    std::ofstream md(config.markdown_out);
    require(static_cast<bool>(md), "cannot write " + config.markdown_out.string());
    print_diff_markdown(md, diff, results);
  }
  if (!config.json_out.empty()) {
    nlohmann::json result = make_result_envelope("encbench-trace-diff", 1, argv, diff.b.device_label);
    result.update(to_json(diff, results));
    write_json_file(config.json_out, result);
    out << "\nwrote " << config.json_out.string() << "\n";
  }
  const bool failed = std::any_of(results.begin(), results.end(), [](const GateResult& r) { return !r.passed; });
  return failed ? 1 : 0;
}

// ---- whatif ---------------------------------------------------------------------------------

namespace {

ReplayEdits edits_from(const WhatifCommandConfig& c) {
  ReplayEdits e;
  e.drop = c.drop;
  e.host_scale = c.host_scale;
  if (c.launch_overhead_us) {
    require(std::isfinite(*c.launch_overhead_us) && *c.launch_overhead_us >= 0,
            "--launch-overhead-us must be a number >= 0");
    e.launch_overhead_ns = static_cast<Nanos>(std::llround(*c.launch_overhead_us * 1e3));
  }
  for (const std::string& k : c.kernels) e.kernels.push_back(parse_kernel_edit(k));
  return e;
}

struct Replayed {
  ReplayMetrics metrics;
  double replay_s = 0;
  std::size_t nodes = 0;
};

Replayed timed_replay(const ReplayModel& model, Nanos threshold, int top) {
  const auto t0 = std::chrono::steady_clock::now();
  const ReplayTimes times = replay(model);
  const auto t1 = std::chrono::steady_clock::now();
  Replayed r;
  r.replay_s = std::chrono::duration<double>(t1 - t0).count();
  r.nodes = model.ops.size() + model.actions.size();
  r.metrics = measure_replay(model, times, threshold, static_cast<std::size_t>(std::max(top, 1)));
  return r;
}

// C++ kernel names run to hundreds of characters of template arguments: the text shows the head.
std::string short_name(const std::string& name) {
  constexpr std::size_t kMax = 70;
  return name.size() <= kMax ? name : name.substr(0, kMax - 3) + "...";
}

void print_critical_path(std::ostream& out, const ForwardTimes& f, const char* label) {
  const CriticalPath& p = f.critical_path;
  out << "critical path of " << f.name << " (" << label << "): " << ms(p.length_ns) << " ms = device ops "
      << ms(p.device_ns) << " + host work " << ms(p.host_ns) << " + calls/wake-ups " << ms(p.wait_ns)
      << " + launch latency/queue gaps " << ms(p.latency_ns) << "\n";
  for (const CriticalSegment& s : p.segments) {
    out << "    " << std::setw(9) << ms(s.total_ns) << " ms  " << std::left << std::setw(15) << s.kind << std::right
        << " " << short_name(s.name) << " (x" << s.count << ")\n";
  }
}

// Idle by class of the trace itself, its unedited replay and the what-if, side by side.
void print_idle(std::ostream& out, const timeline::GapAnalysis& measured, const timeline::GapAnalysis& replayed,
                const timeline::GapAnalysis& edited) {
  auto of = [](const timeline::GapAnalysis& a, timeline::GapClass c) {
    const auto it = a.idle_ns_by_class.find(c);
    return it == a.idle_ns_by_class.end() ? Nanos{0} : it->second;
  };
  auto row = [&](std::string_view label, Nanos t, Nanos r, Nanos w) {
    out << "    " << std::left << std::setw(12) << label << std::right << std::setw(10) << ms(t) << std::setw(11)
        << ms(r) << std::setw(11) << ms(w) << "\n";
  };
  out << "device idle (ms)     trace     replay    what-if\n";
  row("total", measured.idle_ns, replayed.idle_ns, edited.idle_ns);
  for (const auto& [c, ns] : replayed.idle_ns_by_class) {
    row(to_string(c), of(measured, c), ns, of(edited, c));
  }
}

void print_whatif(std::ostream& out, const ReplayModel& model, const EditReport& edits,
                  const std::vector<ForwardTimes>& measured, const timeline::GapAnalysis& measured_idle,
                  const Replayed& base, const Replayed& edited) {
  out << "trace: " << model.source << " (" << to_string(model.layout) << ", " << model.device_label << "): "
      << model.ops.size() << " device ops, " << model.counts.launches << " launches, " << model.counts.waits
      << " blocking waits, " << model.forwards.size() << " forwards; " << model.counts.ops_without_launch
      << " ops without launch (queued at start)";
  if (model.counts.graph_ops > 0) out << "; " << model.counts.graph_ops << " more ops launched by a graph launch";
  out << "\n";
  out << "edits: dropped " << edits.dropped_ops << " ops, " << edits.dropped_launches << " launches, "
      << edits.dropped_waits << " waits; host work only they needed: " << ms(edits.dropped_host_work_ns) << " ms\n";
  out << "replay: " << base.nodes << " nodes in " << std::setprecision(3) << base.replay_s * 1e3 << " ms ("
      << std::fixed << std::setprecision(2) << (base.replay_s > 0 ? base.nodes / base.replay_s / 1e6 : 0.0)
      << " M nodes/s)\n\n";
  out << "forward            trace_ms   replay_ms  replay_err   whatif_ms   change\n";
  for (std::size_t i = 0; i < measured.size() && i < 8; ++i) {
    const Nanos t = measured[i].duration_ns(), r = base.metrics.forwards[i].duration_ns(),
                w = edited.metrics.forwards[i].duration_ns();
    out << std::left << std::setw(16) << measured[i].name << std::right << std::setw(11) << ms(t) << std::setw(12)
        << ms(r) << std::setw(12) << pct(change_pct(t, r)) << std::setw(12) << ms(w) << std::setw(11)
        << pct(change_pct(r, w)) << "\n";
  }
  const Nanos tm = median_duration(measured), rm = median_duration(base.metrics.forwards),
              wm = median_duration(edited.metrics.forwards);
  out << "median forward: trace " << ms(tm) << " ms, replay " << ms(rm) << " ms (" << pct(change_pct(tm, rm))
      << "), what-if " << ms(wm) << " ms (" << pct(change_pct(rm, wm)) << " vs replay)\n\n";
  print_idle(out, measured_idle, base.metrics.device_idle, edited.metrics.device_idle);
  if (!edited.metrics.forwards.empty()) {
    out << "\n";
    print_critical_path(out, base.metrics.forwards.front(), "replay");
    print_critical_path(out, edited.metrics.forwards.front(), "what-if");
  }
}

nlohmann::json forwards_json(const std::vector<ForwardTimes>& measured, const Replayed& base, const Replayed& edited) {
  nlohmann::json out = nlohmann::json::array();
  for (std::size_t i = 0; i < measured.size(); ++i) {
    out.push_back({{"name", measured[i].name},
                   {"trace_ms", measured[i].duration_ns() / 1e6},
                   {"replay_ms", base.metrics.forwards[i].duration_ns() / 1e6},
                   {"whatif_ms", edited.metrics.forwards[i].duration_ns() / 1e6},
                   {"critical_path_replay", to_json(base.metrics.forwards[i].critical_path)},
                   {"critical_path_whatif", to_json(edited.metrics.forwards[i].critical_path)}});
  }
  return out;
}

nlohmann::json whatif_json(const WhatifCommandConfig& c, const ReplayModel& model, const EditReport& edits,
                           const std::vector<ForwardTimes>& measured, const Replayed& base, const Replayed& edited) {
  const Nanos tm = median_duration(measured), rm = median_duration(base.metrics.forwards),
              wm = median_duration(edited.metrics.forwards);
  nlohmann::json kernels = nlohmann::json::array();
  for (std::size_t i = 0; i < c.kernels.size(); ++i) {
    kernels.push_back({{"edit", c.kernels[i]}, {"matched_ops", edits.kernel_matches[i]}});
  }
  return {{"input", {{"path", model.source}, {"layout", to_string(model.layout)}, {"device", model.device_label},
                     {"device_ops", model.ops.size()}, {"launches", model.counts.launches},
                     {"waits", model.counts.waits}, {"ops_without_launch", model.counts.ops_without_launch},
                     {"graph_ops", model.counts.graph_ops},
                     {"waits_without_target", model.counts.waits_without_target},
                     {"nested_calls_folded", model.counts.nested_calls_folded}}},
          {"edits", {{"drop", c.drop}, {"host_scale", c.host_scale},
                     {"launch_overhead_us", c.launch_overhead_us ? nlohmann::json(*c.launch_overhead_us) : nlohmann::json()},
                     {"kernels", kernels}, {"dropped_ops", edits.dropped_ops},
                     {"dropped_launches", edits.dropped_launches}, {"dropped_waits", edits.dropped_waits},
                     {"dropped_host_work_ms", edits.dropped_host_work_ns / 1e6}}},
          {"median_forward_ms", {{"trace", tm / 1e6}, {"replay", rm / 1e6}, {"whatif", wm / 1e6},
                                 {"replay_error_pct", change_pct(tm, rm)}, {"whatif_change_pct", change_pct(rm, wm)}}},
          {"forwards", forwards_json(measured, base, edited)},
          {"device_idle", {{"replay", timeline::to_json(base.metrics.device_idle, 5)},
                           {"whatif", timeline::to_json(edited.metrics.device_idle, 5)}}},
          {"replay_speed", {{"nodes", base.nodes}, {"seconds", base.replay_s},
                            {"nodes_per_s", base.replay_s > 0 ? base.nodes / base.replay_s : 0.0}}}};
}

}  // namespace

int run_whatif_command(const WhatifCommandConfig& c, const std::vector<std::string>& argv, std::ostream& out) {
  require(c.top >= 1, "--top must be >= 1");
  const ReplayEdits edits = edits_from(c);
  const Nanos threshold = threshold_ns(c.forwards);
  // The imported trace is dropped once modelled and its idle measured: on a 1 GB trace it is
  // most of the memory.
  timeline::GapAnalysis measured_idle;
  const ReplayModel model = [&] {
    const ImportedTrace trace = import_trace_file(c.trace_path);
    ReplayModel built = build_replay_model(trace, c.forwards.device, model_options(c.forwards));
    for (const DeviceTrace& d : trace.devices) {
      if (d.label != built.device_label) continue;
      timeline::GapOptions options;
      options.kernel_wait_threshold_ns = threshold;
      measured_idle = timeline::analyze_gaps(d.timeline, options);
    }
    return built;
  }();
  EditReport edit_report;
  const ReplayModel edited_model = apply_edits(model, edits, edit_report);
  const Replayed base = timed_replay(model, threshold, c.top);
  const Replayed edited = timed_replay(edited_model, threshold, c.top);
  const std::vector<ForwardTimes> measured = trace_forward_times(model);
  print_whatif(out, model, edit_report, measured, measured_idle, base, edited);
  if (!c.json_out.empty()) {
    nlohmann::json result = make_result_envelope("encbench-trace-whatif", 1, argv, model.device_label);
    result.update(whatif_json(c, model, edit_report, measured, base, edited));
    result["device_idle"]["trace"] = timeline::to_json(measured_idle, 5);
    write_json_file(c.json_out, result);
    out << "\nwrote " << c.json_out.string() << "\n";
  }
  return 0;
}

nlohmann::json print_critical_paths(std::ostream& out, const ImportedTrace& trace, const ForwardOptions& options,
                                    int top) {
  const ReplayModel model = build_replay_model(trace, options.device, model_options(options));
  const Replayed base = timed_replay(model, threshold_ns(options), top);
  const std::vector<ForwardTimes> measured = trace_forward_times(model);
  nlohmann::json forwards = nlohmann::json::array();
  out << "\ncritical paths (unedited replay of " << model.device_label << "; forward times: trace / replay):\n";
  for (std::size_t i = 0; i < base.metrics.forwards.size(); ++i) {
    const ForwardTimes& f = base.metrics.forwards[i];
    if (i < 4) {
      out << "  trace " << ms(measured[i].duration_ns()) << " ms / ";
      print_critical_path(out, f, "replay");
    }
    forwards.push_back({{"name", f.name}, {"trace_ms", measured[i].duration_ns() / 1e6},
                        {"replay_ms", f.duration_ns() / 1e6}, {"critical_path", to_json(f.critical_path)}});
  }
  if (base.metrics.forwards.size() > 4) out << "  (" << base.metrics.forwards.size() - 4 << " more in the JSON)\n";
  return forwards;
}

}  // namespace encbench::trace
