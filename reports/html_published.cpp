// The seeds' experiment on the report page (issue 35 item 8): for a closed-loop result that
// carries a published table (`encbench run --scenario scenarios/seeds/*.json`), each metric's
// published Before/After beside the model's mean over seeds and its seeds' range, and each
// After-vs-Before change with the model's 90 % interval of one run, drawn as a strip per change.
#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>

#include "reports/html_sections.hpp"
#include "reports/svg.hpp"

namespace encbench::reports::detail {
namespace {

using json = nlohmann::json;
using svg::esc;
using svg::num;

std::string fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, std::fabs(v) >= 100 ? "%.0f" : "%.2f", v);
  return buf;
}

std::string pct(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.2f %%", v);
  return buf;
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
      << pct(p05) << " .. " << pct(p95) << "</title></rect>\n";
    o << "<line x1=\"" << num(sx(model)) << "\" y1=\"" << y + 4 << "\" x2=\"" << num(sx(model)) << "\" y2=\"" << y + 22
      << "\" stroke=\"" << svg::kBaseColour << "\" stroke-width=\"2\"><title>model " << pct(model) << "</title></line>\n";
    o << "<circle cx=\"" << num(sx(published)) << "\" cy=\"" << y + 13 << "\" r=\"5\" stroke=\"" << svg::kHeadColour
      << "\" stroke-width=\"2\" fill=\"" << (inside ? svg::kHeadColour : "white") << "\"><title>published "
      << pct(published) << (inside ? " (inside)" : " (outside)") << "</title></circle>\n";
    y += row_h;
  }
  for (double t : svg::nice_ticks(lo, hi, 8))
    o << "<text x=\"" << num(sx(t)) << "\" y=\"" << y + 16 << "\" class=\"tick\" text-anchor=\"middle\">"
      << svg::tick_label(t) << "</text>\n";
  o << "<text x=\"" << left << "\" y=\"" << y + 34 << "\" class=\"axis\">After vs Before (%): bar = the model's 90 % "
    << "interval of one run, tick = its point, dot = published (filled: inside)</text>\n</svg>\n";
  return o.str();
}

}  // namespace

Section published_section(const RunResult& r, const std::string& id_prefix) {
  Section out;
  const json pc = r.raw.value("published_comparison", json::object());
  const json rows = pc.value("rows", json::array());
  if (!rows.is_array() || rows.empty()) return out;
  const json scenario = r.raw.value("scenario", json::object());
  std::ostringstream o;
  o << "<h2>Published vs model: " << esc(scenario.value("name", std::string("closed loop"))) << " ("
    << esc(pc.value("role", std::string("?"))) << ")</h2>\n";
  o << "<p class=\"meta\">" << esc(scenario.value("description", std::string())) << "</p>\n";
  o << "<p class=\"meta\">published: " << esc(pc.value("source", std::string("?"))) << "</p>\n";
  o << "<table><tr><th>metric</th><th>Before published</th><th>Before model [seeds' range]</th><th>error</th>"
    << "<th>After published</th><th>After model [seeds' range]</th><th>error</th></tr>\n";
  for (const auto& row : rows) {
    const json b = row.value("before", json::object()), a = row.value("after", json::object());
    if (!b.contains("published") || !b.contains("model")) continue;
    o << "<tr><td>" << esc(row.value("metric", std::string("?"))) << "</td>";
    for (const json* side : {&b, &a}) {
      if (!side->contains("model")) {
        o << "<td></td><td></td><td></td>";
        continue;
      }
      o << "<td>" << fmt(side->value("published", 0.0)) << "</td><td>" << fmt(side->value("model", 0.0)) << " ["
        << fmt(side->value("model_min", 0.0)) << "-" << fmt(side->value("model_max", 0.0)) << "]</td><td>"
        << pct(side->value("error_pct", 0.0)) << "</td>";
    }
    o << "</tr>\n";
  }
  o << "</table>\n";
  o << "<table><tr><th>change, After vs Before</th><th>published</th><th>model</th><th>one run, 90 %</th>"
    << "<th>published inside</th></tr>\n";
  for (const auto& row : rows) {
    const json c = row.value("change", json::object());
    if (!c.contains("one_run_p05_pct")) continue;
    o << "<tr><td>" << esc(row.value("metric", std::string("?"))) << "</td><td>" << pct(c.value("published_pct", 0.0))
      << "</td><td>" << pct(c.value("model_pct", 0.0)) << "</td><td>" << pct(c.value("one_run_p05_pct", 0.0))
      << " .. " << pct(c.value("one_run_p95_pct", 0.0)) << "</td><td>"
      << (c.value("published_inside", false) ? "yes" : "no") << "</td></tr>\n";
  }
  o << "</table>\n";
  const std::string id = id_prefix + "-changes";
  const std::string strip = change_strip(id, rows, "Each change with the model's one-run interval");
  if (!strip.empty()) {
    o << strip;
    out.charts.push_back(id);
  }
  out.html = o.str();
  return out;
}

}  // namespace encbench::reports::detail
