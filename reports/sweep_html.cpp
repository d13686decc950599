#include "reports/sweep_html.hpp"

#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "harness/core/error.hpp"
#include "reports/capacity_bracket.hpp"
#include "reports/html.hpp"
#include "reports/html_sections.hpp"
#include "reports/svg.hpp"

namespace encbench::reports {
namespace {

// Offered load as a number on the x axis: "inf" one step past the last finite value.
std::vector<double> x_positions(const nlohmann::json& points) {
  std::vector<double> xs;
  double last = 1;
  for (const auto& p : points) {
    if (p["value"].is_number()) {
      last = p["value"].get<double>();
      xs.push_back(last);
    } else {
      xs.push_back(last * 1.25);
    }
  }
  return xs;
}

// The knee of an arm: the first point whose achieved rate is below 95 % of the offered rate
// (request-rate sweeps), or whose p99 TTFT more than doubles from the point before.
int knee(const nlohmann::json& points, std::size_t arm) {
  for (std::size_t i = 0; i < points.size(); ++i) {
    const auto& a = points[i]["arms"][arm];
    const auto& v = points[i]["value"];
    if (points[i]["variable"] == "request-rate" && v.is_number() &&
        a["request_throughput"]["mean"].get<double>() < 0.95 * v.get<double>())
      return static_cast<int>(i);
    if (i > 0 && a["p99_ttft_ms"]["mean"].get<double>() > 2 * points[i - 1]["arms"][arm]["p99_ttft_ms"]["mean"].get<double>())
      return static_cast<int>(i);
  }
  return -1;
}

std::string chart(const nlohmann::json& doc, const std::string& id, const std::string& title, const std::string& y_label,
                  const std::vector<std::string>& keys, double slo_ms) {
  const auto& points = doc["points"];
  const std::vector<double> xs = x_positions(points);
  const std::string variable = points.empty() ? "load" : points[0]["variable"].get<std::string>();
  svg::LineChart c(id, title, variable + (variable == "request-rate" ? " (req/s offered; inf drawn last)" : ""), y_label);
  const char* arm_colours[] = {svg::kBaseColour, svg::kHeadColour};
  double y_max = 0;
  for (std::size_t arm = 0; arm < doc["presets"].size() && arm < 2; ++arm) {
    for (const std::string& key : keys) {
      svg::Series s;
      s.name = doc["presets"][arm].get<std::string>() + " " + key;
      s.colour = arm_colours[arm];
      s.dashed = key.rfind("p99", 0) == 0;  // the tail dashed, the mean solid
      for (std::size_t i = 0; i < points.size(); ++i) {
        const double y = points[i]["arms"][arm][key]["mean"].get<double>();
        s.points.emplace_back(xs[i], y);
        y_max = std::max(y_max, y);
      }
      c.add(std::move(s));
    }
    const int k = knee(points, arm);
    if (k >= 0) {
      svg::Series s;
      s.name = doc["presets"][arm].get<std::string>() + " knee";
      s.colour = arm_colours[arm];
      s.dashed = true;
      s.points = {{xs[static_cast<std::size_t>(k)], 0}, {xs[static_cast<std::size_t>(k)], y_max}};
      c.add(std::move(s));
    }
  }
  if (slo_ms > 0) {
    svg::Series s;
    s.name = "SLO " + svg::tick_label(slo_ms) + " ms";
    s.colour = "#b00";
    s.points = {{xs.front(), slo_ms}, {xs.back(), slo_ms}};
    c.add(std::move(s));
  }
  return c.svg();
}

std::string pareto(const nlohmann::json& doc, const std::string& id) {
  svg::LineChart c(id, "TPOT against output throughput (each point a load; lower right is better)",
                   "output tokens/s", "mean TPOT (ms)");
  const char* arm_colours[] = {svg::kBaseColour, svg::kHeadColour};
  for (std::size_t arm = 0; arm < doc["presets"].size() && arm < 2; ++arm) {
    svg::Series s;
    s.name = doc["presets"][arm].get<std::string>();
    s.colour = arm_colours[arm];
    for (const auto& p : doc["points"])
      s.points.emplace_back(p["arms"][arm]["output_throughput"]["mean"].get<double>(),
                            p["arms"][arm]["mean_tpot_ms"]["mean"].get<double>());
    c.add(std::move(s));
  }
  return c.svg();
}

// The SLO's limit on `metric` (ms) from its text ("ttft p99 <= 2000 ms, ..."), 0 if none.
double slo_limit(const nlohmann::json& doc, const std::string& metric) {
  const std::string slo = doc.value("slo", std::string());
  const auto at = slo.find(metric + " ");
  if (at == std::string::npos) return 0;
  const auto le = slo.find("<= ", at);
  return le == std::string::npos ? 0 : std::atof(slo.c_str() + le + 3);
}

// The h1's class for a capacity: bracketed is a verdict, a bound or a non-monotone result is not.
const char* bracket_class(BracketKind kind) {
  return kind == BracketKind::bracketed ? "pass" : kind == BracketKind::below_lowest ? "fail" : "invalid";
}

// Each arm's search capacity as its seeds bracket it (virtual), for the line under the headline;
// `bounded` is set when one of them is a bound.
std::string search_brackets(const nlohmann::json& doc, bool& bounded) {
  std::string text;
  for (const auto& arm : doc["capacity"].value("arms", nlohmann::json::array())) {
    if (!arm.contains("capacity_bracket")) continue;
    const CapacityBracket b = bracket_from_json(arm["capacity_bracket"]);
    bounded = bounded || b.kind != BracketKind::bracketed;
    text += (text.empty() ? "" : "; ") + arm.value("preset", std::string()) + ": " +
            (b.kind == BracketKind::bracketed ? "every seed bracketed, all " + describe_bracket(b, "req/s")
                                              : "a BOUND (" + describe_bracket(b, "req/s", "the search stops there") + ")");
  }
  return text;
}

std::string gain_header(const nlohmann::json& doc) {
  std::ostringstream o;
  const auto& presets = doc["presets"];
  const auto& g = doc["capacity"]["gain_pct"];
  bool bounded = false;
  const std::string brackets = search_brackets(doc, bounded);
  const bool better = g["ci95_low"].get<double>() > 0, worse = g["ci95_high"].get<double>() < 0;
  o << "<h1 class=\"" << (bounded ? "invalid" : worse ? "fail" : better ? "pass" : "invalid") << "\">"
    << svg::esc(presets[1].get<std::string>()) << ": " << (g["mean"].get<double>() >= 0 ? "+" : "")
    << svg::num(g["mean"].get<double>()) << " % capacity at " << svg::esc(doc["slo"].get<std::string>())
    << " <small>CI [" << svg::num(g["ci95_low"].get<double>()) << ", " << svg::num(g["ci95_high"].get<double>())
    << "] vs " << svg::esc(presets[0].get<std::string>())
    << (bounded ? "; a bound, not a bracketed capacity" : brackets.empty() ? "" : "; bracketed per seed") << "</small></h1>\n";
  if (!brackets.empty()) o << "<p class=\"sub\"><b>Capacity:</b> " << svg::esc(brackets) << "</p>\n";
  return o.str();
}

// A live sweep's capacity: bracketed or a bound (older results without the bracket: the highest
// passing load, said to be unbracketed).
std::string live_header(const nlohmann::json& doc) {
  std::ostringstream o;
  const auto& c = doc["capacity"];
  const std::string arm = doc["presets"][0].get<std::string>(), slo = doc["slo"].get<std::string>();
  if (!c.contains("capacity_bracket")) {
    o << "<h1 class=\"invalid\">" << svg::esc(arm) << ": highest load meeting " << svg::esc(slo) << ": "
      << svg::num(c["highest_passing"].get<double>()) << " <small>(not bracketed: this result predates brackets)</small></h1>\n";
    return o.str();
  }
  const CapacityBracket b = bracket_from_json(c["capacity_bracket"]);
  const std::string variable = doc["points"].empty() ? "request-rate" : doc["points"][0].value("variable", std::string());
  o << "<h1 class=\"" << bracket_class(b.kind) << "\">" << svg::esc(arm) << ": capacity at " << svg::esc(slo) << ": "
    << svg::esc(describe_bracket(b, load_unit(variable),
                                 doc.contains("stopped_early") ? "the sweep stopped early (over-saturated)" : "extend --sweep"))
    << "</h1>\n";
  return o.str();
}

std::string verdict_header(const nlohmann::json& doc) {
  std::ostringstream o;
  const auto& presets = doc["presets"];
  if (doc.contains("capacity") && doc["capacity"].contains("gain_pct")) {
    o << gain_header(doc);
  } else if (doc.contains("capacity") && doc["capacity"].contains("highest_passing")) {
    o << live_header(doc);
  } else {
    std::string arms;
    for (const auto& p : presets) arms += (arms.empty() ? "" : " vs ") + p.get<std::string>();
    o << "<h1 class=\"invalid\">Sweep: " << svg::esc(arms) << " <small>(no SLO given: no capacity verdict)</small></h1>\n";
  }
  if (doc.contains("points_capacity")) {
    std::string points;
    for (const auto& arm : doc["points_capacity"])
      points += (points.empty() ? "" : "; ") + arm.value("preset", std::string()) + ": " +
                describe_bracket(bracket_from_json(arm["capacity_bracket"]),
                                 load_unit(doc["points"].empty() ? "" : doc["points"][0].value("variable", std::string())));
    o << "<p class=\"sub\"><b>As the sweep's points bracket it:</b> " << svg::esc(points) << "</p>\n";
  }
  if (doc.contains("stopped_early"))
    o << "<p class=\"sub\"><b>Stopped early:</b> " << svg::esc(doc["stopped_early"].get<std::string>()) << "</p>\n";
  if (doc.value("interrupted", false)) o << "<p class=\"sub\"><b>Interrupted:</b> the points finished so far.</p>\n";
  o << "<p class=\"sub\">Clock: " << svg::esc(doc.value("clock", std::string("?"))) << ". Model: "
    << svg::esc(doc["model"].value("description", std::string())) << "</p>\n";
  return o.str();
}

std::string points_table(const nlohmann::json& doc) {
  std::ostringstream o;
  o << "<table><tr><th>load</th><th>arm</th><th>req/s</th><th>mean TTFT ms</th><th>p99 TTFT ms</th><th>mean TPOT ms</th>"
       "<th>p99 TPOT ms</th><th>goodput req/s</th><th>TTFT B vs A</th></tr>\n";
  for (const auto& p : doc["points"]) {
    for (std::size_t arm = 0; arm < p["arms"].size(); ++arm) {
      const auto& a = p["arms"][arm];
      const auto m = [&](const char* key) { return svg::num(a[key]["mean"].get<double>()); };
      o << "<tr><td class=\"n\">" << svg::esc(p["value"].dump()) << "</td><td>"
        << svg::esc(doc["presets"][arm].get<std::string>()) << "</td><td class=\"n\">" << m("request_throughput")
        << "</td><td class=\"n\">" << m("mean_ttft_ms") << "</td><td class=\"n\">" << m("p99_ttft_ms")
        << "</td><td class=\"n\">" << m("mean_tpot_ms") << "</td><td class=\"n\">" << m("p99_tpot_ms")
        << "</td><td class=\"n\">" << (a.contains("goodput") ? svg::num(a["goodput"]["mean"].get<double>()) : "-")
        << "</td><td>";
      if (arm == 1 && p["verdicts"].contains("mean_ttft_ms"))
        o << svg::num(p["verdicts"]["mean_ttft_ms"]["change_pct"].get<double>()) << " % "
          << svg::esc(p["verdicts"]["mean_ttft_ms"]["verdict"].get<std::string>());
      o << "</td></tr>\n";
    }
  }
  o << "</table>\n";
  return o.str();
}

// The curves and the points' table; chart ids are `id_prefix` + ttft, tpot, throughput, pareto.
std::string sweep_body(const nlohmann::json& doc, const std::string& id_prefix, std::vector<std::string>& charts) {
  std::ostringstream o;
  if (doc["points"].empty()) return "";
  for (const char* id : {"ttft", "tpot", "throughput", "pareto"}) charts.push_back(id_prefix + id);
  o << "<h2>Latency and throughput against offered load</h2>\n<div class=\"pair\"><div>"
    << chart(doc, id_prefix + "ttft", "TTFT (mean and p99)", "ms", {"mean_ttft_ms", "p99_ttft_ms"}, slo_limit(doc, "ttft"))
    << "</div><div>"
    << chart(doc, id_prefix + "tpot", "TPOT (mean and p99)", "ms", {"mean_tpot_ms", "p99_tpot_ms"}, slo_limit(doc, "tpot"))
    << "</div></div>\n<div class=\"pair\"><div>"
    << chart(doc, id_prefix + "throughput", "Achieved request throughput", "req/s", {"request_throughput"}, 0)
    << "</div><div>" << pareto(doc, id_prefix + "pareto") << "</div></div>\n<h2>Points</h2>\n" << points_table(doc);
  return o.str();
}

// The keys every drawing below reads; a sweep without them is refused by name, not drawn half.
void require_drawable(const nlohmann::json& doc, const std::string& source) {
  require(doc.is_object() && doc.contains("presets") && doc["presets"].is_array() && !doc["presets"].empty() &&
              doc.contains("points") && doc["points"].is_array(),
          source + ": an encbench-sweep result needs 'presets' and 'points' lists");
  const char* keys[] = {"request_throughput", "mean_ttft_ms", "p99_ttft_ms", "mean_tpot_ms", "p99_tpot_ms",
                        "output_throughput"};
  for (std::size_t i = 0; i < doc["points"].size(); ++i) {
    const auto& p = doc["points"][i];
    const std::string where = source + ": points[" + std::to_string(i) + "]";
    require(p.is_object() && p.contains("variable") && p["variable"].is_string() && p.contains("value") &&
                p.contains("arms") && p["arms"].is_array() && p["arms"].size() >= doc["presets"].size() &&
                p.contains("verdicts") && p["verdicts"].is_object(),
            where + " needs 'variable', 'value', 'verdicts' and one 'arms' entry per preset");
    for (const auto& arm : p["arms"])
      for (const char* key : keys)
        require(arm.is_object() && arm.contains(key) && arm[key].is_object() && arm[key].contains("mean") &&
                    arm[key]["mean"].is_number(),
                where + ": every arm needs '" + key + "': {\"mean\": number}");
  }
}

}  // namespace

std::string render_sweep_html(const nlohmann::json& doc) {
  std::ostringstream o;
  std::vector<std::string> charts;
  o << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>encbench sweep</title><style>"
    << html_style() << "</style></head>\n<body>\n" << verdict_header(doc) << sweep_body(doc, "", charts);
  o << "</body></html>\n";
  return o.str();
}

namespace detail {

Section sweep_section(const SweepInput& sweep, std::size_t index) {
  require_drawable(sweep.doc, sweep.source);
  Section out;
  const std::string prefix = "sweep-" + std::to_string(index + 1) + "-";
  // Inside the report the page's verdict is the h1: the sweep's headline is a section title.
  std::string header = verdict_header(sweep.doc);
  for (const auto& [from, to] : {std::pair{"<h1", "<h2"}, std::pair{"</h1>", "</h2>"}})
    for (auto at = header.find(from); at != std::string::npos; at = header.find(from, at))
      header.replace(at, std::strlen(from), to);
  out.html = "<p class=\"meta\">sweep <code>" + svg::esc(sweep.source) + "</code></p>\n" + header +
             sweep_body(sweep.doc, prefix, out.charts);
  return out;
}

}  // namespace detail

void write_sweep_html(const std::filesystem::path& path, const nlohmann::json& sweep) {
  std::ofstream out(path);
  require(static_cast<bool>(out), "cannot write " + path.string());
  out << render_sweep_html(sweep);
}

}  // namespace encbench::reports
