// The reporting half of `encbench bench ab` (live_ab.hpp): per-round values, the pooled
// Before/After/Comparison table, the verdict, the MDE and the plan on the terminal; versioned
// JSON of every round; a self-contained HTML page (reports' page with the A/B summary first).
#include <cmath>
#include <fstream>
#include <iomanip>
#include <map>
#include <ostream>
#include <sstream>

#include "harness/core/number_format.hpp"
#include "harness/core/error.hpp"
#include "harness/core/result_json.hpp"
#include "harness/core/stats.hpp"
#include "harness/scenario/live_ab.hpp"
#include "harness/scenario/pooled.hpp"
#include "harness/scenario/round_traces.hpp"
#include "reports/compare.hpp"
#include "reports/html.hpp"
#include "reports/tables.hpp"

namespace encbench::scenario {
namespace {

using numbers::fixed;

struct RoundColumn {
  const char* key;
  const char* title;
  int digits;
};
constexpr RoundColumn kRoundColumns[] = {
    {"mean_ttft_ms", "mean TTFT", 2},   {"median_ttft_ms", "med TTFT", 2}, {"p99_ttft_ms", "p99 TTFT", 2},
    {"mean_tpot_ms", "mean TPOT", 2},   {"request_throughput", "req/s", 3}, {"output_throughput", "tok/s", 1}};

// Per-round values in run order, so drift over the run is visible.
void print_rounds(std::ostream& out, const LiveAbOptions& o, const std::vector<std::vector<LiveArmRound>>& by_arm) {
  out << "\nPer-round values (run order; start = launch to ready, stop = stop to gone (SIGTERM to the process group for a command), ms)\n";
  out << std::left << std::setw(6) << "round" << std::setw(12) << "arm";
  for (const auto& c : kRoundColumns) out << std::right << std::setw(11) << c.title;
  out << std::setw(10) << "start" << std::setw(9) << "stop" << "\n";
  for (int round = 1; round <= o.rounds; ++round)
    for (int position = 0; position < 2; ++position)
      for (std::size_t a = 0; a < by_arm.size(); ++a)
        for (const auto& r : by_arm[a]) {
          if (r.round != round || r.position != position) continue;
          out << std::left << std::setw(6) << round << std::setw(12) << o.arms[a].name << std::right;
          for (const auto& c : kRoundColumns) out << std::setw(11) << fixed(r.serving.value(c.key, 0.0), c.digits);
          out << std::setw(10) << fixed(r.server.value("ready_ms", 0.0), 0) << std::setw(9)
              << (r.server.contains("stop_ms") ? fixed(r.server["stop_ms"].get<double>(), 0) : std::string("-")) << "\n";
        }
}

const reports::MetricComparison* row_of(const reports::Comparison& c, const std::string& name) {
  for (const auto& row : c.rows)
    if (row.name == name) return &row;
  return nullptr;
}

// One line per headline metric: verdict, change, and whether the run could have seen it.
nlohmann::json headline_verdicts(const reports::Comparison& c, const std::vector<MdeRow>& mde) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& m : mde) {
    const auto* row = row_of(c, m.metric);
    if (!row) continue;
    const judgement::Judgement& j = row->judgement;
    rows.push_back({{"metric", m.metric}, {"label", m.label}, {"before", row->before}, {"after", row->after},
                    {"relative_change", j.change ? nlohmann::json(*j.change) : nlohmann::json()},
                    {"change_text", judgement::format_change(j)},
                    {"verdict", reports::to_string(row->verdict)}, {"reason", row->reason}, {"test", j.test},
                    {"to_settle", j.settle}, {"caveat", j.caveat},
                    {"mde_rel", m.mde ? nlohmann::json(*m.mde) : nlohmann::json()}, {"mde_basis", m.basis}});
  }
  return rows;
}

void print_verdicts(std::ostream& out, const nlohmann::json& rows, const judgement::Settings& settings) {
  out << "\nVerdict per headline metric: After vs Before, change [" << numbers::significant(100 * (1 - settings.alpha), 4)
      << " % interval]; MDE = smallest change this test detects at " << fixed(100 * settings.power, 0)
      << " % power (" << judgement::describe(settings) << ")\n";
  for (const auto& r : rows) {
    const std::string mde = r["mde_rel"].is_number() ? fixed(100 * r["mde_rel"].get<double>(), 2) + " %" : "-";
    out << "  " << std::left << std::setw(34) << r["label"].get<std::string>() << std::setw(8)
        << r["verdict"].get<std::string>() << std::setw(32) << r["change_text"].get<std::string>() << " MDE " << std::setw(9)
        << mde << " " << r["reason"].get<std::string>() << "\n";
    if (!r["to_settle"].get<std::string>().empty())
      out << "  " << std::setw(42) << "" << "to settle it: " << r["to_settle"].get<std::string>() << "\n";
    if (!r["caveat"].get<std::string>().empty()) out << "  " << std::setw(42) << "" << r["caveat"].get<std::string>() << "\n";
  }
}

// The server's profiler traces, idle-gap analysis summed over each arm's rounds.
void print_trace_summary(std::ostream& out, const nlohmann::json& arms) {
  bool any = false;
  for (const auto& arm : arms) any = any || arm["trace_summary"].value("traces", 0) > 0;
  if (!any) return;
  out << "\nServer profiler traces (idle-gap analysis, rounds summed; harness/trace)\n";
  for (const auto& arm : arms) {
    const auto& t = arm["trace_summary"];
    out << "  " << std::left << std::setw(12) << arm["name"].get<std::string>() << std::right << t["traces"].get<int>()
        << " trace(s), device busy " << fixed(t["busy_ms"].get<double>(), 1) << " ms, idle "
        << fixed(t["idle_ms"].get<double>(), 1) << " ms (" << fixed(t["idle_pct"].get<double>(), 1) << " %); idle by cause:";
    for (const auto& [cls, v] : t["idle_ms_by_class"].items()) out << " " << cls << " " << fixed(v.get<double>(), 1) << " ms";
    out << "\n";
  }
}

// `trace diff` between the arms when any round's server wrote a profiler trace; null otherwise.
nlohmann::json arm_trace_diff(const std::vector<std::vector<LiveArmRound>>& by_arm) {
  std::map<int, nlohmann::json> traces[2];
  bool any = false;
  for (std::size_t a = 0; a < 2; ++a)
    for (const auto& r : by_arm[a]) {
      traces[a][r.round] = r.server.value("traces", nlohmann::json::array());
      any = any || !traces[a][r.round].empty();
    }
  for (const auto& [round, ignored] : traces[1]) traces[0].try_emplace(round, nlohmann::json::array());
  return any ? diff_arm_traces(traces[0], traces[1]) : nlohmann::json();
}

void print_trace_diff(std::ostream& out, const LiveAbOptions& o, const nlohmann::json& d) {
  if (d.is_null()) return;
  out << "\nTrace diff per forward, " << o.arms[0].name << " (A) vs " << o.arms[1].name << " (B), mean of "
      << d["rounds_diffed"].get<int>() << " round(s); harness/trace as `encbench trace diff`\n";
  if (d.contains("note")) out << "  " << d["note"].get<std::string>() << "\n";
  for (const auto& [name, v] : d["mean"].items())
    out << "  " << std::left << std::setw(24) << name << std::right << std::setw(12) << fixed(v["a"].get<double>(), 3)
        << std::setw(12) << fixed(v["b"].get<double>(), 3) << std::setw(12) << std::showpos
        << fixed(v["delta"].get<double>(), 3) << std::noshowpos << "\n";
  for (const auto& r : d["rounds"]) {
    if (r.contains("error")) out << "  round " << r["round"].get<int>() << ": " << r["error"].get<std::string>() << "\n";
    if (r.contains("workload_warning"))
      out << "  round " << r["round"].get<int>() << ": " << r["workload_warning"].get<std::string>() << "\n";
  }
}

// Start/stop cost per round against the measured run: what a fresh server per round adds.
nlohmann::json overhead_summary(const std::vector<std::vector<LiveArmRound>>& by_arm) {
  std::vector<double> ready, stop, run_s, warmup, wall;
  for (const auto& rounds : by_arm)
    for (const auto& r : rounds) {
      if (r.server.contains("stop_ms")) {  // a server this run started (not a URL arm)
        ready.push_back(r.server.value("ready_ms", 0.0));
        stop.push_back(r.server.value("stop_ms", 0.0));
      }
      run_s.push_back(r.serving.value("duration", 0.0));
      warmup.push_back(r.server.value("warmup_ms", 0.0));
      wall.push_back(r.server.value("round_wall_ms", 0.0));
    }
  auto stat = [](const std::vector<double>& xs) {
    if (xs.empty()) return nlohmann::json();
    return nlohmann::json{{"mean", stats::mean(xs)}, {"max", *std::max_element(xs.begin(), xs.end())}};
  };
  return {{"start_to_ready_ms", stat(ready)}, {"stop_ms", stat(stop)}, {"measured_run_s", stat(run_s)},
          {"warmup_ms", stat(warmup)}, {"round_wall_ms", stat(wall)}, {"started_servers", ready.size()}};
}

nlohmann::json rounds_json(const LiveAbOptions& o, const std::vector<std::vector<LiveArmRound>>& by_arm) {
  nlohmann::json arms = nlohmann::json::array();
  for (std::size_t a = 0; a < by_arm.size(); ++a) {
    const ArmRecipe& arm = o.arms[a];
    nlohmann::json env = nlohmann::json::object();
    for (const auto& [k, v] : arm.env) env[k] = v;
    nlohmann::json rounds = nlohmann::json::array();
    for (const auto& r : by_arm[a])
      rounds.push_back({{"round", r.round}, {"position", r.position}, {"server", r.server},
                        {"invalid_reasons", r.invalid}, {"serving", r.serving}});
    for (std::size_t k = 0; k < by_arm[a].size(); ++k)
      if (!by_arm[a][k].server_side.is_null()) rounds[k]["server_side"] = by_arm[a][k].server_side;
    std::vector<nlohmann::json> traces;
    for (const auto& r : by_arm[a]) traces.push_back(r.server.value("traces", nlohmann::json::array()));
    arms.push_back({{"name", arm.name}, {"url", arm.url}, {"command", arm.command}, {"env", env},
                    {"cwd", arm.cwd.string()}, {"fixed_port", arm.fixed_port}, {"rounds", rounds},
                    {"trace_summary", sum_trace_analyses(traces)}});
  }
  return arms;
}

// The headline's absolute values: the first verdict row's (mean TTFT) value on each arm.
std::string headline_values(const LiveAbOptions& o, const nlohmann::json& doc) {
  const auto verdicts = doc.value("verdicts", nlohmann::json::array());
  if (verdicts.empty()) return "";
  const auto& r = verdicts.front();
  return r["label"].get<std::string>() + ": " + o.arms[0].name + " " + fixed(r["before"].get<double>(), 2) + ", " +
         o.arms[1].name + " " + fixed(r["after"].get<double>(), 2);
}

// Every round of both arms in the order they ran (round by round, each round's first arm first).
std::vector<std::pair<std::string, nlohmann::json>> rounds_in_run_order(const nlohmann::json& arms) {
  std::vector<std::pair<std::string, nlohmann::json>> rounds;
  for (const auto& arm : arms)
    for (const auto& r : arm["rounds"]) rounds.emplace_back(arm["name"].get<std::string>(), r);
  std::stable_sort(rounds.begin(), rounds.end(), [](const auto& a, const auto& b) {
    return std::pair(a.second["round"].template get<int>(), a.second["position"].template get<int>()) <
           std::pair(b.second["round"].template get<int>(), b.second["position"].template get<int>());
  });
  return rounds;
}

// The arms are called by their own names everywhere on the page (never Before/After or BASE/HEAD).
std::string html_summary(const LiveAbOptions& o, const nlohmann::json& doc) {
  using reports::xml_escape;
  std::ostringstream h;
  const std::string values = headline_values(o, doc);
  h << "<h1 id=\"ab-verdict\" class=\"" << (doc.value("headline", std::string("no verdict")) == "no verdict" ? "invalid" : "ab")
    << "\">A/B " << xml_escape(o.arms[1].name) << " vs " << xml_escape(o.arms[0].name) << ": "
    << xml_escape(doc.value("headline", std::string("no verdict"))) << (values.empty() ? "" : " <small>(" + xml_escape(values) + ")</small>")
    << "</h1>\n";
  if (!doc.value("failure", std::string()).empty())
    h << "<p class=\"warn\">Stopped early: " << xml_escape(doc["failure"].get<std::string>()) << "</p>\n";
  if (doc.value("interrupted", false)) h << "<p class=\"warn\">Interrupted: the rounds that finished are shown.</p>\n";
  for (const auto& reason : doc.value("invalid_reasons", nlohmann::json::array()))
    h << "<p class=\"warn\">" << xml_escape(reason.get<std::string>()) << "</p>\n";
  h << "<table id=\"ab-mde\"><tr><th>Metric</th><th>" << xml_escape(o.arms[0].name) << "</th><th>"
    << xml_escape(o.arms[1].name) << "</th><th>Change</th><th>Verdict</th><th>MDE (80 % power)</th><th>basis</th></tr>\n";
  for (const auto& r : doc.value("verdicts", nlohmann::json::array()))
    h << "<tr><td>" << xml_escape(r["label"].get<std::string>()) << "</td><td class=\"n\">" << fixed(r["before"].get<double>(), 3)
      << "</td><td class=\"n\">" << fixed(r["after"].get<double>(), 3) << "</td><td class=\"n\">"
      << (r["relative_change"].is_number() ? fixed(100 * r["relative_change"].get<double>(), 2) + " %" : "-")
      << "</td><td>" << xml_escape(r["verdict"].get<std::string>()) << "</td><td class=\"n\">"
      << (r["mde_rel"].is_number() ? fixed(100 * r["mde_rel"].get<double>(), 2) + " %" : "unknown") << "</td><td>"
      << xml_escape(r.value("mde_basis", std::string())) << "</td></tr>\n";
  h << "</table>\n<h2 id=\"ab-rounds\">Per-round values (run order)</h2>\n<table><tr><th>round</th><th>arm</th>";
  for (const auto& c : kRoundColumns) h << "<th>" << c.title << "</th>";
  h << "<th>start ms</th><th>stop ms</th><th>server notes</th></tr>\n";
  for (const auto& [arm_name, r] : rounds_in_run_order(doc["arms"])) {
      h << "<tr><td>" << r["round"].get<int>() << "</td><td>" << xml_escape(arm_name) << "</td>";
      for (const auto& c : kRoundColumns) h << "<td>" << fixed(r["serving"].value(c.key, 0.0), c.digits) << "</td>";
      h << "<td>" << fixed(r["server"].value("ready_ms", 0.0), 0) << "</td><td>"
        << (r["server"].contains("stop_ms") ? fixed(r["server"]["stop_ms"].get<double>(), 0) : "-") << "</td><td>"
        << xml_escape(r["server"].value("metrics_message", std::string()) + " " +
                      r["server"].value("profile_message", std::string()))
        << "</td></tr>\n";
    }
  h << "</table>\n";
  bool traces = false;
  for (const auto& arm : doc["arms"]) traces = traces || arm["trace_summary"].value("traces", 0) > 0;
  if (traces) {
    h << "<h2 id=\"ab-traces\">Server profiler traces: device idle by cause (rounds summed)</h2>\n<table><tr><th>arm</th>"
         "<th>traces</th><th>busy ms</th><th>idle ms</th><th>idle %</th><th>idle by cause (ms)</th></tr>\n";
    for (const auto& arm : doc["arms"]) {
      const auto& t = arm["trace_summary"];
      h << "<tr><td>" << xml_escape(arm["name"].get<std::string>()) << "</td><td>" << t["traces"].get<int>() << "</td><td>"
        << fixed(t["busy_ms"].get<double>(), 1) << "</td><td>" << fixed(t["idle_ms"].get<double>(), 1) << "</td><td>"
        << fixed(t["idle_pct"].get<double>(), 1) << "</td><td>";
      for (const auto& [cls, v] : t["idle_ms_by_class"].items()) h << xml_escape(cls) << " " << fixed(v.get<double>(), 1) << " ";
      h << "</td></tr>\n";
    }
    h << "</table>\n";
  }
  if (doc.contains("trace_diff")) {
    const auto& d = doc["trace_diff"];
    h << "<h2 id=\"ab-trace-diff\">Trace diff per forward (mean of " << d["rounds_diffed"].get<int>()
      << " round(s))</h2>\n";
    if (d.contains("note")) h << "<p class=\"warn\">" << xml_escape(d["note"].get<std::string>()) << "</p>\n";
    h << "<table><tr><th>metric</th><th>" << xml_escape(o.arms[0].name) << "</th><th>" << xml_escape(o.arms[1].name)
      << "</th><th>B - A</th></tr>\n";
    for (const auto& [name, v] : d["mean"].items())
      h << "<tr><td>" << xml_escape(name) << "</td><td>" << fixed(v["a"].get<double>(), 3) << "</td><td>"
        << fixed(v["b"].get<double>(), 3) << "</td><td>" << fixed(v["delta"].get<double>(), 3) << "</td></tr>\n";
    h << "</table>\n";
    for (const auto& r : d["rounds"])
      if (r.contains("error") || r.contains("workload_warning"))
        h << "<p class=\"warn\">round " << r["round"].get<int>() << ": "
          << xml_escape(r.value("error", r.value("workload_warning", std::string()))) << "</p>\n";
  }
  if (doc.contains("plan")) h << "<p id=\"ab-plan\">Plan: " << xml_escape(doc["plan"].value("summary", std::string())) << "</p>\n";
  return h.str();
}

// reports' page (verdict, moved metrics, per-round evidence, pooled CDFs) with the A/B summary
// in front of it.
std::string render_page(const LiveAbOptions& o, const nlohmann::json& doc, const reports::Comparison& c,
                        const std::vector<std::vector<LiveArmRound>>& by_arm) {
  reports::ReportContent content;
  content.title = "encbench bench ab: " + o.arms[1].name + " vs " + o.arms[0].name;
  reports::GateInput gate;
  gate.source = (o.out_dir / "ab.json").string();
  gate.name = o.arms[1].name + " vs " + o.arms[0].name;
  gate.sides = {o.arms[0].name, o.arms[1].name};
  gate.doc = make_result_envelope("encbench-compare", 1, {}, c.identity.device);
  gate.doc.update(reports::to_json(c));
  for (std::size_t a = 0; a < by_arm.size(); ++a)
    for (const auto& r : by_arm[a]) {
      const std::string source =
          (o.out_dir / ("round-" + std::to_string(r.round) + "-" + o.arms[a].name) / "serving.json").string();
      (a == 0 ? gate.base_rounds : gate.new_rounds).push_back(reports::parse_result(r.serving, source));
    }
  content.gates.push_back(std::move(gate));
  for (const auto& reason : doc.value("invalid_reasons", nlohmann::json::array()))
    content.no_verdict_reasons.push_back(reason.get<std::string>());
  std::string html = reports::render_html_report(content).html;
  // The A/B summary is the page's headline (its one h1); the report's verdict follows as a section.
  const std::string verdict_open = "<h1 id=\"verdict\"";
  auto at = html.find(verdict_open);
  if (at != std::string::npos) {
    html.replace(at, 3, "<h2");
    const auto close = html.find("</h1>", at);
    if (close != std::string::npos) html.replace(close, 5, "</h2>");
  }
  html.insert(at == std::string::npos ? html.find("<body>") + 7 : at, html_summary(o, doc));
  return html;
}

void write_page(const std::filesystem::path& path, const std::string& html) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << html;
  require(static_cast<bool>(f), "cannot write " + path.string());
}

// Both arms finished a round: the pooled comparison, verdicts, MDE and plan, on `out` and in `doc`.
reports::Comparison compare_arms(const LiveAbOptions& o, const std::vector<std::vector<LiveArmRound>>& by_arm,
                                 const std::vector<std::string>& invalid, nlohmann::json& doc, std::ostream& out) {
  std::vector<std::vector<std::string>> names(2);
  std::vector<std::vector<nlohmann::json>> serving(2);
  for (std::size_t a = 0; a < 2; ++a)
    for (const auto& r : by_arm[a]) {
      serving[a].push_back(r.serving);
      names[a].push_back(o.arms[a].name + " round " + std::to_string(r.round));
    }
  const reports::RunResult pa = pool_repeats(serving[0], names[0]), pb = pool_repeats(serving[1], names[1]);
  reports::Gate gate = reports::default_gate(o.judging);
  gate.name = "bench ab (" + judgement::describe(o.judging) + ")";
  reports::Comparison comparison = reports::compare_runs(pa, pb, gate);
  comparison.gate_requested = false;
  const auto mde = minimum_detectable_effects(pa, pb, comparison);
  doc["comparison"] = reports::to_json(comparison);
  doc["mde"] = nlohmann::json::array();
  for (const auto& row : mde) doc["mde"].push_back(to_json(row));
  doc["verdicts"] = headline_verdicts(comparison, mde);
  out << "\nA/B: " << o.arms[0].name << " (Before) vs " << o.arms[1].name << " (After), " << by_arm[0].size() << " + "
      << by_arm[1].size() << " round(s), interleaved ABBA, pooled\n";
  if (invalid.empty()) {
    // The comparison asked no gate (gate_requested false): the table carries no PASS/FAIL line.
    out << reports::render_terminal(comparison);
    print_verdicts(out, doc["verdicts"], o.judging);
  } else {
    out << "NO VERDICT: some rounds did not run cleanly:\n";
    for (const auto& reason : invalid) out << "  - " << reason << "\n";
  }
  print_mde(out, mde, o.judging);
  if (o.plan_change && by_arm[0].size() >= 2 && by_arm[1].size() >= 2) {
    const Plan plan = plan_rounds(pa, pb, *o.plan_change, o.rounds > 0 ? by_arm[0].front().serving.value("num_prompts", 0) : 0,
                                  o.judging);
    print_plan(out, plan);
    doc["plan"] = to_json(plan);
  }
  return comparison;
}

void print_overhead(std::ostream& out, const nlohmann::json& ov) {
  if (!ov["start_to_ready_ms"].is_object()) return;
  out << "\nServer start/stop per round: start to ready " << fixed(ov["start_to_ready_ms"]["mean"].get<double>(), 0)
      << " ms mean (max " << fixed(ov["start_to_ready_ms"]["max"].get<double>(), 0) << "), stop "
      << fixed(ov["stop_ms"]["mean"].get<double>(), 0) << " ms mean (max " << fixed(ov["stop_ms"]["max"].get<double>(), 0)
      << "), warm-up run " << fixed(ov["warmup_ms"]["mean"].get<double>(), 0) << " ms mean, measured run "
      << fixed(ov["measured_run_s"]["mean"].get<double>(), 2) << " s mean, whole round "
      << fixed(ov["round_wall_ms"]["mean"].get<double>() / 1e3, 2) << " s mean\n";
}

}  // namespace

LiveAbRun report_live_ab(const LiveAbOptions& o, const std::vector<std::vector<LiveArmRound>>& by_arm, LiveAbRun run,
                         const std::vector<std::string>& argv, std::ostream& out, std::ostream& progress) {
  nlohmann::json doc = make_result_envelope("encbench-live-ab", 1, argv, "");
  doc["rounds_requested"] = o.rounds;
  doc["settings"] = {{"alpha", o.judging.alpha}, {"power", o.judging.power}, {"threshold", o.judging.threshold},
                     {"ready_timeout_s", o.ready_timeout_s}, {"stop_grace_s", o.stop_grace_s}};
  doc["failure"] = run.failure;
  doc["interrupted"] = run.interrupted;
  doc["arms"] = rounds_json(o, by_arm);
  doc["overhead"] = overhead_summary(by_arm);
  std::vector<std::string> invalid;
  for (const auto& rounds : by_arm)
    for (const auto& r : rounds) invalid.insert(invalid.end(), r.invalid.begin(), r.invalid.end());
  doc["invalid_reasons"] = invalid;
  run.no_verdict = !invalid.empty();
  print_rounds(out, o, by_arm);
  std::optional<reports::Comparison> comparison;
  if (!by_arm[0].empty() && !by_arm[1].empty()) {
    comparison = compare_arms(o, by_arm, invalid, doc, out);
  } else {
    out << "\nNo comparison: arm '" << o.arms[by_arm[0].empty() ? 0 : 1].name << "' finished no round\n";
  }
  std::string headline = "no verdict";
  if (comparison && invalid.empty())
    for (const auto& r : doc["verdicts"])
      if (r["metric"] == "mean_ttft_ms")
        headline = "mean TTFT " + r["verdict"].get<std::string>() + " " + r["change_text"].get<std::string>() +
                   (r["mde_rel"].is_number() ? " (MDE " + fixed(100 * r["mde_rel"].get<double>(), 2) + " %; " : " (") +
                   judgement::describe(o.judging) + ")";
  doc["headline"] = headline;
  print_trace_summary(out, doc["arms"]);
  if (nlohmann::json diff = arm_trace_diff(by_arm); !diff.is_null()) {
    print_trace_diff(out, o, diff);
    doc["trace_diff"] = std::move(diff);
  }
  print_overhead(out, doc["overhead"]);
  out << "Headline: " << headline << "\n";
  if (!run.failure.empty()) out << "error: " << run.failure << " (the rounds that finished are written)\n";
  run.json_path = o.out_dir / "ab.json";
  write_json_file(run.json_path, doc);
  progress << "[ab] wrote " << run.json_path.string() << std::endl;
  if (comparison) {
    run.html_path = o.out_dir / "ab.html";
    write_page(run.html_path, render_page(o, doc, *comparison, by_arm));
    progress << "[ab] wrote " << run.html_path.string() << std::endl;
  }
  run.result = std::move(doc);
  return run;
}

}  // namespace encbench::scenario
