#include "harness/encoder/inputs.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "harness/core/error.hpp"
#include "harness/vision/smart_resize.hpp"

namespace encbench::encoder {

namespace {

std::vector<long long> split_dims(const std::string& spec, const std::string& flag,
                                  std::size_t expected, const std::string& shape) {
  std::vector<long long> dims;
  std::size_t pos = 0;
  while (pos <= spec.size()) {
    std::size_t next = spec.find_first_of("xX", pos);
    if (next == std::string::npos) next = spec.size();
    std::string part = spec.substr(pos, next - pos);
    char* end = nullptr;
    errno = 0;
    long long value = part.empty() ? 0 : std::strtoll(part.c_str(), &end, 10);
    if (part.empty() || end != part.c_str() + part.size() || errno == ERANGE)
      throw InvalidInput(flag + " '" + spec + "': expected " + shape + " with integers");
    dims.push_back(value);
    pos = next + 1;
  }
  if (dims.size() != expected) throw InvalidInput(flag + " '" + spec + "': expected " + shape);
  for (long long d : dims) {
    if (d <= 0)
      throw InvalidInput(flag + " '" + spec + "': every dimension must be positive, got " +
                         std::to_string(d));
  }
  return dims;
}

void check_input_pixels(const MediaInput& in, const std::string& flag) {
  if (in.width > vision::kMaxInputPixels / in.height)
    throw InvalidInput(flag + " '" + in.spec + "': " + std::to_string(in.width) + "x" +
                       std::to_string(in.height) + " exceeds the input limit of " +
                       std::to_string(vision::kMaxInputPixels) + " pixels per frame (PIL decompression-bomb limit)");
}

}  // namespace

MediaInput parse_image_spec(const std::string& spec) {
  auto d = split_dims(spec, "--image", 2, "WIDTHxHEIGHT (e.g. 448x448)");
  MediaInput in{false, 1, d[0], d[1], spec};
  check_input_pixels(in, "--image");
  return in;
}

MediaInput parse_video_spec(const std::string& spec) {
  auto d = split_dims(spec, "--video", 3, "FRAMESxWIDTHxHEIGHT (e.g. 8x448x448)");
  require(d[0] <= 4096, "--video '" + spec + "': at most 4096 frames");
  MediaInput in{true, d[0], d[1], d[2], spec};
  check_input_pixels(in, "--video");
  return in;
}

vision::GridTHW grid_for(const MediaInput& input, const ModelConfig& model) {
  const long long factor = model.resize_factor();
  const vision::ResizedSize size =
      input.is_video
          ? vision::smart_resize(input.height, input.width, factor, model.video_min_pixels, model.video_max_pixels)
          : vision::smart_resize(input.height, input.width, factor, model.image_min_pixels, model.image_max_pixels);
  vision::GridTHW g;
  const long long tps = model.temporal_patch_size;
  g.t = input.is_video ? static_cast<int>((input.frames + tps - 1) / tps) : 1;
  g.h = static_cast<int>(size.height / model.patch_size);
  g.w = static_cast<int>(size.width / model.patch_size);
  return g;
}

std::vector<std::int32_t> build_cu_seqlens(const std::vector<vision::GridTHW>& grids) {
  std::vector<std::int32_t> cu{0};
  long long total = 0;
  for (const auto& g : grids) {
    for (int t = 0; t < g.t; ++t) {
      total += static_cast<long long>(g.h) * g.w;
      require(total < (1LL << 31), "too many patches in one forward (int32 cu_seqlens overflow)");
      cu.push_back(static_cast<std::int32_t>(total));
    }
  }
  return cu;
}

WindowPlan build_window_plan(const std::vector<vision::GridTHW>& grids, const ModelConfig& model) {
  WindowPlan plan;
  plan.raw_cu_window_seqlens.push_back(0);
  const int merge = model.spatial_merge_size;
  const int unit = model.merge_unit();
  const int ws = model.window_merged_tokens();
  constexpr std::int32_t kPad = -100;
  std::int32_t window_index_id = 0;
  for (const auto& g : grids) {
    const int llm_h = g.h / merge, llm_w = g.w / merge;
    const int pad_h = ws - llm_h % ws;  // a full empty window even when divisible (as upstream)
    const int pad_w = ws - llm_w % ws;
    const int nwh = (llm_h + pad_h) / ws, nww = (llm_w + pad_w) / ws;
    const int ph = llm_h + pad_h, pw = llm_w + pad_w;
    // index_padded[t][y][x] = t*llm_h*llm_w + y*llm_w + x, or -100 outside the grid.
    auto padded = [&](int t, int y, int x) -> std::int32_t {
      if (y >= llm_h || x >= llm_w) return kPad;
      return static_cast<std::int32_t>(static_cast<long long>(t) * llm_h * llm_w +
                                       static_cast<long long>(y) * llm_w + x);
    };
    (void)ph;
    (void)pw;
    // reshape(t, nwh, ws, nww, ws).permute(0, 1, 3, 2, 4): windows in (t, wy, wx) order, each
    // window row-major.
    for (int t = 0; t < g.t; ++t) {
      for (int wy = 0; wy < nwh; ++wy) {
        for (int wx = 0; wx < nww; ++wx) {
          std::int32_t valid = 0;
          for (int iy = 0; iy < ws; ++iy) {
            for (int ix = 0; ix < ws; ++ix) {
              const std::int32_t v = padded(t, wy * ws + iy, wx * ws + ix);
              if (v != kPad) {
                plan.window_index.push_back(v + window_index_id);
                ++valid;
              }
            }
          }
          // cu_seqlens_tmp = seqlens.cumsum(0) * spatial_merge_unit + cu_window_seqlens[-1]
          plan.raw_cu_window_seqlens.push_back(plan.raw_cu_window_seqlens.back() + valid * unit);
        }
      }
    }
    window_index_id += static_cast<std::int32_t>(static_cast<long long>(g.t) * llm_h * llm_w);
  }
  // torch.unique_consecutive
  plan.cu_window_seqlens = plan.raw_cu_window_seqlens;
  plan.cu_window_seqlens.erase(
      std::unique(plan.cu_window_seqlens.begin(), plan.cu_window_seqlens.end()),
      plan.cu_window_seqlens.end());
  return plan;
}

std::vector<std::int32_t> lengths_from_cumulative(const std::vector<std::int32_t>& cu) {
  std::vector<std::int32_t> lengths;
  for (std::size_t i = 1; i < cu.size(); ++i) lengths.push_back(cu[i] - cu[i - 1]);
  return lengths;
}

long long output_tokens(const std::vector<vision::GridTHW>& grids, const ModelConfig& model) {
  long long tokens = 0;
  for (const auto& g : grids) tokens += vision::merged_tokens(g, model.spatial_merge_size);
  return tokens;
}

InputPlan plan_inputs(const std::vector<vision::GridTHW>& grids, const ModelConfig& model) {
  require(!grids.empty(), "no inputs: pass at least one --image or --video");
  InputPlan plan;
  plan.grids = grids;
  const int merge = model.spatial_merge_size;
  for (const auto& g : grids) {
    require(g.t > 0 && g.h > 0 && g.w > 0 && g.h % merge == 0 && g.w % merge == 0,
            "grid (" + std::to_string(g.t) + "," + std::to_string(g.h) + "," + std::to_string(g.w) +
                ") must be positive and h, w multiples of spatial_merge_size");
    plan.num_patches += g.patches();
  }
  plan.cu_seqlens = build_cu_seqlens(grids);
  if (model.has_windows()) {
    WindowPlan wp = build_window_plan(grids, model);
    plan.cu_window_seqlens = std::move(wp.cu_window_seqlens);
    plan.window_index = std::move(wp.window_index);
  } else {
    plan.cu_window_seqlens = plan.cu_seqlens;
    plan.window_index.resize(static_cast<std::size_t>(plan.num_patches / model.merge_unit()));
    for (std::size_t i = 0; i < plan.window_index.size(); ++i)
      plan.window_index[i] = static_cast<std::int32_t>(i);
  }
  // Patches come out of the processor in merge-block order: blocks row-major over
  // (h/merge, w/merge), within a block row-major over (merge, merge). Rotary positions follow
  // (Qwen2-VL rot_pos_emb); segment ids come from the geometry itself.
  const int ws = model.has_windows() ? model.window_merged_tokens() : 0;
  std::int32_t full_id = 0, window_id = 0;
  for (const auto& g : grids) {
    const int bh = g.h / merge, bw = g.w / merge;
    const int nww = ws > 0 ? (bw + ws - 1) / ws : 1;
    const int nwh = ws > 0 ? (bh + ws - 1) / ws : 1;
    for (int t = 0; t < g.t; ++t) {
      for (int by = 0; by < bh; ++by) {
        for (int bx = 0; bx < bw; ++bx) {
          for (int iy = 0; iy < merge; ++iy) {
            for (int ix = 0; ix < merge; ++ix) {
              plan.pos_h.push_back(by * merge + iy);
              plan.pos_w.push_back(bx * merge + ix);
              plan.full_segment_id.push_back(full_id);
              plan.window_segment_id.push_back(
                  ws > 0 ? window_id + (by / ws) * nww + (bx / ws) : full_id);
            }
          }
        }
      }
      ++full_id;
      window_id += nwh * nww;
    }
  }
  return plan;
}

nlohmann::json to_json(const std::vector<vision::GridTHW>& grids) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& g : grids) out.push_back({g.t, g.h, g.w});
  return out;
}

}  // namespace encbench::encoder
