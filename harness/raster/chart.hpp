#pragma once
// One matplotlib-style axes on a Canvas: data-to-pixel mapping, bars (fill with alpha, optional
// edge), a frame, grid lines at the ticks (matplotlib's grid alpha 0.3 over the bars), tick marks
// and labels at "nice" steps (1, 2, 2.5, 5 x 10^k, at most 8 intervals, as MaxNLocator picks them),
// a title above and axis labels below / left (turned), and a legend box.
#include <string>
#include <utility>
#include <vector>

#include "harness/raster/canvas.hpp"

namespace encbench::raster {

struct AxesBox {
  int left = 0, top = 0, right = 0, bottom = 0;  // the plot area, pixels (right/bottom excluded)
};
struct AxesRange {
  double x_min = 0, x_max = 1, y_min = 0, y_max = 1;
};

// Tick values covering [lo, hi] at the step matplotlib's MaxNLocator picks (1, 2, 2.5, 5 x 10^k,
// at most `max_intervals` intervals), every one inside the range. The SVG pages' ticks are a
// different rule (reports/svg.hpp nice_ticks: 1, 2, 5 x 10^k near a count).
std::vector<double> matplotlib_ticks(double lo, double hi, int max_intervals = 8);
// A tick's label as matplotlib writes it: an integer when the step is, else as few decimals as
// the step needs.
std::string matplotlib_tick_label(double value, double step);

class Axes {
 public:
  Axes(Canvas& canvas, AxesBox box, AxesRange range);
  const AxesBox& box() const { return box_; }
  const AxesRange& range() const { return range_; }
  int px(double x) const;  // data x to a pixel column
  int py(double y) const;  // data y to a pixel row (y grows up)

  // A bar over [x0, x1] x [y0, y1] in data units; edge: a 2-pixel outline (matplotlib's 1 pt at 150 dpi).
  void bar(double x0, double x1, double y0, double y1, Rgb fill, double alpha, const Rgb* edge = nullptr);
  // Frame, grid (x and/or y), ticks and their labels, title and axis labels.
  void decorate(const std::string& title, const std::string& x_label, const std::string& y_label, bool grid_x,
                bool grid_y);
  // Entries (label, colour, alpha) in a box at the upper right.
  void legend(const std::vector<std::pair<std::string, Rgb>>& entries, double alpha);

  static constexpr int kTextScale = 3;  // the 5x7 font at 3x: 21-pixel text, matplotlib's 10 pt at 150 dpi

 private:
  void ticks_x(bool grid);
  int ticks_y(bool grid);  // returns the widest label's width
  Canvas& canvas_;
  AxesBox box_;
  AxesRange range_;
};

}  // namespace encbench::raster
