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

// A legend laid out in columns inside a box of its own (class "legend-box", drawn above the plot
// so it never covers data). A label is never cut: the columns widen to the longest label, and a
// label wider than the whole strip wraps onto further lines.
struct LegendEntry {
  std::string label, colour;
  bool swatch_line = false;  // a line sample instead of a filled square
};

// A label's width in px at the legend's 11 px font, estimated on the wide side (digits and
// capitals of the common sans fonts are about 0.64 em; 7 px a character), so that the box drawn
// around it holds it in any of them.
inline constexpr double kLegendCharPx = 7.0;
inline std::size_t text_length(const std::string& s) {  // UTF-8 code points
  std::size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// Words of `text` on lines of at most `chars` code points; a word longer than a line is split.
inline std::vector<std::string> wrap_text(const std::string& text, std::size_t chars) {
  std::vector<std::string> lines{""};
  std::istringstream words(text);
  std::string word;
  while (words >> word) {
    while (text_length(word) > chars) {  // split an overlong word at a code-point boundary
      std::size_t cut = 0, seen = 0;
      while (cut < word.size() && seen < chars) {
        ++cut;
        while (cut < word.size() && (static_cast<unsigned char>(word[cut]) & 0xC0) == 0x80) ++cut;
        ++seen;
      }
      if (!lines.back().empty()) lines.emplace_back();
      lines.back() = word.substr(0, cut);
      lines.emplace_back();
      word.erase(0, cut);
    }
    const std::string& last = lines.back();
    if (!last.empty() && text_length(last) + 1 + text_length(word) > chars) lines.emplace_back();
    lines.back() += (lines.back().empty() ? "" : " ") + word;
  }
  if (lines.size() > 1 && lines.back().empty()) lines.pop_back();
  return lines;
}

// Lines of a label drawn as one <text> centred on y_mid, 12 px apart (a wrapped label, never cut).
inline void text_lines(std::ostringstream& o, double x, double y_mid, const std::vector<std::string>& lines,
                       const char* cls, const char* anchor) {
  const double first = y_mid + 4 - 6 * static_cast<double>(lines.size() - 1);
  o << "<text x=\"" << num(x) << "\" y=\"" << num(first) << "\" class=\"" << cls << "\" text-anchor=\"" << anchor << "\">";
  for (std::size_t k = 0; k < lines.size(); ++k)
    o << (k ? "<tspan x=\"" + num(x) + "\" dy=\"12\">" : std::string()) << esc(lines[k]) << (k ? "</tspan>" : "");
  o << "</text>\n";
}
// The row height that holds the longest of these wrapped labels (at least `min_row`).
inline double row_for_lines(const std::vector<std::vector<std::string>>& labels, double min_row) {
  std::size_t most = 1;
  for (const auto& l : labels) most = std::max(most, l.size());
  return std::max(min_row, 12.0 * static_cast<double>(most) + 6);
}

struct LegendLayout {
  double column = 250, height = 0;
  std::size_t cols = 1;
  std::vector<std::vector<std::string>> lines;  // per entry
  std::vector<double> row_top;                  // per row of entries, from the strip's top
};
inline constexpr double kLegendLine = 16, kLegendExtraLine = 13, kLegendPad = 4;

inline LegendLayout legend_layout(const std::vector<LegendEntry>& entries, double width, double min_column = 250) {
  LegendLayout l;
  double widest = 0;
  for (const auto& e : entries) widest = std::max(widest, kLegendCharPx * static_cast<double>(text_length(e.label)) + 20);
  l.column = std::min(width - 2 * kLegendPad, std::max(min_column, widest));
  l.cols = static_cast<std::size_t>(std::max(1.0, std::floor((width - 2 * kLegendPad) / l.column)));
  const auto chars = static_cast<std::size_t>(std::max(8.0, std::floor((l.column - 20) / kLegendCharPx)));
  for (const auto& e : entries) l.lines.push_back(wrap_text(e.label, chars));
  double y = kLegendPad;
  for (std::size_t row = 0; row * l.cols < entries.size(); ++row) {
    l.row_top.push_back(y);
    std::size_t most = 1;
    for (std::size_t i = row * l.cols; i < std::min(entries.size(), (row + 1) * l.cols); ++i)
      most = std::max(most, l.lines[i].size());
    y += kLegendLine + kLegendExtraLine * static_cast<double>(most - 1);
  }
  l.height = entries.empty() ? 0 : y + kLegendPad;
  return l;
}
inline double legend_height(const std::vector<LegendEntry>& entries, double width, double column = 250) {
  return legend_layout(entries, width, column).height;
}
inline void draw_legend(std::ostringstream& o, const std::vector<LegendEntry>& entries, double x0, double y0,
                        double width, double column = 250) {
  if (entries.empty()) return;
  const LegendLayout l = legend_layout(entries, width, column);
  o << "<rect class=\"legend-box\" x=\"" << x0 << "\" y=\"" << y0 << "\" width=\"" << width << "\" height=\""
    << l.height << "\" fill=\"none\" stroke=\"#e4e4e4\"/>\n";
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const double x = x0 + kLegendPad + l.column * static_cast<double>(i % l.cols);
    const double y = y0 + l.row_top[i / l.cols] + 11;
    o << "<g class=\"legend\">";
    if (entries[i].swatch_line)
      o << "<line x1=\"" << x << "\" y1=\"" << y - 4 << "\" x2=\"" << x + 12 << "\" y2=\"" << y - 4 << "\" stroke=\""
        << entries[i].colour << "\" stroke-width=\"2.5\"/>";
    else
      o << "<rect x=\"" << x << "\" y=\"" << y - 9 << "\" width=\"10\" height=\"10\" fill=\"" << entries[i].colour
        << "\"/>";
    o << "<text x=\"" << x + 16 << "\" y=\"" << y << "\" class=\"legend\">";
    for (std::size_t k = 0; k < l.lines[i].size(); ++k)
      o << (k ? "<tspan x=\"" + num(x + 16) + "\" dy=\"" + num(kLegendExtraLine) + "\">" : std::string()) << esc(l.lines[i][k])
        << (k ? "</tspan>" : "");
    o << "</text></g>\n";
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

// A vertical marker at x (a knee, a threshold): a dashed line over the plot with its label at the
// top. Markers at the same x are set apart (a few px each side) and their labels stacked, so two
// arms' markers at one load are both seen.
struct Marker {
  double x = 0;
  std::string label, colour;
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
  // Ticks of the x axis at these positions with these labels (instead of "nice" numbers).
  void set_x_ticks(std::vector<std::pair<double, std::string>> ticks) { x_ticks_ = std::move(ticks); }
  void add_marker(Marker m) { markers_.push_back(std::move(m)); }
  // A legend line beyond the series (colour "none": text alone, e.g. a limit above the axis).
  void add_legend_note(LegendEntry e) { extra_legend_.push_back(std::move(e)); }
  bool empty() const { return series_.empty(); }

  std::string svg() const {
    Frame f = frame();
    std::ostringstream o;
    o << "<svg id=\"" << esc(id_) << "\" class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" << f.width
      << "\" height=\"" << f.height << "\" viewBox=\"0 0 " << f.width << " " << f.height << "\" role=\"img\">\n";
    o << "<title>" << esc(title_) << "</title>\n";
    o << "<text x=\"" << f.left << "\" y=\"20\" class=\"ctitle\">" << esc(title_) << "</text>\n";
    draw_legend(o, f.legend, f.left, 28, f.pw);
    axes(o, f);
    series(o, f);
    markers(o, f);
    o << "</svg>\n";
    return o.str();
  }

 private:
  struct Frame {
    double x_lo = 1e300, x_hi = -1e300, y_lo = 1e300, y_hi = -1e300;
    double left = 70, right = 20, bottom = 48, width = 760, top = 0, pw = 0, ph = 260, height = 0;
    std::vector<LegendEntry> legend;
    double sx(double x) const { return left + (std::clamp(x, x_lo, x_hi) - x_lo) / (x_hi - x_lo) * pw; }
    double sy(double y) const { return top + ph - (std::clamp(y, y_lo, y_hi) - y_lo) / (y_hi - y_lo) * ph; }
  };

  Frame frame() const {
    Frame f;
    for (const auto& s : series_)
      for (const auto& [x, y] : s.points) {
        f.x_lo = std::min(f.x_lo, x);
        f.x_hi = std::max(f.x_hi, x);
        f.y_lo = std::min(f.y_lo, y);
        f.y_hi = std::max(f.y_hi, y);
      }
    if (y_fixed_) {
      f.y_lo = y_lo_;
      f.y_hi = y_hi_;
    } else {
      f.y_lo = std::min(0.0, f.y_lo);
      f.y_hi = f.y_hi <= f.y_lo ? f.y_lo + 1 : f.y_hi * 1.05;
    }
    if (x_fixed_) {
      f.x_lo = x_lo_;
      f.x_hi = x_hi_;
    }
    if (!(f.x_hi > f.x_lo)) f.x_hi = f.x_lo + 1;
    f.pw = f.width - f.left - f.right;
    for (std::size_t i = 0; i < series_.size(); ++i)
      f.legend.push_back({series_[i].name, series_[i].colour.empty() ? colour(i) : series_[i].colour, true});
    f.legend.insert(f.legend.end(), extra_legend_.begin(), extra_legend_.end());
    f.top = 30 + legend_height(f.legend, f.pw) + 8;
    f.height = f.top + f.ph + f.bottom;
    return f;
  }

  void axes(std::ostringstream& o, const Frame& f) const {
    std::vector<std::pair<double, std::string>> xt = x_ticks_;
    if (xt.empty())
      for (double t : nice_ticks(f.x_lo, f.x_hi)) xt.emplace_back(t, tick_label(t));
    for (const auto& [t, label] : xt) {
      o << "<line x1=\"" << num(f.sx(t)) << "\" y1=\"" << f.top << "\" x2=\"" << num(f.sx(t)) << "\" y2=\"" << f.top + f.ph
        << "\" class=\"grid\"/><text x=\"" << num(f.sx(t)) << "\" y=\"" << f.top + f.ph + 16
        << "\" class=\"tick x\" text-anchor=\"middle\">" << esc(label) << "</text>\n";
    }
    for (double t : nice_ticks(f.y_lo, f.y_hi)) {
      o << "<line x1=\"" << f.left << "\" y1=\"" << num(f.sy(t)) << "\" x2=\"" << f.left + f.pw << "\" y2=\""
        << num(f.sy(t)) << "\" class=\"grid\"/><text x=\"" << f.left - 6 << "\" y=\"" << num(f.sy(t) + 4)
        << "\" class=\"tick y\" text-anchor=\"end\">" << tick_label(t) << "</text>\n";
    }
    o << "<rect x=\"" << f.left << "\" y=\"" << f.top << "\" width=\"" << f.pw << "\" height=\"" << f.ph
      << "\" class=\"frame\"/>\n";
    o << "<text x=\"" << f.left + f.pw / 2 << "\" y=\"" << f.height - 8 << "\" class=\"axis x\" text-anchor=\"middle\">"
      << esc(x_label_) << "</text>\n";
    o << "<text x=\"14\" y=\"" << f.top + f.ph / 2 << "\" class=\"axis y\" text-anchor=\"middle\" transform=\"rotate(-90 14 "
      << f.top + f.ph / 2 << ")\">" << esc(y_label_) << "</text>\n";
  }

  void series(std::ostringstream& o, const Frame& f) const {
    for (std::size_t i = 0; i < series_.size(); ++i) {
      const auto& s = series_[i];
      const std::string c = s.colour.empty() ? colour(i) : s.colour;
      if (s.band.empty()) continue;
      o << "<polygon class=\"band\" fill=\"" << c << "\" fill-opacity=\"0.18\" stroke=\"none\" points=\"";
      for (const auto& [x, y] : s.band) o << num(f.sx(x)) << "," << num(f.sy(y)) << " ";
      o << "\"/>\n";
    }
    for (std::size_t i = 0; i < series_.size(); ++i) {
      const auto& s = series_[i];
      o << "<polyline class=\"series\" fill=\"none\" stroke=\"" << (s.colour.empty() ? colour(i) : s.colour)
        << (s.dashed ? "\" stroke-dasharray=\"6 3" : "") << "\" stroke-width=\"1.8\" points=\"";
      for (std::size_t k = 0; k < s.points.size(); ++k) {
        const auto& [x, y] = s.points[k];
        if (s.step && k > 0) o << num(f.sx(x)) << "," << num(f.sy(s.points[k - 1].second)) << " ";
        o << num(f.sx(x)) << "," << num(f.sy(y)) << " ";
      }
      o << "\"><title>" << esc(s.name) << "</title></polyline>\n";
    }
  }

  void markers(std::ostringstream& o, const Frame& f) const {
    for (std::size_t i = 0; i < markers_.size(); ++i) {
      std::size_t same_before = 0, same = 0;  // markers sharing this x: spread them apart
      for (std::size_t k = 0; k < markers_.size(); ++k) {
        if (markers_[k].x != markers_[i].x) continue;
        ++same;
        if (k < i) ++same_before;
      }
      const double x = f.sx(markers_[i].x) + (static_cast<double>(same_before) - (static_cast<double>(same) - 1) / 2) * 4;
      const double label_y = f.top + 12 + 13 * static_cast<double>(same_before);
      const bool right_half = x > f.left + f.pw / 2;
      o << "<g class=\"marker\"><line x1=\"" << num(x) << "\" y1=\"" << f.top << "\" x2=\"" << num(x) << "\" y2=\""
        << f.top + f.ph << "\" stroke=\"" << markers_[i].colour << "\" stroke-width=\"1.5\" stroke-dasharray=\"2 3\"/>"
        << "<text x=\"" << num(x + (right_half ? -4 : 4)) << "\" y=\"" << num(label_y) << "\" class=\"cnote\" style=\"fill:"
        << markers_[i].colour << "\" text-anchor=\"" << (right_half ? "end" : "start") << "\">" << esc(markers_[i].label)
        << "</text></g>\n";
    }
  }

  std::string id_, title_, x_label_, y_label_;
  std::vector<Series> series_;
  std::vector<LegendEntry> extra_legend_;
  std::vector<std::pair<double, std::string>> x_ticks_;
  std::vector<Marker> markers_;
  bool y_fixed_ = false, x_fixed_ = false;
  double y_lo_ = 0, y_hi_ = 1, x_lo_ = 0, x_hi_ = 1;
};

}  // namespace encbench::reports::svg
