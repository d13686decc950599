#include "harness/encoder/model_config.hpp"

#include <algorithm>
#include <cstdlib>
#include <set>
#include <sstream>

#include "harness/core/error.hpp"
#include "harness/core/result_json.hpp"

namespace encbench::encoder {

std::string_view to_string(MlpKind kind) {
  switch (kind) {
    case MlpKind::quick_gelu: return "quick-gelu";
    case MlpKind::silu_gated: return "silu-gated";
    case MlpKind::gelu_tanh: return "gelu-tanh";
  }
  return "?";
}
std::string_view to_string(NormKind kind) { return kind == NormKind::rms ? "rms" : "layer"; }

bool ModelConfig::is_full_attention_layer(int layer) const {
  if (!has_windows()) return true;
  return std::find(fullatt_block_indexes.begin(), fullatt_block_indexes.end(), layer) !=
         fullatt_block_indexes.end();
}

namespace {

class FieldReader {
 public:
  FieldReader(const nlohmann::json& doc, std::string origin) : doc_(doc), origin_(std::move(origin)) {}

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw InvalidInput("model " + origin_ + ": field '" + field + "' " + what);
  }
  const nlohmann::json& get(const std::string& field) const {
    auto it = doc_.find(field);
    if (it == doc_.end()) fail(field, "is missing");
    return *it;
  }
  long long integer(const std::string& field, long long min, long long max) const {
    const auto& v = get(field);
    if (!v.is_number_integer()) fail(field, "must be an integer, got " + v.dump());
    long long x = v.get<long long>();
    if (x < min || x > max)
      fail(field, "must be in [" + std::to_string(min) + ", " + std::to_string(max) + "], got " +
                      std::to_string(x));
    return x;
  }
  std::string text(const std::string& field) const {
    const auto& v = get(field);
    if (!v.is_string()) fail(field, "must be a string, got " + v.dump());
    return v.get<std::string>();
  }
  std::string optional_text(const std::string& field) const {
    return doc_.contains(field) ? text(field) : std::string();
  }
  std::vector<int> int_list(const std::string& field, int max_value) const {
    const auto& v = get(field);
    if (!v.is_array()) fail(field, "must be a list of integers, got " + v.dump());
    std::vector<int> out;
    for (const auto& e : v) {
      if (!e.is_number_integer() || e.get<long long>() < 0 || e.get<long long>() >= max_value)
        fail(field, "must hold integers in [0, " + std::to_string(max_value) + "), got " + e.dump());
      out.push_back(e.get<int>());
    }
    if (std::set<int>(out.begin(), out.end()).size() != out.size() ||
        !std::is_sorted(out.begin(), out.end()))
      fail(field, "must be strictly increasing, got " + v.dump());
    return out;
  }

 private:
  const nlohmann::json& doc_;
  std::string origin_;
};

}  // namespace

ModelConfig model_from_json(const nlohmann::json& doc, const std::string& origin) {
  if (!doc.is_object()) throw InvalidInput("model " + origin + ": expected a JSON object");
  static constexpr const char* kKnownFields[] = {
      "name", "family", "source", "depth", "hidden_size", "num_heads", "head_dim", "patch_size",
      "temporal_patch_size", "spatial_merge_size", "window_size", "fullatt_block_indexes",
      "intermediate_size", "mlp_kind", "norm", "deepstack_visual_indexes", "out_hidden_size",
      "image_min_pixels", "image_max_pixels", "video_min_pixels", "video_max_pixels",
      "language_model"};  // read by the server (harness/serving/lm_roofline.hpp), not the encoder
  for (const auto& item : doc.items()) {
    // A named copy, not a structured binding: clang 14 (the fuzz build) cannot capture those.
    const std::string& key = item.key();
    if (std::find_if(std::begin(kKnownFields), std::end(kKnownFields),
                     [&](const char* k) { return key == k; }) == std::end(kKnownFields))
      throw InvalidInput("model " + origin + ": unknown field '" + key + "'");
  }
  FieldReader r(doc, origin);
  ModelConfig m;
  m.name = r.text("name");
  m.family = r.optional_text("family");
  m.source = r.optional_text("source");
  m.depth = static_cast<int>(r.integer("depth", 1, 256));
  m.num_heads = static_cast<int>(r.integer("num_heads", 1, 256));
  m.head_dim = static_cast<int>(r.integer("head_dim", 8, 256));
  m.hidden_size = static_cast<int>(r.integer("hidden_size", 8, 65536));
  if (m.hidden_size != m.num_heads * m.head_dim)
    r.fail("hidden_size", "must equal num_heads * head_dim (" + std::to_string(m.num_heads) + " * " +
                              std::to_string(m.head_dim) + "), got " + std::to_string(m.hidden_size));
  if (m.head_dim % 4 != 0) r.fail("head_dim", "must be a multiple of 4 (2D rotary halves)");
  m.patch_size = static_cast<int>(r.integer("patch_size", 1, 1024));
  m.temporal_patch_size = static_cast<int>(r.integer("temporal_patch_size", 1, 64));
  m.spatial_merge_size = static_cast<int>(r.integer("spatial_merge_size", 1, 16));
  m.window_size = static_cast<int>(r.integer("window_size", 0, 1 << 20));
  m.fullatt_block_indexes = r.int_list("fullatt_block_indexes", m.depth);
  if (m.window_size > 0) {
    if (m.window_size % (m.spatial_merge_size * m.patch_size) != 0)
      r.fail("window_size", "must be a multiple of spatial_merge_size * patch_size (" +
                                std::to_string(m.spatial_merge_size * m.patch_size) + ")");
  } else if (!m.fullatt_block_indexes.empty()) {
    r.fail("fullatt_block_indexes", "must be empty when window_size is 0 (every layer is full)");
  }
  m.intermediate_size = static_cast<int>(r.integer("intermediate_size", 1, 1 << 20));
  const std::string mlp = r.text("mlp_kind");
  if (mlp == "quick-gelu") m.mlp_kind = MlpKind::quick_gelu;
  else if (mlp == "silu-gated") m.mlp_kind = MlpKind::silu_gated;
  else if (mlp == "gelu-tanh") m.mlp_kind = MlpKind::gelu_tanh;
  else r.fail("mlp_kind", "must be one of quick-gelu, silu-gated, gelu-tanh; got '" + mlp + "'");
  const std::string norm = r.text("norm");
  if (norm == "layer") m.norm = NormKind::layer;
  else if (norm == "rms") m.norm = NormKind::rms;
  else r.fail("norm", "must be one of layer, rms; got '" + norm + "'");
  m.deepstack_visual_indexes = r.int_list("deepstack_visual_indexes", m.depth);
  m.out_hidden_size = static_cast<int>(r.integer("out_hidden_size", 1, 1 << 20));
  constexpr long long kMaxPixels = 1LL << 40;
  m.image_min_pixels = r.integer("image_min_pixels", 1, kMaxPixels);
  m.image_max_pixels = r.integer("image_max_pixels", m.image_min_pixels, kMaxPixels);
  m.video_min_pixels = r.integer("video_min_pixels", 1, kMaxPixels);
  m.video_max_pixels = r.integer("video_max_pixels", m.video_min_pixels, kMaxPixels);
  return m;
}

nlohmann::json to_json(const ModelConfig& m) {
  return {{"name", m.name},
          {"family", m.family},
          {"source", m.source},
          {"depth", m.depth},
          {"hidden_size", m.hidden_size},
          {"num_heads", m.num_heads},
          {"head_dim", m.head_dim},
          {"padded_head_dim", m.padded_head_dim()},
          {"patch_size", m.patch_size},
          {"temporal_patch_size", m.temporal_patch_size},
          {"spatial_merge_size", m.spatial_merge_size},
          {"window_size", m.window_size},
          {"fullatt_block_indexes", m.fullatt_block_indexes},
          {"intermediate_size", m.intermediate_size},
          {"mlp_kind", std::string(to_string(m.mlp_kind))},
          {"norm", std::string(to_string(m.norm))},
          {"deepstack_visual_indexes", m.deepstack_visual_indexes},
          {"out_hidden_size", m.out_hidden_size},
          {"image_min_pixels", m.image_min_pixels},
          {"image_max_pixels", m.image_max_pixels},
          {"video_min_pixels", m.video_min_pixels},
          {"video_max_pixels", m.video_max_pixels}};
}

std::filesystem::path default_models_dir() {
  namespace fs = std::filesystem;
  if (const char* env = std::getenv("ENCBENCH_MODELS_DIR"); env && *env) return env;
  std::error_code ec;
  // Walk up from the working directory (the binary usually runs from the repo or build dir).
  for (fs::path dir = fs::current_path(ec); !dir.empty(); dir = dir.parent_path()) {
    fs::path candidate = dir / "scenarios" / "models";
    if (fs::is_directory(candidate, ec)) return candidate;
    if (dir == dir.parent_path()) break;
  }
  if (const char* src = std::getenv("ENCBENCH_SOURCE_DIR"); src && *src)
    return fs::path(src) / "scenarios" / "models";
#ifdef ENCBENCH_SOURCE_DIR_DEFAULT
  return fs::path(ENCBENCH_SOURCE_DIR_DEFAULT) / "scenarios" / "models";
#else
  return "scenarios/models";
#endif
}

std::vector<std::string> known_models(const std::filesystem::path& models_dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(models_dir, ec)) {
    if (entry.path().extension() == ".json") names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

ModelConfig load_model(const std::string& name_or_path, const std::filesystem::path& models_dir) {
  const std::filesystem::path path = find_model_file(name_or_path, models_dir);
  return model_from_json(read_json_file(path), path.string());
}

std::filesystem::path find_model_file(const std::string& name_or_path, const std::filesystem::path& models_dir) {
  namespace fs = std::filesystem;
  require(!name_or_path.empty(), "--model: empty model name");
  const bool looks_like_path = name_or_path.find('/') != std::string::npos ||
                               fs::path(name_or_path).extension() == ".json";
  fs::path path = looks_like_path ? fs::path(name_or_path) : models_dir / (name_or_path + ".json");
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) {
    if (looks_like_path) throw InvalidInput("model file not found: " + path.string());
    std::ostringstream msg;
    msg << "unknown model '" << name_or_path << "'; known models (" << models_dir.string() << "):";
    for (const auto& n : known_models(models_dir)) msg << " " << n;
    msg << "; or pass a JSON file path";
    throw InvalidInput(msg.str());
  }
  return path;
}

}  // namespace encbench::encoder
