#include "harness/vision/vision_geometry.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "harness/core/error.hpp"
#include "harness/vision/smart_resize.hpp"

namespace encbench::vision {

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

GridTHW image_grid(const VisionGeometry& geometry, std::int64_t height, std::int64_t width) {
  const ResizedSize resized = smart_resize(height, width, geometry.factor(), geometry.min_pixels,
                                           geometry.max_pixels);
  const std::int64_t h = resized.height / geometry.patch_size, w = resized.width / geometry.patch_size;
  // max_pixels is at most 2^31 (--mm-processor-kwargs) and the aspect ratio at most 200, so a side
  // has at most sqrt(2^31 * 200) / patch patches: far inside int.
  require(h <= std::numeric_limits<int>::max() && w <= std::numeric_limits<int>::max(),
          "image grid " + std::to_string(h) + "x" + std::to_string(w) + " patches is too large");
  return {1, static_cast<int>(h), static_cast<int>(w)};
}

std::int64_t image_token_count(const VisionGeometry& geometry, const GridTHW& grid) {
  // The patch merger decides how many tokens the LM receives (one rule for the encoder and serving).
  return merged_tokens(grid, static_cast<int>(geometry.merge_size));
}

}  // namespace encbench::vision
