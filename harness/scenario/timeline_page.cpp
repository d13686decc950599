#include "harness/scenario/timeline_page.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "harness/core/error.hpp"
#include "harness/core/number_format.hpp"
#include "reports/html.hpp"
#include "reports/svg.hpp"

namespace encbench::scenario {
namespace {

using reports::svg::esc;
using reports::svg::num;

constexpr const char* kTtftColour = "#636EFA";  // vLLM's
constexpr const char* kItlColours[] = {"#109618", "#FF7F0E", "#D62728"};
constexpr const char* kEncoderColour = "#8e44ad";
constexpr const char* kLmColour = "#b0b0b0";
constexpr const char* kQueueColour = "#c7c7c7";

double ms(Nanos ns) { return static_cast<double>(ns) / 1e6; }

// The encoder step's share of a TTFT: busy, idle by cause, host (the rest of its time). Returns
// the step's whole encoder time in ms.
double add_encoder_parts(const TimelineStep& s, std::map<std::string, double>& b) {
  double idle = 0;
  for (const auto& [cls, ns] : s.encoder_idle_by_class) {
    b["encoder_idle_" + cls] = ms(ns);
    idle += ms(ns);
  }
  b["encoder_busy"] = ms(s.encoder_busy_ns);
  b["encoder_host"] = std::max(0.0, ms(s.encoder_ns) - ms(s.encoder_busy_ns) - idle);
  return ms(s.encoder_ns);
}

const TimelineRequestTrace* trace_of(const TimelineArm& arm, std::size_t i) {
  if (arm.traces.size() != arm.records.size() || !arm.traces[i].known) return nullptr;
  return &arm.traces[i];
}

const TimelineStep* encoder_step_of(const TimelineArm& arm, const TimelineRequestTrace& t) {
  if (t.encoder_step < 0 || static_cast<std::size_t>(t.encoder_step) >= arm.steps.size()) return nullptr;
  return &arm.steps[static_cast<std::size_t>(t.encoder_step)];
}

// The drawing of one arm: the engine's steps in a row of their own, then one row per request, on
// one time axis (seconds since the run's start, ticks and labels below) with the request's
// number on each row. Rows are kRowPx high whatever their count: the page grows, rows stay
// readable.
constexpr double kRowPx = 14, kBarPx = 11, kLeftPx = 78, kRightPx = 16, kStepsPx = 24, kAxisPx = 44;

struct TimeAxis {
  double t0_ms = 0, span_ms = 1, plot_px = 1;
  double x(Nanos ns) const { return kLeftPx + (ms(ns) - t0_ms) / span_ms * plot_px; }
  double w(Nanos ns) const { return static_cast<double>(ns) / 1e6 / span_ms * plot_px; }
};

std::string rect(double x, double y, double w, double h, const char* fill, const char* cls = "") {
  std::ostringstream o;
  o << "<rect" << (*cls ? std::string(" class=\"") + cls + "\"" : "") << " x=\"" << num(x) << "\" y=\"" << num(y)
    << "\" width=\"" << num(std::max(0.3, w)) << "\" height=\"" << h << "\" fill=\"" << fill << "\"/>";
  return o.str();
}

std::string steps_row(const TimelineArm& arm, const TimeAxis& ax, double y) {
  std::ostringstream o;
  o << "<g class=\"engine-steps\"><text x=\"" << kLeftPx - 6 << "\" y=\"" << y + 15
    << "\" class=\"tick y\" text-anchor=\"end\">steps</text>\n";
  for (const TimelineStep& s : arm.steps) {
    const double x = ax.x(s.encoder_start_ns), we = ax.w(s.encoder_ns);
    if (s.encoder_ns > 0) o << rect(x, y + 4, we, 16, kEncoderColour, "step");
    o << rect(x + we, y + 4, ax.w(s.lm_ns), 16, kLmColour, "step");
  }
  o << "</g>\n";
  return o.str();
}

// The TTFT band; with an engine trace, its queue (grey) and encoder (purple) parts drawn over it
// and every component in the tooltip.
std::string ttft_band(const TimelineArm& arm, std::size_t i, double y, const TimeAxis& ax) {
  const client::RequestRecord& r = arm.records[i];
  std::ostringstream o;
  o << "<g class=\"request\"><title>request " << i << ":" << (r.request_id.empty() ? "" : " id " + esc(r.request_id) + ";");
  for (const auto& [k, v] : ttft_components(arm, i)) o << " " << esc(k) << " " << num(v) << " ms;";
  o << "</title>" << rect(ax.x(r.dispatch_ns), y, ax.w(r.first_choices_ns - r.dispatch_ns), kBarPx, kTtftColour, "ttft");
  if (const TimelineRequestTrace* t = trace_of(arm, i)) {
    o << rect(ax.x(r.dispatch_ns), y, ax.w(t->first_scheduled_ns - r.dispatch_ns), kBarPx, kQueueColour);
    if (const TimelineStep* s = encoder_step_of(arm, *t); s && s->encoder_ns > 0)
      o << rect(ax.x(s->encoder_start_ns), y, ax.w(s->encoder_ns), kBarPx, kEncoderColour);
  }
  o << "</g>";
  return o.str();
}

std::string request_row(const TimelineArm& arm, std::size_t i, double y, const TimeAxis& ax, const TimelineOptions& opt) {
  const client::RequestRecord& r = arm.records[i];
  std::ostringstream o;
  o << "<text x=\"" << kLeftPx - 6 << "\" y=\"" << num(y + kBarPx - 1) << "\" class=\"tick y\" text-anchor=\"end\">"
    << i << "</text>";
  if (r.first_choices_ns == 0) return o.str() + "\n";
  o << ttft_band(arm, i, y, ax);
  const auto colour_of = [&](double itl_ms) {
    std::size_t k = 0;
    while (k < opt.itl_thresholds_ms.size() && itl_ms >= opt.itl_thresholds_ms[k]) ++k;
    return kItlColours[std::min<std::size_t>(k, 2)];
  };
  // ITL segments; consecutive ones of one colour are drawn as one band.
  for (std::size_t k = 1; k < r.choices_ns.size();) {
    const char* c = colour_of(ms(r.choices_ns[k] - r.choices_ns[k - 1]));
    std::size_t end = k;
    while (end + 1 < r.choices_ns.size() && colour_of(ms(r.choices_ns[end + 1] - r.choices_ns[end])) == c) ++end;
    o << rect(ax.x(r.choices_ns[k - 1]), y, ax.w(r.choices_ns[end] - r.choices_ns[k - 1]), kBarPx, c);
    k = end + 1;
  }
  return o.str() + "\n";
}

// Ticks and labels of the time axis, the grid over the rows, and both axes' titles.
std::string time_axis(const TimeAxis& ax, double top, double bottom) {
  std::ostringstream o;
  for (double t : reports::svg::nice_ticks(0, ax.span_ms / 1e3, 8)) {
    const double x = kLeftPx + t * 1e3 / ax.span_ms * ax.plot_px;
    o << "<line x1=\"" << num(x) << "\" y1=\"" << top << "\" x2=\"" << num(x) << "\" y2=\"" << bottom + 4
      << "\" class=\"grid\"/><text x=\"" << num(x) << "\" y=\"" << bottom + 16 << "\" class=\"tick x\" text-anchor=\"middle\">"
      << reports::svg::tick_label(t) << "</text>\n";
  }
  o << "<line x1=\"" << kLeftPx << "\" y1=\"" << bottom << "\" x2=\"" << kLeftPx + ax.plot_px << "\" y2=\"" << bottom
    << "\" stroke=\"#999\"/>\n<text x=\"" << kLeftPx + ax.plot_px / 2 << "\" y=\"" << bottom + 36
    << "\" class=\"axis x\" text-anchor=\"middle\">seconds since the run's start</text>\n<text x=\"14\" y=\""
    << (top + bottom) / 2 << "\" class=\"axis y\" text-anchor=\"middle\" transform=\"rotate(-90 14 " << (top + bottom) / 2
    << ")\">request (dataset order)</text>\n";
  return o.str();
}

std::string arm_svg(const TimelineArm& arm, const TimelineOptions& opt, std::size_t index) {
  const std::size_t rows = std::min(arm.records.size(), opt.max_requests);
  const double width = 760;
  TimeAxis ax;
  ax.t0_ms = ms(arm.start_ns);
  ax.span_ms = std::max(1e-3, ms(arm.end_ns) - ax.t0_ms);
  ax.plot_px = width - kLeftPx - kRightPx;
  const double steps_h = arm.steps.empty() ? 0 : kStepsPx, top = 6, rows_top = top + steps_h;
  const double bottom = rows_top + kRowPx * static_cast<double>(rows) + 4, height = bottom + kAxisPx;
  std::ostringstream o;
  o << "<svg id=\"timeline-" << index + 1 << "\" class=\"chart timeline\" xmlns=\"http://www.w3.org/2000/svg\" width=\""
    << width << "\" height=\"" << height << "\" viewBox=\"0 0 " << width << " " << height << "\" role=\"img\">\n<title>"
    << esc(arm.label) << ": one row per request</title>\n";
  o << time_axis(ax, top, bottom);
  if (!arm.steps.empty()) o << steps_row(arm, ax, top);
  for (std::size_t i = 0; i < rows; ++i) o << request_row(arm, i, rows_top + kRowPx * static_cast<double>(i) + 1, ax, opt);
  o << "</svg>\n";
  return o.str();
}

// Mean TTFT components: one column per arm and, with two arms, B's change against A.
std::string breakdown_table(const std::vector<TimelineArm>& arms) {
  std::vector<nlohmann::json> means;
  std::vector<std::string> keys;
  for (const TimelineArm& arm : arms) {
    means.push_back(ttft_breakdown(arm));
    for (const auto& [key, value] : means.back().items())
      if (std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
  }
  std::ostringstream o;
  o << "<table id=\"ttft-breakdown\"><tr><th>component of TTFT (mean ms)</th>";
  for (const TimelineArm& arm : arms) o << "<th>" << esc(arm.label) << "</th>";
  if (arms.size() == 2) o << "<th>change</th>";
  o << "</tr>\n";
  for (const std::string& key : keys) {
    o << "<tr><td>" << esc(key) << "</td>";
    for (const auto& m : means) o << "<td class=\"n\">" << (m.contains(key) ? num(m[key].get<double>()) : "-") << "</td>";
    if (arms.size() == 2) {
      const double a = means[0].value(key, 0.0), b = means[1].value(key, 0.0);
      o << "<td class=\"n\">" << (a > 0 ? numbers::signed_fixed(100 * (b - a) / a, 1) + " %" : b == a ? "0" : "-")
        << "</td>";
    }
    o << "</tr>\n";
  }
  o << "</table>\n";
  return o.str();
}

std::string legend(const TimelineOptions& opt) {
  std::ostringstream o;
  const auto swatch = [](const char* colour) {
    return std::string("<span class=\"sw\" style=\"background:") + colour + "\"></span>";
  };
  o << "<p class=\"sub\">One row per request: TTFT " << swatch(kTtftColour)
    << " (with engine data: its queue part " << swatch(kQueueColour) << " and the encoder step that encoded its image "
    << swatch(kEncoderColour) << " over it), then ITL below " << num(opt.itl_thresholds_ms[0]) << " ms "
    << swatch(kItlColours[0]) << ", below " << num(opt.itl_thresholds_ms.back()) << " ms " << swatch(kItlColours[1])
    << ", above " << swatch(kItlColours[2]) << ". Engine steps: encoder " << swatch(kEncoderColour) << ", LM "
    << swatch(kLmColour) << ".</p>\n";
  return o.str();
}

// The headline: each arm's mean TTFT (the page's absolute values) and, with two, B's change.
std::string headline(const std::vector<TimelineArm>& arms) {
  std::ostringstream o;
  o << "<h1 id=\"timeline-headline\" class=\"ab\">Per-request timeline: mean TTFT ";
  std::vector<double> ttft;
  for (std::size_t a = 0; a < arms.size(); ++a) {
    ttft.push_back(ttft_breakdown(arms[a]).value("ttft", 0.0));
    o << (a ? ", " : "") << esc(arms[a].label) << " " << num(ttft.back()) << " ms";
  }
  if (ttft.size() == 2 && ttft[0] > 0)
    o << " (change " << numbers::signed_fixed(100 * (ttft[1] - ttft[0]) / ttft[0], 1) << " %)";
  o << " <small>(" << esc(arms.empty() ? std::string("no run") : arms[0].clock) << ")</small></h1>\n";
  return o.str();
}

}  // namespace

std::map<std::string, double> ttft_components(const TimelineArm& arm, std::size_t i) {
  const client::RequestRecord& r = arm.records[i];
  std::map<std::string, double> b;
  if (r.first_choices_ns == 0) return b;
  const double ttft = ms(r.first_choices_ns - r.dispatch_ns);
  b["client_queue"] = ms(r.dispatch_ns - r.arrival_ns);  // --max-concurrency wait (not in vLLM's TTFT)
  b["ttft"] = ttft;
  const TimelineRequestTrace* t = trace_of(arm, i);
  if (!t) return b;  // no engine data: the TTFT stays whole
  Nanos reached = r.dispatch_ns;  // the request's way to the engine, leg by leg
  if (t->server_arrival_ns != 0) {
    b["to_server"] = ms(t->server_arrival_ns - reached);
    reached = t->server_arrival_ns;
  }
  if (t->engine_submit_ns != 0) {
    b["body_and_decode"] = ms(t->engine_submit_ns - reached);
    reached = t->engine_submit_ns;
  }
  if (t->api_server_done_ns != 0) {  // virtual clock: vLLM's API-server stage as modelled
    b["api_server"] = ms(t->api_server_done_ns - reached);
    reached = t->api_server_done_ns;
  }
  b["engine_queue"] = ms(t->first_scheduled_ns - reached);
  const TimelineStep* step = encoder_step_of(arm, *t);
  const double encoder = step ? add_encoder_parts(*step, b) : 0.0;
  b["prefill_and_rest"] = std::max(0.0, ttft - ms(t->first_scheduled_ns - r.dispatch_ns) - encoder);
  return b;
}

nlohmann::json ttft_breakdown(const TimelineArm& arm) {
  std::map<std::string, double> sum;
  std::size_t n = 0;
  for (std::size_t i = 0; i < arm.records.size(); ++i) {
    const auto b = ttft_components(arm, i);
    if (b.empty()) continue;
    ++n;
    for (const auto& [k, v] : b) sum[k] += v;
  }
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [k, v] : sum) out[k] = n > 0 ? v / static_cast<double>(n) : 0.0;
  return out;
}

nlohmann::json ttft_breakdown(const ArmSeed& arm) { return ttft_breakdown(timeline_arm_of("", arm)); }

TimelineArm timeline_arm_of(const std::string& label, const ArmSeed& arm) {
  TimelineArm out;
  out.label = label;
  out.clock = arm.detail.steps.empty() ? "live run" : "virtual clock, seed " + std::to_string(arm.seed);
  out.records = arm.detail.records;
  out.start_ns = arm.detail.start_ns;
  out.end_ns = arm.detail.end_ns;
  for (const serving::VirtualStep& s : arm.detail.steps)
    out.steps.push_back({s.start_ns, s.start_ns, s.encoder_ns, s.encoder_busy_ns, s.encoder_idle_by_class, s.lm_ns});
  // The virtual engine receives a request when it leaves the modelled API-server stage (at its
  // dispatch without one): no transfer, no decode leg of its own.
  for (const serving::VirtualRequestTrace& t : arm.detail.traces)
    out.traces.push_back({true, 0, 0, t.first_scheduled_ns, t.encoder_step, t.engine_arrival_ns});
  return out;
}

void write_timeline_html(const std::filesystem::path& path, const std::vector<TimelineArm>& arms,
                         const TimelineOptions& opt) {
  std::ostringstream o;
  o << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
       "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>encbench timeline</title><style>"
    << reports::html_style() << "</style></head>\n<body>\n" << headline(arms) << legend(opt)
    << "<h2>TTFT broken down (mean over all requests)</h2>\n" << breakdown_table(arms);
  for (std::size_t a = 0; a < arms.size(); ++a) {
    const TimelineArm& arm = arms[a];
    const std::size_t drawn = std::min(arm.records.size(), opt.max_requests);
    o << "<h2>" << esc(arm.label) << " <small>(" << num(ms(arm.end_ns - arm.start_ns) / 1e3) << " s; "
      << (drawn == arm.records.size() ? "all " + std::to_string(drawn) + " requests"
                                      : "first " + std::to_string(drawn) + " of " + std::to_string(arm.records.size()) +
                                            " requests")
      << ")</small></h2>\n";
    for (const std::string& note : arm.notes) o << "<p class=\"sub note\">" << esc(note) << "</p>\n";
    o << arm_svg(arm, opt, a);
  }
  o << "</body></html>\n";
  std::ofstream out(path);
  require(static_cast<bool>(out), "cannot write " + path.string());
  out << o.str();
}

void write_timeline_html(const std::filesystem::path& path, const std::vector<std::string>& presets,
                         const std::vector<ArmSeed>& arms, const TimelineOptions& options) {
  std::vector<TimelineArm> converted;
  for (std::size_t a = 0; a < arms.size(); ++a) converted.push_back(timeline_arm_of(presets[a], arms[a]));
  write_timeline_html(path, converted, options);
}

}  // namespace encbench::scenario
