#pragma once
// Inputs of the vision tower: images/videos by size -> grid_thw (Qwen smart_resize) ->
// cu_seqlens, and for window models window_index / cu_window_seqlens exactly as Qwen2.5-VL's
// get_window_index. Pure host functions, no device.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/encoder/grid.hpp"
#include "harness/encoder/model_config.hpp"

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

// PIL's decompression-bomb limit (2 * Image.MAX_IMAGE_PIXELS): larger inputs are rejected before
// resizing, as a Qwen processor fed through PIL would.
inline constexpr long long kMaxInputPixels = 2LL * 89'478'485;
// Qwen2-VL's limit on max(h, w) / min(h, w).
inline constexpr double kMaxAspectRatio = 200.0;

struct ResizedSize { long long height = 0, width = 0; };
// transformers' Qwen2-VL smart_resize, its current rules: round(h/f)*f (Python round: half to
// even), then scale down (floor, at least one factor) above max_pixels or up (ceil) below
// min_pixels. Throws InvalidInput for non-positive sizes, an aspect ratio above 200, or limits
// outside 0 < min_pixels <= max_pixels. The one smart_resize: the server's geometry uses it too.
ResizedSize smart_resize(long long height, long long width, long long factor, long long min_pixels,
                         long long max_pixels);

// Resizes one input for `model` (images use image_*_pixels, videos video_*_pixels; a video's
// frames are padded to a multiple of temporal_patch_size by repeating the last frame, as the
// processors do, so t = ceil(frames / temporal_patch_size)).
GridTHW grid_for(const MediaInput& input, const ModelConfig& model);

// Tokens the language model receives for one input: the patch merger turns each
// spatial_merge_size x spatial_merge_size block of patches into one token (t*h*w / merge^2).
// Throws InvalidInput when h or w is not a positive multiple of the merge size.
long long output_tokens(const GridTHW& grid, int spatial_merge_size);
long long output_tokens(const std::vector<GridTHW>& grids, const ModelConfig& model);

// [0] + cumsum(repeat(h*w, t)): one segment per image and per temporal group of a video.
std::vector<std::int32_t> build_cu_seqlens(const std::vector<GridTHW>& grids);

struct WindowPlan {
  std::vector<std::int32_t> window_index;       // merged-token permutation (window order)
  std::vector<std::int32_t> cu_window_seqlens;  // after unique_consecutive, in patches
  std::vector<std::int32_t> raw_cu_window_seqlens;  // before unique_consecutive
};
// Qwen2.5-VL get_window_index (pads by ws - llm_h % ws even when divisible, -100 fill, counts
// valid entries per window, cumsum * merge_unit, then unique_consecutive).
WindowPlan build_window_plan(const std::vector<GridTHW>& grids, const ModelConfig& model);

// Per-sequence lengths from cumulative endpoints (what the unpad kernel takes).
std::vector<std::int32_t> lengths_from_cumulative(const std::vector<std::int32_t>& cu);

// Everything the forward needs about one batch of inputs, computed once on the host.
struct InputPlan {
  std::vector<GridTHW> grids;
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
InputPlan plan_inputs(const std::vector<GridTHW>& grids, const ModelConfig& model);

nlohmann::json to_json(const std::vector<GridTHW>& grids);

}  // namespace encbench::encoder
