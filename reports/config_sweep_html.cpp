#include "reports/config_sweep_html.hpp"

#include <fstream>
#include <sstream>

#include "harness/core/error.hpp"
#include "reports/html.hpp"
#include "reports/svg.hpp"

namespace encbench::reports {
namespace {

struct ScatterPoint {
  double x = 0, y = 0;
  std::string label;
  bool front = false;
};

// Points (grey, front points coloured and joined in x order) on linear axes from 0.
std::string scatter(const std::string& id, const std::string& title, const std::string& x_label,
                    const std::string& y_label, std::vector<ScatterPoint> points) {
  double x_hi = 0, y_hi = 0;
  for (const auto& p : points) {
    x_hi = std::max(x_hi, p.x);
    y_hi = std::max(y_hi, p.y);
  }
  x_hi = x_hi > 0 ? x_hi * 1.08 : 1;
  y_hi = y_hi > 0 ? y_hi * 1.08 : 1;
  const double left = 70, top = 30, pw = 670, ph = 260, width = 760, height = top + ph + 48;
  auto sx = [&](double x) { return left + x / x_hi * pw; };
  auto sy = [&](double y) { return top + ph - y / y_hi * ph; };
  std::ostringstream o;
  o << "<svg id=\"" << svg::esc(id) << "\" class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width
    << "\" height=\"" << height << "\" viewBox=\"0 0 " << width << " " << height << "\" role=\"img\">\n<title>"
    << svg::esc(title) << "</title><text x=\"" << left << "\" y=\"20\" class=\"ctitle\">" << svg::esc(title) << "</text>\n";
  for (double t : svg::nice_ticks(0, x_hi))
    o << "<line x1=\"" << svg::num(sx(t)) << "\" y1=\"" << top << "\" x2=\"" << svg::num(sx(t)) << "\" y2=\"" << top + ph
      << "\" class=\"grid\"/><text x=\"" << svg::num(sx(t)) << "\" y=\"" << top + ph + 16
      << "\" class=\"tick\" text-anchor=\"middle\">" << svg::tick_label(t) << "</text>\n";
  for (double t : svg::nice_ticks(0, y_hi))
    o << "<line x1=\"" << left << "\" y1=\"" << svg::num(sy(t)) << "\" x2=\"" << left + pw << "\" y2=\"" << svg::num(sy(t))
      << "\" class=\"grid\"/><text x=\"" << left - 6 << "\" y=\"" << svg::num(sy(t) + 4)
      << "\" class=\"tick\" text-anchor=\"end\">" << svg::tick_label(t) << "</text>\n";
  o << "<rect x=\"" << left << "\" y=\"" << top << "\" width=\"" << pw << "\" height=\"" << ph << "\" class=\"frame\"/>\n"
    << "<text x=\"" << left + pw / 2 << "\" y=\"" << height - 8 << "\" class=\"axis\" text-anchor=\"middle\">"
    << svg::esc(x_label) << "</text><text x=\"14\" y=\"" << top + ph / 2
    << "\" class=\"axis\" text-anchor=\"middle\" transform=\"rotate(-90 14 " << top + ph / 2 << ")\">" << svg::esc(y_label)
    << "</text>\n";
  std::sort(points.begin(), points.end(), [](const ScatterPoint& a, const ScatterPoint& b) { return a.x < b.x; });
  o << "<polyline class=\"front\" fill=\"none\" stroke=\"" << svg::kHeadColour << "\" stroke-width=\"1.8\" points=\"";
  for (const auto& p : points)
    if (p.front) o << svg::num(sx(p.x)) << "," << svg::num(sy(p.y)) << " ";
  o << "\"/>\n";
  for (const auto& p : points)
    o << "<circle cx=\"" << svg::num(sx(p.x)) << "\" cy=\"" << svg::num(sy(p.y)) << "\" r=\"4\" fill=\""
      << (p.front ? svg::kHeadColour : "#999") << "\"><title>" << svg::esc(p.label) << "</title></circle>\n";
  o << "</svg>\n";
  return o.str();
}

std::string cell(const nlohmann::json& v, int digits = 2) {
  return v.is_number() ? numbers::fixed(v.get<double>(), digits) : std::string("-");
}

std::string winners(const nlohmann::json& doc) {
  std::ostringstream o;
  std::size_t won = 0;
  for (const auto& l : doc["loads"]) won += l["winner"].is_null() ? 0 : 1;
  o << "<h1 class=\"" << (won ? "pass" : "invalid") << "\">Winners by load (" << svg::esc(doc["rank_metric"].get<std::string>())
    << "): " << won << " of " << doc["loads"].size() << " loads have one</h1>\n<ul>\n";
  for (const auto& l : doc["loads"]) {
    o << "<li><b>" << svg::esc(l["load"].get<std::string>()) << "</b>: ";
    if (l["best"].is_null()) o << "no finished round";
    else if (l["winner"].is_null()) o << "no winner (best " << svg::esc(l["best"].get<std::string>()) << ", not every other judged worse)";
    else o << "winner " << svg::esc(l["winner"].get<std::string>());
    o << "</li>\n";
  }
  o << "</ul>\n<p class=\"sub\">Verdicts: " << svg::esc(doc["judgement"].get<std::string>()) << "; rounds as the unit; "
    << svg::esc(doc["order_kind"].get<std::string>()) << " order (seed " << doc["order_seed"].dump() << ")."
    << (doc["slo"].is_string() ? " SLO: " + svg::esc(doc["slo"].get<std::string>()) + "." : std::string()) << "</p>\n";
  for (const auto& f : doc["failures"])
    o << "<p class=\"sub invalid\"><b>Failed:</b> " << svg::esc(f["message"].get<std::string>()) << "</p>\n";
  if (doc.value("interrupted", false)) o << "<p class=\"sub\"><b>Interrupted:</b> the rounds finished so far.</p>\n";
  return o.str();
}

std::string fronts(const nlohmann::json& doc) {
  std::vector<ScatterPoint> throughput, capacity;
  for (const auto& p : doc["pareto"]["throughput"])
    if (p["tokens_per_user"].is_number())
      throughput.push_back({p["tokens_per_user"].get<double>(), p["tokens_per_device"].get<double>(),
                            p["configuration"].get<std::string>() + " @ " + p["load"].get<std::string>(), p["on_front"].get<bool>()});
  for (const auto& p : doc["pareto"]["capacity"])
    if (p["capacity"].is_number() && p["light_load_ttft_ms"].is_number())
      capacity.push_back({p["light_load_ttft_ms"].get<double>(), p["capacity"].get<double>(),
                          p["configuration"].get<std::string>(), p["on_front"].get<bool>()});
  std::string out = "<h2>Pareto fronts</h2>\n" +
                    scatter("pareto-throughput", "Output tokens/s per device against tokens/s per user (upper right is better)",
                            "output tokens/s per user", "output tokens/s per device", throughput);
  if (!capacity.empty())
    out += scatter("pareto-capacity", "Capacity at the SLO against mean TTFT at the lightest load (upper left is better)",
                   "mean TTFT at the lightest load (ms)", "capacity (lower end of its bracket)", capacity);
  return out;
}

std::string curves(const nlohmann::json& doc) {
  std::string out = "<h2>Load curves</h2>\n";
  for (const auto& [key, label] : {std::pair{"mean_e2el_ms", "mean E2EL (ms)"}, std::pair{"output_throughput", "output tokens/s"}}) {
    svg::LineChart c(std::string("curve-") + key, std::string(label) + " against load", doc["load_variable"].get<std::string>(), label);
    for (const auto& conf : doc["configurations"]) {
      svg::Series s;
      s.name = conf["name"].get<std::string>();
      for (const auto& p : conf["points"])
        if (p[key].is_number() && std::isfinite(p["load_value"].get<double>())) s.points.emplace_back(p["load_value"].get<double>(), p[key].get<double>());
      if (!s.points.empty()) c.add(std::move(s));
    }
    if (!c.empty()) out += c.svg();
  }
  return out;
}

std::string table(const nlohmann::json& doc) {
  std::ostringstream o;
  o << "<h2>Every configuration at every load</h2>\n<table><tr><th>configuration</th><th>load</th><th>rounds</th>"
       "<th>output tok/s</th><th>mean TTFT ms</th><th>p99 TTFT ms</th><th>mean TPOT ms</th><th>mean E2EL ms</th>"
       "<th>against the best</th></tr>\n";
  for (const auto& conf : doc["configurations"])
    for (const auto& p : conf["points"]) {
      std::string verdict = "-";
      for (const auto& l : doc["loads"])
        if (l["load"] == p["load"]) {
          if (l["best"] == conf["name"]) verdict = l["winner"].is_null() ? "best" : "WINNER";
          for (const auto& v : l["verdicts"])
            if (v["configuration"] == conf["name"]) verdict = v["verdict"].get<std::string>() + " " + v["change"].get<std::string>();
        }
      o << "<tr><td>" << svg::esc(conf["name"].get<std::string>()) << "</td><td>" << svg::esc(p["load"].get<std::string>())
        << "</td><td>" << p["rounds"].dump() << "</td><td>" << cell(p["output_throughput"], 1) << "</td><td>"
        << cell(p["mean_ttft_ms"]) << "</td><td>" << cell(p["p99_ttft_ms"]) << "</td><td>" << cell(p["mean_tpot_ms"])
        << "</td><td>" << cell(p["mean_e2el_ms"]) << "</td><td>" << svg::esc(verdict) << "</td></tr>\n";
    }
  o << "</table>\n<h2>Start-up and capacity</h2>\n<table><tr><th>configuration</th><th>start to ready ms (median)</th>"
       "<th>start to first token ms (median)</th><th>capacity at the SLO</th></tr>\n";
  for (const auto& conf : doc["configurations"])
    o << "<tr><td>" << svg::esc(conf["name"].get<std::string>()) << "</td><td>" << cell(conf["startup"]["ready_ms_median"], 0)
      << "</td><td>" << cell(conf["startup"]["first_token_ms_median"], 0) << "</td><td>"
      << svg::esc(conf.value("capacity_text", std::string("-"))) << "</td></tr>\n";
  o << "</table>\n";
  return o.str();
}

}  // namespace

std::string render_config_sweep_html(const nlohmann::json& doc) {
  require(doc.value("schema", std::string()) == "encbench-config-sweep", "not an encbench-config-sweep result");
  std::ostringstream o;
  o << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>encbench configuration sweep</title><style>"
    << html_style() << "</style></head>\n<body>\n"
    << winners(doc) << fronts(doc) << curves(doc) << table(doc) << "</body></html>\n";
  return o.str();
}

void write_config_sweep_html(const std::filesystem::path& path, const nlohmann::json& sweep) {
  std::ofstream out(path);
  require(static_cast<bool>(out), "cannot write " + path.string());
  out << render_config_sweep_html(sweep);
}

}  // namespace encbench::reports
