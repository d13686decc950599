#include "harness/scenario/round_traces.hpp"

#include <algorithm>
#include <exception>

#include "harness/trace/trace_analysis.hpp"
#include "harness/trace_read/trace_import.hpp"

namespace encbench::scenario {
namespace {

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool is_trace_name(const std::string& name) {
  for (const char* suffix : {".trace.json", ".trace.json.gz", "trace_view.json"})
    if (ends_with(name, suffix)) return true;
  return false;
}

double ms(Nanos ns) { return static_cast<double>(ns) / 1e6; }

nlohmann::json device_summary(const trace::DeviceReport& d) {
  nlohmann::json by_class = nlohmann::json::object();
  for (const auto& [cls, ns] : d.gaps.idle_ns_by_class) by_class[std::string(timeline::to_string(cls))] = ms(ns);
  return {{"device", d.device},
          {"label", d.label},
          {"busy_ms", ms(d.gaps.busy_ns)},
          {"idle_ms", ms(d.gaps.idle_ns)},
          {"idle_pct", 100.0 * d.gaps.idle_fraction},
          {"ops", d.gaps.op_count},
          {"idle_ms_by_class", by_class}};
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
      const trace::ImportedTrace imported = trace::import_trace_file(file);
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

}  // namespace encbench::scenario
