#include "harness/client/datasets_vllm.hpp"
#include "harness/client/python_random.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
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

bool is_tokenizer_dataset(const std::string& name) {
  return name == "sharegpt" || name == "prefix_repetition" || name == "timed_trace" || name == "burstgpt" ||
         name == "sonnet";
}

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
  // vLLM: random.seed(seed); random.shuffle(data) over the entries with two turns.
  if (config.shuffle) PythonRandom(config.seed).shuffle(entries);
  const std::optional<int> fixed_output = vllm.sharegpt_output_len;  // --output-len is folded in by the CLI
  require(!fixed_output || *fixed_output > 0, "--sharegpt-output-len / --output-len must be > 0");
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
    // vLLM's maybe_oversample_requests: random.seed(seed); random.choices(requests, k=missing).
    PythonRandom rng(config.seed);
    const std::size_t have = ds.samples.size();
    while (ds.samples.size() < config.num_prompts) {
      ds.samples.push_back(ds.samples[rng.choice_index(have)]);
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

namespace {

struct TraceRow {
  double timestamp = 0;
  std::int64_t input_length = 0, output_length = 0;
  std::vector<std::int64_t> hash_ids;
};

TraceRow parse_trace_row(const std::string& line, const std::string& where, const VllmTextDatasetConfig& v) {
  const auto j = nlohmann::json::parse(line, nullptr, false);
  require(!j.is_discarded() && j.is_object(), where + ": not a JSON object");
  TraceRow row;
  const auto ts = j.find(v.label_timestamp);
  require(ts != j.end() && ts->is_number() && std::isfinite(ts->get<double>()),
          where + ": no numeric '" + v.label_timestamp + "' (--timed-trace-label-timestamp)");
  row.timestamp = ts->get<double>();
  const auto length = [&](const std::string& label, const char* flag) {
    const auto it = j.find(label);
    require(it != j.end() && it->is_number_integer() && it->get<std::int64_t>() >= 0 && it->get<std::int64_t>() <= (1 << 24),
            where + ": '" + label + "' must be an integer in [0, 16777216] (" + flag + ")");
    return it->get<std::int64_t>();
  };
  row.input_length = length(v.label_input_length, "--timed-trace-label-input-length");
  row.output_length = length(v.label_output_length, "--timed-trace-label-output-length");
  require(row.output_length >= 1, where + ": '" + v.label_output_length + "' must be >= 1 (max tokens of the request)");
  if (const auto h = j.find(v.label_hash_ids); h != j.end()) {
    require(h->is_array(), where + ": '" + v.label_hash_ids + "' must be an array of integers");
    for (const auto& id : *h) {
      require(id.is_number_integer(), where + ": '" + v.label_hash_ids + "' must contain only integers");
      row.hash_ids.push_back(id.get<std::int64_t>());
    }
  }
  return row;
}

}  // namespace

Dataset load_timed_trace(const DatasetConfig& config, const tokenizer::Tokenizer& tok) {
  const VllmTextDatasetConfig& v = config.vllm_text;
  require(!config.path.empty(), "--dataset-name timed_trace needs --dataset-path (a JSONL trace)");
  require(v.chunk_hash_size > 0, "--timed-trace-chunk-hash-size must be > 0");
  require(v.sec_multiplier > 0 && std::isfinite(v.sec_multiplier), "--timed-trace-sec-multiplier must be > 0");
  std::ifstream in(config.path, std::ios::binary);
  require(static_cast<bool>(in), "--dataset-path " + config.path + ": cannot read");
  const auto specials = tok.special_ids();
  std::vector<tokenizer::TokenId> allowed;
  for (tokenizer::TokenId id = 0; id < static_cast<tokenizer::TokenId>(tok.vocab_size()); ++id)
    if (!std::binary_search(specials.begin(), specials.end(), id)) allowed.push_back(id);
  require(!allowed.empty(), "--tokenizer: the vocabulary has no ordinary token");
  std::map<std::pair<std::int64_t, std::int64_t>, std::vector<tokenizer::TokenId>> chunks;
  Dataset ds;
  ds.layout = "timed_trace";
  ds.file = config.path;
  double first = 0, previous = 0;
  std::size_t line_no = 0;
  for (std::string line; ds.samples.size() < config.num_prompts && std::getline(in, line);) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = config.path + ":" + std::to_string(line_no);
    const TraceRow row = parse_trace_row(line, where, v);
    if (ds.samples.empty()) first = previous = row.timestamp;
    require(row.timestamp >= previous, where + ": timestamp " + std::to_string(row.timestamp) +
                                           " is before the previous line's " + std::to_string(previous) +
                                           " (a trace is replayed in file order)");
    previous = row.timestamp;
    std::vector<tokenizer::TokenId> ids;
    std::int64_t remaining = row.input_length;
    for (const std::int64_t h : row.hash_ids) {
      if (remaining == 0) break;
      const std::int64_t size = std::min<std::int64_t>(remaining, v.chunk_hash_size);
      auto [it, fresh] = chunks.try_emplace({h, size});
      if (fresh) {  // seeded by (hash id, size): the same chunk wherever the hash id recurs
        std::mt19937_64 rng(static_cast<std::uint64_t>(h) * 0x9E3779B97F4A7C15ULL ^ static_cast<std::uint64_t>(size));
        std::uniform_int_distribution<std::size_t> pick(0, allowed.size() - 1);
        for (std::int64_t k = 0; k < size; ++k) it->second.push_back(allowed[pick(rng)]);
      }
      ids.insert(ids.end(), it->second.begin(), it->second.end());
      remaining -= size;
    }
    SampleRequest s;
    s.source_row = line_no - 1;
    s.prompt = tok.decode(ids);
    s.prompt_len = static_cast<std::int64_t>(ids.size());
    s.output_len = static_cast<int>(row.output_length);  // the trace's own, as vLLM
    ds.samples.push_back(std::move(s));
    ds.arrival_s.push_back((row.timestamp - first) * v.sec_multiplier);
  }
  require(!ds.samples.empty(), config.path + ": the trace has no entries");
  ds.source_rows = ds.samples.size();
  return ds;
}

}  // namespace encbench::client
