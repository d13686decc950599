#include "harness/client/datasets_vllm.hpp"

#include <algorithm>
#include <fstream>
#include <random>
#include <sstream>

#include <nlohmann/json.hpp>

#include "harness/client/datasets_tokens.hpp"
#include "harness/core/error.hpp"

namespace encbench::client {

namespace {

// vLLM's is_valid_sequence with its defaults (min 4, prompt <= 1024, prompt + output <= 2048).
bool is_valid_sequence(std::int64_t prompt_len, std::int64_t output_len, bool skip_min_output_check) {
  return prompt_len >= 4 && (skip_min_output_check || output_len >= 4) && prompt_len <= 1024 &&
         prompt_len + output_len <= 2048;
}

std::string turn_value(const nlohmann::json& turn, const std::string& where) {
  require(turn.is_object() && turn.contains("value") && turn["value"].is_string(),
          where + ": a conversation turn needs a string 'value'");
  return turn["value"].get<std::string>();
}

std::string image_url(const std::string& path) {
  for (const char* scheme : {"http://", "https://", "file://"})
    if (path.rfind(scheme, 0) == 0) return path;
  return "file://" + path;
}

}  // namespace

bool is_tokenizer_dataset(const std::string& name) { return name == "sharegpt" || name == "prefix_repetition"; }

Dataset load_sharegpt(const DatasetConfig& config, const tokenizer::Tokenizer& tok) {
  const VllmTextDatasetConfig& vllm = config.vllm_text;
  require(!config.path.empty(), "--dataset-name sharegpt needs --dataset-path (a ShareGPT JSON file)");
  std::ifstream in(config.path, std::ios::binary);
  require(static_cast<bool>(in), "--dataset-path " + config.path + ": cannot read");
  std::ostringstream text;
  text << in.rdbuf();
  const auto data = nlohmann::json::parse(text.str(), nullptr, false);
  require(!data.is_discarded() && data.is_array(), config.path + ": not a JSON array (ShareGPT layout)");
  std::vector<std::size_t> entries;
  for (std::size_t i = 0; i < data.size(); ++i)
    if (data[i].is_object() && data[i].contains("conversations") && data[i]["conversations"].is_array() &&
        data[i]["conversations"].size() >= 2)
      entries.push_back(i);
  std::mt19937_64 rng(config.seed);
  if (config.shuffle) std::shuffle(entries.begin(), entries.end(), rng);
  const std::optional<int> fixed_output = config.output_len ? config.output_len : vllm.sharegpt_output_len;
  Dataset ds;
  ds.layout = "sharegpt";
  ds.file = config.path;
  ds.source_rows = data.size();
  for (const std::size_t i : entries) {
    if (ds.samples.size() >= config.num_prompts) break;
    const std::string where = config.path + ": entry " + std::to_string(i);
    const auto& conv = data[i]["conversations"];
    SampleRequest s;
    s.source_row = i;
    s.prompt = turn_value(conv[0], where);
    s.prompt_len = static_cast<std::int64_t>(tok.encode(s.prompt, true).size());
    const std::int64_t output =
        fixed_output ? *fixed_output : static_cast<std::int64_t>(tok.encode(turn_value(conv[1], where), true).size());
    if (!is_valid_sequence(s.prompt_len, output, fixed_output.has_value())) continue;
    s.output_len = static_cast<int>(output);
    if (data[i].contains("image") && data[i]["image"].is_string()) {
      s.image_urls.push_back(image_url(data[i]["image"].get<std::string>()));
      ds.multimodal = true;
    }
    ds.samples.push_back(std::move(s));
  }
  require(!ds.samples.empty(), config.path + ": no ShareGPT entry passes vLLM's length filter");
  if (ds.samples.size() < config.num_prompts && config.oversample) {
    std::uniform_int_distribution<std::size_t> pick(0, ds.samples.size() - 1);
    const std::size_t have = ds.samples.size();
    while (ds.samples.size() < config.num_prompts) {
      ds.samples.push_back(ds.samples[pick(rng) % have]);
      ++ds.oversampled;
    }
  }
  return ds;
}

Dataset load_prefix_repetition(const DatasetConfig& config, const tokenizer::Tokenizer& tok) {
  const VllmTextDatasetConfig& vllm = config.vllm_text;
  require(vllm.num_prefixes > 0 && vllm.prefix_len >= 0 && vllm.suffix_len >= 0 && vllm.output_len > 0,
          "--prefix-repetition-num-prefixes and --prefix-repetition-output-len must be > 0, the lengths >= 0");
  const std::size_t per_prefix = config.num_prompts / static_cast<std::size_t>(vllm.num_prefixes);
  require(per_prefix > 0, "--num-prompts (" + std::to_string(config.num_prompts) +
                              ") must be >= --prefix-repetition-num-prefixes (" + std::to_string(vllm.num_prefixes) + ")");
  std::mt19937_64 rng(config.seed);
  std::uniform_int_distribution<tokenizer::TokenId> any_id(0, static_cast<tokenizer::TokenId>(tok.vocab_size()) - 1);
  // vLLM's _generate_exact_length_tokens: random ids, decoded and re-encoded to the length.
  const auto exact = [&](int length) {
    std::vector<tokenizer::TokenId> ids(static_cast<std::size_t>(length));
    for (auto& id : ids) id = any_id(rng);
    TokenPrompt p = decode_to_target_len(tok, std::move(ids), static_cast<std::size_t>(length), rng);
    p = exact_length_prompt(tok, std::move(p), static_cast<std::size_t>(length));  // as for random prompts
    return tok.encode(p.prompt);
  };
  Dataset ds;
  ds.layout = "prefix_repetition";
  ds.source_rows = per_prefix * static_cast<std::size_t>(vllm.num_prefixes);
  for (int p = 0; p < vllm.num_prefixes; ++p) {
    const auto prefix = exact(vllm.prefix_len);
    for (std::size_t k = 0; k < per_prefix; ++k) {
      auto combined = prefix;
      const auto suffix = exact(vllm.suffix_len);
      combined.insert(combined.end(), suffix.begin(), suffix.end());
      SampleRequest s;
      s.source_row = ds.samples.size();
      s.prompt = tok.decode(combined);
      s.prompt_len = static_cast<std::int64_t>(combined.size());
      s.output_len = vllm.output_len;
      ds.samples.push_back(std::move(s));
    }
  }
  if (config.shuffle) std::shuffle(ds.samples.begin(), ds.samples.end(), rng);
  return ds;
}

}  // namespace encbench::client
