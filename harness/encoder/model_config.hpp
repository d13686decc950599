#pragma once
// Vision-tower shapes as plain data, loaded from scenarios/models/*.json (or a user's file).
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace encbench::encoder {

enum class MlpKind { quick_gelu, silu_gated, gelu_tanh };
enum class NormKind { layer, rms };
std::string_view to_string(MlpKind kind);   // "quick-gelu" | "silu-gated" | "gelu-tanh"
std::string_view to_string(NormKind kind);  // "layer" | "rms"

struct ModelConfig {
  std::string name;
  std::string family;  // "qwen2-vl" | "qwen2.5-vl" | "qwen3-vl" (informative)
  std::string source;  // where the numbers come from
  int depth = 0;
  int hidden_size = 0;
  int num_heads = 0;
  int head_dim = 0;
  int patch_size = 0;
  int temporal_patch_size = 0;
  int spatial_merge_size = 0;
  int window_size = 0;                      // pixels; 0 = no window attention
  std::vector<int> fullatt_block_indexes;   // window models: layers with full attention
  int intermediate_size = 0;
  MlpKind mlp_kind = MlpKind::quick_gelu;
  NormKind norm = NormKind::layer;
  std::vector<int> deepstack_visual_indexes;
  int out_hidden_size = 0;
  long long image_min_pixels = 0, image_max_pixels = 0;
  long long video_min_pixels = 0, video_max_pixels = 0;

  bool has_windows() const { return window_size > 0; }
  // True when layer uses full attention (every layer of a model without windows).
  bool is_full_attention_layer(int layer) const;
  // The Ascend rule: pad iff 64 < head_dim < 128, to 128.
  bool needs_head_pad() const { return head_dim > 64 && head_dim < 128; }
  int padded_head_dim() const { return needs_head_pad() ? 128 : head_dim; }
  // Merged tokens per window side: window_size / merge / patch (4 for Qwen2.5-VL).
  int window_merged_tokens() const { return window_size / spatial_merge_size / patch_size; }
  int merge_unit() const { return spatial_merge_size * spatial_merge_size; }
  int resize_factor() const { return patch_size * spatial_merge_size; }
};

// Parses and validates; throws InvalidInput naming the field and `origin` (file or preset).
ModelConfig model_from_json(const nlohmann::json& doc, const std::string& origin);
nlohmann::json to_json(const ModelConfig& model);

// The folder of the bundled presets: $ENCBENCH_MODELS_DIR, else scenarios/models found from the
// working directory or the source tree.
std::filesystem::path default_models_dir();
std::vector<std::string> known_models(const std::filesystem::path& models_dir);
// `name_or_path`: a preset name ("qwen2.5-vl-7b") or a path to a .json file. Unknown names list
// the known ones.
ModelConfig load_model(const std::string& name_or_path,
                       const std::filesystem::path& models_dir = default_models_dir());
// The JSON file load_model reads for `name_or_path` (same lookup and errors), for readers of
// other blocks of the preset (the server's language_model).
std::filesystem::path find_model_file(const std::string& name_or_path,
                                      const std::filesystem::path& models_dir = default_models_dir());

}  // namespace encbench::encoder
