#include "harness/raster/canvas.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "harness/core/error.hpp"
#include "harness/raster/font5x7.hpp"

namespace encbench::raster {

Canvas::Canvas(int width, int height, Rgb background) : width_(width), height_(height) {
  require(width > 0 && height > 0 && width <= 16384 && height <= 16384, "raster: canvas size out of range");
  rgb_.resize(static_cast<std::size_t>(width) * static_cast<std::size_t>(height) * 3);
  for (std::size_t i = 0; i < rgb_.size(); i += 3) {
    rgb_[i] = background.r;
    rgb_[i + 1] = background.g;
    rgb_[i + 2] = background.b;
  }
}

Rgb Canvas::pixel(int x, int y) const {
  if (x < 0 || y < 0 || x >= width_ || y >= height_) return {};
  const std::size_t i = (static_cast<std::size_t>(y) * static_cast<std::size_t>(width_) + static_cast<std::size_t>(x)) * 3;
  return {rgb_[i], rgb_[i + 1], rgb_[i + 2]};
}

void Canvas::blend(int x, int y, Rgb color, double alpha) {
  if (x < 0 || y < 0 || x >= width_ || y >= height_) return;
  const std::size_t i = (static_cast<std::size_t>(y) * static_cast<std::size_t>(width_) + static_cast<std::size_t>(x)) * 3;
  if (alpha >= 1.0) {
    rgb_[i] = color.r;
    rgb_[i + 1] = color.g;
    rgb_[i + 2] = color.b;
    return;
  }
  const auto mix = [alpha](std::uint8_t c, std::uint8_t old) {
    return static_cast<std::uint8_t>(std::lround(alpha * c + (1.0 - alpha) * old));
  };
  rgb_[i] = mix(color.r, rgb_[i]);
  rgb_[i + 1] = mix(color.g, rgb_[i + 1]);
  rgb_[i + 2] = mix(color.b, rgb_[i + 2]);
}

void Canvas::fill_rect(int x0, int y0, int x1, int y1, Rgb color, double alpha) {
  x0 = std::max(x0, 0);
  y0 = std::max(y0, 0);
  x1 = std::min(x1, width_);
  y1 = std::min(y1, height_);
  for (int y = y0; y < y1; ++y)
    for (int x = x0; x < x1; ++x) blend(x, y, color, alpha);
}

void Canvas::line(int x0, int y0, int x1, int y1, Rgb color, int thickness, double alpha) {
  // Bresenham; each step stamps a thickness x thickness square centred on the point.
  const int dx = std::abs(x1 - x0), dy = -std::abs(y1 - y0), sx = x0 < x1 ? 1 : -1, sy = y0 < y1 ? 1 : -1;
  const int lo = -(thickness - 1) / 2, hi = thickness / 2;
  for (int err = dx + dy;;) {
    for (int oy = lo; oy <= hi; ++oy)
      for (int ox = lo; ox <= hi; ++ox) blend(x0 + ox, y0 + oy, color, alpha);
    if (x0 == x1 && y0 == y1) break;
    const int e2 = 2 * err;
    if (e2 >= dy) {
      err += dy;
      x0 += sx;
    }
    if (e2 <= dx) {
      err += dx;
      y0 += sy;
    }
  }
}

void Canvas::text(int x, int y, std::string_view s, Rgb color, int scale) {
  for (std::size_t k = 0; k < s.size(); ++k)
    for (int row = 0; row < kGlyphHeight; ++row)
      for (int col = 0; col < kGlyphWidth; ++col)
        if (glyph_pixel(s[k], col, row)) {
          const int px = x + (static_cast<int>(k) * kGlyphAdvance + col) * scale, py = y + row * scale;
          fill_rect(px, py, px + scale, py + scale, color);
        }
}

void Canvas::text_up(int x, int y, std::string_view s, Rgb color, int scale) {
  // Glyph column c of character k lands on row (width - 1 - (k*advance + c)); glyph row r on column r.
  const int length = text_width(s, scale);
  for (std::size_t k = 0; k < s.size(); ++k)
    for (int row = 0; row < kGlyphHeight; ++row)
      for (int col = 0; col < kGlyphWidth; ++col)
        if (glyph_pixel(s[k], col, row)) {
          const int px = x + row * scale;
          const int py = y + length - (static_cast<int>(k) * kGlyphAdvance + col + 1) * scale;
          fill_rect(px, py, px + scale, py + scale, color);
        }
}

int Canvas::text_width(std::string_view s, int scale) {
  return s.empty() ? 0 : (static_cast<int>(s.size()) * kGlyphAdvance - 1) * scale;
}

int Canvas::text_height(int scale) { return kGlyphHeight * scale; }

}  // namespace encbench::raster
