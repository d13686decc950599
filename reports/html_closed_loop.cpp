// What an `encbench run` result holds, drawn: the A/B it carries as the verdict (its pooled
// comparison, the arms' seeds or rounds as the evidence), the published numbers beside the
// model's with each PR's change, and the spread over seeds or rounds.
#include <algorithm>
#include <cmath>
#include <sstream>

#include "harness/core/number_format.hpp"
#include "reports/html.hpp"
#include "reports/html_sections.hpp"
#include "reports/svg.hpp"
#include "reports/tables.hpp"

namespace encbench::reports {

using nlohmann::json;

namespace {

using namespace svg;
using detail::Section;

// The repeats of one arm: "seeds" (virtual clock, schema 3) or "rounds" (live, schema 2).
const json* repeats_of(const json& arm) {
  for (const char* key : {"seeds", "rounds"})
    if (arm.is_object() && arm.contains(key) && arm[key].is_array() && !arm[key].empty()) return &arm[key];
  return nullptr;
}

std::string repeat_label(const json& repeat, std::size_t k) {
  if (repeat.contains("seed") && repeat["seed"].is_number()) return "seed " + std::to_string(repeat["seed"].get<long long>());
  return "round " + std::to_string(k + 1);
}

// One arm's repeats as serving results, named "<file> [<preset> seed 3]".
std::vector<RunResult> arm_rounds(const RunResult& r, const json& arm) {
  std::vector<RunResult> out;
  const json* repeats = repeats_of(arm);
  if (repeats == nullptr) return out;
  for (std::size_t k = 0; k < repeats->size(); ++k) {
    const json& repeat = (*repeats)[k];
    if (!repeat.is_object() || !repeat.contains("serving")) continue;
    const std::string name =
        r.source + " [" + arm.value("preset", std::string("?")) + " " + repeat_label(repeat, k) + "]";
    out.push_back(parse_result(repeat["serving"], name));
  }
  return out;
}

std::string scenario_name(const RunResult& r) {
  const json scenario = r.raw.value("scenario", json::object());
  const std::string name = scenario.is_object() ? scenario.value("name", std::string()) : std::string();
  return name.empty() ? std::filesystem::path(r.source).stem().string() : name;
}

std::string label_of(const std::string& key) {
  const char* label = serving_metric_label(key);
  return label ? label : key;
}

double number_or(const json& j, const char* key, double fallback = 0) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : fallback;
}

std::string signed_pct(double v) { return numbers::signed_fixed(v, 1) + " %"; }

// Published vs model per metric and arm (the result's "published_comparison" rows).
std::string published_table(const json& rows, const std::vector<std::string>& presets) {
  std::ostringstream o;
  o << "<table><tr><th>metric</th><th>Before (" << esc(presets.empty() ? "A" : presets[0])
    << ") published</th><th>model</th><th>seeds' range</th><th>error</th><th>After ("
    << esc(presets.size() > 1 ? presets[1] : "B") << ") published</th><th>model</th><th>seeds' range</th><th>error</th></tr>\n";
  for (const auto& row : rows) {
    // A total the run was drawn to meet (the sample's, published) is its input, not a prediction.
    o << "<tr><td>" << esc(label_of(row.value("metric", std::string())))
      << (row.value("conditioned", false) ? " (input)" : "") << "</td>";
    for (const char* side : {"before", "after"}) {
      if (!row.contains(side) || !row[side].is_object()) {
        o << "<td></td><td></td><td></td><td></td>";
        continue;
      }
      const json& s = row[side];
      o << "<td class=\"n\">" << format_number(number_or(s, "published")) << "</td><td class=\"n\">"
        << format_number(number_or(s, "model")) << "</td><td class=\"n\">" << format_number(number_or(s, "model_min"))
        << " .. " << format_number(number_or(s, "model_max")) << "</td><td class=\"n\">"
        << signed_pct(number_or(s, "error_pct")) << "</td>";
    }
    o << "</tr>\n";
  }
  o << "</table>\n";
  return o.str();
}

// Model as % of published (100 = exact), whiskers the seeds' range: one axis for every unit.
std::string published_chart(const std::string& id, const json& rows, const std::vector<std::string>& presets) {
  std::vector<detail::Bar> bars;
  for (const auto& row : rows) {
    const std::string key = row.value("metric", std::string());
    if (key.rfind("total_", 0) == 0) continue;  // token totals: the sample's, not the model's
    for (std::size_t side = 0; side < 2; ++side) {
      const char* name = side ? "after" : "before";
      if (!row.contains(name) || !row[name].is_object()) continue;
      const json& s = row[name];
      const double published = number_or(s, "published");
      if (!(published > 0)) continue;
      const std::string arm = side < presets.size() ? presets[side] : std::string(side ? "B" : "A");
      bars.push_back({std::string(side ? "After: " : "Before: ") + label_of(key), 100 * number_or(s, "model") / published,
                      100 * number_or(s, "model_min") / published, 100 * number_or(s, "model_max") / published, side});
    }
  }
  if (bars.empty()) return "";
  return detail::bar_chart(id, "Model as % of the published number (100 = exact)", "% of published", bars,
                           "whiskers: the seeds' range; Before " + (presets.empty() ? "A" : presets[0]) +
                               ", After " + (presets.size() > 1 ? presets[1] : "B"));
}

// Each PR's change (After vs Before), published and modelled, with the model's 90 % interval for one
// run of the benchmark where the result carries it (issue 35's run-to-run noise model).
std::string change_table(const json& rows, const std::vector<std::string>& presets, const std::string& interval_method) {
  bool with_interval = false;
  for (const auto& row : rows)
    if (row.contains("change") && row["change"].is_object() && row["change"].contains("one_run_p05_pct"))
      with_interval = true;
  std::ostringstream o;
  o << "<table class=\"changes\"><tr><th>metric</th><th>published change</th><th>model change</th>"
       "<th>difference</th>"
    << (with_interval ? "<th>one run, 90 %</th><th>published inside</th>" : "") << "</tr>\n";
  std::size_t shown = 0;
  for (const auto& row : rows) {
    if (!row.contains("change") || !row["change"].is_object()) continue;
    const json& c = row["change"];
    o << "<tr><td>" << esc(label_of(row.value("metric", std::string()))) << "</td><td class=\"n\">"
      << signed_pct(number_or(c, "published_pct")) << "</td><td class=\"n\">" << signed_pct(number_or(c, "model_pct"))
      << "</td><td class=\"n\">" << numbers::signed_fixed(number_or(c, "difference_points"), 1) << " pts</td>";
    if (with_interval && c.contains("one_run_p05_pct"))
      o << "<td class=\"n\">" << signed_pct(number_or(c, "one_run_p05_pct")) << " .. "
        << signed_pct(number_or(c, "one_run_p95_pct")) << "</td><td>" << (c.value("published_inside", false) ? "yes" : "no")
        << "</td>";
    else if (with_interval)
      o << "<td></td><td></td>";
    o << "</tr>\n";
    ++shown;
  }
  o << "</table>\n";
  if (shown == 0) return "";
  // How the interval was built, as the result says (results before a3f6e3a carry no method).
  if (!interval_method.empty()) o << "<p class=\"meta\">one run, 90 %: " << esc(interval_method) << "</p>\n";
  return "<h3>Change " + esc(presets.size() > 1 ? presets[1] : "B") + " vs " + esc(presets.empty() ? "A" : presets[0]) +
         " (After vs Before)</h3>\n" + o.str();
}

// One change: the interval as a bar, the model's point as a tick, the published value as a dot
// (filled when it lies inside the interval). One scale for every change of the page's table.
std::string change_strip(const std::string& id, const json& rows, const std::string& title) {
  double lo = 0, hi = 0;
  std::size_t count = 0;
  for (const auto& r : rows) {
    const json c = r.value("change", json::object());
    if (!c.contains("one_run_p05_pct")) continue;
    ++count;
    for (const char* k : {"one_run_p05_pct", "one_run_p95_pct", "model_pct", "published_pct"})
      if (c.contains(k) && c[k].is_number()) {
        lo = std::min(lo, c[k].get<double>());
        hi = std::max(hi, c[k].get<double>());
      }
  }
  if (count == 0) return "";
  const double pad = std::max(0.5, (hi - lo) * 0.08);
  lo -= pad;
  hi += pad;
  const double left = 200, right = 20, top = 36, row_h = 26, width = 900;
  const double height = top + row_h * static_cast<double>(count) + 50;
  auto sx = [&](double v) { return left + (v - lo) / (hi - lo) * (width - left - right); };
  std::ostringstream o;
  o << "<svg id=\"" << esc(id) << "\" class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width
    << "\" height=\"" << height << "\" viewBox=\"0 0 " << width << " " << height << "\" role=\"img\">\n<title>"
    << esc(title) << "</title>\n<text x=\"10\" y=\"20\" class=\"ctitle\">" << esc(title) << "</text>\n";
  o << "<line x1=\"" << num(sx(0)) << "\" y1=\"" << top - 6 << "\" x2=\"" << num(sx(0)) << "\" y2=\""
    << top + row_h * static_cast<double>(count) << "\" stroke=\"#999\" stroke-dasharray=\"3,3\"/>\n";
  double y = top;
  for (const auto& r : rows) {
    const json c = r.value("change", json::object());
    if (!c.contains("one_run_p05_pct")) continue;
    const double p05 = c.value("one_run_p05_pct", 0.0), p95 = c.value("one_run_p95_pct", 0.0);
    const double model = c.value("model_pct", 0.0), published = c.value("published_pct", 0.0);
    const bool inside = c.value("published_inside", false);
    o << "<text x=\"" << left - 8 << "\" y=\"" << y + 17 << "\" class=\"tick\" text-anchor=\"end\">"
      << esc(r.value("metric", std::string("?"))) << "</text>\n";
    o << "<rect x=\"" << num(sx(p05)) << "\" y=\"" << y + 7 << "\" width=\"" << num(std::max(1.0, sx(p95) - sx(p05)))
      << "\" height=\"12\" fill=\"" << svg::kBaseColour << "\" fill-opacity=\"0.3\"><title>one run, 90 %: "
      << signed_pct(p05) << " .. " << signed_pct(p95) << "</title></rect>\n";
    o << "<line x1=\"" << num(sx(model)) << "\" y1=\"" << y + 4 << "\" x2=\"" << num(sx(model)) << "\" y2=\"" << y + 22
      << "\" stroke=\"" << svg::kBaseColour << "\" stroke-width=\"2\"><title>model " << signed_pct(model) << "</title></line>\n";
    o << "<circle cx=\"" << num(sx(published)) << "\" cy=\"" << y + 13 << "\" r=\"5\" stroke=\"" << svg::kHeadColour
      << "\" stroke-width=\"2\" fill=\"" << (inside ? svg::kHeadColour : "white") << "\"><title>published "
      << signed_pct(published) << (inside ? " (inside)" : " (outside)") << "</title></circle>\n";
    y += row_h;
  }
  for (double t : svg::nice_ticks(lo, hi, 8))
    o << "<text x=\"" << num(sx(t)) << "\" y=\"" << y + 16 << "\" class=\"tick\" text-anchor=\"middle\">"
      << svg::tick_label(t) << "</text>\n";
  o << "<text x=\"" << left << "\" y=\"" << y + 34 << "\" class=\"axis\">After vs Before (%): bar = the model's 90 % "
    << "interval of one run, tick = its point, dot = published (filled: inside)</text>\n</svg>\n";
  return o.str();
}

std::vector<std::string> presets_of(const RunResult& r) {
  std::vector<std::string> out;
  for (const auto& arm : r.raw.value("arms", json::array())) out.push_back(arm.value("preset", std::string("?")));
  return out;
}

void published_section(Section& out, const RunResult& r, std::size_t index) {
  const json published = r.raw.value("published_comparison", json::object());
  if (!published.is_object() || !published.contains("rows") || !published["rows"].is_array()) return;
  const std::vector<std::string> presets = presets_of(r);
  std::ostringstream o;
  o << "<h2 id=\"published-" << index + 1 << "\">" << esc(scenario_name(r)) << ": published vs model</h2>\n"
    << "<p class=\"meta\">source: " << esc(published.value("source", std::string("not given"))) << "; role: "
    << esc(published.value("role", std::string("?")))
    << (published.value("role", std::string()) == "calibration" ? " (the model was fitted to these)" : "")
    << ". Model: mean over the seeds.</p>\n";
  const std::string id = "published-" + std::to_string(index + 1);
  const std::string chart = published_chart(id, published["rows"], presets);
  if (!chart.empty()) {
    o << chart;
    out.charts.push_back(id);
  }
  o << published_table(published["rows"], presets) << change_table(published["rows"], presets, published.value("interval_method", std::string()));
  const std::string strip_id = id + "-changes";
  const std::string strip = change_strip(strip_id, published["rows"], "Each change with the model's one-run interval");
  if (!strip.empty()) {
    o << strip;
    out.charts.push_back(strip_id);
  }
  out.html += o.str();
}

// The metric per seed or round, one line per arm, and every spread the result records.
void spread_section(Section& out, const RunResult& r, std::size_t index) {
  const json arms = r.raw.value("arms", json::array());
  std::ostringstream o;
  bool any = false;
  const std::pair<const char*, const char*> kCharts[] = {{"mean_ttft_ms", "ttft"}, {"request_throughput", "throughput"}};
  for (const auto& [key, slug] : kCharts) {
    const std::string id = "seeds-" + std::to_string(index + 1) + "-" + slug;
    LineChart chart(id, label_of(key) + " per repeat", "seed or round (in run order)", label_of(key));
    for (std::size_t a = 0; a < arms.size(); ++a) {
      const json* repeats = repeats_of(arms[a]);
      if (repeats == nullptr || repeats->size() < 2) continue;
      Series s{std::string(1, static_cast<char>('A' + a)) + " " + arms[a].value("preset", std::string("?")), {}, false,
               a == 0 ? kBaseColour : a == 1 ? kHeadColour : colour(a), {}};
      for (std::size_t k = 0; k < repeats->size(); ++k)
        s.points.emplace_back(static_cast<double>(k + 1), number_or((*repeats)[k].value("serving", json::object()), key));
      chart.add(std::move(s));
    }
    if (chart.empty()) continue;
    if (!any) o << "<h2 id=\"spread-" << index + 1 << "\">" << esc(scenario_name(r)) << ": spread over seeds or rounds</h2>\n";
    any = true;
    o << chart.svg();
    out.charts.push_back(id);
  }
  std::ostringstream table;
  table << "<table><tr><th>arm</th><th>metric</th><th>mean</th><th>min</th><th>max</th><th>range / mean</th></tr>\n";
  bool rows = false;
  for (const auto& arm : arms) {
    const json spread = arm.value("across_seeds", json::object());
    for (const auto& [key, v] : spread.items()) {
      if (!v.is_object()) continue;
      const double mean = number_or(v, "mean"), lo = number_or(v, "min"), hi = number_or(v, "max");
      table << "<tr><td>" << esc(arm.value("preset", std::string("?"))) << "</td><td>" << esc(label_of(key))
            << "</td><td class=\"n\">" << format_number(mean) << "</td><td class=\"n\">" << format_number(lo)
            << "</td><td class=\"n\">" << format_number(hi) << "</td><td class=\"n\">"
            << (mean != 0 ? numbers::fixed(100 * (hi - lo) / std::fabs(mean), 1) + " %" : "-")
            << "</td></tr>\n";
      rows = true;
    }
  }
  table << "</table>\n";
  if (rows) {
    if (!any) o << "<h2 id=\"spread-" << index + 1 << "\">" << esc(scenario_name(r)) << ": spread over seeds</h2>\n";
    o << table.str();
  }
  out.html += o.str();
}

}  // namespace

void add_embedded_comparisons(ReportContent& content) {
  if (!content.gates.empty()) return;
  for (const RunResult& r : content.runs) {
    if (r.kind != ResultKind::closed_loop) continue;
    if (!r.raw.value("verdict_valid", true)) {
      std::string reasons;
      for (const auto& reason : r.raw.value("invalid_reasons", json::array()))
        if (reason.is_string()) reasons += (reasons.empty() ? "" : "; ") + reason.get<std::string>();
      content.no_verdict_reasons.push_back(r.source + ": " + (reasons.empty() ? "its verdict is invalid" : reasons));
      continue;
    }
    const json comparison = r.raw.value("comparison", json());
    if (!comparison.is_object() || !comparison.contains("metrics") || !comparison["metrics"].is_array()) continue;
    const json arms = r.raw.value("arms", json::array());
    if (arms.size() < 2) continue;
    GateInput g;
    g.source = r.source;
    g.name = scenario_name(r) + " B vs A";
    g.sides = {"A", "B"};
    g.doc = comparison;
    if (!g.doc.contains("gate") || g.doc["gate"] == "") g.doc["gate"] = "built-in default (encbench run)";
    g.base_rounds = arm_rounds(r, arms[0]);
    g.new_rounds = arm_rounds(r, arms[1]);
    content.gates.push_back(std::move(g));
  }
}

namespace detail {

Section closed_loop_section(const std::vector<RunResult>& runs) {
  Section out;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if (runs[i].kind != ResultKind::closed_loop) continue;
    published_section(out, runs[i], i);
    spread_section(out, runs[i], i);
  }
  return out;
}

}  // namespace detail
}  // namespace encbench::reports
