#pragma once
// vLLM's text datasets that need the tokenizer to exist at all: `sharegpt` (ShareGPTDataset) and
// `prefix_repetition` (PrefixRepetitionRandomDataset), with vLLM's sampling, filtering and
// lengths. Our generator replaces Python's `random` and numpy's: the same construction and
// lengths, not vLLM's exact rows or text.
#include <cstdint>
#include <optional>

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
// num_prompts / num_prefixes suffixes of suffix_len random ids, every part decoded and re-encoded
// to its exact length (vLLM's gen_prompt_decode_to_target_len, then exact_length_prompt as for
// random prompts); prompt_len = prefix + suffix tokens (vLLM's len(combined), not the re-encoded
// joint text); shuffled unless --disable-shuffle.
Dataset load_prefix_repetition(const DatasetConfig& config, const tokenizer::Tokenizer& tok);

// timed_trace (Mooncake/Bailian-style JSONL, vLLM's TimedTrace): one request per line, in file
// order (no shuffle, no oversampling, at most --num-prompts); labels remappable. Each hash id
// expands to a chunk of chunk_hash_size ids drawn from the vocabulary without special ids, seeded
// by (hash id, chunk size) so shared hash prefixes give identical token prefixes; the last chunk
// is partial so the prompt has input_length ids (fewer when the row has too few hash ids, as vLLM).
// The prompt is those ids decoded (text is what this client sends); prompt_len is their count.
// arrival_s = (timestamp - first timestamp) x sec_multiplier. A line without a numeric timestamp,
// with a length that is not a non-negative integer, or with a timestamp before the previous
// line's: InvalidInput naming the file and the line.
Dataset load_timed_trace(const DatasetConfig& config, const tokenizer::Tokenizer& tok);

}  // namespace encbench::client
