#pragma once
// vLLM's text datasets that need the tokenizer to exist at all: `sharegpt` (ShareGPTDataset),
// `prefix_repetition` (PrefixRepetitionRandomDataset), `timed_trace` (TimedTrace), `burstgpt`,
// `sonnet`, with vLLM's sampling, filtering, lengths and draws (Python's `random` and numpy's,
// reproduced in python_random.hpp and numpy_random.hpp), followed from
// vllm/benchmarks/datasets/datasets.py @ 003cf0297cf60998854c652a0ca2b310dd3375af.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "harness/client/dataset.hpp"
#include "harness/tokenizer/tokenizer.hpp"

namespace encbench::client {

bool is_tokenizer_dataset(const std::string& name);  // sharegpt | prefix_repetition | timed_trace | burstgpt | sonnet

// burstgpt (datasets_vllm_files.cpp): BurstGPT's CSV (header with Model, Request tokens,
// Response tokens); rows with Model GPT-4 and Response tokens > 0 (vLLM's filter); num_prompts
// rows drawn without replacement (with replacement when the file has fewer; --no-oversample has
// no effect, as in vLLM); request i's prompt is the ids (i + j) % vocab_size, j < Request tokens,
// decoded; prompt_len = Request tokens, output = Response tokens. A row with a field count other
// than the header's or a token count that is not an integer >= 0: InvalidInput naming FILE:LINE.
Dataset load_burstgpt(const DatasetConfig& config, const tokenizer::Tokenizer& tok);

// sonnet (SonnetDataset): the file's lines (newlines kept); avg_len = mean tokens per line;
// prompts "Pick as many lines as you can from these poem lines:\n" + the first
// round((prefix_len - base)/avg) lines + round((input_len - base)/avg) - that many lines drawn with
// replacement, kept when its tokens <= --sonnet-input-len; output --sonnet-output-len. vLLM counts
// base and prompt inside the model's chat template; no template is applied here (as for custom).
Dataset load_sonnet(const DatasetConfig& config, const tokenizer::Tokenizer& tok);

// ShareGPT: a JSON array of {conversations: [{value}, {value}, ...]}; entries with fewer than two
// turns dropped, shuffled (seeded) unless --disable-shuffle; prompt = turn 0, prompt_len its
// tokens; output length = vllm_text.sharegpt_output_len (the CLI folds --output-len into it), else
// turn 1's tokens; vLLM's
// is_valid_sequence filter (prompt >= 4, output >= 4 unless given, prompt <= 1024, both <= 2048);
// oversampled (seeded) when short. An entry's "image" is sent as a URL (file:// for a path).
Dataset load_sharegpt(const DatasetConfig& config, const tokenizer::Tokenizer& tok);

// prefix_repetition: num_prefixes prefixes of prefix_len random ids, each followed by
// num_prompts / num_prefixes suffixes of suffix_len random ids (the first num_prompts % num_prefixes
// prefixes one more, vLLM's divmod), every part decoded and re-encoded to its exact length (vLLM's
// gen_prompt_decode_to_target_len; exact_length_prompt only when its retries miss); prompt_len =
// prefix + suffix tokens (vLLM's len(combined), not the re-encoded joint text); shuffled unless
// --disable-shuffle. vLLM's draws: np.random.seed(seed) then np.random.randint for the ids and the
// padding (NumpyRandomState; the draws taken are in numpy_global_draws, since vLLM's arrival gaps
// come from the same global state after them), random.seed(seed) then random.shuffle.
Dataset load_prefix_repetition(const DatasetConfig& config, const tokenizer::Tokenizer& tok);

// timed_trace (Mooncake/Bailian-style JSONL, vLLM's TimedTrace): one request per line, in file
// order (no shuffle, no oversampling, at most --num-prompts); labels remappable. Each hash id
// expands to a chunk as vLLM's (TimedTracePrompts below), so shared hash prefixes give identical
// token prefixes; the last chunk is partial so the prompt has input_length ids (fewer when the row
// has too few hash ids, as vLLM).
// The request sends those ids (prompt_token_ids: the completions `prompt` as a JSON array of ints,
// as vLLM's list[int]); `prompt` is their decoded text, for stats; prompt_len is their count.
// arrival_s = trace_send_time_s(timestamp): vLLM's own rule, from the benchmark's start.
// ignore_eos_default is set (vLLM's main_async). A line without a numeric timestamp, with a length
// that is not a non-negative integer, or with a timestamp before the previous line's, or the
// chat backend: InvalidInput naming the file and the line (or the flag).
Dataset load_timed_trace(const DatasetConfig& config, const tokenizer::Tokenizer& tok);

// A trace row's send time in s from the benchmark's start, as vLLM's get_request (self_timed)
// computes it: timestamp x sec_multiplier, sent at once when that is <= 0. Above
// kMaxTraceSendTimeS (or not finite): InvalidInput naming `where` (vLLM would sleep that long).
inline constexpr double kMaxTraceSendTimeS = 1e9;
double trace_send_time_s(double timestamp, double sec_multiplier, const std::string& where);

// vLLM's TimedTrace._expand_prompt (datasets.py@003cf029): each hash id h of a row becomes
// chunk_size ids (what is left of the input length for the last one), drawn as
// random.Random(hash(f"{h}:{size}") & 0xFFFFFFFF).choices(vocab, k=size) over the sorted vocabulary
// (get_vocab(), the model's and the added ids, without the special ones) and cached under that
// key, until input_length ids are made or the row's hash ids run out. hash() is CPython 3.11+'s
// str hash under PYTHONHASHSEED=hash_seed (python_random.hpp).
class TimedTracePrompts {
 public:
  TimedTracePrompts(const tokenizer::Tokenizer& tok, std::int64_t chunk_size, std::uint32_t hash_seed);
  std::vector<tokenizer::TokenId> expand(const std::vector<std::int64_t>& hash_ids, std::int64_t input_length);

 private:
  std::vector<tokenizer::TokenId> vocab_;
  std::int64_t chunk_size_;
  std::uint32_t hash_seed_;
  std::map<std::string, std::vector<tokenizer::TokenId>> chunks_;
};
// This process's PYTHONHASHSEED when it is an integer in [0, 2^32), else 0. vLLM's Python salts
// hash() per process when the variable is unset, so its own chunks then differ from run to run;
// ours are those of `PYTHONHASHSEED=0 vllm bench serve` (or of the value given).
std::uint32_t python_hash_seed_from_env();

}  // namespace encbench::client
