#include "reports/html.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "harness/core/stats.hpp"
#include "reports/html_sections.hpp"
#include "reports/svg.hpp"
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

namespace detail {

using namespace svg;

std::string bar_chart(const std::string& id, const std::string& title, const std::string& unit,
                      const std::vector<Bar>& bars, const std::string& interval_note) {
  const double left = 260, right = 60, top = 36, width = 760;
  std::vector<std::vector<std::string>> labels;  // wrapped to the margin, never cut
  for (const auto& b : bars) labels.push_back(wrap_text(b.label, static_cast<std::size_t>((left - 12) / kLegendCharPx)));
  const double row = row_for_lines(labels, 26);
  // The axis's unit and the note on the whiskers, across the whole width, wrapped when longer.
  const std::vector<std::string> note = wrap_text(unit + "; " + interval_note, static_cast<std::size_t>((width - 20) / kLegendCharPx));
  const double bars_bottom = top + row * static_cast<double>(bars.size());
  const double height = bars_bottom + 28 + 12 * static_cast<double>(note.size());
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
      << bars_bottom + 4 << "\" class=\"grid\"/><text x=\"" << num(sx(t)) << "\" y=\"" << bars_bottom + 18
      << "\" class=\"tick\" text-anchor=\"middle\">" << tick_label(t) << "</text>\n";
  }
  for (std::size_t i = 0; i < bars.size(); ++i) {
    const auto& b = bars[i];
    const double y = top + row * static_cast<double>(i);
    text_lines(o, left - 8, y + row / 2 - 1, labels[i], "tick y", "end");
    o << "<rect class=\"bar\" x=\"" << left << "\" y=\"" << y + row / 2 - 10 << "\" width=\"" << num(sx(b.value) - left)
      << "\" height=\"18\" fill=\"" << colour(b.colour_index) << "\" fill-opacity=\"0.75\"><title>"
      << esc(b.label) << ": " << format_number(b.value) << " " << esc(unit) << " [" << format_number(b.low)
      << ", " << format_number(b.high) << "]</title></rect>\n";
    if (b.high > b.low) {
      const double cy = y + row / 2 - 1;
      o << "<g class=\"interval\" stroke=\"#222\" stroke-width=\"1.5\"><line x1=\"" << num(sx(b.low)) << "\" y1=\""
        << num(cy) << "\" x2=\"" << num(sx(b.high)) << "\" y2=\"" << num(cy) << "\"/><line x1=\"" << num(sx(b.low))
        << "\" y1=\"" << num(cy - 6) << "\" x2=\"" << num(sx(b.low)) << "\" y2=\"" << num(cy + 6)
        << "\"/><line x1=\"" << num(sx(b.high)) << "\" y1=\"" << num(cy - 6) << "\" x2=\"" << num(sx(b.high))
        << "\" y2=\"" << num(cy + 6) << "\"/></g>\n";
    }
    o << "<text x=\"" << num(std::max(sx(b.value), sx(b.high)) + 4) << "\" y=\"" << y + row / 2 + 3 << "\" class=\"tick\">"
      << format_number(b.value) << "</text>\n";
  }
  text_lines(o, 10, bars_bottom + 30 + 6 * static_cast<double>(note.size() - 1), note, "axis x", "start");
  o << "</svg>\n";
  return o.str();
}

}  // namespace detail

namespace {

using namespace svg;
using detail::Bar;
using detail::bar_chart;

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

const char* op_colour(const std::string& category) {
  if (category == "kernel") return "#2ca02c";
  if (category.rfind("memcpy", 0) == 0) return "#2ca02c";
  if (category == "memset") return "#17becf";
  if (category == "sync") return "#8e44ad";
  return "#8c564b";
}

// Device timeline of one encode result: one lane per stream, idle gaps as a lane of their own,
// and above them the host's row when the result lists its spans (host_spans: torch calls and
// host steps in one colour, blocking waits in the sync colour).
// The idle time of each gap class, as the device timeline's legend says it.
std::vector<LegendEntry> gap_legend(const std::map<std::string, double>& idle_by_class) {
  std::vector<LegendEntry> entries;
  for (const char* cls : {"host_wait", "sync_stall", "kernel_wait", "other"}) {
    const auto it = idle_by_class.find(cls);
    entries.push_back({std::string(cls) + " " + num(it == idle_by_class.end() ? 0.0 : it->second) + " us", gap_colour(cls)});
  }
  return entries;
}

std::string timeline_chart(const std::string& id, const json& doc, const std::string& title, std::string& note) {
  const json ops = doc.value("ops", json::array());
  const json gaps = doc.value("gaps", json::array());
  const json host = doc.value("host_spans", json::array());
  const bool host_row = host.is_array() && !host.empty();
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
  int lane_index = host_row ? 1 : 0;  // lane 0 is the host's
  for (auto& [stream, lane] : lanes) lane = lane_index++;
  const double left = 110, right = 20, top = 36, lane_h = 30, width = 900;
  const double gap_lane_y = top + lane_h * lane_index;
  const double pw = width - left - right;
  const double height = gap_lane_y + lane_h + 44 + legend_height(gap_legend({}), pw, 185) + 6;
  auto sx = [&](double t) { return left + (t - t0) / (t1 - t0) * pw; };
  std::ostringstream o;
  o << "<svg id=\"" << esc(id) << "\" class=\"chart timeline\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width
    << "\" height=\"" << height << "\" viewBox=\"0 0 " << width << " " << height << "\" role=\"img\">\n";
  o << "<title>" << esc(title) << "</title>\n<text x=\"10\" y=\"20\" class=\"ctitle\">" << esc(title) << "</text>\n";
  for (const auto& [stream, lane] : lanes)
    o << "<text x=\"" << left - 8 << "\" y=\"" << top + lane_h * lane + 19 << "\" class=\"tick\" text-anchor=\"end\">stream "
      << stream << "</text>\n";
  o << "<text x=\"" << left - 8 << "\" y=\"" << gap_lane_y + 19 << "\" class=\"tick\" text-anchor=\"end\">idle gaps</text>\n";
  if (host_row) {
    o << "<text x=\"" << left - 8 << "\" y=\"" << top + 19 << "\" class=\"tick\" text-anchor=\"end\">host</text>\n";
    for (const auto& sp : host) {
      if (!sp.is_object()) continue;
      auto [s, e] = span(sp);
      if (s > t1 || e < t0) continue;
      const bool wait = sp.value("kind", std::string()) == "wait";
      o << "<rect class=\"host\" x=\"" << num(sx(s)) << "\" y=\"" << top + 4 << "\" width=\""
        << num(std::max(0.5, sx(e) - sx(s))) << "\" height=\"" << lane_h - 8 << "\" fill=\""
        << (wait ? op_colour("sync") : "#8c564b") << "\"><title>" << esc(sp.value("name", std::string())) << " "
        << num(e - s) << " us</title></rect>\n";
    }
  }
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
  draw_legend(o, gap_legend(idle_by_class), left, gap_lane_y + lane_h + 44, pw, 185);
  o << "</svg>\n";
  return o.str();
}

// The seeds' picture without a trace viewer: per layer, device busy time and idle time split by
// gap class (from the listed gaps attributed to the layer; what the largest-gaps list does not
// cover is "unclassified"). `y_max` is shared by charts drawn side by side.
struct LayerBar {
  int layer = 0;
  double busy = 0, idle = 0;
  std::map<std::string, double> by_class;
};
constexpr const char* kGapClasses[] = {"sync_stall", "host_wait", "kernel_wait", "other"};

std::vector<LayerBar> layer_bars(const json& doc) {
  std::vector<LayerBar> bars;
  const json layers = doc.value("layers", json::array());
  if (!layers.is_array()) return bars;
  std::map<int, std::size_t> index;
  for (const auto& l : layers) {
    if (!l.is_object()) continue;
    LayerBar b;
    b.layer = l.value("layer", -1);
    if (b.layer < 0) continue;
    b.busy = l.value("device_busy_us", 0.0);
    b.idle = l.value("idle_us", 0.0);
    // A per-class split in the layer itself wins over the gap list (encode_run may add one).
    if (auto it = l.find("idle_by_class_us"); it != l.end() && it->is_object())
      for (const auto& [cls, v] : it->items()) b.by_class[cls] = v.is_number() ? v.get<double>() : 0.0;
    index[b.layer] = bars.size();
    bars.push_back(std::move(b));
  }
  for (const auto& g : doc.value("gaps", json::array())) {
    if (!g.is_object()) continue;
    auto it = index.find(g.value("layer", -1));
    if (it == index.end() || !doc["layers"][it->second].value("idle_by_class_us", json()).is_null()) continue;
    bars[it->second].by_class[g.value("class", std::string("other"))] +=
        g.value("end_us", 0.0) - g.value("start_us", 0.0);
  }
  return bars;
}

double layer_total(const LayerBar& b) {
  double classified = 0;
  for (const auto& [cls, v] : b.by_class) classified += v;
  return b.busy + std::max(b.idle, classified);
}

std::string layers_chart(const std::string& id, const std::string& title, const std::vector<LayerBar>& bars,
                         double y_max) {
  if (bars.empty()) return "";
  const double left = 70, right = 20, width = 760, ph = 200, bottom = 44;
  const double pw = width - left - right;
  std::map<std::string, double> totals;
  for (const auto& b : bars) {
    totals["busy"] += b.busy;
    double classified = 0;
    for (const auto& [cls, v] : b.by_class) {
      totals[cls] += v;
      classified += v;
    }
    totals["unclassified"] += std::max(0.0, b.idle - classified);
  }
  std::vector<LegendEntry> legend = {{"device busy " + format_number(totals["busy"]) + " us", gap_colour("busy")}};
  for (const char* cls : kGapClasses)
    legend.push_back({std::string(cls) + " " + format_number(totals[cls]) + " us", gap_colour(cls)});
  if (totals["unclassified"] > 0)
    legend.push_back({"idle, not in the gap list " + format_number(totals["unclassified"]) + " us",
                      gap_colour("unclassified")});
  const double top = 30 + legend_height(legend, pw, 230) + 8, height = top + ph + bottom;
  if (!(y_max > 0)) y_max = 1;
  const double slot = pw / static_cast<double>(bars.size());
  auto sy = [&](double v) { return top + ph - v / y_max * ph; };
  std::ostringstream o;
  o << "<svg id=\"" << esc(id) << "\" class=\"chart layers\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width
    << "\" height=\"" << height << "\" viewBox=\"0 0 " << width << " " << height << "\" role=\"img\">\n";
  o << "<title>" << esc(title) << "</title>\n<text x=\"" << left << "\" y=\"20\" class=\"ctitle\">" << esc(title)
    << "</text>\n";
  draw_legend(o, legend, left, 28, pw, 230);
  for (double t : nice_ticks(0, y_max))
    o << "<line x1=\"" << left << "\" y1=\"" << num(sy(t)) << "\" x2=\"" << left + pw << "\" y2=\"" << num(sy(t))
      << "\" class=\"grid\"/><text x=\"" << left - 6 << "\" y=\"" << num(sy(t) + 4)
      << "\" class=\"tick\" text-anchor=\"end\">" << tick_label(t) << "</text>\n";
  for (std::size_t i = 0; i < bars.size(); ++i) {
    const auto& b = bars[i];
    const double x = left + slot * static_cast<double>(i) + slot * 0.12, w = std::max(1.0, slot * 0.76);
    double acc = 0;
    auto seg = [&](const std::string& cls, double v) {
      if (v <= 0) return;
      o << "<rect class=\"layer-seg\" x=\"" << num(x) << "\" y=\"" << num(sy(acc + v)) << "\" width=\"" << num(w)
        << "\" height=\"" << num(sy(acc) - sy(acc + v)) << "\" fill=\"" << gap_colour(cls) << "\"><title>layer "
        << b.layer << " " << esc(cls) << ": " << format_number(v) << " us</title></rect>";
      acc += v;
    };
    seg("busy", b.busy);
    double classified = 0;
    for (const char* cls : kGapClasses) {
      auto it = b.by_class.find(cls);
      if (it == b.by_class.end()) continue;
      seg(cls, it->second);
      classified += it->second;
    }
    seg("unclassified", b.idle - classified);
    o << "\n";
    if (bars.size() <= 40 || i % 4 == 0)
      o << "<text x=\"" << num(x + w / 2) << "\" y=\"" << top + ph + 14 << "\" class=\"tick\" text-anchor=\"middle\">"
        << b.layer << "</text>\n";
  }
  o << "<rect x=\"" << left << "\" y=\"" << top << "\" width=\"" << pw << "\" height=\"" << ph << "\" class=\"frame\"/>\n";
  o << "<text x=\"" << left + pw / 2 << "\" y=\"" << height - 8 << "\" class=\"axis\" text-anchor=\"middle\">layer "
       "(us per layer, last forward)</text>\n</svg>\n";
  return o.str();
}

std::string largest_gaps_table(const json& doc, std::size_t count = 5) {
  std::vector<const json*> gaps;  // pointers into the document itself, not into a copy
  if (doc.is_object() && doc.contains("gaps") && doc["gaps"].is_array())
    for (const auto& g : doc["gaps"])
      if (g.is_object()) gaps.push_back(&g);
  if (gaps.empty()) return "";
  auto dur = [](const json* g) { return g->value("end_us", 0.0) - g->value("start_us", 0.0); };
  std::stable_sort(gaps.begin(), gaps.end(), [&](const json* a, const json* b) { return dur(a) > dur(b); });
  std::ostringstream o;
  o << "<table class=\"gaps\"><tr><th>largest gaps</th><th>us</th><th>class</th><th>layer</th><th>cause</th></tr>\n";
  for (std::size_t i = 0; i < gaps.size() && i < count; ++i) {
    const int layer = gaps[i]->value("layer", -1);
    o << "<tr><td>" << i + 1 << "</td><td class=\"n\">" << format_number(dur(gaps[i])) << "</td><td>"
      << "<span class=\"sw\" style=\"background:" << gap_colour(gaps[i]->value("class", std::string("other")))
      << "\"></span>" << esc(gaps[i]->value("class", std::string("other"))) << "</td><td>"
      << (layer >= 0 ? std::to_string(layer) : "-") << "</td><td>" << esc(gaps[i]->value("cause", std::string()))
      << "</td></tr>\n";
  }
  o << "</table>\n";
  return o.str();
}

// Server-side encoder busy vs idle (by class where the profile summary has it), one bar per arm.
struct EncoderBar {
  std::string label;
  double busy = 0, idle = 0;
  std::map<std::string, double> by_class;
};
std::string encoder_bars_chart(const std::string& id, const std::string& title, const std::vector<EncoderBar>& bars) {
  if (bars.empty()) return "";
  const double left = 170, right = 20, width = 760, row = 26, pw = width - left - right;
  const std::vector<LegendEntry> legend = {{"busy", gap_colour("busy")},           {"sync_stall", gap_colour("sync_stall")},
                                           {"host_wait", gap_colour("host_wait")}, {"kernel_wait", gap_colour("kernel_wait")},
                                           {"other", gap_colour("other")},         {"idle, no class", gap_colour("unclassified")}};
  const double top = 30 + legend_height(legend, pw, 130) + 8;
  const double height = top + row * static_cast<double>(bars.size()) + 40;
  double hi = 0;
  for (const auto& b : bars) hi = std::max(hi, b.busy + b.idle);
  if (hi <= 0) hi = 1;
  auto sx = [&](double v) { return left + v / (hi * 1.05) * pw; };
  std::ostringstream o;
  o << "<svg id=\"" << esc(id) << "\" class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width
    << "\" height=\"" << height << "\" viewBox=\"0 0 " << width << " " << height << "\" role=\"img\">\n<title>"
    << esc(title) << "</title>\n<text x=\"10\" y=\"20\" class=\"ctitle\">" << esc(title) << "</text>\n";
  draw_legend(o, legend, left, 28, pw, 130);
  for (double t : nice_ticks(0, hi * 1.05))
    o << "<line x1=\"" << num(sx(t)) << "\" y1=\"" << top << "\" x2=\"" << num(sx(t)) << "\" y2=\""
      << height - 36 << "\" class=\"grid\"/><text x=\"" << num(sx(t)) << "\" y=\"" << height - 22
      << "\" class=\"tick\" text-anchor=\"middle\">" << tick_label(t) << "</text>\n";
  for (std::size_t i = 0; i < bars.size(); ++i) {
    const auto& b = bars[i];
    const double y = top + row * static_cast<double>(i);
    text_lines(o, left - 8, y + 11, wrap_text(b.label, static_cast<std::size_t>((left - 12) / kLegendCharPx)), "tick y",
               "end");
    double acc = 0;
    auto seg = [&](const std::string& cls, double v) {
      if (v <= 0) return;
      o << "<rect class=\"bar\" x=\"" << num(sx(acc)) << "\" y=\"" << y + 3 << "\" width=\"" << num(sx(acc + v) - sx(acc))
        << "\" height=\"" << row - 8 << "\" fill=\"" << gap_colour(cls) << "\"><title>" << esc(b.label) << " " << esc(cls)
        << ": " << format_number(v) << " ms</title></rect>";
      acc += v;
    };
    seg("busy", b.busy);
    double classified = 0;
    for (const char* cls : kGapClasses)
      if (auto it = b.by_class.find(cls); it != b.by_class.end()) {
        seg(cls, it->second);
        classified += it->second;
      }
    seg("unclassified", b.idle - classified);
    o << "\n";
  }
  o << "<text x=\"" << left << "\" y=\"" << height - 6 << "\" class=\"axis\">ms of encoder device time in the "
       "benchmark window (server counters; classes from --profile)</text>\n</svg>\n";
  return o.str();
}

std::vector<EncoderBar> encoder_bars(const RunResult& r, const std::string& prefix) {
  std::vector<EncoderBar> out;
  if (r.kind != ResultKind::closed_loop || !r.raw.contains("arms") || !r.raw["arms"].is_array()) return out;
  for (const auto& arm : r.raw["arms"]) {
    if (!arm.is_object()) continue;
    EncoderBar b;
    b.label = prefix + arm.value("preset", std::string("?"));
    const json d = arm.value("server_engine_delta", json::object());
    b.busy = d.value("device_busy_ms", 0.0);
    b.idle = d.value("device_idle_ms", 0.0);
    // The virtual clock's arms: the modelled encoder device time of every seed, summed.
    if (arm.contains("seeds") && arm["seeds"].is_array())
      for (const auto& seed : arm["seeds"]) {
        const json engine = seed.is_object() ? seed.value("engine", json::object()) : json::object();
        b.busy += engine.value("encoder_device_busy_ms", 0.0);
        b.idle += engine.value("encoder_device_idle_ms", 0.0);
      }
    if (arm.contains("serving") && arm["serving"].is_object()) {
      const json p = arm["serving"].value("server_profile", json::object());
      if (p.is_object() && p.contains("gap_classes") && p["gap_classes"].is_object())
        for (const auto& [cls, v] : p["gap_classes"].items())
          if (v.is_object()) b.by_class[cls] = v.value("total_ms", 0.0);
    }
    out.push_back(std::move(b));
  }
  return out;
}

// Longest common directory prefix of the inputs' paths ("" when there is none).
std::string common_dir_prefix(const std::vector<RunResult>& runs) {
  if (runs.size() < 2) return runs.empty() ? "" : std::filesystem::path(runs[0].source).parent_path().string() + "/";
  std::string prefix = runs[0].source;
  for (const auto& r : runs) {
    std::size_t n = 0;
    while (n < prefix.size() && n < r.source.size() && prefix[n] == r.source[n]) ++n;
    prefix.resize(n);
  }
  const auto slash = prefix.rfind('/');
  return slash == std::string::npos ? "" : prefix.substr(0, slash + 1);
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
body{font-family:-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;margin:16px 24px;color:#222;max-width:1100px}
h1{font-size:24px;margin:4px 0 2px;padding:6px 10px;border-radius:4px} h1 small{font-size:15px;font-weight:400}
.pass{background:#e3f4e1;color:#135f13} .fail{background:#fbe3e1;color:#8b1212} .invalid{background:#fff1d6;color:#7a4b00} .ab{background:#e8eef7;color:#1d3557}
h2.verdict{padding:4px 8px;border-radius:4px} h2.verdict small{font-size:13px;font-weight:400}
h2{font-size:18px;margin-top:28px;border-bottom:1px solid #ddd} h3{font-size:15px;margin:18px 0 4px}
.sub{font-size:13px;color:#444;margin:4px 0 8px}
table{border-collapse:collapse;font-size:13px;margin:6px 0} td,th{border:1px solid #ddd;padding:2px 7px;text-align:left;vertical-align:top}
td.n{text-align:right;white-space:nowrap} td.m{overflow-wrap:anywhere;max-width:420px} tr.reg td{background:#fdf0ef}
.badge{font-weight:600;white-space:nowrap} .badge.bad{color:#b00} .badge.good{color:#176c17} .badge.noisy{color:#8a6d00} .badge.same{color:#555}
details{margin:6px 0} summary{cursor:pointer;font-size:14px}
.chart{display:block;margin:10px 0;background:#fff;border:1px solid #eee;max-width:100%;height:auto}
.pair{display:flex;flex-wrap:wrap;gap:12px} .pair>div{flex:1 1 560px;min-width:0}
.ctitle{font-size:14px;font-weight:600} .tick{font-size:11px;fill:#444} .axis{font-size:12px;fill:#333}
.legend{font-size:11px;fill:#222} .cnote{font-size:11px;fill:#333;paint-order:stroke;stroke:#fff;stroke-width:3px;stroke-linejoin:round} .grid{stroke:#eee} .frame{fill:none;stroke:#999}
.meta{font-size:12px;color:#555} .sw{display:inline-block;width:10px;height:10px;margin-right:4px}
code{font-size:12px}
@media (max-width:900px){body{margin:8px} td,th{padding:2px 4px;font-size:12px}}
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


// The page as it is assembled: the body so far and the ids of its charts, in page order.
struct Page {
  std::ostringstream body;
  std::vector<std::string> charts;
  void add_chart(const std::string& id, const std::string& svg) {
    if (svg.empty()) return;
    body << svg;
    charts.push_back(id);
  }
  void add(const detail::Section& s) {
    body << s.html;
    charts.insert(charts.end(), s.charts.begin(), s.charts.end());
  }
};

// "#3 run-b.json": a result's index and its path below the inputs' common directory.
struct ShortNames {
  std::string prefix;
  std::string operator()(const RunResult& r, std::size_t index) const {
    std::ostringstream s;
    s << '#' << index + 1 << ' ' << (r.source.rfind(prefix, 0) == 0 ? r.source.substr(prefix.size()) : r.source);
    return s.str();
  }
};

// Results that are rounds of a comparison are drawn pooled by the verdict's evidence, not one
// line per round: the others.
std::vector<RunResult> runs_not_in_comparisons(const ReportContent& content) {
  std::set<std::string> covered;
  auto key = [](const std::string& path) {
    std::error_code ec;
    const auto k = std::filesystem::weakly_canonical(path, ec);
    return ec ? path : k.string();
  };
  for (const auto& g : content.gates)
    for (const auto* side : {&g.base_rounds, &g.new_rounds})
      for (const auto& r : *side) covered.insert(key(r.source));
  std::vector<RunResult> uncovered;
  for (const auto& r : content.runs)
    if (!covered.count(key(r.source))) uncovered.push_back(r);
  return uncovered;
}

// Server-side encoder of closed-loop comparisons: busy vs idle per arm, rounds summed.
void gate_encoder_section(Page& page, const ReportContent& content) {
  for (const auto& g : content.gates) {
    std::vector<EncoderBar> bars;
    for (int s = 0; s < 2; ++s) {
      std::map<std::string, EncoderBar> sum;
      std::vector<std::string> order;
      for (const auto& r : s ? g.new_rounds : g.base_rounds)
        for (auto& b : encoder_bars(r, g.sides[s] + " ")) {
          if (!sum.count(b.label)) order.push_back(b.label);
          auto& t = sum[b.label];
          t.label = b.label;
          t.busy += b.busy;
          t.idle += b.idle;
          for (const auto& [cls, v] : b.by_class) t.by_class[cls] += v;
        }
      for (const auto& l : order) bars.push_back(sum[l]);
    }
    if (bars.empty()) continue;
    const std::string id = "server-encoder-" + std::to_string(page.charts.size() + 1);
    page.body << "<h2>" << esc(g.name) << ": server-side encoder, busy vs idle</h2>\n";
    page.add_chart(id, encoder_bars_chart(id, "Encoder device time per arm (rounds summed)", bars));
  }
}

// The same per result given on its own (closed-loop results: one bar per arm).
void run_encoder_section(Page& page, const std::vector<RunResult>& uncovered, const ShortNames& short_name) {
  for (std::size_t i = 0; i < uncovered.size(); ++i) {
    const auto bars = encoder_bars(uncovered[i], "");
    if (bars.empty()) continue;
    const std::string id = "server-encoder-" + std::to_string(page.charts.size() + 1);
    page.body << "<h2>" << esc(short_name(uncovered[i], i)) << ": server-side encoder, busy vs idle</h2>\n";
    const bool virtual_clock = uncovered[i].raw.value("clock", std::string()) == "virtual";
    page.add_chart(id, encoder_bars_chart(id, virtual_clock ? "Encoder device time per arm, modelled (seeds summed)"
                                                            : "Encoder device time per arm",
                                          bars));
  }
}

// Serving: latency CDFs (one line per result) and throughput / concurrency over time.
void serving_section(Page& page, const std::vector<RunResult>& runs, const ShortNames& short_name) {
  std::vector<std::size_t> serving;
  for (std::size_t i = 0; i < runs.size(); ++i)
    if (runs[i].kind == ResultKind::serving) serving.push_back(i);
  if (serving.empty()) return;
  page.body << "<h2>Serving latency distributions</h2>\n";
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
    if (!chart.empty()) page.add_chart(std::string("cdf-") + key, chart.svg());
    else page.body << "<p class=\"meta\">No per-request " << display
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
  if (tput.empty()) return;
  page.body << "<h2>Serving over time</h2>\n";
  page.add_chart("throughput-over-time", tput.svg());
  page.add_chart("concurrency-over-time", conc.svg());
}

// One encode result: device busy vs idle per layer (on the scale every encode result of the same
// model and device shares: baseline beside optimized) and its largest gaps.
void encode_layers(Page& page, const std::vector<RunResult>& runs, std::size_t i) {
  const auto& r = runs[i];
  const auto bars = layer_bars(r.raw);
  double y_max = 0;
  for (const auto& b : bars) y_max = std::max(y_max, layer_total(b));
  for (const auto& other : runs)
    if (other.kind == ResultKind::encode && other.identity.model == r.identity.model &&
        other.identity.device == r.identity.device)
      for (const auto& b : layer_bars(other.raw)) y_max = std::max(y_max, layer_total(b));
  const std::string lid = "layers-" + std::to_string(i + 1);
  page.add_chart(lid, layers_chart(lid, "Device busy vs idle per layer: preset " + r.raw.value("preset", std::string("?")),
                                   bars, y_max * 1.05));
  page.body << largest_gaps_table(r.raw);
}

// Encode: per-forward times, layers and the device timeline of each result.
void encode_section(Page& page, const std::vector<RunResult>& runs, const ShortNames& short_name) {
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const auto& r = runs[i];
    if (r.kind != ResultKind::encode) continue;
    page.body << "<h2>Encode result " << i + 1 << ": " << esc(r.identity.model) << " on " << esc(r.identity.device)
              << "</h2>\n";
    page.body << "<p class=\"meta\">toggles: " << esc(r.raw.value("toggles", json::object()).dump()) << "</p>\n";
    if (const Metric* m = r.find("forward_ms.mean"); m && !m->samples.empty()) {
      LineChart chart("forwards-" + std::to_string(i + 1), "Forward time per forward", "forward #", "forward (ms)");
      Series s{short_name(r, i), {}, false};
      for (std::size_t k = 0; k < m->samples.size(); ++k) s.points.emplace_back(static_cast<double>(k + 1), m->samples[k]);
      chart.add(std::move(s));
      page.add_chart("forwards-" + std::to_string(i + 1), chart.svg());
    }
    encode_layers(page, runs, i);
    std::string note;
    const std::string id = "timeline-" + std::to_string(i + 1);
    const std::string svg = timeline_chart(id, r.raw, "Device timeline and idle gaps", note);
    if (svg.empty()) page.body << "<p class=\"meta\">No \"ops\"/\"gaps\" in this result: no device timeline.</p>\n";
    page.add_chart(id, svg);
    if (!note.empty()) page.body << "<p class=\"meta\">" << esc(note) << "</p>\n";
  }
}

// The seeds' picture of one ab result: A (baseline) beside B (optimized), per layer, one scale.
void ab_layers(Page& page, const RunResult& r, std::size_t i) {
  const std::vector<LayerBar> sides[2] = {layer_bars(r.raw.value("a", json::object())),
                                          layer_bars(r.raw.value("b", json::object()))};
  if (sides[0].empty() && sides[1].empty()) return;
  double y_max = 0;
  for (const auto& bars : sides)
    for (const auto& b : bars) y_max = std::max(y_max, layer_total(b));
  page.body << "<div class=\"pair\">";
  for (int side = 0; side < 2; ++side) {
    if (sides[side].empty()) continue;
    const json& doc = r.raw[side ? "b" : "a"];
    const std::string lid = "layers-" + std::to_string(i + 1) + (side ? "-b" : "-a");
    page.body << "<div>";
    page.add_chart(lid, layers_chart(lid, std::string(side ? "B" : "A") + " (" + doc.value("preset", std::string("?")) +
                                              "): device busy vs idle per layer",
                                     sides[side], y_max * 1.05));
    page.body << largest_gaps_table(doc) << "</div>";
  }
  page.body << "</div>\n";
}

// A/B results: bars with 95% intervals of the median, the layers of both sides, the speedup.
void ab_section(Page& page, const std::vector<RunResult>& runs) {
  const std::pair<const char*, const char*> kAbSeries[] = {
      {"forward_ms.median", "forward"}, {"device_busy_ms.median", "device busy"}};
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const auto& r = runs[i];
    if (r.kind != ResultKind::ab) continue;
    page.body << "<h2>A/B result " << i + 1 << ": " << esc(r.identity.model) << "</h2>\n";
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
      page.add_chart("ab-bars-" + std::to_string(i + 1),
                     bar_chart("ab-bars-" + std::to_string(i + 1), "A/B: median per forward", "ms", bars,
                               "whiskers: 95% interval of the median (order statistics)"));
    ab_layers(page, r, i);
    if (const Metric* s = r.find("speedup_b_over_a"))
      page.body << "<p>Speedup of B over A (median forward): <b>" << format_number(s->value) << "x</b></p>\n";
    page.body << "<p class=\"meta\">A toggles: " << esc(r.raw["a"].value("toggles", json::object()).dump())
              << "<br>B toggles: " << esc(r.raw["b"].value("toggles", json::object()).dump()) << "</p>\n";
  }
}

// Several serving or encode results side by side: their medians with intervals.
void side_by_side_section(Page& page, const std::vector<RunResult>& runs, const ShortNames& short_name) {
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
  if (bars.size() < 2) return;
  page.body << "<h2>Results side by side</h2>\n";
  page.add_chart("runs-bars", bar_chart("runs-bars", "Medians across results", unit, bars,
                                        "whiskers: 95% interval of the median (order statistics)"));
}

// Google Benchmark medians with min..max over repetitions.
void gbench_section(Page& page, const std::vector<RunResult>& runs) {
  std::vector<Bar> bars;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if (runs[i].kind != ResultKind::gbench) continue;
    for (const auto& m : runs[i].metrics) {
      if (m.name.size() < 10 || m.name.compare(m.name.size() - 10, 10, "/real_time") != 0) continue;
      // Built by appends: GCC 12's -Wrestrict misreads "#" + std::string&& (a false positive).
      std::string label = "#";
      label.append(std::to_string(i + 1)).append(" ").append(m.name, 0, m.name.size() - 10);
      Bar b{std::move(label), m.value, m.value, m.value, i};
      if (!m.samples.empty()) {
        const auto [lo, hi] = std::minmax_element(m.samples.begin(), m.samples.end());
        b.low = *lo;
        b.high = *hi;
      }
      if (bars.size() < 60) bars.push_back(b);
    }
  }
  if (bars.empty()) return;
  page.body << "<h2>Google Benchmark</h2>\n";
  page.add_chart("gbench-bars", bar_chart("gbench-bars", "Median real time per benchmark", "ns", bars,
                                          "whiskers: min..max over repetitions"));
}

// Inputs, compact: the common directory once, the scenario once when every input shares it.
void inputs_section(Page& page, const ReportContent& content, const std::string& prefix) {
  const auto& all = content.runs;
  if (all.empty()) return;  // a page drawn from a comparison alone (bench ab) has no inputs to list
  auto& body = page.body;
  bool one_scenario = !all.empty();
  for (const auto& r : all) one_scenario = one_scenario && r.identity.scenario == all.front().identity.scenario;
  body << "<h2 id=\"inputs\">Inputs (" << all.size() << ")</h2>\n<p class=\"meta\">";
  if (!prefix.empty()) body << "under <code>" << esc(prefix) << "</code>";
  if (one_scenario && !all.front().identity.scenario.empty())
    body << "; scenario for all: " << esc(all.front().identity.scenario);
  for (const auto& g : content.gates) body << "; comparison <code>" << esc(g.source) << "</code>";
  for (const auto& w : content.sweeps) body << "; sweep <code>" << esc(w.source) << "</code>";
  body << "</p>\n<table class=\"inputs\"><tr><th>#</th><th>file</th><th>kind</th><th>model</th><th>device</th>"
       << (one_scenario ? "" : "<th>scenario</th>") << "<th>git sha</th></tr>\n";
  for (std::size_t i = 0; i < all.size(); ++i) {
    const auto& r = all[i];
    body << "<tr><td>" << i + 1 << "</td><td>"
         << esc(r.source.rfind(prefix, 0) == 0 ? r.source.substr(prefix.size()) : r.source) << "</td><td>"
         << to_string(r.kind) << "</td><td>" << esc(r.identity.model) << "</td><td>" << esc(r.identity.device)
         << "</td>" << (one_scenario ? "" : "<td>" + esc(r.identity.scenario) + "</td>") << "<td>"
         << esc(r.git_sha.substr(0, 12)) << "</td></tr>\n";
  }
  body << "</table>\n";
}

void metrics_appendix(Page& page, const ReportContent& content) {
  if (content.runs.empty()) return;
  page.body << "<details id=\"metrics\"><summary>Every metric of every input</summary>\n";
  for (std::size_t i = 0; i < content.runs.size(); ++i)
    page.body << "<h3>#" << i + 1 << " " << esc(content.runs[i].source) << "</h3>\n" << summary_table(content.runs[i]);
  page.body << "</details>\n";
}

}  // namespace

const char* html_style() { return kStyle; }

HtmlReport render_html_report(const std::vector<RunResult>& runs, const std::string& title) {
  ReportContent content;
  content.runs = runs;
  content.title = title;
  return render_html_report(content);
}

HtmlReport render_html_report(const ReportContent& content) {
  Page page;
  // Verdict first, then its evidence.
  page.add(detail::verdict_section(content));
  page.add(detail::pooled_cdf_section(content));
  page.add(detail::closed_loop_section(content.runs));
  for (std::size_t i = 0; i < content.sweeps.size(); ++i) page.add(detail::sweep_section(content.sweeps[i], i));
  gate_encoder_section(page, content);
  const std::vector<RunResult> uncovered = runs_not_in_comparisons(content);
  const std::vector<RunResult> runs = with_arms_expanded(uncovered);
  const ShortNames names{common_dir_prefix(content.runs)};
  run_encoder_section(page, uncovered, names);
  serving_section(page, runs, names);
  encode_section(page, runs, names);
  ab_section(page, runs);
  side_by_side_section(page, runs, names);
  gbench_section(page, runs);
  inputs_section(page, content, names.prefix);
  metrics_appendix(page, content);

  std::ostringstream html;
  html << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
       << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>" << esc(content.title)
       << "</title>\n<style>" << kStyle << "</style></head>\n<body>\n"
       << page.body.str() << "<p class=\"meta\">" << content.runs.size() << " result(s), " << page.charts.size()
       << " chart(s). Self-contained: inline SVG, no scripts, no network.</p>\n</body></html>\n";
  return {html.str(), page.charts};
}

}  // namespace encbench::reports
