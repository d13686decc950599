#include "harness/scenario/round_traces.hpp"

#include <algorithm>
#include <exception>

#include "harness/core/clock.hpp"
#include "harness/core/error.hpp"
#include "harness/trace/analyze_command.hpp"
#include "harness/trace/replay_model.hpp"
#include "harness/trace/trace_analysis.hpp"
#include "harness/trace/trace_diff.hpp"
#include "harness/trace_read/trace_import.hpp"

namespace encbench::scenario {
namespace {

bool is_trace_name(const std::string& name) {
  for (const char* suffix : {".trace.json", ".trace.json.gz", "trace_view.json"})
    if (name.ends_with(suffix)) return true;
  return false;
}

// A server writes these traces, so they are read under `trace analyze`'s default event limit
// (~1.5 GiB at most); past it the round's analysis is noted as failed, not the A/B.
const trace::ReadLimits kRoundTraceLimits{.max_events = trace::kDefaultAnalyzeMaxEvents};

nlohmann::json device_summary(const trace::DeviceReport& d) {
  nlohmann::json by_class = nlohmann::json::object();
  for (const auto& [cls, ns] : d.gaps.idle_ns_by_class) by_class[std::string(timeline::to_string(cls))] = ns_to_ms(ns);
  return {{"device", d.device},
          {"label", d.label},
          {"window", d.window.source},  // trace analyze's default: the step window, else the whole trace
          {"busy_ms", ns_to_ms(d.gaps.busy_ns)},
          {"idle_ms", ns_to_ms(d.gaps.idle_ns)},
          {"idle_pct", 100.0 * d.gaps.idle_fraction},
          {"ops", d.gaps.op_count},
          {"idle_ms_by_class", by_class}};
}

// The first trace of a round's analysis that was read without error; "" when none.
std::string first_read_trace(const nlohmann::json& analyses) {
  for (const auto& t : analyses)
    if (t.is_object() && t.contains("devices") && t.contains("file")) return t["file"].get<std::string>();
  return "";
}

trace::TraceSummary summarize_file(const std::string& file) {
  const trace::ImportedTrace imported = trace::import_trace_file(file, kRoundTraceLimits);
  // `trace diff`'s defaults: forwards are ProfilerStep#* spans, kernel_wait below 30 us.
  const trace::ReplayModel model = trace::build_replay_model(imported, -1);
  return trace::summarize_trace(imported, model, 30'000);
}

// One round's diff, or {round, error} when a trace cannot be modelled (no correlation ids, ...).
nlohmann::json diff_round(int round, const std::string& a, const std::string& b) {
  nlohmann::json out = {{"round", round}, {"a", a}, {"b", b}};
  try {
    trace::TraceSummary sa = summarize_file(a), sb = summarize_file(b);
    trace::TraceDiff diff;
    try {
      diff = trace::diff_traces(sa, sb, false);
    } catch (const InvalidInput& e) {  // still compared: the note says why the figures may mislead
      out["workload_warning"] = e.what();
      diff = trace::diff_traces(std::move(sa), std::move(sb), true);
    }
    nlohmann::json metrics = nlohmann::json::object();
    for (const auto& m : diff.metrics) metrics[m.name] = {{"a", m.a}, {"b", m.b}};
    nlohmann::json ops = nlohmann::json::array();
    for (std::size_t i = 0; i < diff.op_changes.size() && i < 8; ++i) {
      const auto& c = diff.op_changes[i];
      ops.push_back({{"name", c.name}, {"count_a", c.count_a}, {"count_b", c.count_b}, {"time_a_us", c.time_a_us},
                     {"time_b_us", c.time_b_us}});
    }
    out["metrics"] = metrics;
    out["op_changes"] = ops;
  } catch (const std::exception& e) {
    out["error"] = e.what();
  }
  return out;
}

}  // namespace

std::vector<std::filesystem::path> find_round_traces(const std::filesystem::path& dir, std::size_t max_files) {
  std::vector<std::filesystem::path> found;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec); !ec && it != std::filesystem::end(it);
       it.increment(ec))
    if (it->is_regular_file(ec) && is_trace_name(it->path().filename().string())) found.push_back(it->path());
  std::sort(found.begin(), found.end());
  if (found.size() > max_files) found.resize(max_files);
  return found;
}

nlohmann::json analyze_round_traces(const std::filesystem::path& dir) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& file : find_round_traces(dir)) {
    try {
      const trace::ImportedTrace imported = trace::import_trace_file(file, kRoundTraceLimits);
      const trace::TraceReport report = trace::analyze_trace(imported, trace::AnalyzeOptions{});
      nlohmann::json devices = nlohmann::json::array();
      for (const auto& d : report.devices) devices.push_back(device_summary(d));
      out.push_back({{"file", file.string()}, {"layout", std::string(trace::to_string(imported.layout))},
                     {"devices", devices}});
    } catch (const std::exception& e) {
      out.push_back({{"file", file.string()}, {"error", e.what()}});
    }
  }
  return out;
}

nlohmann::json sum_trace_analyses(const std::vector<nlohmann::json>& per_round) {
  double busy = 0, idle = 0;
  std::size_t traces = 0;
  nlohmann::json by_class = nlohmann::json::object();
  for (const auto& round : per_round)
    for (const auto& t : round) {
      if (!t.contains("devices")) continue;
      ++traces;
      for (const auto& d : t["devices"]) {
        busy += d.value("busy_ms", 0.0);
        idle += d.value("idle_ms", 0.0);
        for (const auto& [cls, v] : d["idle_ms_by_class"].items()) by_class[cls] = by_class.value(cls, 0.0) + v.get<double>();
      }
    }
  return {{"traces", traces}, {"busy_ms", busy}, {"idle_ms", idle},
          {"idle_pct", busy + idle > 0 ? 100.0 * idle / (busy + idle) : 0.0}, {"idle_ms_by_class", by_class}};
}

nlohmann::json diff_arm_traces(const std::map<int, nlohmann::json>& traces_a, const std::map<int, nlohmann::json>& traces_b) {
  nlohmann::json rounds = nlohmann::json::array();
  std::map<std::string, std::pair<double, double>> sums;
  int diffed = 0;
  for (const auto& [round, analyses_a] : traces_a) {
    const auto b = traces_b.find(round);
    const std::string file_a = first_read_trace(analyses_a);
    const std::string file_b = b == traces_b.end() ? "" : first_read_trace(b->second);
    if (file_a.empty() && file_b.empty()) continue;  // neither server wrote a trace this round
    if (file_a.empty() || file_b.empty()) {
      rounds.push_back({{"round", round}, {"error", std::string("no readable trace from arm ") + (file_a.empty() ? "A" : "B")}});
      continue;
    }
    nlohmann::json d = diff_round(round, file_a, file_b);
    if (d.contains("metrics")) {
      ++diffed;
      for (const auto& [name, v] : d["metrics"].items()) {
        sums[name].first += v["a"].get<double>();
        sums[name].second += v["b"].get<double>();
      }
    }
    rounds.push_back(std::move(d));
  }
  nlohmann::json mean = nlohmann::json::object();
  for (const auto& [name, ab] : sums) {
    const double a = ab.first / diffed, b = ab.second / diffed;
    mean[name] = {{"a", a}, {"b", b}, {"delta", b - a}};
  }
  nlohmann::json out = {{"rounds", rounds}, {"rounds_diffed", diffed}, {"mean", mean}};
  if (diffed == 0)
    out["note"] = rounds.empty() ? "no round has a profiler trace from both arms"
                                 : "no round's traces could be compared (see rounds[].error)";
  return out;
}

}  // namespace encbench::scenario
