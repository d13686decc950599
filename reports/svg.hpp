#pragma once
// Small inline-SVG building blocks shared by the HTML report's sections: escaping, number and
// tick formatting, the palette, and a line chart whose legend sits in its own strip above the
// plot (it never covers data).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "harness/core/number_format.hpp"
#include "reports/tables.hpp"

namespace encbench::reports::svg {

// BASE and HEAD keep these two colours everywhere on the page (blue / orange: distinct for the
// common colour-vision deficiencies too). Nothing else on the page uses them.
inline constexpr const char* kBaseColour = "#1f77b4";
inline constexpr const char* kHeadColour = "#e66100";

// Series colours for charts of independent results (no BASE/HEAD meaning).
inline const char* colour(std::size_t i) {
  static constexpr const char* kPalette[] = {"#4c4c9d", "#2ca02c", "#9467bd", "#17becf",
                                             "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22"};
  return kPalette[i % (sizeof kPalette / sizeof *kPalette)];
}

// Gap classes and busy time in the timeline and the per-layer charts.
inline const char* gap_colour(const std::string& cls) {
  if (cls == "host_wait") return "#d62728";
  if (cls == "sync_stall") return "#8e44ad";
  if (cls == "kernel_wait") return "#c9a400";
  if (cls == "busy") return "#2ca02c";
  if (cls == "unclassified") return "#d0d0d0";
  return "#7f7f7f";
}

inline std::string esc(const std::string& s) { return xml_escape(s); }

inline std::string num(double v) { return numbers::fixed(v, 1); }

inline std::string tick_label(double v) {
  const double a = std::fabs(v);
  if (a >= 1e6 || (a > 0 && a < 1e-2)) return numbers::significant(v, 2);
  if (a >= 100 || v == std::floor(v)) return numbers::fixed(v, 0);
  return numbers::significant(v, 3);
}

// "Nice" tick spacing: 1, 2 or 5 times a power of ten, about `count` ticks over the range.
inline std::vector<double> nice_ticks(double lo, double hi, int count = 5) {
  if (!(hi > lo)) hi = lo + 1;
  const double raw = (hi - lo) / count;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double norm = raw / mag;
  const double step = (norm < 1.5 ? 1 : norm < 3 ? 2 : norm < 7 ? 5 : 10) * mag;
  std::vector<double> ticks;
  for (double t = std::ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) ticks.push_back(t);
  return ticks;
}

inline std::string shorten(const std::string& s, std::size_t max) {
  return s.size() > max ? "..." + s.substr(s.size() - (max - 3)) : s;
}

// A legend laid out in columns inside a strip of its own; returns the strip's height.
struct LegendEntry {
  std::string label, colour;
  bool swatch_line = false;  // a line sample instead of a filled square
};
inline double legend_height(std::size_t entries, double width, double column = 250) {
  const auto cols = static_cast<std::size_t>(std::max(1.0, std::floor(width / column)));
  return 16.0 * static_cast<double>((entries + cols - 1) / cols);
}
inline void draw_legend(std::ostringstream& o, const std::vector<LegendEntry>& entries, double x0, double y0,
                        double width, double column = 250) {
  const auto cols = static_cast<std::size_t>(std::max(1.0, std::floor(width / column)));
  const auto chars = static_cast<std::size_t>(std::max(8.0, (column - 20) / 6.2));
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const double x = x0 + column * static_cast<double>(i % cols);
    const double y = y0 + 16.0 * static_cast<double>(i / cols) + 11;
    o << "<g class=\"legend\">";
    if (entries[i].swatch_line)
      o << "<line x1=\"" << x << "\" y1=\"" << y - 4 << "\" x2=\"" << x + 12 << "\" y2=\"" << y - 4 << "\" stroke=\""
        << entries[i].colour << "\" stroke-width=\"2.5\"/>";
    else
      o << "<rect x=\"" << x << "\" y=\"" << y - 9 << "\" width=\"10\" height=\"10\" fill=\"" << entries[i].colour
        << "\"/>";
    o << "<text x=\"" << x + 16 << "\" y=\"" << y << "\" class=\"legend\">" << esc(shorten(entries[i].label, chars))
      << "</text></g>\n";
  }
}

struct Series {
  std::string name;
  std::vector<std::pair<double, double>> points;
  bool step = false;
  std::string colour;                                  // empty: palette by index
  std::vector<std::pair<double, double>> band;         // optional filled polygon (data coordinates)
  bool dashed = false;                                 // a second statistic of the same series' colour
};

// A line chart with axes, ticks and a legend strip above the plot.
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
  void set_x_range(double lo, double hi) {
    x_fixed_ = true;
    x_lo_ = lo;
    x_hi_ = hi;
  }
  void add_legend_note(LegendEntry e) { extra_legend_.push_back(std::move(e)); }
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
    if (x_fixed_) {
      x_lo = x_lo_;
      x_hi = x_hi_;
    }
    if (!(x_hi > x_lo)) x_hi = x_lo + 1;
    const double left = 70, right = 20, bottom = 48, width = 760, plot_h = 260;
    const double pw = width - left - right;
    std::vector<LegendEntry> legend;
    for (std::size_t i = 0; i < series_.size(); ++i)
      legend.push_back({series_[i].name, series_[i].colour.empty() ? colour(i) : series_[i].colour, true});
    legend.insert(legend.end(), extra_legend_.begin(), extra_legend_.end());
    const double legend_h = legend_height(legend.size(), pw);
    const double top = 30 + legend_h + 8, ph = plot_h, height = top + ph + bottom;
    auto clampx = [&](double x) { return std::clamp(x, x_lo, x_hi); };
    auto sx = [&](double x) { return left + (clampx(x) - x_lo) / (x_hi - x_lo) * pw; };
    auto sy = [&](double y) { return top + ph - (std::clamp(y, y_lo, y_hi) - y_lo) / (y_hi - y_lo) * ph; };
    std::ostringstream o;
    o << "<svg id=\"" << esc(id_) << "\" class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width
      << "\" height=\"" << height << "\" viewBox=\"0 0 " << width << " " << height << "\" role=\"img\">\n";
    o << "<title>" << esc(title_) << "</title>\n";
    o << "<text x=\"" << left << "\" y=\"20\" class=\"ctitle\">" << esc(title_) << "</text>\n";
    draw_legend(o, legend, left, 28, pw);
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
      const std::string c = s.colour.empty() ? colour(i) : s.colour;
      if (!s.band.empty()) {
        o << "<polygon class=\"band\" fill=\"" << c << "\" fill-opacity=\"0.18\" stroke=\"none\" points=\"";
        for (const auto& [x, y] : s.band) o << num(sx(x)) << "," << num(sy(y)) << " ";
        o << "\"/>\n";
      }
    }
    for (std::size_t i = 0; i < series_.size(); ++i) {
      const auto& s = series_[i];
      o << "<polyline class=\"series\" fill=\"none\" stroke=\"" << (s.colour.empty() ? colour(i) : s.colour)
        << (s.dashed ? "\" stroke-dasharray=\"6 3" : "") << "\" stroke-width=\"1.8\" points=\"";
      for (std::size_t k = 0; k < s.points.size(); ++k) {
        const auto& [x, y] = s.points[k];
        if (s.step && k > 0) o << num(sx(x)) << "," << num(sy(s.points[k - 1].second)) << " ";
        o << num(sx(x)) << "," << num(sy(y)) << " ";
      }
      o << "\"><title>" << esc(s.name) << "</title></polyline>\n";
    }
    o << "</svg>\n";
    return o.str();
  }

 private:
  std::string id_, title_, x_label_, y_label_;
  std::vector<Series> series_;
  std::vector<LegendEntry> extra_legend_;
  bool y_fixed_ = false, x_fixed_ = false;
  double y_lo_ = 0, y_hi_ = 1, x_lo_ = 0, x_hi_ = 1;
};

}  // namespace encbench::reports::svg
