#include "harness/serving/lm_roofline.hpp"

#include <cmath>
#include <sstream>

#include "harness/core/error.hpp"

namespace encbench::serving {

namespace {

constexpr double kBf16Bytes = 2.0;

int positive_int(const nlohmann::json& block, const char* key, const std::string& origin) {
  const auto it = block.find(key);
  require(it != block.end() && it->is_number_integer() && it->get<long long>() > 0 &&
              it->get<long long>() < (1LL << 31),
          origin + ": language_model." + key + " must be a positive integer");
  return static_cast<int>(it->get<long long>());
}

}  // namespace

double LanguageModelDims::matrix_params() const {
  const double h = hidden, q = static_cast<double>(heads) * head_dim, kv = static_cast<double>(kv_heads) * head_dim;
  const double attention = h * q + 2.0 * h * kv + q * h;  // q, k, v, o projections
  const double mlp = 3.0 * h * intermediate;              // gate, up, down (SwiGLU)
  return static_cast<double>(layers) * (attention + mlp);
}

double LanguageModelDims::head_params() const { return static_cast<double>(vocab) * hidden; }

double LanguageModelDims::weight_bytes() const {
  const double embedding = static_cast<double>(vocab) * hidden;
  return kBf16Bytes * (matrix_params() + embedding + (tied_embeddings ? 0.0 : head_params()));
}

double LanguageModelDims::flops_per_token() const { return 2.0 * (matrix_params() + head_params()); }

double LanguageModelDims::kv_bytes_per_token() const {
  return 2.0 * layers * static_cast<double>(kv_heads) * head_dim * kBf16Bytes;
}

bool read_language_model(const nlohmann::json& model_json, const std::string& origin, LanguageModelDims& dims) {
  const auto it = model_json.find("language_model");
  if (it == model_json.end()) return false;
  require(it->is_object(), origin + ": language_model must be an object");
  LanguageModelDims d;
  d.layers = positive_int(*it, "num_hidden_layers", origin);
  d.hidden = positive_int(*it, "hidden_size", origin);
  d.intermediate = positive_int(*it, "intermediate_size", origin);
  d.heads = positive_int(*it, "num_attention_heads", origin);
  d.kv_heads = positive_int(*it, "num_key_value_heads", origin);
  d.head_dim = it->contains("head_dim") ? positive_int(*it, "head_dim", origin) : d.hidden / d.heads;
  d.vocab = positive_int(*it, "vocab_size", origin);
  d.tied_embeddings = it->value("tie_word_embeddings", false);
  if (it->contains("qk_norm")) {
    require((*it)["qk_norm"].is_boolean(), origin + ": language_model.qk_norm must be true or false");
    d.qk_norm = (*it)["qk_norm"].get<bool>();
  }
  d.source = it->value("source", std::string());
  require(!d.source.empty(), origin + ": language_model.source must name where the dimensions come from");
  dims = d;
  return true;
}

LmRoofline lm_roofline(const LanguageModelDims& model, const device::SimProfile& profile, double fixed_ms) {
  LmRoofline r;
  const double peak = profile.roofline_flops_per_s();
  const double bandwidth = profile.mem_bytes_per_s.value;
  r.fixed_ms = fixed_ms;
  r.weights_ms = 1e3 * model.weight_bytes() / bandwidth;
  r.prefill_ms_per_token = 1e3 * model.flops_per_token() / peak;
  r.context_ms_per_token = 1e3 * model.kv_bytes_per_token() / bandwidth;
  std::ostringstream d;
  d.precision(4);
  d << "weights " << model.weight_bytes() / 1e9 << " GB / " << bandwidth / 1e12 << " TB/s = " << r.weights_ms
    << " ms per step; prefill " << model.flops_per_token() / 1e9 << " GFLOP/token / " << peak / 1e12
    << " TFLOP/s = " << r.prefill_ms_per_token << " ms per token; KV " << model.kv_bytes_per_token() / 1e3
    << " kB/token / " << bandwidth / 1e12 << " TB/s = " << r.context_ms_per_token
    << " ms per context token; fixed " << fixed_ms << " ms (estimate)";
  r.derivation = d.str();
  return r;
}

}  // namespace encbench::serving
