#include "harness/scenario/timeline_page.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "harness/core/error.hpp"
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

std::string steps_svg(const TimelineArm& arm, double t0, double scale, double width) {
  if (arm.steps.empty()) return "";
  std::ostringstream o;
  o << "<svg class=\"chart engine-steps\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width
    << "\" height=\"40\"><text x=\"4\" y=\"12\" class=\"tick\">engine steps: encoder (purple), LM (grey)</text>\n";
  for (const TimelineStep& s : arm.steps) {
    const double x = (ms(s.encoder_start_ns) - t0) * scale;
    const double we = ms(s.encoder_ns) * scale, wl = ms(s.lm_ns) * scale;
    if (we > 0)
      o << "<rect x=\"" << num(x) << "\" y=\"18\" width=\"" << num(std::max(we, 0.3)) << "\" height=\"16\" fill=\""
        << kEncoderColour << "\"/>";
    o << "<rect x=\"" << num(x + we) << "\" y=\"18\" width=\"" << num(std::max(wl, 0.3)) << "\" height=\"16\" fill=\""
      << kLmColour << "\"/>";
  }
  o << "</svg>\n";
  return o.str();
}

std::string rect(double x, double y, double w, double h, const char* fill) {
  std::ostringstream o;
  o << "<rect x=\"" << num(x) << "\" y=\"" << y << "\" width=\"" << num(std::max(0.3, w)) << "\" height=\"" << h
    << "\" fill=\"" << fill << "\"/>";
  return o.str();
}

// The TTFT band; with an engine trace, its queue (grey) and encoder (purple) parts drawn over it
// and every component in the tooltip.
std::string ttft_band(const TimelineArm& arm, std::size_t i, double y, double h, double t0, double scale) {
  const client::RequestRecord& r = arm.records[i];
  std::ostringstream o;
  o << "<g><title>request " << i << ":";
  for (const auto& [k, v] : ttft_components(arm, i)) o << " " << esc(k) << " " << num(v) << " ms;";
  o << "</title>" << rect((ms(r.dispatch_ns) - t0) * scale, y, ms(r.first_choices_ns - r.dispatch_ns) * scale, h, kTtftColour);
  if (const TimelineRequestTrace* t = trace_of(arm, i)) {
    o << rect((ms(r.dispatch_ns) - t0) * scale, y, ms(t->first_scheduled_ns - r.dispatch_ns) * scale, h, kQueueColour);
    if (const TimelineStep* s = encoder_step_of(arm, *t); s && s->encoder_ns > 0)
      o << rect((ms(s->encoder_start_ns) - t0) * scale, y, ms(s->encoder_ns) * scale, h, kEncoderColour);
  }
  o << "</g>";
  return o.str();
}

std::string requests_svg(const TimelineArm& arm, const TimelineOptions& opt, double t0, double scale, double width) {
  const auto& records = arm.records;
  const std::size_t rows = std::min(records.size(), opt.max_requests);
  const double row_h = 4;
  std::ostringstream o;
  o << "<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\""
    << row_h * static_cast<double>(rows) + 4 << "\">\n";
  const auto colour_of = [&](double itl_ms) {
    std::size_t k = 0;
    while (k < opt.itl_thresholds_ms.size() && itl_ms >= opt.itl_thresholds_ms[k]) ++k;
    return kItlColours[std::min<std::size_t>(k, 2)];
  };
  for (std::size_t i = 0; i < rows; ++i) {
    const client::RequestRecord& r = records[i];
    if (r.first_choices_ns == 0) continue;
    const double y = row_h * static_cast<double>(i);
    o << ttft_band(arm, i, y, row_h - 1, t0, scale);
    // ITL segments; consecutive ones of one colour are drawn as one band.
    for (std::size_t k = 1; k < r.choices_ns.size();) {
      const char* c = colour_of(ms(r.choices_ns[k] - r.choices_ns[k - 1]));
      std::size_t end = k;
      while (end + 1 < r.choices_ns.size() && colour_of(ms(r.choices_ns[end + 1] - r.choices_ns[end])) == c) ++end;
      o << rect((ms(r.choices_ns[k - 1]) - t0) * scale, y, ms(r.choices_ns[end] - r.choices_ns[k - 1]) * scale,
                row_h - 1, c);
      k = end + 1;
    }
    o << "\n";
  }
  o << "</svg>\n";
  return o.str();
}

std::string breakdown_table(const std::vector<TimelineArm>& arms) {
  std::ostringstream o;
  o << "<table><tr><th>arm</th><th>component of TTFT</th><th>mean ms</th></tr>\n";
  for (const TimelineArm& arm : arms) {
    const nlohmann::json b = ttft_breakdown(arm);
    for (const auto& [key, value] : b.items())
      o << "<tr><td>" << esc(arm.label) << "</td><td>" << esc(key) << "</td><td class=\"n\">" << num(value.get<double>())
        << "</td></tr>\n";
  }
  o << "</table>\n";
  return o.str();
}

std::string legend(const TimelineOptions& opt) {
  std::ostringstream o;
  const auto swatch = [](const char* colour) {
    return std::string("<span class=\"sw\" style=\"background:") + colour + "\"></span>";
  };
  o << "<p class=\"sub\">One row per request (first " << opt.max_requests << "): TTFT " << swatch(kTtftColour)
    << " (with engine data: its queue part " << swatch(kQueueColour) << " and the encoder step that encoded its image "
    << swatch(kEncoderColour) << " over it), then ITL below " << num(opt.itl_thresholds_ms[0]) << " ms "
    << swatch(kItlColours[0]) << ", below " << num(opt.itl_thresholds_ms.back()) << " ms " << swatch(kItlColours[1])
    << ", above " << swatch(kItlColours[2]) << ".</p>\n";
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
  o << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>encbench timeline</title><style>"
    << reports::html_style() << "</style></head>\n<body>\n<h1 class=\"invalid\">Per-request timeline <small>("
    << esc(arms.empty() ? std::string("no run") : arms[0].clock) << ")</small></h1>\n"
    << legend(opt) << "<h2>TTFT broken down (mean over all requests)</h2>\n" << breakdown_table(arms);
  for (const TimelineArm& arm : arms) {
    const double t0 = ms(arm.start_ns), t1 = ms(arm.end_ns);
    const double width = 1060, scale = (width - 8) / std::max(1.0, t1 - t0);
    o << "<h2>" << esc(arm.label) << " <small>(" << num((t1 - t0) / 1e3) << " s)</small></h2>\n";
    for (const std::string& note : arm.notes) o << "<p class=\"sub note\">" << esc(note) << "</p>\n";
    o << steps_svg(arm, t0, scale, width) << requests_svg(arm, opt, t0, scale, width);
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
