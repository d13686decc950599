#pragma once
// Inputs of the vision tower: images/videos by size -> grid_thw (vision::smart_resize) ->
// cu_seqlens, and for window models window_index / cu_window_seqlens exactly as Qwen2.5-VL's
// get_window_index. Pure host functions, no device.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/encoder/model_config.hpp"
#include "harness/vision/grid.hpp"

namespace encbench::encoder {

// `--image WxH` (width x height, like "1920x1080"); `--video FxWxH` (frames x width x height).
struct MediaInput {
  bool is_video = false;
  long long frames = 1;
  long long width = 0, height = 0;
  std::string spec;  // as given
};
MediaInput parse_image_spec(const std::string& spec);  // throws InvalidInput
MediaInput parse_video_spec(const std::string& spec);

// Resizes one input for `model` (images use image_*_pixels, videos video_*_pixels; a video's
// frames are padded to a multiple of temporal_patch_size by repeating the last frame, as the
// processors do, so t = ceil(frames / temporal_patch_size)).
vision::GridTHW grid_for(const MediaInput& input, const ModelConfig& model);

// Tokens the language model receives for all inputs: vision::merged_tokens of each grid with the
// model's spatial_merge_size, summed.
long long output_tokens(const std::vector<vision::GridTHW>& grids, const ModelConfig& model);

// [0] + cumsum(repeat(h*w, t)): one segment per image and per temporal group of a video.
std::vector<std::int32_t> build_cu_seqlens(const std::vector<vision::GridTHW>& grids);

struct WindowPlan {
  std::vector<std::int32_t> window_index;       // merged-token permutation (window order)
  std::vector<std::int32_t> cu_window_seqlens;  // after unique_consecutive, in patches
  std::vector<std::int32_t> raw_cu_window_seqlens;  // before unique_consecutive
};
// Qwen2.5-VL get_window_index (pads by ws - llm_h % ws even when divisible, -100 fill, counts
// valid entries per window, cumsum * merge_unit, then unique_consecutive).
WindowPlan build_window_plan(const std::vector<vision::GridTHW>& grids, const ModelConfig& model);

// Per-sequence lengths from cumulative endpoints (what the unpad kernel takes).
std::vector<std::int32_t> lengths_from_cumulative(const std::vector<std::int32_t>& cu);

// Everything the forward needs about one batch of inputs, computed once on the host.
struct InputPlan {
  std::vector<vision::GridTHW> grids;
  long long num_patches = 0;
  std::vector<std::int32_t> cu_seqlens;         // full attention
  std::vector<std::int32_t> cu_window_seqlens;  // window models only (else == cu_seqlens)
  std::vector<std::int32_t> window_index;       // merged tokens; identity for non-window models
  // Per patch (in original order): 2D rotary positions (row, col) in patches, merge-block order.
  std::vector<std::int32_t> pos_h, pos_w;
  // Per patch (original order): which full segment / which window it belongs to, derived from the
  // grid geometry directly (independent of the window_index formula; used by the reference).
  std::vector<std::int32_t> full_segment_id, window_segment_id;
};
InputPlan plan_inputs(const std::vector<vision::GridTHW>& grids, const ModelConfig& model);

nlohmann::json to_json(const std::vector<vision::GridTHW>& grids);

}  // namespace encbench::encoder
