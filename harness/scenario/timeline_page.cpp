#include "harness/scenario/timeline_page.hpp"

#include <algorithm>
#include <fstream>
#include <map>
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

double ms(Nanos ns) { return static_cast<double>(ns) / 1e6; }

// Components of one request's TTFT, in ms (they add up to its TTFT).
std::map<std::string, double> breakdown_of(const ArmSeed& arm, std::size_t i) {
  const client::RequestRecord& r = arm.detail.records[i];
  std::map<std::string, double> b;
  if (r.first_choices_ns == 0) return b;
  const double ttft = ms(r.first_choices_ns - r.dispatch_ns);
  b["client_queue"] = ms(r.dispatch_ns - r.arrival_ns);  // --max-concurrency wait (not in vLLM's TTFT)
  b["ttft"] = ttft;
  // A live run has no engine trace: the TTFT stays whole.
  if (arm.detail.traces.size() != arm.detail.records.size()) return b;
  const VirtualRequestTrace& t = arm.detail.traces[i];
  b["engine_queue"] = ms(t.first_scheduled_ns - r.dispatch_ns);
  double encoder = 0;
  if (t.encoder_step >= 0) {
    const VirtualStep& s = arm.detail.steps[static_cast<std::size_t>(t.encoder_step)];
    double idle = 0;
    for (const auto& [cls, ns] : s.encoder_idle_by_class) {
      b["encoder_idle_" + cls] = ms(ns);
      idle += ms(ns);
    }
    b["encoder_busy"] = ms(s.encoder_busy_ns);
    b["encoder_host"] = std::max(0.0, ms(s.encoder_ns) - ms(s.encoder_busy_ns) - idle);
    encoder = ms(s.encoder_ns);
  }
  b["prefill_and_rest"] = std::max(0.0, ttft - b["engine_queue"] - encoder);
  return b;
}

std::string steps_svg(const ArmSeed& arm, double t0, double scale, double width) {
  std::ostringstream o;
  if (arm.detail.steps.empty()) return "";  // a live run: the server's steps are not known here
  o << "<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"40\">"
    << "<text x=\"4\" y=\"12\" class=\"tick\">engine steps: encoder (purple), LM (grey)</text>\n";
  for (const VirtualStep& s : arm.detail.steps) {
    const double x = (ms(s.start_ns) - t0) * scale;
    const double we = ms(s.encoder_ns) * scale, wl = ms(s.lm_ns) * scale;
    if (we > 0)
      o << "<rect x=\"" << num(x) << "\" y=\"18\" width=\"" << num(std::max(we, 0.3)) << "\" height=\"16\" fill=\"#8e44ad\"/>";
    o << "<rect x=\"" << num(x + we) << "\" y=\"18\" width=\"" << num(std::max(wl, 0.3))
      << "\" height=\"16\" fill=\"#b0b0b0\"/>";
  }
  o << "</svg>\n";
  return o.str();
}

std::string requests_svg(const ArmSeed& arm, const TimelineOptions& opt, double t0, double scale, double width) {
  const auto& records = arm.detail.records;
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
    o << "<rect x=\"" << num((ms(r.dispatch_ns) - t0) * scale) << "\" y=\"" << y << "\" width=\""
      << num(std::max(0.3, ms(r.first_choices_ns - r.dispatch_ns) * scale)) << "\" height=\"" << row_h - 1
      << "\" fill=\"" << kTtftColour << "\"><title>request " << i << ": TTFT "
      << num(ms(r.first_choices_ns - r.dispatch_ns)) << " ms</title></rect>";
    // ITL segments; consecutive ones of one colour are drawn as one band.
    for (std::size_t k = 1; k < r.choices_ns.size();) {
      const char* c = colour_of(ms(r.choices_ns[k] - r.choices_ns[k - 1]));
      std::size_t end = k;
      while (end + 1 < r.choices_ns.size() && colour_of(ms(r.choices_ns[end + 1] - r.choices_ns[end])) == c) ++end;
      o << "<rect x=\"" << num((ms(r.choices_ns[k - 1]) - t0) * scale) << "\" y=\"" << y << "\" width=\""
        << num(std::max(0.3, ms(r.choices_ns[end] - r.choices_ns[k - 1]) * scale)) << "\" height=\"" << row_h - 1
        << "\" fill=\"" << c << "\"/>";
      k = end + 1;
    }
    o << "\n";
  }
  o << "</svg>\n";
  return o.str();
}

std::string breakdown_table(const std::vector<std::string>& presets, const std::vector<ArmSeed>& arms) {
  std::ostringstream o;
  o << "<table><tr><th>arm</th><th>component of TTFT</th><th>mean ms</th></tr>\n";
  for (std::size_t a = 0; a < arms.size(); ++a) {
    const nlohmann::json b = ttft_breakdown(arms[a]);
    for (const auto& [key, value] : b.items())
      o << "<tr><td>" << esc(presets[a]) << "</td><td>" << esc(key) << "</td><td class=\"n\">" << num(value.get<double>())
        << "</td></tr>\n";
  }
  o << "</table>\n";
  return o.str();
}

}  // namespace

nlohmann::json ttft_breakdown(const ArmSeed& arm) {
  std::map<std::string, double> sum;
  std::size_t n = 0;
  for (std::size_t i = 0; i < arm.detail.records.size(); ++i) {
    const auto b = breakdown_of(arm, i);
    if (b.empty()) continue;
    ++n;
    for (const auto& [k, v] : b) sum[k] += v;
  }
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [k, v] : sum) out[k] = n > 0 ? v / static_cast<double>(n) : 0.0;
  return out;
}

void write_timeline_html(const std::filesystem::path& path, const std::vector<std::string>& presets,
                         const std::vector<ArmSeed>& arms, const TimelineOptions& opt) {
  std::ostringstream o;
  o << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>encbench timeline</title><style>"
    << reports::html_style() << "</style></head>\n<body>\n<h1 class=\"invalid\">Per-request timeline <small>("
    << (arms.empty() || arms[0].detail.steps.empty() ? std::string("live run") : "virtual clock, seed " + std::to_string(arms[0].seed))
    << ")</small></h1>\n";
  o << "<p class=\"sub\">One row per request (first " << opt.max_requests << "): TTFT <span class=\"sw\" style=\"background:"
    << kTtftColour << "\"></span> then ITL below " << num(opt.itl_thresholds_ms[0]) << " ms <span class=\"sw\" style=\"background:"
    << kItlColours[0] << "\"></span>, below " << num(opt.itl_thresholds_ms.back()) << " ms <span class=\"sw\" style=\"background:"
    << kItlColours[1] << "\"></span>, above <span class=\"sw\" style=\"background:" << kItlColours[2] << "\"></span>.</p>\n";
  o << "<h2>TTFT broken down (mean over all requests)</h2>\n" << breakdown_table(presets, arms);
  for (std::size_t a = 0; a < arms.size(); ++a) {
    const auto& detail = arms[a].detail;
    const double t0 = ms(detail.start_ns), t1 = ms(detail.end_ns);
    const double width = 1060, scale = (width - 8) / std::max(1.0, t1 - t0);
    o << "<h2>" << esc(presets[a]) << " <small>(" << num((t1 - t0) / 1e3) << " s)</small></h2>\n"
      << steps_svg(arms[a], t0, scale, width) << requests_svg(arms[a], opt, t0, scale, width);
  }
  o << "</body></html>\n";
  std::ofstream out(path);
  require(static_cast<bool>(out), "cannot write " + path.string());
  out << o.str();
}

}  // namespace encbench::scenario
