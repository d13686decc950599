// The language model's step cost from the model's published dimensions and the device profile.
#include <gtest/gtest.h>

#include "harness/core/error.hpp"
#include "harness/core/result_json.hpp"
#include "harness/device/sim_profile.hpp"
#include "harness/serving/lm_roofline.hpp"

using namespace encbench;
using namespace encbench::serving;

namespace {

LanguageModelDims dims_of(const std::string& preset) {
  const auto path = std::filesystem::path(ENCBENCH_TEST_SOURCE_DIR) / "scenarios/models" / (preset + ".json");
  LanguageModelDims dims;
  EXPECT_TRUE(read_language_model(read_json_file(path), path.string(), dims)) << preset;
  return dims;
}

double total_params(const LanguageModelDims& d) {
  return d.matrix_params() + static_cast<double>(d.vocab) * d.hidden + (d.tied_embeddings ? 0.0 : d.head_params());
}

}  // namespace

// Independent check of the dimensions: the parameter counts the model cards publish.
TEST(LmRoofline, DimensionsGiveThePublishedParameterCounts) {
  EXPECT_NEAR(total_params(dims_of("qwen2.5-vl-7b")) / 1e9, 7.61, 0.05);  // Qwen2.5-7B: 7.61B
  EXPECT_NEAR(total_params(dims_of("qwen3-vl-8b")) / 1e9, 8.19, 0.05);    // Qwen3-8B: 8.2B
  EXPECT_NEAR(total_params(dims_of("qwen3-vl-4b")) / 1e9, 4.02, 0.05);    // Qwen3-4B: 4.0B
}

TEST(LmRoofline, StepCostFollowsTheRooflineArithmetic) {
  const LanguageModelDims d = dims_of("qwen3-vl-8b");
  device::SimProfile profile;
  profile.peak_fp16_flops_per_s.value = 1e15;  // round numbers: 1 PFLOP/s, 1 TB/s
  profile.mem_bytes_per_s.value = 1e12;
  const LmRoofline r = lm_roofline(d, profile, 2.0);
  EXPECT_DOUBLE_EQ(r.fixed_ms, 2.0);
  EXPECT_NEAR(r.weights_ms, d.weight_bytes() / 1e9, 1e-9);           // bytes / 1e12 B/s in ms
  EXPECT_NEAR(r.weights_ms, 16.4, 0.2);                               // ~8.2B bf16 parameters
  EXPECT_NEAR(r.prefill_ms_per_token, d.flops_per_token() / 1e12, 1e-12);
  // KV per token: 2 (K, V) x 36 layers x 8 heads x 128 x 2 bytes = 147,456 bytes.
  EXPECT_DOUBLE_EQ(d.kv_bytes_per_token(), 147456.0);
  EXPECT_NEAR(r.context_ms_per_token, 147456.0 / 1e9, 1e-12);
  EXPECT_NE(r.derivation.find("estimate"), std::string::npos);
}

TEST(LmRoofline, BadBlocksAreClearErrors) {
  LanguageModelDims dims;
  EXPECT_FALSE(read_language_model(nlohmann::json::object(), "m.json", dims));
  const nlohmann::json missing = {{"language_model", {{"num_hidden_layers", 2}}}};
  EXPECT_THROW(read_language_model(missing, "m.json", dims), InvalidInput);
  nlohmann::json negative = {{"language_model",
                              {{"num_hidden_layers", -1}, {"hidden_size", 8}, {"intermediate_size", 8},
                               {"num_attention_heads", 2}, {"num_key_value_heads", 1}, {"vocab_size", 10},
                               {"source", "test"}}}};
  EXPECT_THROW(read_language_model(negative, "m.json", dims), InvalidInput);
  negative["language_model"]["num_hidden_layers"] = 2;
  negative["language_model"].erase("source");
  EXPECT_THROW(read_language_model(negative, "m.json", dims), InvalidInput);
}
