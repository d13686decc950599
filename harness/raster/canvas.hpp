#pragma once
// A small RGB raster for the figures encbench writes as PNG (--plot-dataset-stats): filled and
// alpha-blended rectangles, lines, and text in the built-in 5x7 font (font5x7.hpp), scaled by an
// integer factor. No globals; every drawing call clips to the canvas.
#include <cstdint>
#include <string_view>
#include <vector>

namespace encbench::raster {

struct Rgb {
  std::uint8_t r = 0, g = 0, b = 0;
  bool operator==(const Rgb&) const = default;
};

class Canvas {
 public:
  Canvas(int width, int height, Rgb background);
  int width() const { return width_; }
  int height() const { return height_; }
  const std::vector<std::uint8_t>& rgb() const { return rgb_; }  // width * height * 3, row-major
  Rgb pixel(int x, int y) const;

  // [x0, x1) x [y0, y1); alpha blends the colour over what is there (out = a*c + (1-a)*old, rounded).
  void fill_rect(int x0, int y0, int x1, int y1, Rgb color, double alpha = 1.0);
  // A straight line between two pixels (both included), `thickness` pixels wide.
  void line(int x0, int y0, int x1, int y1, Rgb color, int thickness = 1, double alpha = 1.0);
  // Text with its top-left corner at (x, y); each font pixel a scale x scale block.
  void text(int x, int y, std::string_view s, Rgb color, int scale);
  // Text turned 90 degrees counter-clockwise (read bottom to top, as a y-axis label); (x, y) is
  // the top-left of its bounding box.
  void text_up(int x, int y, std::string_view s, Rgb color, int scale);

  static int text_width(std::string_view s, int scale);
  static int text_height(int scale);

 private:
  void blend(int x, int y, Rgb color, double alpha);
  int width_, height_;
  std::vector<std::uint8_t> rgb_;
};

}  // namespace encbench::raster
