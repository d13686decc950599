#pragma once
// The language model's step cost from a roofline of the model and the device, so the encoder's
// share of TTFT (and with it every closed-loop headline) follows from published numbers instead
// of arbitrary constants:
//
//   step_ms = fixed_ms                                   (estimate: launches, sampling, scheduling)
//           + weight_bytes / mem_bytes_per_s             (every step reads all weights once: decode)
//           + prefill_tokens * 2 * params / peak_flops   (prefill compute)
//           + context_tokens * kv_bytes_per_token / mem_bytes_per_s   (decode reads the KV cache)
//
// params = the transformer's matrices (attention, MLP) + the LM head; weights are bf16 (2 bytes).
// Dimensions come from the model preset's "language_model" block (each model's published
// config.json text_config, cited in the file).
#include <string>

#include <nlohmann/json.hpp>

#include "harness/device/sim_profile.hpp"

namespace encbench::serving {

struct LanguageModelDims {
  int layers = 0;
  int hidden = 0;
  int intermediate = 0;
  int heads = 0;
  int kv_heads = 0;
  int head_dim = 0;          // per attention head
  long long vocab = 0;
  bool tied_embeddings = false;  // LM head shares the embedding (no extra weight bytes)
  bool qk_norm = false;          // an RMSNorm on q and on k in every attention (Qwen3): two ops more a layer
  std::string source;

  double matrix_params() const;     // attention + MLP matrices of every layer
  double head_params() const;       // LM head (vocab x hidden)
  double weight_bytes() const;      // bf16: every weight read once per step (embeddings included)
  double flops_per_token() const;   // 2 x (matrix + head params)
  double kv_bytes_per_token() const;  // K and V of every layer, bf16
};

// Reads {"language_model": {...}} of a model preset JSON; throws InvalidInput naming the field.
// Returns false (and leaves `dims` alone) when the preset has no such block.
bool read_language_model(const nlohmann::json& model_json, const std::string& origin, LanguageModelDims& dims);

struct LmRoofline {
  double fixed_ms = 2.0;            // estimate, see above
  double weights_ms = 0;            // weight_bytes / bandwidth
  double prefill_ms_per_token = 0;  // flops_per_token / peak
  double context_ms_per_token = 0;  // kv_bytes_per_token / bandwidth
  std::string derivation;           // the arithmetic, for logs and docs
};

LmRoofline lm_roofline(const LanguageModelDims& model, const device::SimProfile& profile, double fixed_ms = 2.0);

}  // namespace encbench::serving
