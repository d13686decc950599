#include "reports/sweep_html.hpp"

#include <algorithm>
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

// A load as the page prints it: a number, or inf (the JSON keeps "inf" as a string).
std::string load_text(const nlohmann::json& value) {
  return value.is_number() ? svg::tick_label(value.get<double>()) : value.is_string() ? value.get<std::string>() : value.dump();
}

// The x axis's ticks: "nice" numbers up to the last finite load, and "inf" at its own position.
std::vector<std::pair<double, std::string>> load_ticks(const nlohmann::json& points, const std::vector<double>& xs) {
  std::vector<std::pair<double, std::string>> ticks;
  double lo = 1e300, hi = -1e300;
  for (std::size_t i = 0; i < points.size(); ++i)
    if (points[i]["value"].is_number()) lo = std::min(lo, xs[i]), hi = std::max(hi, xs[i]);
  if (hi >= lo)
    for (double t : svg::nice_ticks(std::min(lo, 0.0), hi))
      if (t >= lo - 1e-9) ticks.emplace_back(t, svg::tick_label(t));
  for (std::size_t i = 0; i < points.size(); ++i)
    if (!points[i]["value"].is_number()) ticks.emplace_back(xs[i], load_text(points[i]["value"]));
  return ticks;
}

// "mean_ttft_ms" -> "mean", "p99_tpot_ms" -> "p99": the statistic, the chart's title says the metric.
std::string statistic_name(const std::string& key) {
  if (key == "request_throughput") return "achieved";
  return key.substr(0, key.find('_'));
}

std::string chart(const nlohmann::json& doc, const std::string& id, const std::string& title, const std::string& y_label,
                  const std::vector<std::string>& keys, double slo_ms) {
  const auto& points = doc["points"];
  const std::vector<double> xs = x_positions(points);
  const std::string variable = points.empty() ? "load" : points[0]["variable"].get<std::string>();
  svg::LineChart c(id, title, variable + (variable == "request-rate" ? " (req/s offered; inf: all at once)" : ""), y_label);
  c.set_x_ticks(load_ticks(points, xs));
  const char* arm_colours[] = {svg::kBaseColour, svg::kHeadColour};
  double y_max = 0;
  for (std::size_t arm = 0; arm < doc["presets"].size() && arm < 2; ++arm) {
    const std::string name = doc["presets"][arm].get<std::string>();
    for (const std::string& key : keys) {
      svg::Series s;
      s.name = name + " " + statistic_name(key);
      s.colour = arm_colours[arm];
      s.dashed = key.rfind("p99", 0) == 0;  // the tail dashed, the mean solid
      for (std::size_t i = 0; i < points.size(); ++i) {
        const double y = points[i]["arms"][arm][key]["mean"].get<double>();
        s.points.emplace_back(xs[i], y);
        y_max = std::max(y_max, y);
      }
      c.add(std::move(s));
    }
    // Knees of both arms at one load are set apart and labelled by the chart (svg::Marker).
    if (const int k = knee(points, arm); k >= 0)
      c.add_marker({xs[static_cast<std::size_t>(k)], "knee " + name + " at " + load_text(points[static_cast<std::size_t>(k)]["value"]),
                    arm_colours[arm]});
  }
  // The SLO's limit is drawn where the data's axis can hold it (up to 1.5 x the highest point);
  // a limit far above the data would flatten the curves, so the legend says it instead.
  if (slo_ms > 0 && slo_ms <= 1.5 * y_max) {
    svg::Series s;
    s.name = "SLO " + svg::tick_label(slo_ms) + " ms";
    s.colour = "#b00";
    s.points = {{xs.front(), slo_ms}, {xs.back(), slo_ms}};
    c.add(std::move(s));
  } else if (slo_ms > 0) {
    c.add_legend_note({"SLO " + svg::tick_label(slo_ms) + " ms: above this axis (highest point " + svg::tick_label(y_max) +
                           " ms)",
                       "none"});
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

// "pr7104 6.02 req/s [5.80, 8.33]": an arm's capacity at the SLO, its seeds' mean and CI.
std::string arm_capacity(const nlohmann::json& doc, std::size_t arm) {
  const std::string preset = doc["presets"][arm].get<std::string>();
  for (const auto& a : doc["capacity"].value("arms", nlohmann::json::array()))
    if (a.value("preset", std::string()) == preset && a.contains("capacity_req_s")) {
      const auto& c = a["capacity_req_s"];
      return preset + " " + svg::tick_label(c["mean"].get<double>()) + " req/s" +
             (c.value("n", 0) > 1 ? " [" + svg::tick_label(c["ci95_low"].get<double>()) + ", " +
                                        svg::tick_label(c["ci95_high"].get<double>()) + "]"
                                  : "");
    }
  return preset + " (capacity not recorded)";
}

// The verdict on B's capacity against A's: its CI above zero, below it, or across it; none when a
// bound entered it.
std::string capacity_verdict(const nlohmann::json& gain, bool bounded) {
  if (bounded) return "NO VERDICT";
  if (gain["ci95_low"].get<double>() > 0) return "HIGHER CAPACITY";
  if (gain["ci95_high"].get<double>() < 0) return "LOWER CAPACITY";
  return "SAME CAPACITY";
}

std::string gain_header(const nlohmann::json& doc) {
  std::ostringstream o;
  const auto& presets = doc["presets"];
  const auto& g = doc["capacity"]["gain_pct"];
  bool bounded = false;
  const std::string brackets = search_brackets(doc, bounded);
  const std::string verdict = capacity_verdict(g, bounded);
  o << "<h1 id=\"sweep-verdict\" class=\""
    << (bounded ? "invalid" : verdict == "LOWER CAPACITY" ? "fail" : verdict == "HIGHER CAPACITY" ? "pass" : "invalid")
    << "\">" << verdict << ": " << svg::esc(presets[1].get<std::string>()) << " "
    << (g["mean"].get<double>() >= 0 ? "+" : "") << svg::num(g["mean"].get<double>()) << " % capacity at "
    << svg::esc(doc["slo"].get<std::string>()) << " <small>(" << svg::esc(arm_capacity(doc, 1)) << " vs "
    << svg::esc(arm_capacity(doc, 0)) << "; change CI [" << svg::num(g["ci95_low"].get<double>()) << ", "
    << svg::num(g["ci95_high"].get<double>()) << "] %"
    << (bounded ? "; a bound, not a bracketed capacity" : brackets.empty() ? "" : "; bracketed per seed") << ")</small></h1>\n";
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
    o << "<h1 id=\"sweep-verdict\" class=\"invalid\">" << svg::esc(arm) << ": highest load meeting " << svg::esc(slo) << ": "
      << svg::num(c["highest_passing"].get<double>()) << " <small>(not bracketed: this result predates brackets)</small></h1>\n";
    return o.str();
  }
  const CapacityBracket b = bracket_from_json(c["capacity_bracket"]);
  const std::string variable = doc["points"].empty() ? "request-rate" : doc["points"][0].value("variable", std::string());
  o << "<h1 id=\"sweep-verdict\" class=\"" << bracket_class(b.kind) << "\">" << svg::esc(arm) << ": capacity at " << svg::esc(slo) << ": "
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
    // No SLO: no capacity, so the absolute values are each arm's highest achieved throughput.
    std::string arms, peaks;
    for (std::size_t a = 0; a < presets.size(); ++a) {
      double peak = 0;
      for (const auto& p : doc["points"]) peak = std::max(peak, p["arms"][a]["request_throughput"]["mean"].get<double>());
      arms += (arms.empty() ? "" : " vs ") + presets[a].get<std::string>();
      peaks += (peaks.empty() ? "" : ", ") + presets[a].get<std::string>() + " " + svg::tick_label(peak) + " req/s";
    }
    o << "<h1 id=\"sweep-verdict\" class=\"invalid\">NO VERDICT: sweep " << svg::esc(arms)
      << " <small>(no SLO given, so no capacity; highest achieved throughput: " << svg::esc(peaks) << ")</small></h1>\n";
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
      o << "<tr><td class=\"n\">" << svg::esc(load_text(p["value"])) << "</td><td>"
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
  const std::string own_id = "id=\"" + prefix + "verdict\"";
  for (const auto& [from, to] : {std::pair<const char*, const char*>{"<h1", "<h2"}, {"</h1>", "</h2>"},
                                 {"id=\"sweep-verdict\"", own_id.c_str()}})
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
