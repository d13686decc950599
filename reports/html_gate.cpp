// The verdict-first part of the HTML report: the gate's result, the metrics that moved, NOISY and
// SAME folded, and the evidence behind each verdict (BASE vs HEAD with the rounds pooled).
#include "reports/html_sections.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "harness/core/number_format.hpp"
#include "harness/core/error.hpp"
#include "harness/core/result_json.hpp"
#include "harness/core/stats.hpp"
#include "reports/svg.hpp"

namespace encbench::reports {

using nlohmann::json;
using namespace svg;

namespace {

std::string slug(const std::string& s) {
  std::string out;
  for (char ch : s) out += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '-';
  return out;
}

std::string pct(double fraction, int digits = 1) { return numbers::percent_of_fraction(fraction, digits); }

// The paths of a compare JSON's "base" / "new": as written, else relative to the compare file's
// directory with leading components dropped (an artefact directory moved as a whole).
std::vector<RunResult> load_side(const std::string& spec, const std::filesystem::path& compare_dir,
                                 std::string& note) {
  std::vector<RunResult> runs;
  std::stringstream list(spec);
  std::string item;
  while (std::getline(list, item, ',')) {
    if (item.empty()) continue;
    std::filesystem::path p(item), found;
    if (std::filesystem::exists(p)) found = p;
    for (auto it = p.begin(); found.empty() && it != p.end(); ++it) {
      std::filesystem::path tail;
      for (auto jt = it; jt != p.end(); ++jt) tail /= *jt;
      if (tail.is_relative() && std::filesystem::exists(compare_dir / tail)) found = compare_dir / tail;
    }
    if (found.empty()) {
      note = "rounds not found (" + item + "): evidence charts left out";
      return {};
    }
    for (const auto& f : expand_inputs(found.string())) runs.push_back(load_result(f));
  }
  return runs;
}

// Quantile of sorted data, linear interpolation (numpy's default).
double quantile(const std::vector<double>& sorted, double q) {
  return sorted.empty() ? 0.0 : stats::percentile_sorted(sorted, 100.0 * q);
}

struct Side {
  std::vector<double> pooled;                 // every sample of every round (sorted)
  std::vector<std::pair<std::string, double>> rounds;  // (round source, the metric's value in it)
  std::vector<std::size_t> round_samples;
  std::vector<double> round_medians;
};

Side side_of(const std::vector<RunResult>& rounds, const std::string& metric) {
  Side s;
  for (const auto& r : rounds) {
    const Metric* m = r.find(metric);
    if (!m || m->text) continue;
    s.rounds.emplace_back(r.source, m->value);
    s.round_samples.push_back(m->samples.size());
    s.round_medians.push_back(m->samples.empty() ? m->value : stats::median(m->samples));
    if (m->samples.empty()) s.pooled.push_back(m->value);
    else s.pooled.insert(s.pooled.end(), m->samples.begin(), m->samples.end());
  }
  std::sort(s.pooled.begin(), s.pooled.end());
  return s;
}

// BASE vs HEAD of one metric: a box per side (quartiles, whiskers p5..p95 or min..max below 20
// samples), the pooled statistic as a diamond, each round's own value as a hollow circle.
std::string distribution_chart(const std::string& id, const std::string& title, const std::string& unit,
                               const Side& base, const Side& head, double before, double after,
                               const std::array<std::string, 2>& names) {
  double lo = std::min(before, after), hi = std::max(before, after);
  auto extend = [&](const Side& s) {
    if (s.pooled.empty()) return;
    const bool many = s.pooled.size() >= 20;
    lo = std::min(lo, many ? quantile(s.pooled, 0.01) : s.pooled.front());
    hi = std::max(hi, many ? quantile(s.pooled, 0.99) : s.pooled.back());
    for (const auto& [src, v] : s.rounds) {
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  };
  extend(base);
  extend(head);
  if (!(hi > lo)) {
    lo -= std::max(1.0, std::fabs(lo) * 0.05);
    hi += std::max(1.0, std::fabs(hi) * 0.05);
  }
  const double pad_x = (hi - lo) * 0.04;
  lo -= pad_x;
  hi += pad_x;
  const double left = 70, right = 20, width = 760, row = 38;
  const double pw = width - left - right;
  const std::vector<LegendEntry> legend = {{names[0] + " (" + std::to_string(base.rounds.size()) + " rounds pooled)", kBaseColour},
                                           {names[1] + " (" + std::to_string(head.rounds.size()) + " rounds pooled)", kHeadColour}};
  const double top = 30 + legend_height(legend, pw) + 8;
  const double height = top + 2 * row + 44;
  auto sx = [&](double v) { return left + (std::clamp(v, lo, hi) - lo) / (hi - lo) * pw; };
  std::ostringstream o;
  o << "<svg id=\"" << esc(id) << "\" class=\"chart dist\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width
    << "\" height=\"" << height << "\" viewBox=\"0 0 " << width << " " << height << "\" role=\"img\">\n";
  o << "<title>" << esc(title) << "</title>\n<text x=\"" << left << "\" y=\"20\" class=\"ctitle\">"
    << esc(shorten(title, 88)) << "</text>\n";
  draw_legend(o, legend, left, 28, pw);
  for (double t : nice_ticks(lo, hi))
    o << "<line x1=\"" << num(sx(t)) << "\" y1=\"" << top << "\" x2=\"" << num(sx(t)) << "\" y2=\"" << top + 2 * row
      << "\" class=\"grid\"/><text x=\"" << num(sx(t)) << "\" y=\"" << top + 2 * row + 16
      << "\" class=\"tick\" text-anchor=\"middle\">" << tick_label(t) << "</text>\n";
  o << "<rect x=\"" << left << "\" y=\"" << top << "\" width=\"" << pw << "\" height=\"" << 2 * row
    << "\" class=\"frame\"/>\n";
  o << "<text x=\"" << left + pw / 2 << "\" y=\"" << height - 8 << "\" class=\"axis\" text-anchor=\"middle\">"
    << esc(unit.empty() ? "value" : unit) << "</text>\n";
  const Side* sides[2] = {&base, &head};
  const double stat[2] = {before, after};
  for (int i = 0; i < 2; ++i) {
    const Side& s = *sides[i];
    const char* c = i == 0 ? kBaseColour : kHeadColour;
    const double y0 = top + row * i, cy = y0 + row / 2;
    o << "<text x=\"" << left - 6 << "\" y=\"" << cy + 4 << "\" class=\"tick\" text-anchor=\"end\">"
      << esc(names[i]) << "</text>\n";
    if (!s.pooled.empty()) {
      const bool many = s.pooled.size() >= 20;
      const double w_lo = many ? quantile(s.pooled, 0.05) : s.pooled.front();
      const double w_hi = many ? quantile(s.pooled, 0.95) : s.pooled.back();
      const double q1 = quantile(s.pooled, 0.25), q2 = quantile(s.pooled, 0.5), q3 = quantile(s.pooled, 0.75);
      o << "<g class=\"box\" stroke=\"" << c << "\"><title>" << esc(names[i]) << ": n="
        << s.pooled.size() << ", quartiles " << format_number(q1) << " / " << format_number(q2) << " / "
        << format_number(q3) << ", whiskers " << (many ? "p5..p95 " : "min..max ") << format_number(w_lo) << ".."
        << format_number(w_hi) << "</title>";
      o << "<line x1=\"" << num(sx(w_lo)) << "\" y1=\"" << cy << "\" x2=\"" << num(sx(w_hi)) << "\" y2=\"" << cy
        << "\" stroke-width=\"1.5\"/>";
      o << "<rect x=\"" << num(sx(q1)) << "\" y=\"" << y0 + 9 << "\" width=\"" << num(std::max(1.0, sx(q3) - sx(q1)))
        << "\" height=\"" << row - 18 << "\" fill=\"" << c << "\" fill-opacity=\"0.25\" stroke-width=\"1.5\"/>";
      o << "<line x1=\"" << num(sx(q2)) << "\" y1=\"" << y0 + 9 << "\" x2=\"" << num(sx(q2)) << "\" y2=\""
        << y0 + row - 9 << "\" stroke-width=\"2.5\"/></g>\n";
    }
    // Round-to-round spread: each round's own value of the metric.
    for (std::size_t k = 0; k < s.rounds.size(); ++k) {
      const double dy = (static_cast<double>(k % 3) - 1.0) * 5.0;
      o << "<circle class=\"round\" cx=\"" << num(sx(s.rounds[k].second)) << "\" cy=\"" << num(cy + dy)
        << "\" r=\"3.5\" fill=\"#fff\" stroke=\"" << c << "\" stroke-width=\"1.5\"><title>round " << k + 1 << ": "
        << format_number(s.rounds[k].second) << "</title></circle>\n";
    }
    const double dx = sx(stat[i]);
    o << "<path class=\"stat\" d=\"M" << num(dx) << " " << num(cy - 6) << " l6 6 l-6 6 l-6 -6 z\" fill=\"" << c
      << "\" stroke=\"#222\" stroke-width=\"0.8\"><title>pooled value " << format_number(stat[i]) << "</title></path>\n";
  }
  o << "</svg>\n";
  return o.str();
}

std::string per_round_table(const Side& base, const Side& head, const std::array<std::string, 2>& names) {
  std::ostringstream o;
  o << "<details class=\"rounds\"><summary>Per round</summary><table><tr><th>side</th><th>round</th><th>file</th>"
       "<th>value</th><th>samples</th><th>median of samples</th></tr>\n";
  const Side* sides[2] = {&base, &head};
  for (int i = 0; i < 2; ++i)
    for (std::size_t k = 0; k < sides[i]->rounds.size(); ++k)
      o << "<tr><td>" << esc(names[i]) << "</td><td>" << k + 1 << "</td><td>"
        << esc(std::filesystem::path(sides[i]->rounds[k].first).filename().string()) << "</td><td>"
        << format_number(sides[i]->rounds[k].second) << "</td><td>" << sides[i]->round_samples[k] << "</td><td>"
        << format_number(sides[i]->round_medians[k]) << "</td></tr>\n";
  o << "</table></details>\n";
  return o.str();
}

struct GateRow {
  const GateInput* gate = nullptr;
  const json* metric = nullptr;  // a "metrics" row, or
  const json* exact = nullptr;   // an "exact_checks" row
  std::string verdict;           // FASTER SLOWER NOISY SAME VIOLATED OK
  bool regression = false;
  std::string evidence_id;
};

std::string get_s(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}
double get_d(const json& j, const char* key, double fallback = 0) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : fallback;
}

std::set<std::string> exact_metrics(const json& doc) {
  std::set<std::string> out;
  for (const auto& e : doc.value("exact_checks", json::array()))
    if (e.value("applicable", false)) out.insert(get_s(e, "metric"));
  return out;
}

// "t on log round values, 3/3 rounds, p=0.012, MDE 8.1 %" and similar: what the verdict rests on.
std::string evidence_text(const json& m) {
  std::ostringstream o;
  const std::string method = get_s(m, "method");
  if (m.contains("test") && m["test"].is_string()) {
    const auto& rounds = m.value("rounds", json::array());
    const auto& requests = m.value("requests", json::array());
    const bool by_rounds = rounds.size() == 2 && (rounds[0].get<std::size_t>() > 1 || rounds[1].get<std::size_t>() > 1);
    o << m["test"].get<std::string>();
    if (by_rounds) o << ", " << rounds[0].get<std::size_t>() << "/" << rounds[1].get<std::size_t>() << " rounds";
    else if (requests.size() == 2 && requests[0].get<std::size_t>() > 0)
      o << ", " << requests[0].get<std::size_t>() << "/" << requests[1].get<std::size_t>() << " requests";
    if (m.contains("p_value") && m["p_value"].is_number()) {
      const double p = m["p_value"].get<double>();
      o << ", " << (p < 0.001 ? "p<0.001" : "p=" + numbers::fixed(p, 3));
    }
    if (m.contains("mde_relative") && m["mde_relative"].is_number()) o << ", MDE " << pct(get_d(m, "mde_relative"));
    if (m.contains("to_settle") && m["to_settle"].is_string()) o << "; to settle: " << m["to_settle"].get<std::string>();
    return o.str();
  }
  const std::string n = std::to_string(m.value("n_before", 0)) + "/" + std::to_string(m.value("n_after", 0));
  if (m.contains("p_value") && m["p_value"].is_number()) {
    const double p = m["p_value"].get<double>();
    o << (p < 0.001 ? "p<0.001" : "p=" + numbers::fixed(p, 3)) << ", n=" << n;
    if (m.contains("between_run_noise_relative"))
      o << "; between rounds \u00b1" << pct(get_d(m, "between_run_noise_relative"));
  } else if (m.contains("prediction_interval") && m["prediction_interval"].is_array()) {
    o << "PI [" << format_number(m["prediction_interval"][0].get<double>()) << ", "
      << format_number(m["prediction_interval"][1].get<double>()) << "]";
  } else if (m.contains("noise_floor_relative")) {
    o << "noise floor \u00b1" << pct(get_d(m, "noise_floor_relative")) << ", n=" << n;
  } else {
    o << (method.empty() ? "-" : method);
  }
  return o.str();
}

// The HEAD rounds' own changes against pooled BASE: the spread of the change itself.
std::string round_change_range(const Side& head, double before) {
  if (head.rounds.size() < 2 || before == 0) return "";
  double lo = 1e300, hi = -1e300;
  for (const auto& [src, v] : head.rounds) {
    lo = std::min(lo, (v - before) / std::fabs(before));
    hi = std::max(hi, (v - before) / std::fabs(before));
  }
  return "rounds " + numbers::signed_fixed(100 * lo, 1) + "%.." + numbers::signed_fixed(100 * hi, 1) + "%";
}

std::string verdict_badge(const std::string& v, bool regression) {
  const std::string cls = regression ? "bad" : v == "FASTER" ? "good" : v == "NOISY" ? "noisy" : "same";
  return "<span class=\"badge " + cls + "\">" + esc(v) + (regression ? " \u00b7 REGRESSION" : "") + "</span>";
}

std::string gate_label(const GateInput& g) { return g.name.empty() ? g.source : g.name; }


// Every row of every comparison, classified once; and what the line under the verdict says.
struct ClassifiedRows {
  std::vector<GateRow> moved, noisy, same;
  std::map<std::string, std::size_t> rel_thresholds, abs_thresholds;
  std::set<std::string> gate_files;
  std::set<double> alphas;
};

ClassifiedRows classify_rows(const ReportContent& c) {
  ClassifiedRows out;
  for (const auto& g : c.gates) {
    out.gate_files.insert(get_s(g.doc, "gate"));
    out.alphas.insert(get_d(g.doc, "alpha", 0.002));
    const auto exact = exact_metrics(g.doc);
    for (const auto& m : g.doc["metrics"]) {
      if (!m.is_object()) throw InvalidInput(g.source + ": a \"metrics\" entry is not an object");
      if (exact.count(get_s(m, "metric"))) continue;  // shown as its exact check
      GateRow r{&g, &m, nullptr, get_s(m, "verdict"), m.value("regression", false), ""};
      if (m.value("gated", false)) {
        ++out.rel_thresholds[pct(get_d(m, "threshold_relative"), 0)];
        if (get_d(m, "threshold_absolute") > 0)
          ++out.abs_thresholds[format_number(get_d(m, "threshold_absolute")) + " " + get_s(m, "unit")];
      }
      if (r.verdict == "FASTER" || r.verdict == "SLOWER") {
        r.evidence_id = "ev-" + slug(gate_label(g)) + "-" + slug(get_s(m, "metric"));
        out.moved.push_back(r);
      } else if (r.verdict == "NOISY") {
        out.noisy.push_back(r);
      } else if (r.verdict == "SAME") {
        out.same.push_back(r);
      }
    }
    static const json kNone = json::array();
    const json& checks = g.doc.contains("exact_checks") && g.doc["exact_checks"].is_array() ? g.doc["exact_checks"] : kNone;
    for (const auto& e : checks) {  // (rows keep pointers: iterate the document, not a copy)
      if (!e.is_object() || !e.value("applicable", false)) continue;
      const bool ok = e.value("passed", true);
      GateRow r{&g, nullptr, &e, ok ? "OK" : "VIOLATED", !ok, ""};
      (ok ? out.same : out.moved).push_back(r);
    }
  }
  std::stable_partition(out.moved.begin(), out.moved.end(), [](const GateRow& r) { return r.regression; });
  return out;
}

// The line under the verdict: title, gate, alpha, thresholds.
std::string gate_line(const std::string& title, const ClassifiedRows& rows) {
  std::ostringstream o;
  o << "<p class=\"sub\">" << esc(title);
  if (!rows.gate_files.empty()) {
    o << " \u00b7 gate ";
    std::size_t i = 0;
    for (const auto& f : rows.gate_files) o << (i++ ? ", " : "") << "<code>" << esc(f) << "</code>";
    o << " \u00b7 alpha ";
    i = 0;
    for (double a : rows.alphas) o << (i++ ? ", " : "") << a;
    o << " \u00b7 thresholds: relative ";
    i = 0;
    for (const auto& [t, n] : rows.rel_thresholds) o << (i++ ? ", " : "") << esc(t) << " (" << n << ")";
    if (!rows.abs_thresholds.empty()) {
      o << "; absolute ";
      i = 0;
      for (const auto& [t, n] : rows.abs_thresholds) o << (i++ ? ", " : "") << esc(t) << " (" << n << ")";
    }
    o << "; verdicts by the one rule of docs/reports.md (Verdicts), a gate's SLOWER held after Holm's correction";
  }
  o << "</p>\n";
  return o.str();
}

// One row of the verdict tables: a metric (values, change, evidence) or an exact check.
std::string row_html(const GateRow& r, bool with_link) {
  std::ostringstream t;
  const json& src = r.metric ? *r.metric : *r.exact;
  const std::string name = get_s(src, "metric");
  const bool det = r.exact != nullptr || is_deterministic_metric(name);
  t << "<tr" << (r.regression ? " class=\"reg\"" : "") << "><td>" << esc(gate_label(*r.gate)) << "</td><td class=\"m\">"
    << esc(get_s(src, "label").empty() ? name : get_s(src, "label")) << "</td>";
  if (r.metric) {
    const json& m = *r.metric;
    // The judgement's own change and interval where it made one; the plain relative change else.
    std::optional<double> change;
    if (m.contains("relative_change") && m["relative_change"].is_number()) change = m["relative_change"].get<double>();
    if (m.contains("change") && m["change"].is_number()) change = m["change"].get<double>();
    // The interval on a line of its own, so that narrow pages wrap it rather than overflow.
    std::string change_html = esc(format_change(change));
    if (m.contains("change_interval") && m["change_interval"].is_array() && m["change_interval"].size() == 2)
      change_html += "<br><small style=\"white-space:normal\">[" + numbers::signed_fixed(100 * m["change_interval"][0].get<double>(), 2) + ", " +
                     numbers::signed_fixed(100 * m["change_interval"][1].get<double>(), 2) + "]</small>";
    std::string spread = evidence_text(m);
    if (!r.evidence_id.empty()) {
      const std::string range = round_change_range(side_of(r.gate->new_rounds, name), get_d(m, "before"));
      if (!range.empty()) spread += "; " + range;
    }
    t << "<td class=\"n\">" << format_number(get_d(m, "before")) << "</td><td class=\"n\">"
      << format_number(get_d(m, "after")) << "</td><td class=\"n\">" << change_html
      << "</td><td>" << esc(spread) << "</td>";
  } else {
    const json& e = *r.exact;
    t << "<td class=\"n\">" << esc(get_s(e, "before")) << "</td><td class=\"n\">" << esc(get_s(e, "after"))
      << "</td><td>" << esc(get_s(e, "expectation")) << "</td><td>exact check"
      << (e.value("passed", true) ? "" : ": " + esc(get_s(e, "reason"))) << "</td>";
  }
  const std::string accepted = get_s(src, "accepted");
  t << "<td>" << metric_kind_name(det) << "</td><td>" << verdict_badge(r.verdict, r.regression)
    << (accepted.empty() ? "" : " <span class=\"badge noisy\">ACCEPTED: " + esc(accepted) + "</span>") << "</td>";
  if (with_link)
    t << "<td>" << (r.evidence_id.empty() ? "" : "<a href=\"#" + r.evidence_id + "\">evidence</a>") << "</td>";
  t << "</tr>\n";
  return t.str();
}

// The moved table, then NOISY and SAME folded.
std::string verdict_tables(const ClassifiedRows& rows, const std::array<std::string, 2>& sides) {
  std::ostringstream o;
  const std::string header = "<tr><th>gate</th><th>metric</th><th>" + esc(sides[0]) + "</th><th>" + esc(sides[1]) +
                             "</th><th>change</th><th>interval / spread</th><th>kind</th><th>verdict</th>";
  o << "<h2 id=\"moved\">Moved beyond noise: " << rows.moved.size() << "</h2>\n";
  if (rows.moved.empty()) {
    o << "<p>No metric moved beyond noise (" << rows.same.size() << " SAME, " << rows.noisy.size() << " NOISY).</p>\n";
  } else {
    o << "<table class=\"moved\">" << header << "<th></th></tr>\n";
    for (const auto& r : rows.moved) o << row_html(r, true);
    o << "</table>\n";
  }
  o << "<details id=\"noisy\"><summary>NOISY: " << rows.noisy.size()
    << " metrics not testable with this evidence (one value a side, or too few requests beyond a percentile; "
       "each says what would settle it; never fails a gate)"
    << "</summary>\n<table>" << header << "</tr>\n";
  for (const auto& r : rows.noisy) o << row_html(r, false);
  o << "</table></details>\n";
  o << "<details id=\"same\"><summary>SAME: " << rows.same.size()
    << " metrics and exact checks: no change detected beyond the threshold (each with its MDE)</summary>\n<table>"
    << header << "</tr>\n";
  for (const auto& r : rows.same) o << row_html(r, false);
  o << "</table></details>\n";
  return o.str();
}

// Evidence of each moved metric: BASE vs HEAD distributions with each round's own value.
std::string evidence_html(const std::vector<GateRow>& moved, std::vector<std::string>& charts) {
  std::ostringstream o;
  bool any_evidence = false;
  for (const auto& r : moved) {
    if (!r.metric || r.gate->base_rounds.empty()) continue;
    const json& m = *r.metric;
    const std::string name = get_s(m, "metric");
    const Side base = side_of(r.gate->base_rounds, name), head = side_of(r.gate->new_rounds, name);
    if (base.rounds.empty() || head.rounds.empty()) continue;
    const auto& names = r.gate->sides;
    if (!any_evidence) o << "<h2 id=\"evidence\">Evidence: " << esc(names[0]) << " vs " << esc(names[1]) << ", rounds pooled</h2>\n";
    any_evidence = true;
    const std::string id = "dist-" + slug(gate_label(*r.gate)) + "-" + slug(name);
    o << "<div class=\"ev\" id=\"" << r.evidence_id << "\"><h3>" << esc(gate_label(*r.gate)) << ": "
      << esc(get_s(m, "label")) << " " << verdict_badge(r.verdict, r.regression) << "</h3>\n";
    o << distribution_chart(id, get_s(m, "label"), get_s(m, "unit"), base, head, get_d(m, "before"), get_d(m, "after"),
                            names);
    charts.push_back(id);
    o << "<p class=\"meta\">box: quartiles of the pooled " << esc(get_s(m, "sample_kind").empty() ? "values" : get_s(m, "sample_kind"))
      << ", whiskers p5..p95 (min..max below 20); \u25c6 the pooled value compared; \u25cb each round's own value. "
      << esc(get_s(m, "reason")) << "</p>\n";
    o << per_round_table(base, head, names) << "</div>\n";
  }
  return o.str();
}

}  // namespace

GateInput load_gate_input(const std::string& path) {
  GateInput g;
  g.source = path;
  g.doc = read_json_file(path);
  require(g.doc.is_object() && g.doc.value("schema", std::string()) == "encbench-compare",
          path + ": not an encbench-compare result (write one with encbench compare ... --json FILE)");
  require(g.doc.value("schema_version", 0) == 1,
          path + ": encbench-compare schema_version " + g.doc.value("schema_version", json()).dump() +
              " is not supported (expected 1)");
  require(g.doc.contains("metrics") && g.doc["metrics"].is_array(), path + ": no \"metrics\" array");
  std::string stem = std::filesystem::path(path).filename().string();
  for (const char* suffix : {".json", "-compare", "_compare"})
    if (stem.size() > std::strlen(suffix) && stem.compare(stem.size() - std::strlen(suffix), std::string::npos, suffix) == 0)
      stem.erase(stem.size() - std::strlen(suffix));
  g.name = stem;
  const auto dir = std::filesystem::path(path).parent_path();
  if (g.doc.value("baseline_mode", std::string("file")) == "file") {
    g.base_rounds = load_side(g.doc.value("base", std::string()), dir, g.rounds_note);
    if (g.rounds_note.empty()) g.new_rounds = load_side(g.doc.value("new", std::string()), dir, g.rounds_note);
    if (!g.rounds_note.empty()) g.base_rounds.clear(), g.new_rounds.clear();
  } else {
    g.rounds_note = "compared against history: no rounds to draw";
  }
  return g;
}

namespace detail {

// An A/B's own comparison (no gate asked): the page's question is the change. The headline is
// the primary metric's verdict with its change and interval, both sides' values and the rule it
// was judged at: "SAME", "opt vs base: Mean TTFT (ms) -1.30 % [-4.10, +1.50]; base 93.9, opt 92.7
// ms (threshold 5 %, alpha 0.05, power 0.80)", the sides named as the comparison names them.
std::optional<std::string> ab_headline(const ReportContent& c, std::string& detail_text) {
  if (c.gates.empty() || c.gate_exit) return std::nullopt;
  if (!c.no_verdict_reasons.empty()) {  // the run itself says its comparison is no verdict
    detail_text = c.no_verdict_reasons.front();
    return "NO VERDICT";
  }
  for (const auto& g : c.gates)
    if (g.doc.value("gate_requested", true)) return std::nullopt;
  const json& metrics = c.gates.front().doc["metrics"];
  const json* primary = nullptr;
  for (const auto& m : metrics)
    if (m.value("metric", std::string()) == "mean_ttft_ms") primary = &m;
  for (const auto& m : metrics)
    if (!primary && m.value("verdict", std::string("-")) != "-") primary = &m;
  if (!primary) return std::nullopt;
  const json& m = *primary;
  auto pct = [](double f) { return (f > 0 ? "+" : "") + numbers::fixed(100 * f, 2); };
  std::string change = m["change"].is_number() ? pct(m["change"].get<double>()) + " %" : "-";
  if (m["change_interval"].is_array())
    change += " [" + pct(m["change_interval"][0].get<double>()) + ", " + pct(m["change_interval"][1].get<double>()) + "]";
  const json& at = c.gates.front().doc.value("judged_at", json::object());
  const auto& sides = c.gates.front().sides;
  // The absolute values beside the change: "; base 93.9, opt 84.5 ms".
  const std::string unit = m.value("unit", std::string());
  const bool both = m.contains("before") && m["before"].is_number() && m.contains("after") && m["after"].is_number();
  const std::string values = both
                                 ? "; " + sides[0] + " " + format_number(m["before"].get<double>()) + ", " + sides[1] +
                                       " " + format_number(m["after"].get<double>()) + (unit.empty() ? "" : " " + unit)
                                 : "";
  detail_text = sides[1] + " vs " + sides[0] + ": " + m.value("label", m.value("metric", std::string())) + " " + change +
                (m["mde_relative"].is_number() ? ", MDE " + numbers::fixed(100 * m["mde_relative"].get<double>(), 2) + " %" : "") +
                values + " (" + at.value("rule", std::string("rule not recorded")) + ")";
  return m.value("verdict", std::string("-"));
}

// The first regressed metric with both sides' values: ": BM_x real_time BASE 100, HEAD 120 ns (+20.00 %)".
std::string first_regression(const ReportContent& c) {
  for (const auto& g : c.gates)
    for (const auto& m : g.doc.value("metrics", json::array())) {
      if (!m.is_object() || !m.value("regression", false) || !m.contains("before") || !m["before"].is_number() ||
          !m.contains("after") || !m["after"].is_number())
        continue;
      const std::string label = get_s(m, "label").empty() ? get_s(m, "metric") : get_s(m, "label");
      std::string unit = get_s(m, "unit");
      if (label.find("(" + unit + ")") != std::string::npos) unit.clear();  // "real_time (ns)" says it already
      std::optional<double> change;
      if (m.contains("change") && m["change"].is_number()) change = m["change"].get<double>();
      return ": " + label + " " + g.sides[0] + " " +
             format_number(m["before"].get<double>()) + ", " + g.sides[1] + " " + format_number(m["after"].get<double>()) +
             (unit.empty() ? "" : " " + unit) + (change ? " (" + format_change(change) + ")" : "");
    }
  return "";
}

std::string overall_verdict(const ReportContent& c, std::string& detail_text) {
  if (auto headline = ab_headline(c, detail_text)) return *headline;
  std::size_t regressions = 0;
  for (const auto& g : c.gates) regressions += g.doc.value("regressions", std::size_t{0});
  // No comparison: the results' own A/B had no verdict (its reasons), or there is no A/B at all.
  const std::string derived = !c.gates.empty()                 ? (regressions ? "REGRESSION" : "PASS")
                              : !c.no_verdict_reasons.empty() ? "NO VERDICT"
                                                              : "NO A/B";
  if (!c.gates.empty()) {
    if (regressions) detail_text = std::to_string(regressions) + " regression" + (regressions > 1 ? "s" : "") +
                                   first_regression(c);
    else detail_text = "no regression";
  } else if (!c.no_verdict_reasons.empty()) {
    detail_text = "the A/B in " + c.no_verdict_reasons.front();
  } else if (!c.sweeps.empty()) {
    detail_text = "no A/B verdict in a sweep: B vs A per load point and the capacity at the SLO below";
  } else {
    detail_text = "no A/B in these results (compare two: encbench compare BASE NEW --json FILE, then "
                  "encbench report --compare FILE)";
  }
  if (!c.gate_exit) return derived;
  const std::string given = *c.gate_exit == 0 ? "PASS" : *c.gate_exit == 1 ? "REGRESSION" : "INVALID";
  if (given == "INVALID")
    detail_text = "the gate exited " + std::to_string(*c.gate_exit) +
                  ": a build or run failed, or a comparison refused its inputs (see the gate's log)";
  else if (!c.gates.empty() && given != derived)
    detail_text = "the gate's exit status says " + given + " but the comparisons given say " + derived;
  return given;
}

Section verdict_section(const ReportContent& c) {
  Section out;
  std::ostringstream o;
  std::string why;
  const std::string verdict = overall_verdict(c, why);
  const std::string cls = verdict == "PASS" || verdict == "FASTER" ? "pass"
                          : verdict == "REGRESSION" || verdict == "SLOWER" ? "fail"
                          : verdict == "SAME" || verdict == "NOISY"        ? "ab"
                                                                           : "invalid";
  o << "<h1 id=\"verdict\" class=\"verdict " << cls << "\">" << esc(verdict) << " <small>" << esc(why)
    << "</small></h1>\n";
  const ClassifiedRows rows = classify_rows(c);
  o << gate_line(c.title, rows);
  if (c.gates.empty()) {
    out.html = o.str();
    return out;
  }
  // One pair of names for the table's columns: the comparisons' own when they share them.
  std::array<std::string, 2> sides = c.gates.front().sides;
  for (const auto& g : c.gates)
    if (g.sides != sides) sides = GateInput{}.sides;
  o << verdict_tables(rows, sides);
  for (const auto& g : c.gates) {
    for (const auto& w : g.doc.value("warnings", json::array()))
      if (w.is_string() && w.get<std::string>().find("unreliable") != std::string::npos)
        o << "<p class=\"meta\">" << esc(gate_label(g)) << ": WARNING: " << esc(w.get<std::string>()) << "</p>\n";
    if (!g.rounds_note.empty()) o << "<p class=\"meta\">" << esc(gate_label(g)) << ": " << esc(g.rounds_note) << "</p>\n";
  }
  o << evidence_html(rows.moved, out.charts);
  out.html = o.str();
  return out;
}

// Per-request latency CDFs of serving / closed-loop comparisons: one line per side (rounds
// pooled) and a band spanning the rounds' own CDFs.
Section pooled_cdf_section(const ReportContent& c) {
  Section out;
  std::ostringstream o;
  for (const auto& g : c.gates) {
    if (g.base_rounds.empty() || g.new_rounds.empty()) continue;
    const ResultKind kind = g.base_rounds.front().kind;
    if (kind != ResultKind::serving && kind != ResultKind::closed_loop) continue;
    // Arms: (label, id part, per-round serving documents per side).
    struct Arm {
      std::string label, id;
      std::vector<json> rounds[2];
    };
    std::vector<Arm> arms;
    const std::vector<RunResult>* sides[2] = {&g.base_rounds, &g.new_rounds};
    for (int s = 0; s < 2; ++s)
      for (const auto& r : *sides[s]) {
        if (kind == ResultKind::serving) {
          if (arms.empty()) arms.push_back({"", "all", {}});
          arms[0].rounds[s].push_back(r.raw);
          continue;
        }
        const json& list = r.raw.contains("arms") ? r.raw["arms"] : json::array();
        for (std::size_t a = 0; a < list.size(); ++a) {
          if (arms.size() <= a)
            arms.push_back({std::string(1, static_cast<char>('A' + a)) + " (" + list[a].value("preset", "?") + ")",
                            std::string(1, static_cast<char>('a' + a)), {}});
          if (list[a].contains("serving")) arms[a].rounds[s].push_back(list[a]["serving"]);
        }
      }
    bool header = false;
    for (const auto& arm : arms) {
      for (const auto& [key, display] : {std::pair{"ttft", "TTFT"}, std::pair{"itl", "ITL"}, std::pair{"e2el", "E2EL"}}) {
        std::vector<std::vector<double>> per_round[2];
        std::vector<double> pooled[2];
        for (int s = 0; s < 2; ++s)
          for (const auto& doc : arm.rounds[s]) {
            auto samples = per_request_samples_ms(doc, g.source);
            auto it = samples.find(key);
            if (it == samples.end() || it->second.empty()) continue;
            std::sort(it->second.begin(), it->second.end());
            pooled[s].insert(pooled[s].end(), it->second.begin(), it->second.end());
            per_round[s].push_back(std::move(it->second));
          }
        if (pooled[0].empty() || pooled[1].empty()) continue;
        if (!header) {
          o << "<h2 id=\"cdf-" << slug(gate_label(g)) << "\">" << esc(gate_label(g))
            << ": latency distributions, " << esc(g.sides[0]) << " vs " << esc(g.sides[1]) << "</h2>\n";
          header = true;
        }
        const std::string id = "cdf-" + slug(gate_label(g)) + "-" + arm.id + "-" + key;
        svg::LineChart chart(id, (arm.label.empty() ? "" : arm.label + ": ") + display + " CDF (rounds pooled)",
                             std::string(display) + " (ms, axis to p99.5)", "fraction of requests");
        chart.set_y_range(0, 1);
        double x_hi = 0;
        for (int s = 0; s < 2; ++s) {
          std::sort(pooled[s].begin(), pooled[s].end());
          x_hi = std::max(x_hi, quantile(pooled[s], 0.995));
        }
        chart.set_x_range(0, x_hi * 1.02);
        for (int s = 0; s < 2; ++s) {
          svg::Series line{g.sides[s] + " (" + std::to_string(per_round[s].size()) +
                               " rounds, n=" + std::to_string(pooled[s].size()) + "; band: range of the rounds)",
                           {}, false, s ? kHeadColour : kBaseColour, {}};
          for (int q = 0; q <= 200; ++q) line.points.emplace_back(quantile(pooled[s], q / 200.0), q / 200.0);
          if (per_round[s].size() >= 2) {
            std::vector<std::pair<double, double>> right;
            for (int q = 0; q <= 100; ++q) {
              double lo = 1e300, hi = -1e300;
              for (const auto& r : per_round[s]) {
                lo = std::min(lo, quantile(r, q / 100.0));
                hi = std::max(hi, quantile(r, q / 100.0));
              }
              line.band.emplace_back(lo, q / 100.0);
              right.emplace_back(hi, q / 100.0);
            }
            line.band.insert(line.band.end(), right.rbegin(), right.rend());
          }
          chart.add(std::move(line));
        }
        o << chart.svg();
        out.charts.push_back(id);
        // Per-round detail, one click away.
        o << "<details class=\"rounds\"><summary>" << esc(display) << " per round</summary><table><tr><th>side</th>"
             "<th>round</th><th>n</th><th>median</th><th>p90</th><th>p99</th></tr>\n";
        for (int s = 0; s < 2; ++s)
          for (std::size_t k = 0; k < per_round[s].size(); ++k)
            o << "<tr><td>" << esc(g.sides[s]) << "</td><td>" << k + 1 << "</td><td>" << per_round[s][k].size()
              << "</td><td>" << format_number(quantile(per_round[s][k], 0.5)) << "</td><td>"
              << format_number(quantile(per_round[s][k], 0.9)) << "</td><td>"
              << format_number(quantile(per_round[s][k], 0.99)) << "</td></tr>\n";
        o << "</table></details>\n";
      }
    }
  }
  out.html = o.str();
  return out;
}

}  // namespace detail
}  // namespace encbench::reports
