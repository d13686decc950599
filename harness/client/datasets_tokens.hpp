#pragma once
// Prompts and prompt lengths in the model's own tokens (`--tokenizer`, harness/tokenizer), as
// vLLM's benchmark datasets make and count them, and the per-request split of text and vision
// tokens (the Qwen-VL image-token rule of harness/vision/vision_geometry). Runs at dataset load,
// before any timing; the send loop never tokenizes.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "harness/client/dataset.hpp"
#include "harness/client/numpy_random.hpp"
#include "harness/tokenizer/tokenizer.hpp"

namespace encbench::client {

// Where --tokenizer (or --model when no --tokenizer is given) finds a tokenizer.json: the path
// itself, a directory holding one, or a Hugging Face hub id already in the local hub cache
// (hf_hub_cache_roots(), datasets_parquet.hpp). nullopt: none found (hub downloads are
// not done here).
std::optional<std::filesystem::path> resolve_tokenizer(const std::string& name);

struct TokenPrompt {
  std::string prompt;
  std::int64_t prompt_len = 0;  // tokens of `prompt` re-encoded (vLLM's len(adjusted sequence))
  std::int64_t mismatch = 0;    // re-encoded length minus the target after the retries (vLLM warns)
  std::int64_t vllm_mismatch = 0;  // the same after vLLM's retries alone (before exact_length_prompt)
  std::int64_t output_len = 0;     // random datasets: vLLM's output length draw for this request
};

// vLLM's gen_prompt_decode_to_target_len: decode, re-encode, pad with random ids or truncate,
// at most `max_retry` times; the last decode is the prompt.
TokenPrompt decode_to_target_len(const tokenizer::Tokenizer& tok, std::vector<tokenizer::TokenId> ids,
                                 std::size_t target, const std::function<tokenizer::TokenId()>& random_id,
                                 int max_retry = 10);
// The same with ids uniform over the vocabulary from `rng` (our generator, for datasets whose
// vLLM draws are not reproduced).
TokenPrompt decode_to_target_len(const tokenizer::Tokenizer& tok, std::vector<tokenizer::TokenId> ids,
                                 std::size_t target, std::mt19937_64& rng, int max_retry = 10);

// Beyond vLLM: a prompt still off after vLLM's retries is cut (in tokens) and filled with a
// token that repeats as itself (" the", " a", ...) until it re-encodes to exactly `target`;
// unchanged when the vocabulary has no such token or 64 rounds do not converge.
TokenPrompt exact_length_prompt(const tokenizer::Tokenizer& tok, TokenPrompt prompt, std::size_t target);

// vLLM's RandomDataset.sample (then exact_length_prompt), with vLLM's own draws: numpy's
// default_rng(seed) (numpy_random.hpp) gives the same lengths, offsets, prefix and padding ids,
// so the same prompts and output lengths as vLLM for the same seed and tokenizer. Input lengths from [floor(L'(1-r)), ceil(L'(1+r))] with
// L' = input_len - num_special_tokens_to_add, a prefix of prefix_len ids drawn once from the
// vocab without special ids (decoded and re-encoded to prefix_len, datasets.py@003cf029's
// get_prefix), then for request i the ids allowed[(offset_i + i + k) % |allowed|],
// k < input_len_i, offset_i uniform in [0, vocab_size); decoded and re-encoded to the target.
std::vector<TokenPrompt> random_token_prompts(const tokenizer::Tokenizer& tok, const RandomDatasetConfig& config,
                                              std::size_t count, std::uint64_t seed);

// The pieces of random_token_prompts, for datasets that draw between its prompts (random-mm).
// draw_random_prompt_plan: vLLM's get_sampling_params (input lengths, output lengths, offsets,
// `count` of each, from `rng`) and get_prefix (prefix_len allowed ids, then decoded and re-encoded
// to prefix_len with padding ids from `rng`, as datasets.py@003cf029 does).
struct RandomPromptPlan {
  std::vector<std::int64_t> input_lens, output_lens, offsets;
  std::vector<tokenizer::TokenId> allowed, prefix;
  std::size_t prefix_len = 0;  // the asked length (vLLM's target uses it, not prefix.size())
};
RandomPromptPlan draw_random_prompt_plan(const tokenizer::Tokenizer& tok, const RandomDatasetConfig& config,
                                         std::size_t count, NumpyGenerator& rng);
// Request i's prompt (vLLM's generate_token_sequence, padding ids from `rng`), then
// exact_length_prompt (draws nothing).
TokenPrompt random_token_prompt(const tokenizer::Tokenizer& tok, const RandomPromptPlan& plan, std::size_t i,
                                NumpyGenerator& rng);

// After load_dataset: with a tokenizer, random prompts become token prompts (random/random-mm)
// and every prompt_len becomes len(tokenizer(prompt).input_ids) (file datasets, add_special_tokens
// as vLLM's datasets call it); text_tokens is prompt_len. vision_tokens is the image-token count
// of the sample's images for `vision_model` (qwen2-vl-7b, qwen2.5-vl-7b, qwen3-vl-8b, or a hub
// name of those), -1 when the model or an image's size is unknown. Returns what it did, one line.
std::string apply_tokenizer(Dataset& dataset, const DatasetConfig& config, const tokenizer::Tokenizer* tok,
                            const std::string& vision_model);

// "Qwen/Qwen2.5-VL-7B-Instruct" -> "qwen2.5-vl-7b"; "" when not a known vision model.
std::string vision_model_key(const std::string& model);

}  // namespace encbench::client

namespace encbench::client {
struct DatasetTokens {
  std::string tokenizer_file;  // "" when no tokenizer was found (prompt lengths are words)
  std::string note;            // one line for stderr
};
// Finds and loads the tokenizer of --tokenizer (or of --model when --tokenizer is empty) and
// applies it to the dataset (apply_tokenizer). A --tokenizer that names an existing file or
// directory must load (InvalidInput otherwise); one that is neither, and no tokenizer for the
// model, leave today's word counts, said in the note.
DatasetTokens tokenize_dataset(Dataset& dataset, const DatasetConfig& config, const std::string& tokenizer_flag,
                               const std::string& model);
}  // namespace encbench::client

namespace encbench::client {
struct TokenizedDataset {
  Dataset dataset;
  DatasetTokens tokens;
};
// load_dataset then tokenize_dataset; for vLLM's tokenizer-made datasets (sharegpt,
// prefix_repetition: datasets_vllm.hpp) the tokenizer is required (InvalidInput without one).
// skip_tokenizer: --skip-tokenizer-init (no tokenizer is loaded).
TokenizedDataset load_tokenized_dataset(const DatasetConfig& config, const std::string& tokenizer_flag,
                                        const std::string& model, bool skip_tokenizer);
}  // namespace encbench::client
