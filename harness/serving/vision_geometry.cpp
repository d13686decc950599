#include "harness/serving/vision_geometry.hpp"

#include <algorithm>
#include <cmath>

#include "harness/core/error.hpp"
#include "harness/encoder/inputs.hpp"

namespace encbench::server {
namespace {

// Python 3 round(): nearest integer, ties to even (std::nearbyint in the default rounding mode).
std::int64_t python_round(double x) { return static_cast<std::int64_t>(std::nearbyint(x)); }

}  // namespace

std::vector<std::string> known_vision_models() {
  return {"qwen2-vl-7b", "qwen2.5-vl-7b", "qwen3-vl-8b"};
}

VisionGeometry vision_geometry_for(const std::string& model) {
  VisionGeometry g;
  g.model = model;
  if (model == "qwen2-vl-7b" || model == "qwen2.5-vl-7b") {
    // preprocessor_config.json of Qwen2-VL / Qwen2.5-VL: min_pixels 3136, max_pixels 12845056;
    // vLLM's and transformers' processor defaults cap at 28*28*1280, which serving uses.
    g.patch_size = 14;
    g.min_pixels = 56 * 56;
    g.max_pixels = 28 * 28 * 1280;
    return g;
  }
  if (model == "qwen3-vl-8b") {
    // Qwen3-VL: patch 16 (factor 32); size {shortest_edge: 65536, longest_edge: 16777216}.
    g.patch_size = 16;
    g.min_pixels = 65536;
    g.max_pixels = 16777216;
    return g;
  }
  std::string known;
  for (const auto& name : known_vision_models()) known += (known.empty() ? "" : ", ") + name;
  throw InvalidInput("unknown model '" + model + "' (known: " + known + ")");
}

ResizedSize smart_resize(std::int64_t height, std::int64_t width, std::int64_t factor,
                         std::int64_t min_pixels, std::int64_t max_pixels) {
  require(height > 0 && width > 0, "image size must be positive, got " + std::to_string(height) +
                                       "x" + std::to_string(width));
  require(factor > 0 && min_pixels > 0 && max_pixels >= min_pixels,
          "smart_resize needs factor > 0 and 0 < min_pixels <= max_pixels");
  const double ratio = static_cast<double>(std::max(height, width)) /
                       static_cast<double>(std::min(height, width));
  require(ratio <= 200.0, "absolute aspect ratio must be smaller than 200, got " +
                              std::to_string(ratio));
  const double h = static_cast<double>(height);
  const double w = static_cast<double>(width);
  const double f = static_cast<double>(factor);
  std::int64_t h_bar = python_round(h / f) * factor;
  std::int64_t w_bar = python_round(w / f) * factor;
  if (h_bar * w_bar > max_pixels) {
    const double beta = std::sqrt(h * w / static_cast<double>(max_pixels));
    h_bar = std::max(factor, static_cast<std::int64_t>(std::floor(h / beta / f)) * factor);
    w_bar = std::max(factor, static_cast<std::int64_t>(std::floor(w / beta / f)) * factor);
  } else if (h_bar * w_bar < min_pixels) {
    const double beta = std::sqrt(static_cast<double>(min_pixels) / (h * w));
    h_bar = static_cast<std::int64_t>(std::ceil(h * beta / f)) * factor;
    w_bar = static_cast<std::int64_t>(std::ceil(w * beta / f)) * factor;
  }
  return {h_bar, w_bar};
}

GridTHW image_grid(const VisionGeometry& geometry, std::int64_t height, std::int64_t width) {
  const ResizedSize resized = smart_resize(height, width, geometry.factor(), geometry.min_pixels,
                                           geometry.max_pixels);
  return {1, resized.height / geometry.patch_size, resized.width / geometry.patch_size};
}

std::int64_t image_token_count(const VisionGeometry& geometry, const GridTHW& grid) {
  // The encoder's patch merger decides how many tokens the LM receives (one rule for both).
  return encoder::output_tokens(encoder::GridTHW{static_cast<int>(grid.t), static_cast<int>(grid.h),
                                                 static_cast<int>(grid.w)},
                                static_cast<int>(geometry.merge_size));
}

}  // namespace encbench::server
