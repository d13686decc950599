#pragma once
// Image geometry of the Qwen-VL family as a server applies it: how an image's size becomes a patch
// grid and a number of language-model tokens, with the serving pixel caps of each model.
// The resize itself is smart_resize (smart_resize.hpp: HF transformers' rules), the one the
// encoder's inputs use too.
#include <cstdint>
#include <string>
#include <vector>

#include "harness/vision/grid.hpp"

namespace encbench::vision {


// What the vision tower's preprocessor needs to know.
struct VisionGeometry {
  std::string model;                      // "qwen2.5-vl-7b"
  std::int64_t patch_size = 14;
  std::int64_t temporal_patch_size = 2;   // a still image is repeated to fill one temporal patch
  std::int64_t merge_size = 2;            // spatial merge: merge^2 patches become one LM token
  std::int64_t min_pixels = 56 * 56;
  std::int64_t max_pixels = 28 * 28 * 1280;
  std::int64_t factor() const { return patch_size * merge_size; }
};

// Built-in geometries: qwen2-vl-7b, qwen2.5-vl-7b, qwen3-vl-8b. Throws InvalidInput naming the
// known models when `model` is none of them.
VisionGeometry vision_geometry_for(const std::string& model);
std::vector<std::string> known_vision_models();

// height x width pixels -> resized (smart_resize) -> grid (t=1 for a still image).
GridTHW image_grid(const VisionGeometry& geometry, std::int64_t height, std::int64_t width);

// Language-model tokens an image contributes: merged_tokens (patches / merge^2).
std::int64_t image_token_count(const VisionGeometry& geometry, const GridTHW& grid);

}  // namespace encbench::vision
