#include "reports/actions.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <map>
#include <ostream>
#include <sstream>

#include "harness/core/error.hpp"
#include "harness/core/result_json.hpp"
#include "harness/core/stats.hpp"
#include "reports/compare.hpp"
#include "reports/history.hpp"
#include "reports/html.hpp"
#include "reports/html_sections.hpp"
#include "reports/tables.hpp"

namespace encbench::reports {

namespace {

void write_text_file(const std::string& path, const std::string& text) {
  const std::filesystem::path p(path);
  std::error_code ec;
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path(), ec);
  const std::string tmp = path + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw InvalidInput("cannot write " + path + ": " + std::strerror(errno));
    f << text;
    f.flush();
    if (!f) throw InvalidInput("cannot write " + path + ": write failed");
  }
  std::filesystem::rename(tmp, p, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    throw InvalidInput("cannot write " + path + ": " + ec.message());
  }
}

std::filesystem::path history_path(const std::string& file) {
  return file.empty() ? default_history_path() : std::filesystem::path(file);
}

std::size_t parse_history_spec(const std::string& spec) {
  const std::string n = spec.substr(std::strlen("history:"));
  std::size_t pos = 0;
  unsigned long value = 0;
  try {
    value = std::stoul(n, &pos);
  } catch (const std::exception&) {
    pos = 0;
  }
  require(pos == n.size() && value >= 1 && value <= 100000,
          "--baseline history:N needs a run count N >= 1, got '" + spec + "'");
  return value;
}

std::string short_sha(const std::string& sha) { return sha.substr(0, 12); }

std::string sparkline(const std::vector<double>& values) {
  static const char* kBars[] = {"\u2581", "\u2582", "\u2583", "\u2584", "\u2585", "\u2586", "\u2587", "\u2588"};
  if (values.empty()) return "";
  const auto [lo, hi] = std::minmax_element(values.begin(), values.end());
  std::string out;
  for (double v : values) {
    const int level = *hi == *lo ? 3 : static_cast<int>(std::lround((v - *lo) / (*hi - *lo) * 7));
    out += kBars[std::clamp(level, 0, 7)];
  }
  return out;
}

}  // namespace

static int run_compare_impl(const CompareOptions& o, std::ostream& out) {
  require(!(o.base.empty() && o.baseline.empty()), "compare needs BASE and NEW, or --baseline SPEC and NEW");
  require(o.base.empty() || o.baseline.empty(), "give either BASE or --baseline, not both");
  require(!o.next.empty(), "compare needs NEW");
  Gate gate = gate_from_arguments(o.gates);
  if (o.settings) apply_settings(gate, *o.settings);
  const RunResult next = load_results_merged(o.next);
  const std::string baseline = o.baseline.empty() ? o.base : o.baseline;
  Comparison c;
  if (baseline.rfind("history:", 0) == 0) {
    const std::size_t n = parse_history_spec(baseline);
    const History history(history_path(o.history_file));
    c = compare_with_history(history.baseline_for(next, n), next, gate);
  } else {
    c = compare_runs(load_results_merged(baseline), next, gate);
  }
  apply_gate_conditions(c, gate.conditions);
  std::vector<AcceptedChange> accepted;
  for (const auto& spec : o.accept) accepted.push_back(parse_accepted_change(spec, "--accept"));
  apply_accepted_changes(c, accepted);
  if (!o.quiet) out << render_terminal(c);
  if (!o.markdown_file.empty()) write_text_file(o.markdown_file, render_markdown(c));
  if (!o.junit_file.empty()) write_text_file(o.junit_file, render_junit(c));
  if (!o.json_file.empty()) {
    nlohmann::json doc = make_result_envelope("encbench-compare", 1, o.argv, c.identity.device);
    doc.update(to_json(c));
    write_json_file(o.json_file, doc);
  }
  if (o.record || !o.history_file.empty()) {
    History history(history_path(o.history_file));
    const auto id = history.record(next, o.git_sha, c.passed() ? "pass" : "fail");
    out << "recorded NEW as run #" << id << " in " << history.path().string()
        << (c.passed() ? "" : " (failed its gate: never part of a history baseline)") << "\n";
  }
  return c.exit_code();
}

static int run_report_impl(const ReportOptions& o, std::ostream& out) {
  require(!o.inputs.empty() || !o.compare_files.empty(), "report needs at least one RESULT or --compare FILE");
  require(!o.html_file.empty(), "report needs --html FILE");
  require(!o.gate_exit || (*o.gate_exit >= 0 && *o.gate_exit <= 255),
          "--gate-exit must be an exit status 0..255, got " + std::to_string(o.gate_exit.value_or(0)));
  ReportContent content;
  content.title = o.title;
  content.gate_exit = o.gate_exit;
  for (const auto& f : o.compare_files) content.gates.push_back(load_gate_input(f));
  for (const auto& spec : o.inputs)
    for (const auto& path : expand_inputs(spec)) {
      nlohmann::json doc = read_json_file(path);
      const std::string schema = doc.is_object() ? doc.value("schema", std::string()) : std::string();
      if (schema == "encbench-compare")
        content.gates.push_back(load_gate_input(path.string()));
      else if (schema == "encbench-sweep")
        content.sweeps.push_back({path.string(), std::move(doc)});
      else
        content.runs.push_back(parse_result(doc, path.string()));
    }
  add_embedded_comparisons(content);
  const HtmlReport report = render_html_report(content);
  write_text_file(o.html_file, report.html);
  std::string reason;
  const std::string verdict = detail::overall_verdict(content, reason);
  out << "wrote " << o.html_file << " (" << report.html.size() << " bytes, " << report.charts.size()
      << " charts from " << content.runs.size() << " result" << (content.runs.size() == 1 ? "" : "s")
      << (content.sweeps.empty() ? "" : ", " + std::to_string(content.sweeps.size()) + " sweep(s)") << " and "
      << content.gates.size() << " comparison" << (content.gates.size() == 1 ? "" : "s") << "): " << verdict
      << ", " << reason << "\n";
  for (const auto& chart : report.charts) out << "  " << chart << "\n";
  if (!o.json_file.empty()) {
    nlohmann::json doc = make_result_envelope("encbench-report", 1, o.argv, "");
    doc["html"] = o.html_file;
    doc["verdict"] = verdict;
    doc["charts"] = report.charts;
    nlohmann::json inputs = nlohmann::json::array();
    for (const auto& r : content.runs) inputs.push_back({{"source", r.source}, {"kind", to_string(r.kind)}});
    for (const auto& g : content.gates) inputs.push_back({{"source", g.source}, {"kind", "compare"}});
    for (const auto& w : content.sweeps) inputs.push_back({{"source", w.source}, {"kind", "sweep"}});
    doc["inputs"] = inputs;
    doc["reason"] = reason;
    write_json_file(o.json_file, doc);
  }
  return 0;
}

// `history list`: one row per run with the run's own time (its created_utc; when it was recorded
// only for a result without one) and the device it ran on, each column as wide as its widest
// value, so no value runs into the next. Returns the rows as JSON.
static nlohmann::json print_history_list(const History& history, const std::vector<HistoryRun>& runs,
                                         std::ostream& out) {
  struct Row {
    std::string id, created, sha, kind, device, metrics, series;
  };
  std::vector<Row> rows{{"id", "created (UTC)", "git sha", "kind", "device", "metrics", "series"}};
  nlohmann::json json_rows = nlohmann::json::array();
  for (const auto& h : runs) {
    const std::string created = h.created_utc.empty() ? h.recorded_utc + " (recorded)" : h.created_utc;
    rows.push_back({std::to_string(h.id), created, h.git_sha.empty() ? "-" : short_sha(h.git_sha),
                    to_string(h.run.kind), h.run.identity.device.empty() ? "-" : h.run.identity.device,
                    std::to_string(h.run.metrics.size()),
                    h.series + (h.before_reset ? "  (before baseline reset)" : "") +
                        (h.gate_status == "fail" ? "  (failed its gate)" : "")});
    json_rows.push_back({{"id", h.id}, {"created_utc", h.created_utc}, {"recorded_utc", h.recorded_utc},
                         {"git_sha", h.git_sha}, {"kind", to_string(h.run.kind)}, {"device", h.run.identity.device},
                         {"series", h.series}, {"source", h.source}, {"metrics", h.run.metrics.size()},
                         {"before_reset", h.before_reset}, {"gate_status", h.gate_status}});
  }
  std::array<std::size_t, 6> width{};
  for (const Row& r : rows) {
    const std::array<const std::string*, 6> cells{&r.id, &r.created, &r.sha, &r.kind, &r.device, &r.metrics};
    for (std::size_t c = 0; c < cells.size(); ++c) width[c] = std::max(width[c], cells[c]->size());
  }
  out << "history " << history.path().string() << ": " << runs.size() << " run(s) shown\n";
  for (const Row& r : rows) {
    const std::array<const std::string*, 6> cells{&r.id, &r.created, &r.sha, &r.kind, &r.device, &r.metrics};
    for (std::size_t c = 0; c < cells.size(); ++c) out << std::left << std::setw(static_cast<int>(width[c] + 2)) << *cells[c];
    out << r.series << "\n";
  }
  return json_rows;
}

static int run_history_impl(const HistoryOptions& o, std::ostream& out) {
  History history(history_path(o.history_file));
  nlohmann::json doc = make_result_envelope("encbench-history", 1, o.argv, "");
  doc["history"] = history.path().string();
  doc["action"] = o.action;
  if (o.action == "list") {
    doc["runs"] = print_history_list(history, history.list(o.series, o.last), out);
  } else if (o.action == "trend") {
    require(!o.metric.empty(), "history trend needs a METRIC name (e.g. mean_ttft_ms)");
    const std::optional<std::string> key = history.resolve_metric(o.metric);
    if (!key) {
      std::string valid;
      for (const auto& n : history.metric_names()) valid += (valid.empty() ? "" : ", ") + n;
      throw InvalidInput("history has no metric '" + o.metric + "' (by key or by the label compare prints); " +
                         (valid.empty() ? std::string("the history is empty") : "valid keys: " + valid));
    }
    auto points = history.trend(*key, o.series);
    require(!points.empty(), "history has no values of metric '" + o.metric + "' in series matching '" + o.series + "'");
    std::map<std::string, std::vector<TrendPoint>> by_series;
    for (auto& p : points) by_series[p.series].push_back(p);
    nlohmann::json series_json = nlohmann::json::array();
    for (auto& [series, pts] : by_series) {
      if (o.last && pts.size() > o.last) pts.erase(pts.begin(), pts.end() - static_cast<long>(o.last));
      std::vector<double> values, accepted;
      for (const auto& p : pts) {
        values.push_back(p.value);
        if (!p.before_reset) accepted.push_back(p.value);
      }
      out << o.metric << " in " << series << "\n  " << sparkline(values) << "\n";
      nlohmann::json rows = nlohmann::json::array();
      for (std::size_t i = 0; i < pts.size(); ++i) {
        const auto& p = pts[i];
        out << "  #" << std::left << std::setw(5) << p.run_id << std::setw(22) << p.recorded_utc << std::setw(14)
            << (p.git_sha.empty() ? "-" : short_sha(p.git_sha)) << std::right << std::setw(14)
            << format_number(p.value);
        if (i > 0 && pts[i - 1].value != 0)
          out << "  " << format_relative_change((p.value - pts[i - 1].value) / std::fabs(pts[i - 1].value));
        if (p.before_reset) out << "  (before baseline reset)";
        out << "\n";
        rows.push_back({{"run_id", p.run_id}, {"recorded_utc", p.recorded_utc}, {"git_sha", p.git_sha},
                        {"value", p.value}, {"before_reset", p.before_reset}});
      }
      if (accepted.size() >= 2)
        out << "  since the last baseline reset: mean " << format_number(stats::mean(accepted)) << ", stdev "
            << format_number(stats::stdev_sample(accepted)) << " over " << accepted.size() << " runs\n";
      series_json.push_back({{"series", series}, {"points", rows}});
    }
    doc["metric"] = o.metric;
    doc["series"] = series_json;
  } else if (o.action == "record") {
    require(!o.inputs.empty(), "history record needs RESULT files");
    nlohmann::json ids = nlohmann::json::array();
    for (const auto& spec : o.inputs) {
      const RunResult run = load_results_merged(spec);
      const auto id = history.record(run, o.git_sha);
      out << "recorded " << run.source << " as run #" << id << " (" << series_key(run) << ")\n";
      ids.push_back(id);
    }
    doc["recorded_run_ids"] = ids;
  } else if (o.action == "reset-baseline") {
    const std::size_t n = history.reset_baseline(o.series, o.reason);
    out << "baseline reset for " << n << " series matching '" << o.series << "'"
        << (o.reason.empty() ? "" : " (" + o.reason + ")") << "; history:N now uses only later runs\n";
    doc["series_reset"] = n;
  } else {
    throw InvalidInput("unknown history action '" + o.action + "' (list, trend, record, reset-baseline)");
  }
  if (!o.json_file.empty()) write_json_file(o.json_file, doc);
  return 0;
}

namespace {
// A value of the wrong type deep inside a result (a string where a number belongs) is bad input,
// not an internal error: exit 2 with the parser's message.
template <class Fn>
int as_invalid_input(Fn&& fn) {
  try {
    return fn();
  } catch (const nlohmann::json::exception& e) {
    throw InvalidInput(std::string("unexpected value in an input file: ") + e.what());
  }
}
}  // namespace

int run_compare(const CompareOptions& o, std::ostream& out) {
  return as_invalid_input([&] { return run_compare_impl(o, out); });
}
int run_report(const ReportOptions& o, std::ostream& out) {
  return as_invalid_input([&] { return run_report_impl(o, out); });
}
int run_history(const HistoryOptions& o, std::ostream& out) {
  return as_invalid_input([&] { return run_history_impl(o, out); });
}

}  // namespace encbench::reports
