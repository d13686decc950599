#include "harness/raster/chart.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "harness/core/error.hpp"

namespace encbench::raster {

namespace {
constexpr Rgb kBlack{0, 0, 0}, kGrid{176, 176, 176}, kTickText{0, 0, 0};
constexpr double kGridAlpha = 0.3;
constexpr int kTickLength = 7;  // matplotlib's 3.5 pt at 150 dpi
}  // namespace

std::vector<double> matplotlib_ticks(double lo, double hi, int max_intervals) {
  std::vector<double> ticks;
  if (!(hi > lo) || !std::isfinite(lo) || !std::isfinite(hi)) return ticks;
  const double raw = (hi - lo) / max_intervals;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = 10 * magnitude;
  for (const double m : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (m * magnitude >= raw) {
      step = m * magnitude;
      break;
    }
  for (double t = std::ceil(lo / step - 1e-9) * step; t <= hi + step * 1e-9; t += step)
    ticks.push_back(std::abs(t) < step * 1e-9 ? 0.0 : t);
  return ticks;
}

std::string matplotlib_tick_label(double value, double step) {
  // As many decimals as the step needs (2.5 -> 1, 0.25 -> 2, 50 -> 0).
  int decimals = 0;
  while (decimals < 6 && std::abs(step * std::pow(10.0, decimals) - std::round(step * std::pow(10.0, decimals))) > 1e-6)
    ++decimals;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  return buf;
}

Axes::Axes(Canvas& canvas, AxesBox box, AxesRange range) : canvas_(canvas), box_(box), range_(range) {
  require(box.right > box.left && box.bottom > box.top, "raster: empty axes box");
  require(range.x_max > range.x_min && range.y_max > range.y_min, "raster: empty axes range");
}

int Axes::px(double x) const {
  return box_.left + static_cast<int>(std::lround((x - range_.x_min) / (range_.x_max - range_.x_min) * (box_.right - box_.left)));
}

int Axes::py(double y) const {
  return box_.bottom - static_cast<int>(std::lround((y - range_.y_min) / (range_.y_max - range_.y_min) * (box_.bottom - box_.top)));
}

void Axes::bar(double x0, double x1, double y0, double y1, Rgb fill, double alpha, const Rgb* edge) {
  const int left = std::max(px(x0), box_.left), right = std::min(px(x1), box_.right);
  const int top = std::max(py(y1), box_.top), bottom = std::min(py(y0), box_.bottom);
  if (right <= left || bottom <= top) return;
  canvas_.fill_rect(left, top, right, bottom, fill, alpha);
  if (edge == nullptr) return;
  canvas_.fill_rect(left, top, right, top + 2, *edge);
  canvas_.fill_rect(left, top, left + 2, bottom, *edge);
  canvas_.fill_rect(right - 2, top, right, bottom, *edge);
}

void Axes::ticks_x(bool grid) {
  const auto ticks = matplotlib_ticks(range_.x_min, range_.x_max);
  const double step = ticks.size() > 1 ? ticks[1] - ticks[0] : 1;
  for (const double t : ticks) {
    const int x = px(t);
    if (grid) canvas_.fill_rect(x, box_.top, x + 2, box_.bottom, kGrid, kGridAlpha);
    canvas_.fill_rect(x, box_.bottom, x + 2, box_.bottom + kTickLength, kBlack);
    const std::string label = matplotlib_tick_label(t, step);
    canvas_.text(x + 1 - Canvas::text_width(label, kTextScale) / 2, box_.bottom + kTickLength + 6, label, kTickText, kTextScale);
  }
}

int Axes::ticks_y(bool grid) {
  const auto ticks = matplotlib_ticks(range_.y_min, range_.y_max);
  const double step = ticks.size() > 1 ? ticks[1] - ticks[0] : 1;
  int widest = 0;
  for (const double t : ticks) {
    const int y = py(t);
    if (grid) canvas_.fill_rect(box_.left, y - 1, box_.right, y + 1, kGrid, kGridAlpha);
    canvas_.fill_rect(box_.left - kTickLength, y - 1, box_.left, y + 1, kBlack);
    const std::string label = matplotlib_tick_label(t, step);
    canvas_.text(box_.left - kTickLength - 6 - Canvas::text_width(label, kTextScale), y - Canvas::text_height(kTextScale) / 2,
                 label, kTickText, kTextScale);
    widest = std::max(widest, Canvas::text_width(label, kTextScale));
  }
  return widest;
}

void Axes::decorate(const std::string& title, const std::string& x_label, const std::string& y_label, bool grid_x,
                    bool grid_y) {
  ticks_x(grid_x);
  const int widest_y_label = ticks_y(grid_y);
  // The frame (matplotlib's spines, 0.8 pt: 2 pixels) over the grid and the bars' ends.
  canvas_.fill_rect(box_.left - 1, box_.top - 1, box_.right + 1, box_.top + 1, kBlack);
  canvas_.fill_rect(box_.left - 1, box_.bottom - 1, box_.right + 1, box_.bottom + 1, kBlack);
  canvas_.fill_rect(box_.left - 1, box_.top - 1, box_.left + 1, box_.bottom + 1, kBlack);
  canvas_.fill_rect(box_.right - 1, box_.top - 1, box_.right + 1, box_.bottom + 1, kBlack);
  const int h = Canvas::text_height(kTextScale), mid_x = (box_.left + box_.right) / 2, mid_y = (box_.top + box_.bottom) / 2;
  canvas_.text(mid_x - Canvas::text_width(title, kTextScale + 1) / 2, box_.top - h - 24, title, kBlack, kTextScale + 1);
  canvas_.text(mid_x - Canvas::text_width(x_label, kTextScale) / 2, box_.bottom + kTickLength + 6 + h + 16, x_label, kBlack,
               kTextScale);
  canvas_.text_up(box_.left - kTickLength - 6 - widest_y_label - 14 - h,
                  mid_y - Canvas::text_width(y_label, kTextScale) / 2, y_label, kBlack, kTextScale);
}

void Axes::legend(const std::vector<std::pair<std::string, Rgb>>& entries, double alpha) {
  int width = 0;
  for (const auto& [label, colour] : entries) width = std::max(width, Canvas::text_width(label, kTextScale));
  const int h = Canvas::text_height(kTextScale), row = h + 14, swatch = 40;
  const int box_w = swatch + 16 + width + 24, box_h = row * static_cast<int>(entries.size()) + 14;
  const int x0 = box_.right - 14 - box_w, y0 = box_.top + 14;
  canvas_.fill_rect(x0, y0, x0 + box_w, y0 + box_h, Rgb{255, 255, 255}, 0.8);
  canvas_.fill_rect(x0, y0, x0 + box_w, y0 + 2, Rgb{204, 204, 204});
  canvas_.fill_rect(x0, y0 + box_h - 2, x0 + box_w, y0 + box_h, Rgb{204, 204, 204});
  canvas_.fill_rect(x0, y0, x0 + 2, y0 + box_h, Rgb{204, 204, 204});
  canvas_.fill_rect(x0 + box_w - 2, y0, x0 + box_w, y0 + box_h, Rgb{204, 204, 204});
  for (std::size_t k = 0; k < entries.size(); ++k) {
    const int y = y0 + 10 + static_cast<int>(k) * row;
    canvas_.fill_rect(x0 + 12, y + 2, x0 + 12 + swatch, y + h - 2, entries[k].second, alpha);
    canvas_.text(x0 + 12 + swatch + 12, y, entries[k].first, kBlack, kTextScale);
  }
}

}  // namespace encbench::raster
