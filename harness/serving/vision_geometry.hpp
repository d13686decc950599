#pragma once
// Image geometry of the Qwen-VL family: how an image's size becomes a patch grid and a number of
// language-model tokens. Kept here (not in encoder/) until the encoder area's version lands on
// main; the formulas follow HF transformers' Qwen2-VL image processor (smart_resize).
#include <cstdint>
#include <string>

#include "harness/serving/grid.hpp"
#include <vector>

namespace encbench::server {

// Patch grid of one image or video: t frames-groups x h x w patches (before merging).
// The engine's grid type: the scheduler (harness/engine) carries the images it schedules.
using GridTHW = engine::GridTHW;

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

struct ResizedSize {
  std::int64_t height = 0;
  std::int64_t width = 0;
};

// transformers' smart_resize: both sides multiples of `factor`, pixel count within
// [min_pixels, max_pixels], aspect ratio kept as closely as possible. Python's round() (half to
// even) is reproduced. Throws InvalidInput for a non-positive side or an aspect ratio over 200.
ResizedSize smart_resize(std::int64_t height, std::int64_t width, std::int64_t factor,
                         std::int64_t min_pixels, std::int64_t max_pixels);

// height x width pixels -> resized -> grid (t=1 for a still image).
GridTHW image_grid(const VisionGeometry& geometry, std::int64_t height, std::int64_t width);

// Language-model tokens an image contributes: encoder::output_tokens (patches / merge^2).
std::int64_t image_token_count(const VisionGeometry& geometry, const GridTHW& grid);

}  // namespace encbench::server
