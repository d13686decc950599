#pragma once
// The `vllm bench serve` flags encbench's own bench serve flags (cmd_bench.cpp) did not cover:
// the rest of vLLM's parser (tests/parity/vllm_bench_serve_flags.txt), every one accepted. Those
// whose feature is not implemented here are refused when they are set, one line saying why
// (exit 2), rather than silently changing what the run measures.
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace encbench::cli {

struct ParityFlags {
  // dataset-specific (only with a dataset encbench refuses: accepted, no effect otherwise)
  std::optional<double> asr_max_audio_len_sec, asr_min_audio_len_sec;
  std::string bfcl_categories;
  std::optional<double> blazedit_max_distance, blazedit_min_distance;
  std::optional<int> prefix_repetition_num_prefixes, prefix_repetition_output_len, prefix_repetition_prefix_len,
      prefix_repetition_suffix_len, sharegpt_output_len, sonnet_input_len, sonnet_output_len, sonnet_prefix_len,
      spec_bench_output_len, speed_bench_output_len;
  std::string spec_bench_category, speed_bench_category, speed_bench_dataset_subset;
  std::optional<int> timed_trace_chunk_hash_size;
  std::string timed_trace_label_hash_ids, timed_trace_label_input_length, timed_trace_label_output_length,
      timed_trace_label_timestamp;
  std::optional<double> timed_trace_sec_multiplier;
  bool self_timed = false, no_self_timed = false, no_reranker = false;
  // run-wide
  std::optional<double> probe_request_rate;
  std::vector<std::string> timeline_itl_thresholds, lora_modules;
  std::string lora_assignment;
  bool enable_multimodal_chat = false, plot_dataset_stats = false, skip_tokenizer_init = false,
       use_beam_search = false;
};

void add_parity_flags(CLI::App* serve, ParityFlags& f);

// Throws InvalidInput for a set flag (or a --dataset-name) this client does not implement, and for
// values out of range (a negative --probe-request-rate); returns notes for accepted no-ops.
std::vector<std::string> check_parity_flags(const ParityFlags& f, const std::string& dataset_name);

// --timeline-itl-thresholds A B in ms (0 < A < B), or vLLM's defaults {25, 50}; InvalidInput otherwise.
std::vector<double> timeline_itl_thresholds_ms(const ParityFlags& f);

}  // namespace encbench::cli
