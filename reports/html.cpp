#include "reports/html.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>
#include <tuple>

#include "harness/core/stats.hpp"
#include "reports/tables.hpp"

namespace encbench::reports {

using nlohmann::json;

std::pair<double, double> median_interval(std::vector<double> xs) {
  if (xs.empty()) return {0, 0};
  std::sort(xs.begin(), xs.end());
  const double n = static_cast<double>(xs.size());
  if (xs.size() < 6) return {xs.front(), xs.back()};
  // Ranks n/2 -+ 1.96 sqrt(n)/2 (normal approximation to the binomial), 1-based.
  const double half_width = 1.96 * std::sqrt(n) / 2.0;
  const auto lo = static_cast<std::size_t>(std::max(1.0, std::floor(n / 2.0 - half_width)));
  const auto hi = static_cast<std::size_t>(std::min(n, std::ceil(n / 2.0 + half_width + 1.0)));
  return {xs[lo - 1], xs[hi - 1]};
}

namespace {

constexpr const char* kPalette[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
                                    "#ff7f0e", "#17becf", "#8c564b", "#e377c2"};
const char* colour(std::size_t i) { return kPalette[i % (sizeof kPalette / sizeof *kPalette)]; }

std::string esc(const std::string& s) { return xml_escape(s); }

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

std::string tick_label(double v) {
  char buf[32];
  const double a = std::fabs(v);
  if (a >= 1e6 || (a > 0 && a < 1e-2)) std::snprintf(buf, sizeof buf, "%.2g", v);
  else if (a >= 100 || v == std::floor(v)) std::snprintf(buf, sizeof buf, "%.0f", v);
  else std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

// "Nice" tick spacing: 1, 2 or 5 times a power of ten, about `count` ticks over the range.
std::vector<double> nice_ticks(double lo, double hi, int count = 5) {
  if (!(hi > lo)) hi = lo + 1;
  const double raw = (hi - lo) / count;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double norm = raw / mag;
  const double step = (norm < 1.5 ? 1 : norm < 3 ? 2 : norm < 7 ? 5 : 10) * mag;
  std::vector<double> ticks;
  for (double t = std::ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) ticks.push_back(t);
  return ticks;
}

struct Series {
  std::string name;
  std::vector<std::pair<double, double>> points;
  bool step = false;
};

// A line chart with axes, ticks and a legend.
class LineChart {
 public:
  LineChart(std::string id, std::string title, std::string x_label, std::string y_label)
      : id_(std::move(id)), title_(std::move(title)), x_label_(std::move(x_label)), y_label_(std::move(y_label)) {}
  void add(Series s) { series_.push_back(std::move(s)); }
  void set_y_range(double lo, double hi) {
    y_fixed_ = true;
    y_lo_ = lo;
    y_hi_ = hi;
  }
  bool empty() const { return series_.empty(); }

  std::string svg() const {
    double x_lo = 1e300, x_hi = -1e300, y_lo = 1e300, y_hi = -1e300;
    for (const auto& s : series_)
      for (const auto& [x, y] : s.points) {
        x_lo = std::min(x_lo, x);
        x_hi = std::max(x_hi, x);
        y_lo = std::min(y_lo, y);
        y_hi = std::max(y_hi, y);
      }
    if (y_fixed_) {
      y_lo = y_lo_;
      y_hi = y_hi_;
    } else {
      y_lo = std::min(0.0, y_lo);
      y_hi = y_hi <= y_lo ? y_lo + 1 : y_hi * 1.05;
    }
    if (!(x_hi > x_lo)) x_hi = x_lo + 1;
    const double left = 70, right = 20, top = 36, bottom = 48, width = 760, height = 320;
    const double pw = width - left - right, ph = height - top - bottom;
    auto sx = [&](double x) { return left + (x - x_lo) / (x_hi - x_lo) * pw; };
    auto sy = [&](double y) { return top + ph - (y - y_lo) / (y_hi - y_lo) * ph; };
    std::ostringstream o;
    o << "<svg id=\"" << esc(id_) << "\" class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width
      << "\" height=\"" << height << "\" viewBox=\"0 0 " << width << " " << height << "\" role=\"img\">\n";
    o << "<title>" << esc(title_) << "</title>\n";
    o << "<text x=\"" << left << "\" y=\"20\" class=\"ctitle\">" << esc(title_) << "</text>\n";
    for (double t : nice_ticks(x_lo, x_hi)) {
      o << "<line x1=\"" << num(sx(t)) << "\" y1=\"" << top << "\" x2=\"" << num(sx(t)) << "\" y2=\"" << top + ph
        << "\" class=\"grid\"/><text x=\"" << num(sx(t)) << "\" y=\"" << top + ph + 16
        << "\" class=\"tick\" text-anchor=\"middle\">" << tick_label(t) << "</text>\n";
    }
    for (double t : nice_ticks(y_lo, y_hi)) {
      o << "<line x1=\"" << left << "\" y1=\"" << num(sy(t)) << "\" x2=\"" << left + pw << "\" y2=\"" << num(sy(t))
        << "\" class=\"grid\"/><text x=\"" << left - 6 << "\" y=\"" << num(sy(t) + 4)
        << "\" class=\"tick\" text-anchor=\"end\">" << tick_label(t) << "</text>\n";
    }
    o << "<rect x=\"" << left << "\" y=\"" << top << "\" width=\"" << pw << "\" height=\"" << ph
      << "\" class=\"frame\"/>\n";
    o << "<text x=\"" << left + pw / 2 << "\" y=\"" << height - 8 << "\" class=\"axis\" text-anchor=\"middle\">"
      << esc(x_label_) << "</text>\n";
    o << "<text x=\"14\" y=\"" << top + ph / 2 << "\" class=\"axis\" text-anchor=\"middle\" transform=\"rotate(-90 14 "
      << top + ph / 2 << ")\">" << esc(y_label_) << "</text>\n";
    for (std::size_t i = 0; i < series_.size(); ++i) {
      const auto& s = series_[i];
      o << "<polyline class=\"series\" fill=\"none\" stroke=\"" << colour(i) << "\" stroke-width=\"1.8\" points=\"";
      for (std::size_t k = 0; k < s.points.size(); ++k) {
        const auto& [x, y] = s.points[k];
        if (s.step && k > 0) o << num(sx(x)) << "," << num(sy(s.points[k - 1].second)) << " ";
        o << num(sx(x)) << "," << num(sy(y)) << " ";
      }
      o << "\"><title>" << esc(s.name) << "</title></polyline>\n";
      const double ly = top + 14 + 16.0 * static_cast<double>(i);
      o << "<rect x=\"" << left + pw - 250 << "\" y=\"" << ly - 9 << "\" width=\"10\" height=\"10\" fill=\""
        << colour(i) << "\"/><text x=\"" << left + pw - 235 << "\" y=\"" << ly << "\" class=\"legend\">"
        << esc(s.name.size() > 40 ? "..." + s.name.substr(s.name.size() - 37) : s.name) << "</text>\n";
    }
    o << "</svg>\n";
    return o.str();
  }

 private:
  std::string id_, title_, x_label_, y_label_;
  std::vector<Series> series_;
  bool y_fixed_ = false;
  double y_lo_ = 0, y_hi_ = 1;
};

struct Bar {
  std::string label;
  double value = 0, low = 0, high = 0;
  std::size_t colour_index = 0;
};

std::string bar_chart(const std::string& id, const std::string& title, const std::string& unit,
                      const std::vector<Bar>& bars, const std::string& interval_note) {
  const double left = 260, right = 60, top = 36, row = 26, width = 760;
  const double height = top + row * static_cast<double>(bars.size()) + 40;
  double hi = 0;
  for (const auto& b : bars) hi = std::max({hi, b.value, b.high});
  if (hi <= 0) hi = 1;
  hi *= 1.08;
  const double pw = width - left - right;
  auto sx = [&](double v) { return left + v / hi * pw; };
  std::ostringstream o;
  o << "<svg id=\"" << esc(id) << "\" class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width
    << "\" height=\"" << height << "\" viewBox=\"0 0 " << width << " " << height << "\" role=\"img\">\n";
  o << "<title>" << esc(title) << "</title>\n";
  o << "<text x=\"10\" y=\"20\" class=\"ctitle\">" << esc(title) << "</text>\n";
  for (double t : nice_ticks(0, hi)) {
    o << "<line x1=\"" << num(sx(t)) << "\" y1=\"" << top - 4 << "\" x2=\"" << num(sx(t)) << "\" y2=\""
      << height - 36 << "\" class=\"grid\"/><text x=\"" << num(sx(t)) << "\" y=\"" << height - 22
      << "\" class=\"tick\" text-anchor=\"middle\">" << tick_label(t) << "</text>\n";
  }
  for (std::size_t i = 0; i < bars.size(); ++i) {
    const auto& b = bars[i];
    const double y = top + row * static_cast<double>(i);
    o << "<text x=\"" << left - 8 << "\" y=\"" << y + 15 << "\" class=\"tick\" text-anchor=\"end\">"
      << esc(b.label.size() > 40 ? "..." + b.label.substr(b.label.size() - 37) : b.label) << "</text>\n";
    o << "<rect class=\"bar\" x=\"" << left << "\" y=\"" << y + 3 << "\" width=\"" << num(sx(b.value) - left)
      << "\" height=\"" << row - 8 << "\" fill=\"" << colour(b.colour_index) << "\" fill-opacity=\"0.75\"><title>"
      << esc(b.label) << ": " << format_number(b.value) << " " << esc(unit) << " [" << format_number(b.low)
      << ", " << format_number(b.high) << "]</title></rect>\n";
    if (b.high > b.low) {
      const double cy = y + 3 + (row - 8) / 2;
      o << "<g class=\"interval\" stroke=\"#222\" stroke-width=\"1.5\"><line x1=\"" << num(sx(b.low)) << "\" y1=\""
        << num(cy) << "\" x2=\"" << num(sx(b.high)) << "\" y2=\"" << num(cy) << "\"/><line x1=\"" << num(sx(b.low))
        << "\" y1=\"" << num(cy - 6) << "\" x2=\"" << num(sx(b.low)) << "\" y2=\"" << num(cy + 6)
        << "\"/><line x1=\"" << num(sx(b.high)) << "\" y1=\"" << num(cy - 6) << "\" x2=\"" << num(sx(b.high))
        << "\" y2=\"" << num(cy + 6) << "\"/></g>\n";
    }
    o << "<text x=\"" << num(std::max(sx(b.value), sx(b.high)) + 4) << "\" y=\"" << y + 15 << "\" class=\"tick\">"
      << format_number(b.value) << "</text>\n";
  }
  o << "<text x=\"" << left << "\" y=\"" << height - 6 << "\" class=\"axis\">" << esc(unit) << "; "
    << esc(interval_note) << "</text>\n";
  o << "</svg>\n";
  return o.str();
}

std::string short_name(const RunResult& r, std::size_t index) {
  // (a stream, not operator+: GCC 12 warns falsely about -Wrestrict on that chain)
  std::ostringstream s;
  s << '#' << index + 1 << ' ' << std::filesystem::path(r.source).filename().string();
  return s.str();
}

// Empirical CDF, thinned to at most ~400 points (always keeping both ends).
std::vector<std::pair<double, double>> cdf_points(std::vector<double> xs) {
  std::sort(xs.begin(), xs.end());
  std::vector<std::pair<double, double>> pts;
  const std::size_t n = xs.size();
  const std::size_t stride = std::max<std::size_t>(1, n / 400);
  for (std::size_t i = 0; i < n; i += stride) pts.emplace_back(xs[i], static_cast<double>(i + 1) / n);
  if (!pts.empty() && pts.back().second < 1.0) pts.emplace_back(xs.back(), 1.0);
  return pts;
}

std::vector<double> list_of(const json& doc, const char* key) {
  std::vector<double> out;
  if (auto it = doc.find(key); it != doc.end() && it->is_array())
    for (const auto& v : *it) out.push_back(v.is_number() ? v.get<double>() : 0.0);
  return out;
}

// Output tokens and mean in-flight requests per 1-s bucket of the run, vllm's peak-throughput
// bucketing (token times = start + ttft, then cumulative ITLs).
bool serving_time_series(const RunResult& r, std::vector<std::pair<double, double>>& tokens,
                         std::vector<std::pair<double, double>>& inflight) {
  const json& d = r.raw;
  const auto starts = list_of(d, "start_times");
  const auto ttfts = list_of(d, "ttfts");
  const auto lat = list_of(d, "latencies");
  if (starts.empty() || starts.size() != lat.size()) return false;
  std::vector<bool> ok(starts.size(), true);
  if (auto e = d.find("errors"); e != d.end() && e->is_array())
    for (std::size_t i = 0; i < ok.size() && i < e->size(); ++i)
      ok[i] = (*e)[i].is_null() || ((*e)[i].is_string() && (*e)[i].get<std::string>().empty());
  double t0 = 1e300, t1 = -1e300;
  for (std::size_t i = 0; i < starts.size(); ++i)
    if (ok[i]) {
      t0 = std::min(t0, starts[i]);
      t1 = std::max(t1, starts[i] + lat[i]);
    }
  if (!(t1 > t0)) return false;
  const std::size_t buckets = static_cast<std::size_t>(std::ceil(t1 - t0)) + 1;
  if (buckets > 100000) return false;
  std::vector<double> tok(buckets, 0), busy(buckets, 0);
  const json* itls = d.contains("itls") && d["itls"].is_array() ? &d["itls"] : nullptr;
  for (std::size_t i = 0; i < starts.size(); ++i) {
    if (!ok[i]) continue;
    if (i < ttfts.size()) {
      double t = starts[i] + ttfts[i];
      tok[std::min(buckets - 1, static_cast<std::size_t>(t - t0))] += 1;
      if (itls && i < itls->size() && (*itls)[i].is_array())
        for (const auto& g : (*itls)[i]) {
          t += g.is_number() ? g.get<double>() : 0.0;
          tok[std::min(buckets - 1, static_cast<std::size_t>(std::max(0.0, t - t0)))] += 1;
        }
    }
    // Time in flight within each bucket, so the bucket value is the mean concurrency.
    const double s = starts[i] - t0, e = s + lat[i];
    for (auto b = static_cast<std::size_t>(s); b < buckets && static_cast<double>(b) < e; ++b)
      busy[b] += std::min(e, static_cast<double>(b + 1)) - std::max(s, static_cast<double>(b));
  }
  for (std::size_t b = 0; b < buckets; ++b) {
    tokens.emplace_back(static_cast<double>(b), tok[b]);
    inflight.emplace_back(static_cast<double>(b), busy[b]);
  }
  return true;
}

const char* gap_colour(const std::string& cls) {
  if (cls == "host_wait") return "#d62728";
  if (cls == "sync_stall") return "#ff7f0e";
  if (cls == "kernel_wait") return "#bcbd22";
  return "#7f7f7f";
}

const char* op_colour(const std::string& category) {
  if (category == "kernel") return "#1f77b4";
  if (category.rfind("memcpy", 0) == 0) return "#2ca02c";
  if (category == "memset") return "#17becf";
  if (category == "sync") return "#9467bd";
  return "#8c564b";
}

// Device timeline of one encode result: one lane per stream, idle gaps as a lane of their own.
std::string timeline_chart(const std::string& id, const json& doc, const std::string& title, std::string& note) {
  const json ops = doc.value("ops", json::array());
  const json gaps = doc.value("gaps", json::array());
  if ((!ops.is_array() || ops.empty()) && (!gaps.is_array() || gaps.empty())) return "";
  const std::size_t kMaxOps = 4000;
  double t0 = 1e300, t1 = -1e300;
  std::map<long long, int> lanes;
  auto span = [&](const json& e) {
    return std::pair<double, double>{e.value("start_us", 0.0), e.value("end_us", 0.0)};
  };
  std::size_t used_ops = 0;
  for (const auto& op : ops) {
    if (!op.is_object() || used_ops >= kMaxOps) continue;
    ++used_ops;
    auto [s, e] = span(op);
    t0 = std::min(t0, s);
    t1 = std::max(t1, e);
    lanes.emplace(op.value("stream", 0LL), 0);
  }
  for (const auto& g : gaps) {
    if (!g.is_object()) continue;
    auto [s, e] = span(g);
    if (used_ops >= kMaxOps && s > t1) continue;
    t0 = std::min(t0, s);
    t1 = std::max(t1, e);
  }
  if (!(t1 > t0)) return "";
  if (ops.size() > kMaxOps) note = "first " + std::to_string(kMaxOps) + " of " + std::to_string(ops.size()) + " ops shown";
  int lane_index = 0;
  for (auto& [stream, lane] : lanes) lane = lane_index++;
  const double left = 110, right = 20, top = 36, lane_h = 30, width = 900;
  const double gap_lane_y = top + lane_h * lane_index;
  const double height = gap_lane_y + lane_h + 70;
  const double pw = width - left - right;
  auto sx = [&](double t) { return left + (t - t0) / (t1 - t0) * pw; };
  std::ostringstream o;
  o << "<svg id=\"" << esc(id) << "\" class=\"chart timeline\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width
    << "\" height=\"" << height << "\" viewBox=\"0 0 " << width << " " << height << "\" role=\"img\">\n";
  o << "<title>" << esc(title) << "</title>\n<text x=\"10\" y=\"20\" class=\"ctitle\">" << esc(title) << "</text>\n";
  for (const auto& [stream, lane] : lanes)
    o << "<text x=\"" << left - 8 << "\" y=\"" << top + lane_h * lane + 19 << "\" class=\"tick\" text-anchor=\"end\">stream "
      << stream << "</text>\n";
  o << "<text x=\"" << left - 8 << "\" y=\"" << gap_lane_y + 19 << "\" class=\"tick\" text-anchor=\"end\">idle gaps</text>\n";
  used_ops = 0;
  for (const auto& op : ops) {
    if (!op.is_object() || used_ops++ >= kMaxOps) continue;
    auto [s, e] = span(op);
    const int lane = lanes[op.value("stream", 0LL)];
    o << "<rect class=\"op\" x=\"" << num(sx(s)) << "\" y=\"" << top + lane_h * lane + 4 << "\" width=\""
      << num(std::max(0.5, sx(e) - sx(s))) << "\" height=\"" << lane_h - 8 << "\" fill=\""
      << op_colour(op.value("category", std::string("kernel"))) << "\"><title>" << esc(op.value("name", std::string()))
      << " " << num(e - s) << " us</title></rect>\n";
  }
  std::map<std::string, double> idle_by_class;
  for (const auto& g : gaps) {
    if (!g.is_object()) continue;
    auto [s, e] = span(g);
    if (s > t1) continue;
    const std::string cls = g.value("class", std::string("other"));
    idle_by_class[cls] += e - s;
    o << "<rect class=\"gap\" x=\"" << num(sx(s)) << "\" y=\"" << gap_lane_y + 4 << "\" width=\""
      << num(std::max(0.5, sx(e) - sx(s))) << "\" height=\"" << lane_h - 8 << "\" fill=\"" << gap_colour(cls)
      << "\"><title>" << esc(cls) << " " << num(e - s) << " us: " << esc(g.value("cause", std::string()))
      << "</title></rect>\n";
    // Shade the gap across the stream lanes too, so idle time is visible where it happens.
    o << "<rect x=\"" << num(sx(s)) << "\" y=\"" << top << "\" width=\"" << num(std::max(0.5, sx(e) - sx(s)))
      << "\" height=\"" << lane_h * lane_index << "\" fill=\"" << gap_colour(cls) << "\" fill-opacity=\"0.12\"/>\n";
  }
  for (double t : nice_ticks(0, t1 - t0, 8))
    o << "<text x=\"" << num(sx(t0 + t)) << "\" y=\"" << gap_lane_y + lane_h + 16
      << "\" class=\"tick\" text-anchor=\"middle\">" << tick_label(t) << "</text>\n";
  o << "<text x=\"" << left << "\" y=\"" << gap_lane_y + lane_h + 34 << "\" class=\"axis\">time since first op (us)</text>\n";
  double x = left;
  for (const char* cls : {"host_wait", "sync_stall", "kernel_wait", "other"}) {
    o << "<rect x=\"" << x << "\" y=\"" << height - 22 << "\" width=\"10\" height=\"10\" fill=\"" << gap_colour(cls)
      << "\"/><text x=\"" << x + 14 << "\" y=\"" << height - 13 << "\" class=\"legend\">" << cls << " "
      << num(idle_by_class.count(cls) ? idle_by_class[cls] : 0.0) << " us</text>\n";
    x += 185;
  }
  o << "</svg>\n";
  return o.str();
}

std::string summary_table(const RunResult& r) {
  std::ostringstream o;
  o << "<table><tr><th>Metric</th><th>Value</th><th>Samples</th></tr>\n";
  std::size_t shown = 0;
  for (const auto& m : r.metrics) {
    if (++shown > 40) break;
    o << "<tr><td>" << esc(m.label) << "</td><td>" << (m.text ? esc(*m.text) : format_number(m.value)) << "</td><td>"
      << (m.samples.empty() ? "" : std::to_string(m.samples.size()) + " " + esc(m.sample_kind)) << "</td></tr>\n";
  }
  o << "</table>\n";
  return o.str();
}

constexpr const char* kStyle = R"css(
body{font-family:-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;margin:24px;color:#222;max-width:1000px}
h1{font-size:22px} h2{font-size:18px;margin-top:32px;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:13px;margin:8px 0} td,th{border:1px solid #ddd;padding:3px 8px;text-align:left}
.chart{display:block;margin:12px 0;background:#fff;border:1px solid #eee}
.ctitle{font-size:14px;font-weight:600} .tick{font-size:11px;fill:#444} .axis{font-size:12px;fill:#333}
.legend{font-size:11px;fill:#222} .grid{stroke:#eee} .frame{fill:none;stroke:#999}
.meta{font-size:12px;color:#555}
)css";

// A closed-loop result is charted as what it holds: one serving run per arm.
std::vector<RunResult> with_arms_expanded(const std::vector<RunResult>& runs) {
  std::vector<RunResult> out;
  for (const auto& r : runs) {
    if (r.kind != ResultKind::closed_loop || !r.raw.contains("arms") || !r.raw["arms"].is_array()) {
      out.push_back(r);
      continue;
    }
    for (const auto& arm : r.raw["arms"]) {
      if (!arm.is_object() || !arm.contains("serving")) continue;
      RunResult serving = parse_result(arm["serving"], r.source + " [" + arm.value("preset", "?") + "]");
      serving.identity.model = r.identity.model;
      serving.identity.device = r.identity.device;
      serving.git_sha = r.git_sha;
      out.push_back(std::move(serving));
    }
  }
  return out;
}

}  // namespace

HtmlReport render_html_report(const std::vector<RunResult>& given_runs, const std::string& title) {
  const std::vector<RunResult> runs = with_arms_expanded(given_runs);
  HtmlReport report;
  std::ostringstream body;
  auto add_chart = [&](const std::string& id, const std::string& svg) {
    if (svg.empty()) return;
    body << svg;
    report.charts.push_back(id);
  };

  body << "<h2>Inputs</h2>\n<table><tr><th>#</th><th>File</th><th>Kind</th><th>Model</th><th>Device</th>"
          "<th>Scenario</th><th>git sha</th></tr>\n";
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const auto& r = runs[i];
    body << "<tr><td>" << i + 1 << "</td><td>" << esc(r.source) << "</td><td>" << to_string(r.kind) << "</td><td>"
         << esc(r.identity.model) << "</td><td>" << esc(r.identity.device) << "</td><td>" << esc(r.identity.scenario)
         << "</td><td>" << esc(r.git_sha) << "</td></tr>\n";
  }
  body << "</table>\n";

  // Serving: latency CDFs and time series.
  std::vector<std::size_t> serving;
  for (std::size_t i = 0; i < runs.size(); ++i)
    if (runs[i].kind == ResultKind::serving) serving.push_back(i);
  if (!serving.empty()) {
    body << "<h2>Serving latency distributions</h2>\n";
    const std::pair<const char*, const char*> kCdfs[] = {{"ttft", "TTFT"}, {"itl", "ITL"}, {"e2el", "E2EL"}};
    for (const auto& [key, display] : kCdfs) {
      LineChart chart(std::string("cdf-") + key, std::string(display) + " CDF (successful requests)",
                      std::string(display) + " (ms)", "fraction of samples");
      chart.set_y_range(0, 1);
      for (std::size_t i : serving) {
        const auto samples = per_request_samples_ms(runs[i].raw, runs[i].source);
        auto it = samples.find(key);
        if (it == samples.end() || it->second.empty()) continue;
        chart.add({short_name(runs[i], i) + " (n=" + std::to_string(it->second.size()) + ")",
                   cdf_points(it->second), true});
      }
      if (!chart.empty()) add_chart(std::string("cdf-") + key, chart.svg());
      else body << "<p class=\"meta\">No per-request " << display
                << " samples (run vllm bench serve with --save-detailed).</p>\n";
    }
    LineChart tput("throughput-over-time", "Output tokens per second over the run", "seconds since first request",
                   "output tokens / s");
    LineChart conc("concurrency-over-time", "Requests in flight (mean per second)", "seconds since first request",
                   "concurrent requests");
    for (std::size_t i : serving) {
      std::vector<std::pair<double, double>> tok, inflight;
      if (!serving_time_series(runs[i], tok, inflight)) continue;
      tput.add({short_name(runs[i], i), tok, true});
      conc.add({short_name(runs[i], i), inflight, true});
    }
    if (!tput.empty()) {
      body << "<h2>Serving over time</h2>\n";
      add_chart("throughput-over-time", tput.svg());
      add_chart("concurrency-over-time", conc.svg());
    }
  }

  // Encode: per-forward times and device timelines.
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const auto& r = runs[i];
    if (r.kind != ResultKind::encode) continue;
    body << "<h2>Encode result " << i + 1 << ": " << esc(r.identity.model) << " on " << esc(r.identity.device) << "</h2>\n";
    body << "<p class=\"meta\">toggles: " << esc(r.raw.value("toggles", json::object()).dump()) << "</p>\n";
    if (const Metric* m = r.find("forward_ms.mean"); m && !m->samples.empty()) {
      LineChart chart("forwards-" + std::to_string(i + 1), "Forward time per forward", "forward #", "forward (ms)");
      Series s{short_name(r, i), {}, false};
      for (std::size_t k = 0; k < m->samples.size(); ++k) s.points.emplace_back(static_cast<double>(k + 1), m->samples[k]);
      chart.add(std::move(s));
      add_chart("forwards-" + std::to_string(i + 1), chart.svg());
    }
    std::string note;
    const std::string id = "timeline-" + std::to_string(i + 1);
    const std::string svg = timeline_chart(id, r.raw, "Device timeline and idle gaps", note);
    if (svg.empty()) body << "<p class=\"meta\">No \"ops\"/\"gaps\" in this result: no device timeline.</p>\n";
    add_chart(id, svg);
    if (!note.empty()) body << "<p class=\"meta\">" << esc(note) << "</p>\n";
  }

  // A/B bars with intervals.
  const std::pair<const char*, const char*> kAbSeries[] = {
      {"forward_ms.median", "forward"}, {"device_busy_ms.median", "device busy"}};
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const auto& r = runs[i];
    if (r.kind != ResultKind::ab) continue;
    body << "<h2>A/B result " << i + 1 << ": " << esc(r.identity.model) << "</h2>\n";
    std::vector<Bar> bars;
    for (const auto& [key, display] : kAbSeries)
      for (int side = 0; side < 2; ++side) {
        const Metric* m = r.find(std::string(side ? "b." : "a.") + key);
        if (!m) continue;
        Bar b{std::string(side ? "B " : "A ") + display + " median", m->value, m->value, m->value,
              static_cast<std::size_t>(side)};
        if (!m->samples.empty()) std::tie(b.low, b.high) = median_interval(m->samples);
        bars.push_back(b);
      }
    if (!bars.empty())
      add_chart("ab-bars-" + std::to_string(i + 1),
                bar_chart("ab-bars-" + std::to_string(i + 1), "A/B: median per forward", "ms", bars,
                          "whiskers: 95% interval of the median (order statistics)"));
    if (const Metric* s = r.find("speedup_b_over_a"))
      body << "<p>Speedup of B over A (median forward): <b>" << format_number(s->value) << "x</b></p>\n";
    body << "<p class=\"meta\">A toggles: " << esc(r.raw["a"].value("toggles", json::object()).dump())
         << "<br>B toggles: " << esc(r.raw["b"].value("toggles", json::object()).dump()) << "</p>\n";
  }

  // Several results of one kind side by side.
  {
    std::vector<Bar> bars;
    std::string unit;
    for (std::size_t i = 0; i < runs.size(); ++i) {
      const auto& r = runs[i];
      const char* key = r.kind == ResultKind::serving ? "median_ttft_ms"
                        : r.kind == ResultKind::encode ? "forward_ms.median" : nullptr;
      if (!key) continue;
      const Metric* m = r.find(key);
      if (!m) continue;
      Bar b{short_name(r, i) + " " + m->label, m->value, m->value, m->value, i};
      if (!m->samples.empty()) std::tie(b.low, b.high) = median_interval(m->samples);
      bars.push_back(b);
      unit = m->unit;
    }
    if (bars.size() >= 2) {
      body << "<h2>Results side by side</h2>\n";
      add_chart("runs-bars", bar_chart("runs-bars", "Medians across results", unit, bars,
                                       "whiskers: 95% interval of the median (order statistics)"));
    }
  }

  // Google Benchmark medians.
  {
    std::vector<Bar> bars;
    for (std::size_t i = 0; i < runs.size(); ++i) {
      if (runs[i].kind != ResultKind::gbench) continue;
      for (const auto& m : runs[i].metrics) {
        if (m.name.size() < 10 || m.name.compare(m.name.size() - 10, 10, "/real_time") != 0) continue;
        Bar b{"#" + std::to_string(i + 1) + " " + m.name.substr(0, m.name.size() - 10), m.value, m.value, m.value, i};
        if (!m.samples.empty()) {
          const auto [lo, hi] = std::minmax_element(m.samples.begin(), m.samples.end());
          b.low = *lo;
          b.high = *hi;
        }
        if (bars.size() < 60) bars.push_back(b);
      }
    }
    if (!bars.empty()) {
      body << "<h2>Google Benchmark</h2>\n";
      add_chart("gbench-bars", bar_chart("gbench-bars", "Median real time per benchmark", "ns", bars,
                                         "whiskers: min..max over repetitions"));
    }
  }

  body << "<h2>Metrics</h2>\n";
  for (std::size_t i = 0; i < runs.size(); ++i)
    body << "<h3>#" << i + 1 << " " << esc(runs[i].source) << "</h3>\n" << summary_table(runs[i]);

  std::ostringstream page;
  page << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>" << esc(title)
       << "</title>\n<style>" << kStyle << "</style></head>\n<body>\n<h1>" << esc(title) << "</h1>\n"
       << "<p class=\"meta\">" << runs.size() << " result(s), " << report.charts.size()
       << " chart(s). Self-contained: inline SVG, no scripts, no network.</p>\n"
       << body.str() << "</body></html>\n";
  report.html = page.str();
  return report;
}

}  // namespace encbench::reports
