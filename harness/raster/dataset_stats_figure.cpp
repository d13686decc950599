#include "harness/raster/dataset_stats_figure.hpp"

#include <algorithm>
#include <cmath>

#include "harness/core/error.hpp"

namespace encbench::raster {

namespace {

// matplotlib's named colours.
constexpr Rgb kSteelBlue{70, 130, 180}, kCoral{255, 127, 80}, kMediumSeaGreen{60, 179, 113}, kEdge{0, 0, 0};
constexpr double kAlpha = 0.7, kMargin = 0.05;  // the bars' alpha; axes.xmargin / ymargin

// The panels' plot areas: two columns, two rows, room left for tick labels and the turned y
// label, above for the title, below for tick labels and the x label.
AxesBox panel_box(int column, int row) {
  const int left = column == 0 ? 190 : 1240, top = row == 0 ? 70 : 830;
  return {left, top, left + 820, top + 560};
}

// Data limits plus matplotlib's 5 % margins on x; y from 0 (bars stick to it) to max + 5 %.
AxesRange padded(double x_lo, double x_hi, double y_hi) {
  const double dx = (x_hi - x_lo) * kMargin;
  return {x_lo - dx, x_hi + dx, 0.0, y_hi > 0 ? y_hi * (1 + kMargin) : 1.0};
}

FigurePanel histogram_panel(Canvas& canvas, AxesBox box, const std::vector<double>& values, Rgb colour,
                            const std::string& title, const std::string& x_label) {
  const Histogram h = numpy_histogram(values, 30);
  const auto max_count = static_cast<double>(*std::max_element(h.counts.begin(), h.counts.end()));
  FigurePanel panel{title, box, padded(h.edges.front(), h.edges.back(), max_count), {}};
  Axes axes(canvas, box, panel.range);
  for (std::size_t k = 0; k < h.counts.size(); ++k) {
    const auto count = static_cast<double>(h.counts[k]);
    if (count > 0) axes.bar(h.edges[k], h.edges[k + 1], 0, count, colour, kAlpha, &kEdge);
    panel.bars.push_back({axes.px(h.edges[k]), axes.px(h.edges[k + 1]), 0, count});
  }
  axes.decorate(title, x_label, "Frequency", true, true);
  return panel;
}

FigurePanel stacked_panel(Canvas& canvas, AxesBox box, const std::vector<double>& prompt, const std::vector<double>& output) {
  double top = 0;
  for (std::size_t i = 0; i < prompt.size(); ++i) top = std::max(top, prompt[i] + output[i]);
  const double n = static_cast<double>(prompt.size());
  FigurePanel panel{"Tokens per Request (Stacked)", box, padded(-0.4, n - 1 + 0.4, top), {}};
  Axes axes(canvas, box, panel.range);
  for (std::size_t pass = 0; pass < 2; ++pass)
    for (std::size_t i = 0; i < prompt.size(); ++i) {
      const double x = static_cast<double>(i), low = pass == 0 ? 0 : prompt[i], high = low + (pass == 0 ? prompt[i] : output[i]);
      axes.bar(x - 0.4, x + 0.4, low, high, pass == 0 ? kSteelBlue : kCoral, kAlpha);
      panel.bars.push_back({axes.px(x - 0.4), axes.px(x + 0.4), low, high});
    }
  axes.decorate(panel.title, "Request ID", "Tokens", false, true);
  axes.legend({{"Prompt Tokens", kSteelBlue}, {"Output Tokens", kCoral}}, kAlpha);
  return panel;
}

}  // namespace

Histogram numpy_histogram(const std::vector<double>& values, int bins) {
  require(!values.empty() && bins > 0, "histogram: no values");
  double lo = *std::min_element(values.begin(), values.end()), hi = *std::max_element(values.begin(), values.end());
  if (lo == hi) {
    lo -= 0.5;
    hi += 0.5;
  }
  Histogram h;
  h.counts.assign(static_cast<std::size_t>(bins), 0);
  const double step = (hi - lo) / bins;
  for (int k = 0; k <= bins; ++k) h.edges.push_back(k == bins ? hi : lo + k * step);
  // numpy's _histogram fast path: index from the scaled value, then nudged by the edges.
  const double norm = bins / (hi - lo);
  for (const double v : values) {
    auto k = static_cast<std::int64_t>((v - lo) * norm);
    if (k == bins) --k;
    if (v < h.edges[static_cast<std::size_t>(k)]) --k;
    else if (k != bins - 1 && v >= h.edges[static_cast<std::size_t>(k) + 1]) ++k;
    ++h.counts[static_cast<std::size_t>(k)];
  }
  return h;
}

DatasetStatsFigure draw_dataset_stats(const std::vector<std::int64_t>& prompt_tokens,
                                      const std::vector<std::int64_t>& output_tokens) {
  require(!prompt_tokens.empty(), "--plot-dataset-stats: no requests to plot");
  require(prompt_tokens.size() == output_tokens.size(), "--plot-dataset-stats: prompt and output lengths differ in count");
  std::vector<double> prompt(prompt_tokens.begin(), prompt_tokens.end()), output(output_tokens.begin(), output_tokens.end());
  std::vector<double> total(prompt.size());
  for (std::size_t i = 0; i < prompt.size(); ++i) total[i] = prompt[i] + output[i];
  DatasetStatsFigure figure{Canvas(kDatasetStatsWidth, kDatasetStatsHeight, Rgb{255, 255, 255}), {}};
  figure.panels.push_back(histogram_panel(figure.canvas, panel_box(0, 0), prompt, kSteelBlue, "Prompt Tokens Distribution", "Prompt Tokens"));
  figure.panels.push_back(histogram_panel(figure.canvas, panel_box(1, 0), output, kCoral, "Output Tokens Distribution", "Output Tokens"));
  figure.panels.push_back(histogram_panel(figure.canvas, panel_box(0, 1), total, kMediumSeaGreen, "Total Tokens Distribution",
                                          "Total Tokens (Prompt + Output)"));
  figure.panels.push_back(stacked_panel(figure.canvas, panel_box(1, 1), prompt, output));
  return figure;
}

}  // namespace encbench::raster
