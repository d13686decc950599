#include "harness/client/datasets_vllm.hpp"
#include "harness/client/python_random.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <cstdlib>
#include <functional>
#include <map>
#include <set>
#include <random>
#include <sstream>

#include <nlohmann/json.hpp>

#include "harness/client/datasets_tokens.hpp"
#include "harness/client/numpy_random.hpp"
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
    for (std::size_t t = 2; t < conv.size(); t += 2) s.later_user_turns.push_back(turn_value(conv[t], where));  // human turns
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
  // vLLM: prompts_per_prefix, remainder = divmod(num_requests, num_prefixes); the first
  // `remainder` prefixes get one prompt more, so there are exactly num_requests.
  const auto num_prefixes = static_cast<std::size_t>(vllm.num_prefixes);
  const std::size_t per_prefix = config.num_prompts / num_prefixes, remainder = config.num_prompts % num_prefixes;
  require(per_prefix > 0, "--num-prompts (" + std::to_string(config.num_prompts) +
                              ") must be >= --prefix-repetition-num-prefixes (" + std::to_string(vllm.num_prefixes) + ")");
  // vLLM's draws: np.random.seed(seed), then np.random.randint(0, vocab_size, size=n) for each part
  // and for its padding ids (gen_prompt_decode_to_target_len without rng), from that global state.
  NumpyRandomState np_random(static_cast<std::uint32_t>(config.seed));
  const auto vocab = static_cast<std::int64_t>(tok.vocab_size());
  const std::function<tokenizer::TokenId()> any_id = [&] { return static_cast<tokenizer::TokenId>(np_random.randint(0, vocab)); };
  // _generate_exact_length_tokens: random ids, decoded and re-encoded to the length; our
  // exact_length_prompt (no draws) only when vLLM's ten retries still miss it.
  const auto exact = [&](int length) {
    std::vector<tokenizer::TokenId> ids(static_cast<std::size_t>(length));
    for (auto& id : ids) id = any_id();
    TokenPrompt p = decode_to_target_len(tok, std::move(ids), static_cast<std::size_t>(length), any_id);
    p = exact_length_prompt(tok, std::move(p), static_cast<std::size_t>(length));
    return tok.encode(p.prompt);
  };
  Dataset ds;
  ds.layout = "prefix_repetition";
  ds.source_rows = config.num_prompts;
  for (std::size_t p = 0; p < num_prefixes; ++p) {
    const auto prefix = exact(vllm.prefix_len);
    for (std::size_t k = 0; k < per_prefix + (p < remainder ? 1 : 0); ++k) {
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
  ds.numpy_global_draws = np_random.u32_draws();  // vLLM's arrival gaps come after these
  if (config.shuffle) {  // random.seed(seed) in __init__, then random.shuffle(requests)
    std::vector<std::size_t> order(ds.samples.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    PythonRandom(config.seed).shuffle(order);
    std::vector<SampleRequest> shuffled;
    shuffled.reserve(order.size());
    for (const std::size_t i : order) shuffled.push_back(std::move(ds.samples[i]));
    ds.samples = std::move(shuffled);
  }
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

namespace {
// TimedTrace._sample_token's vocabulary: tokenizer.get_vocab() (the model's ids and the added
// tokens) without all_special_ids (here: the added tokens marked special), sorted.
std::vector<tokenizer::TokenId> timed_trace_vocab(const tokenizer::Tokenizer& tok) {
  std::set<tokenizer::TokenId> ids;
  for (tokenizer::TokenId id = 0; id < static_cast<tokenizer::TokenId>(tok.vocab_size()); ++id) ids.insert(id);
  for (const auto& added : tok.added_tokens()) ids.insert(added.id);
  for (const auto special : tok.special_ids()) ids.erase(special);
  return {ids.begin(), ids.end()};
}
}  // namespace

std::uint32_t python_hash_seed_from_env() {
  const char* env = std::getenv("PYTHONHASHSEED");
  if (env == nullptr || *env == '\0') return 0;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(env, &end, 10);
  return *end == '\0' && v <= 0xFFFFFFFFULL ? static_cast<std::uint32_t>(v) : 0;
}

TimedTracePrompts::TimedTracePrompts(const tokenizer::Tokenizer& tok, std::int64_t chunk_size, std::uint32_t hash_seed)
    : vocab_(timed_trace_vocab(tok)), chunk_size_(chunk_size), hash_seed_(hash_seed) {
  require(!vocab_.empty(), "--tokenizer: the vocabulary has no ordinary token");
  require(chunk_size_ > 0, "--timed-trace-chunk-hash-size must be > 0");
}

std::vector<tokenizer::TokenId> TimedTracePrompts::expand(const std::vector<std::int64_t>& hash_ids,
                                                          std::int64_t input_length) {
  std::vector<tokenizer::TokenId> ids;
  std::int64_t remaining = input_length;
  for (const std::int64_t h : hash_ids) {
    const std::int64_t size = remaining >= chunk_size_ ? chunk_size_ : remaining;
    const std::string key = std::to_string(h) + ":" + std::to_string(size);
    auto [it, fresh] = chunks_.try_emplace(key);
    if (fresh) {  // random.Random(hash(key) & 0xFFFFFFFF).choices(vocab, k=size)
      PythonRandom rng(static_cast<std::uint32_t>(python_str_hash(key, hash_seed_)));
      for (std::int64_t k = 0; k < size; ++k) it->second.push_back(vocab_[rng.choice_index(vocab_.size())]);
    }
    ids.insert(ids.end(), it->second.begin(), it->second.end());
    remaining -= size;
    if (remaining <= 0) break;
  }
  return ids;
}

double trace_send_time_s(double timestamp, double sec_multiplier, const std::string& where) {
  // vLLM: SampleRequest.timestamp = float(ts) * sec_multiplier; get_request sleeps until
  // start_ts + timestamp only `if delay_ts[i] > 0`, so a time <= 0 goes at once.
  const double t = timestamp * sec_multiplier;
  require(std::isfinite(t) && t <= kMaxTraceSendTimeS,
          where + ": timestamp x --timed-trace-sec-multiplier = " + std::to_string(t) +
              " s; vLLM sends each row that long after the benchmark's start (at most 1e9 s here: "
              "an epoch timestamp needs the first row's subtracted, or a multiplier for its unit)");
  return t > 0 ? t : 0.0;
}

Dataset load_timed_trace(const DatasetConfig& config, const tokenizer::Tokenizer& tok) {
  const VllmTextDatasetConfig& v = config.vllm_text;
  require(!config.path.empty(), "--dataset-name timed_trace needs --dataset-path (a JSONL trace)");
  require(v.chunk_hash_size > 0, "--timed-trace-chunk-hash-size must be > 0");
  require(v.sec_multiplier > 0 && std::isfinite(v.sec_multiplier), "--timed-trace-sec-multiplier must be > 0");
  // vLLM's main_async: "timed_trace dataset passes pre-tokenized prompts (list[int]) and requires a
  // completions backend ('vllm' or 'openai')".
  require(!config.chat_template.chat_backend,
          "--dataset-name timed_trace sends token-id prompts (a list of ints, as vLLM) and needs a completions "
          "backend: --backend openai or vllm with --endpoint /v1/completions, not openai-chat");
  std::ifstream in(config.path, std::ios::binary);
  require(static_cast<bool>(in), "--dataset-path " + config.path + ": cannot read");
  TimedTracePrompts prompts(tok, v.chunk_hash_size, python_hash_seed_from_env());
  Dataset ds;
  ds.layout = "timed_trace";
  ds.file = config.path;
  ds.ignore_eos_default = true;  // vLLM's main_async: args.ignore_eos = True for timed_trace
  double previous = 0;
  std::size_t line_no = 0;
  for (std::string line; ds.samples.size() < config.num_prompts && std::getline(in, line);) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = config.path + ":" + std::to_string(line_no);
    const TraceRow row = parse_trace_row(line, where, v);
    if (ds.samples.empty()) previous = row.timestamp;
    require(row.timestamp >= previous, where + ": timestamp " + std::to_string(row.timestamp) +
                                           " is before the previous line's " + std::to_string(previous) +
                                           " (a trace is replayed in file order)");
    previous = row.timestamp;
    std::vector<tokenizer::TokenId> ids = prompts.expand(row.hash_ids, row.input_length);
    SampleRequest s;
    s.source_row = line_no - 1;
    s.prompt = tok.decode(ids);  // for the dataset stats; the request sends the ids themselves
    s.prompt_len = static_cast<std::int64_t>(ids.size());  // vLLM: prompt_len = len(prompt_ids)
    s.prompt_token_ids = std::move(ids);
    s.output_len = static_cast<int>(row.output_length);  // the trace's own, as vLLM
    ds.samples.push_back(std::move(s));
    ds.arrival_s.push_back(trace_send_time_s(row.timestamp, v.sec_multiplier, where));
  }
  require(!ds.samples.empty(), config.path + ": the trace has no entries");
  ds.source_rows = ds.samples.size();
  return ds;
}

}  // namespace encbench::client
