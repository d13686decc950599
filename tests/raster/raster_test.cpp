// harness/raster: the canvas's blending and clipping, the font's extent, nice ticks, numpy's
// histogram against a plain count, and vLLM's --plot-dataset-stats figure read back from its PNG:
// the size, the panels' bars at heights proportional to independently counted bins.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "harness/core/error.hpp"
#include "harness/imaging/decode.hpp"
#include "harness/raster/canvas.hpp"
#include "harness/raster/chart.hpp"
#include "harness/raster/dataset_stats_figure.hpp"

namespace encbench::raster {
namespace {

constexpr Rgb kWhite{255, 255, 255}, kBlack{0, 0, 0};

TEST(Canvas, FillsClipsAndBlendsWithMatplotlibsAlpha) {
  Canvas c(10, 6, kWhite);
  c.fill_rect(-5, -5, 3, 2, kBlack);  // clipped to [0, 3) x [0, 2)
  EXPECT_EQ(c.pixel(2, 1), kBlack);
  EXPECT_EQ(c.pixel(3, 1), kWhite);
  EXPECT_EQ(c.pixel(2, 2), kWhite);
  c.fill_rect(5, 3, 100, 100, Rgb{70, 130, 180}, 0.7);  // steelblue at alpha 0.7 over white
  EXPECT_EQ(c.pixel(9, 5), (Rgb{126, 168, 203}));        // 0.7 c + 0.3 * 255, rounded
  EXPECT_EQ(c.pixel(4, 5), kWhite);
  EXPECT_EQ(c.pixel(100, 100), Rgb{});  // outside: nothing, no crash
  c.line(0, 5, 4, 5, kBlack);
  for (int x = 0; x <= 4; ++x) EXPECT_EQ(c.pixel(x, 5), kBlack) << x;
  EXPECT_THROW(Canvas(0, 5, kWhite), InvalidInput);
}

TEST(Canvas, TextInksOnlyInsideItsBoxAndTurnsForYLabels) {
  const std::string s = "Prompt Tokens (0-9)";
  Canvas c(400, 200, kWhite);
  c.text(10, 20, s, kBlack, 2);
  const int w = Canvas::text_width(s, 2), h = Canvas::text_height(2);
  EXPECT_EQ(w, (static_cast<int>(s.size()) * 6 - 1) * 2);
  int inside = 0, outside = 0;
  for (int y = 0; y < 200; ++y)
    for (int x = 0; x < 400; ++x) {
      const bool ink = c.pixel(x, y) == kBlack;
      const bool in_box = x >= 10 && x < 10 + w && y >= 20 && y < 20 + h;
      (in_box ? inside : outside) += ink ? 1 : 0;
    }
  EXPECT_EQ(outside, 0);
  EXPECT_GT(inside, static_cast<int>(s.size()) * 20);  // every visible glyph inks several 2x2 blocks
  // Turned: the same ink count inside an h x w box.
  Canvas up(200, 400, kWhite);
  up.text_up(20, 10, s, kBlack, 2);
  int inside_up = 0;
  for (int y = 0; y < 400; ++y)
    for (int x = 0; x < 200; ++x)
      if (up.pixel(x, y) == kBlack) {
        EXPECT_TRUE(x >= 20 && x < 20 + h && y >= 10 && y < 10 + w) << x << "," << y;
        ++inside_up;
      }
  EXPECT_EQ(inside_up, inside);
  // Distinct glyphs: "0" and "O", "1" and "l" differ.
  Canvas a(20, 10, kWhite), b(20, 10, kWhite);
  a.text(0, 0, "0l", kBlack, 1);
  b.text(0, 0, "O1", kBlack, 1);
  EXPECT_NE(a.rgb(), b.rgb());
}

TEST(Chart, MatplotlibTicksCoverTheRangeAtA125Step) {
  for (const auto& [lo, hi] : {std::pair{0.0, 105.0}, std::pair{-0.55, 11.55}, std::pair{93.5, 160.5}, std::pair{0.0, 1.05},
                               std::pair{2950.0, 3050.0}}) {
    const auto t = matplotlib_ticks(lo, hi);
    ASSERT_GE(t.size(), 3u) << lo << " " << hi;
    EXPECT_LE(t.size(), 9u);
    const double step = t[1] - t[0], magnitude = std::pow(10.0, std::floor(std::log10(step)));
    const double m = step / magnitude;
    EXPECT_TRUE(std::abs(m - 1) < 1e-9 || std::abs(m - 2) < 1e-9 || std::abs(m - 2.5) < 1e-9 || std::abs(m - 5) < 1e-9) << step;
    EXPECT_GE(t.front(), lo - 1e-9);
    EXPECT_LE(t.back(), hi + 1e-9);
    EXPECT_GT(t.front() - lo, -step);
    EXPECT_LT(hi - t.back(), step);
  }
  EXPECT_EQ(matplotlib_tick_label(20, 20), "20");
  EXPECT_EQ(matplotlib_tick_label(0.25, 0.25), "0.25");
  EXPECT_EQ(matplotlib_tick_label(7.5, 2.5), "7.5");
}

// numpy.histogram: equal bins over [min, max], the last closed.
TEST(Chart, HistogramIsNumpysBinning) {
  std::mt19937 rng(4);
  std::vector<double> v;
  for (int i = 0; i < 500; ++i) v.push_back(std::uniform_int_distribution<int>(100, 900)(rng));
  v.push_back(100);
  v.push_back(900);
  const auto h = numpy_histogram(v, 30);
  ASSERT_EQ(h.counts.size(), 30u);
  ASSERT_EQ(h.edges.size(), 31u);
  EXPECT_EQ(h.edges.front(), 100);
  EXPECT_EQ(h.edges.back(), 900);
  std::vector<std::int64_t> plain(30, 0);
  for (const double x : v) {
    int k = 0;
    while (k < 29 && x >= 100 + (k + 1) * (800.0 / 30)) ++k;
    ++plain[static_cast<std::size_t>(k)];
  }
  EXPECT_EQ(h.counts, plain);
  const auto one = numpy_histogram({7, 7, 7}, 30);  // numpy: [6.5, 7.5], all in the middle bin
  EXPECT_EQ(one.edges.front(), 6.5);
  EXPECT_EQ(one.counts[15], 3);
}

std::vector<std::int64_t> plain_counts(const std::vector<double>& v) {
  const double lo = *std::min_element(v.begin(), v.end()), hi = *std::max_element(v.begin(), v.end());
  std::vector<std::int64_t> counts(30, 0);
  for (const double x : v) ++counts[static_cast<std::size_t>(std::min(29.0, std::floor((x - lo) / (hi - lo) * 30)))];
  return counts;
}

// Height in pixels of the histogram bar whose columns are [left, right): its black top edge,
// found from the top of the plot down, to the plot's bottom; looked for in three columns, since a
// grid line (grey at alpha 0.3, over the bars) may cross one.
int bar_height(const imaging::RgbImage& img, const FigurePanel& p, const FigureBar& b) {
  int best = 0;
  for (const int x : {b.left + 5, (b.left + b.right) / 2, b.right - 6})
    for (int y = p.box.top + 2; y < p.box.bottom - 2; ++y) {
      const std::size_t i = (static_cast<std::size_t>(y) * img.info.width + static_cast<std::size_t>(x)) * 3;
      if (img.rgb[i] == 0 && img.rgb[i + 1] == 0 && img.rgb[i + 2] == 0) {
        best = std::max(best, p.box.bottom - y);
        break;
      }
    }
  return best;
}

TEST(DatasetStatsFigure, ThePngHasVllmsPanelsWithBarsProportionalToTheCounts) {
  std::mt19937 rng(11);
  std::vector<std::int64_t> prompt, output;
  for (int i = 0; i < 300; ++i) {
    prompt.push_back(std::uniform_int_distribution<int>(150, 600)(rng) + (i % 7 == 0 ? 300 : 0));
    output.push_back(std::uniform_int_distribution<int>(20, 200)(rng));
  }
  const auto figure = draw_dataset_stats(prompt, output);
  const std::string png = imaging::encode_png(figure.canvas.rgb().data(), figure.canvas.width(), figure.canvas.height(), 3);
  const auto img = imaging::decode_rgb(reinterpret_cast<const std::uint8_t*>(png.data()), png.size(), imaging::Limits{});
  EXPECT_EQ(img.info.format, imaging::Format::png);
  EXPECT_EQ(img.info.width, 2100);  // figsize (14, 10) at dpi 150
  EXPECT_EQ(img.info.height, 1500);
  EXPECT_EQ(img.rgb, figure.canvas.rgb());  // lossless
  ASSERT_EQ(figure.panels.size(), 4u);
  EXPECT_EQ(figure.panels[0].title, "Prompt Tokens Distribution");
  EXPECT_EQ(figure.panels[1].title, "Output Tokens Distribution");
  EXPECT_EQ(figure.panels[2].title, "Total Tokens Distribution");
  EXPECT_EQ(figure.panels[3].title, "Tokens per Request (Stacked)");
  std::vector<double> total;
  for (std::size_t i = 0; i < prompt.size(); ++i) total.push_back(static_cast<double>(prompt[i] + output[i]));
  const std::vector<std::vector<double>> data{{prompt.begin(), prompt.end()}, {output.begin(), output.end()}, total};
  for (std::size_t p = 0; p < 3; ++p) {
    const auto counts = plain_counts(data[p]);
    const FigurePanel& panel = figure.panels[p];
    ASSERT_EQ(panel.bars.size(), 30u);
    const auto max_count = *std::max_element(counts.begin(), counts.end());
    const double plot_h = panel.box.bottom - panel.box.top, per_count = plot_h / (max_count * 1.05);
    int tallest = 0;
    for (std::size_t k = 0; k < 30; ++k) {
      const int h = bar_height(img, panel, panel.bars[k]);
      tallest = std::max(tallest, h);
      EXPECT_NEAR(h, counts[k] * per_count, 3.0) << panel.title << " bin " << k << " count " << counts[k];
    }
    EXPECT_GT(tallest, 0.93 * plot_h) << panel.title;  // the top bin reaches 1/1.05 of the plot
    EXPECT_LT(tallest, 0.97 * plot_h) << panel.title;
  }
}

TEST(DatasetStatsFigure, StackedBarsArePromptBelowOutput) {
  const std::vector<std::int64_t> prompt{100, 300, 50, 200, 250, 120, 80, 10}, output{50, 10, 200, 100, 40, 60, 90, 5};
  const auto figure = draw_dataset_stats(prompt, output);
  const FigurePanel& panel = figure.panels[3];
  ASSERT_EQ(panel.bars.size(), 16u);  // 8 prompt bars, then 8 output bars on them
  const double plot_h = panel.box.bottom - panel.box.top;
  const Rgb prompt_colour{126, 168, 203}, output_colour{255, 165, 133};  // steelblue, coral at alpha 0.7
  for (std::size_t i = 0; i < 4; ++i) {  // the left half: no legend over them
    const int x = (panel.bars[i].left + panel.bars[i].right) / 2;
    int first_output = -1, first_prompt = -1;
    for (int y = panel.box.top + 2; y < panel.box.bottom - 2; ++y) {
      const Rgb c = figure.canvas.pixel(x, y);
      if (first_output < 0 && c == output_colour) first_output = y;
      if (first_prompt < 0 && c == prompt_colour) first_prompt = y;
    }
    const double scale = plot_h / (310 * 1.05);  // the tallest stack: 300 + 10
    EXPECT_NEAR(panel.box.bottom - first_output, (prompt[i] + output[i]) * scale, 3.0) << i;
    EXPECT_NEAR(panel.box.bottom - first_prompt, prompt[i] * scale, 3.0) << i;
  }
  EXPECT_THROW(draw_dataset_stats({}, {}), InvalidInput);
  EXPECT_THROW(draw_dataset_stats({1, 2}, {1}), InvalidInput);
}

}  // namespace
}  // namespace encbench::raster
