#pragma once
// vLLM's --plot-dataset-stats figure (vllm/benchmarks/plot.py generate_dataset_stats_plot, read
// at 41c5903d049b80b83a6e570f52f0f55e31316e49): plt.subplots(2, 2, figsize=(14, 10)) saved at
// dpi=150, so 2100 x 1500 pixels; top-left a 30-bin histogram of the prompt tokens (steelblue),
// top-right of the output tokens (coral), bottom-left of their sum (mediumseagreen), each with
// black bar edges, alpha 0.7, grid alpha 0.3, x label "<what> Tokens", y label "Frequency";
// bottom-right the tokens per request as stacked bars (prompt steelblue below, output coral on
// top, alpha 0.7, width 0.8), x "Request ID", y "Tokens", a legend and a y-only grid. Titles and
// labels are vLLM's strings. Drawn with our raster (canvas.hpp): same panels, bins, colours and
// text; matplotlib's anti-aliased fonts, exact tick choice and bbox_inches="tight" crop are not
// reproduced.
#include <cstdint>
#include <string>
#include <vector>

#include "harness/raster/canvas.hpp"
#include "harness/raster/chart.hpp"

namespace encbench::raster {

// numpy.histogram(values, bins) for equal bins over [min, max] ([v - 0.5, v + 0.5] when all
// values are v): the counts and the edges (bins + 1, numpy's linspace).
struct Histogram {
  std::vector<std::int64_t> counts;
  std::vector<double> edges;
};
Histogram numpy_histogram(const std::vector<double>& values, int bins);

struct FigureBar {
  int left = 0, right = 0;  // pixel columns [left, right)
  double low = 0, high = 0; // data units: the bar spans [low, high] on y
};
struct FigurePanel {
  std::string title;
  AxesBox box;
  AxesRange range;
  std::vector<FigureBar> bars;  // histograms: one per bin (empty bins included); stacked: prompt bars then output bars
};
struct DatasetStatsFigure {
  Canvas canvas;
  std::vector<FigurePanel> panels;  // top-left, top-right, bottom-left, bottom-right
};

inline constexpr int kDatasetStatsWidth = 2100, kDatasetStatsHeight = 1500;

// The figure for per-request prompt and output token counts (vLLM's input_lens, output_lens);
// InvalidInput when they are empty or differ in length.
DatasetStatsFigure draw_dataset_stats(const std::vector<std::int64_t>& prompt_tokens,
                                      const std::vector<std::int64_t>& output_tokens);

}  // namespace encbench::raster
