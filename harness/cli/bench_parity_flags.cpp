#include "harness/cli/bench_parity_flags.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <utility>

#include "harness/core/error.hpp"

namespace encbench::cli {

namespace {

void add_dataset_specific(CLI::App* s, ParityFlags& f) {
  const std::string only = "Accepted: only used by vLLM's ";
  s->add_option("--asr-max-audio-len-sec", f.asr_max_audio_len_sec, only + "ASR datasets (audio: not supported here)");
  s->add_option("--asr-min-audio-len-sec", f.asr_min_audio_len_sec, only + "ASR datasets (audio: not supported here)");
  s->add_option("--bfcl-categories", f.bfcl_categories, only + "bfcl dataset (not implemented here)");
  s->add_option("--blazedit-max-distance", f.blazedit_max_distance, only + "blazedit dataset (not implemented here)");
  s->add_option("--blazedit-min-distance", f.blazedit_min_distance, only + "blazedit dataset (not implemented here)");
  for (auto [name, target] : {std::pair{"--prefix-repetition-num-prefixes", &f.prefix_repetition_num_prefixes},
                              std::pair{"--prefix-repetition-output-len", &f.prefix_repetition_output_len},
                              std::pair{"--prefix-repetition-prefix-len", &f.prefix_repetition_prefix_len},
                              std::pair{"--prefix-repetition-suffix-len", &f.prefix_repetition_suffix_len}})
    s->add_option(name, *target, "prefix_repetition: vLLM's defaults 10 prefixes, 256 + 256 tokens, output 128");
  s->add_option("--sharegpt-output-len", f.sharegpt_output_len, "sharegpt: output length (default: each completion's tokens)");
  s->add_option("--sonnet-input-len", f.sonnet_input_len, "sonnet: the most tokens a prompt may have (default 550)");
  s->add_option("--sonnet-output-len", f.sonnet_output_len, "sonnet: output tokens (default 150)");
  s->add_option("--sonnet-prefix-len", f.sonnet_prefix_len, "sonnet: tokens of the shared first lines (default 200)");
  s->add_option("--spec-bench-category", f.spec_bench_category, only + "spec_bench dataset (not implemented here)");
  s->add_option("--spec-bench-output-len", f.spec_bench_output_len, only + "spec_bench dataset (not implemented here)");
  s->add_option("--speed-bench-category", f.speed_bench_category, only + "speed_bench dataset (not implemented here)");
  s->add_option("--speed-bench-dataset-subset", f.speed_bench_dataset_subset, only + "speed_bench dataset (not implemented here)");
  s->add_option("--speed-bench-output-len", f.speed_bench_output_len, only + "speed_bench dataset (not implemented here)");
  s->add_option("--timed-trace-chunk-hash-size", f.timed_trace_chunk_hash_size, "timed_trace: tokens per hash id (default 16)");
  s->add_option("--timed-trace-label-hash-ids", f.timed_trace_label_hash_ids, "timed_trace: the rows' hash-id key (default hash_ids)");
  s->add_option("--timed-trace-label-input-length", f.timed_trace_label_input_length, "timed_trace: the input-length key (default input_length)");
  s->add_option("--timed-trace-label-output-length", f.timed_trace_label_output_length, "timed_trace: the output-length key (default output_length)");
  s->add_option("--timed-trace-label-timestamp", f.timed_trace_label_timestamp, "timed_trace: the timestamp key (default timestamp)");
  s->add_option("--timed-trace-sec-multiplier", f.timed_trace_sec_multiplier, "timed_trace: seconds per timestamp unit (default 1; 0.001 for ms)");
  s->add_flag("--self-timed", f.self_timed, "timed_trace: send at the trace's timestamps (the default)");
  s->add_flag("--no-self-timed", f.no_self_timed, "timed_trace: ignore the timestamps, schedule by --request-rate");
  s->add_flag("--no-reranker", f.no_reranker, only + "rerank datasets (pooling endpoints: not benchmarked here)");
}

// vLLM dataset names this client does not implement, and why (said instead of "unknown").
const std::vector<std::pair<std::string, std::string>>& vllm_only_datasets() {
  static const std::vector<std::pair<std::string, std::string>> k{
      {"spec_bench", "not implemented here"},         {"speed_bench", "not implemented here"},
      {"blazedit", "not implemented here"},           {"bfcl", "not implemented here"},
      {"mmvu", "a video dataset (yale-nlp/MMVU): video is not supported here"},
      {"random-rerank", "pooling/rerank endpoints are not benchmarked here"},
      {"asr", "audio is not supported here"}};
  return k;
}

}  // namespace

void add_parity_flags(CLI::App* s, ParityFlags& f) {
  add_dataset_specific(s, f);
  s->add_option("--probe-request-rate", f.probe_request_rate,
                "vLLM's probes: > 0 sends one-token text-only requests (\"Hi\") one at a time, 1/R s after the previous "
                "finished, outside --max-concurrency; their E2EL is reported apart (probe_* keys, \"Probe Requests\"). "
                "Default 0 (none); negative: exit 2");
  s->add_option("--timeline-itl-thresholds", f.timeline_itl_thresholds,
                "ITL colour bands of --plot-timeline in ms: two increasing numbers (default 25 50, vLLM's)");
  s->add_option("--lora-modules", f.lora_modules,
                "LoRA module names (as the server was started with): each request's model is one of them, as vLLM");
  s->add_option("--lora-assignment", f.lora_assignment,
                "random (default: Python's random.choice seeded with --seed, as vLLM) or round-robin (modules[i % n])");
  s->add_flag("--enable-multimodal-chat", f.enable_multimodal_chat,
              "Accepted: random-mm prompts are always sent as chat messages with their images here");
  s->add_flag("--plot-dataset-stats", f.plot_dataset_stats,
              "Write vLLM's dataset statistics figure (prompt, output and total token histograms, tokens per request) "
              "as a PNG beside the result: <result name>.dataset_stats.png; image requests also get "
              "<result name>.dataset_stats.html (images and image bytes per request)");
  s->add_flag("--skip-tokenizer-init", f.skip_tokenizer_init,
              "Load no tokenizer: prompt lengths are whitespace words and random prompts have words, not tokens");
  s->add_flag("--use-beam-search", f.use_beam_search,
              "Accepted, no effect: vLLM's bench serve parses it but puts nothing of it in any request");
}

std::vector<std::string> check_parity_flags(const ParityFlags& f, const std::string& dataset_name) {
  for (const auto& [name, why] : vllm_only_datasets())
    require(dataset_name != name, "--dataset-name " + name + ": vLLM's " + name + " dataset is " + why +
                                      " (supported: hf, vision-arena, random-mm, random, custom, custom_image, custom_mm, sharegpt, prefix_repetition, timed_trace, sonnet, burstgpt)");
  if (f.probe_request_rate)
    require(*f.probe_request_rate >= 0 && std::isfinite(*f.probe_request_rate),
            "--probe-request-rate must be a finite rate >= 0 (req/s), got " + std::to_string(*f.probe_request_rate));
  // vLLM's main_async: "--self-timed/--no-self-timed is only supported with --dataset-name=timed_trace".
  require(!(f.self_timed || f.no_self_timed) || dataset_name == "timed_trace",
          "--self-timed/--no-self-timed is only supported with --dataset-name timed_trace (as vLLM)");
  require(!(f.self_timed && f.no_self_timed), "--self-timed and --no-self-timed contradict each other: give one");
  require(f.lora_assignment.empty() || f.lora_assignment == "random" || f.lora_assignment == "round-robin",
          "--lora-assignment must be random or round-robin, got '" + f.lora_assignment + "'");
  std::vector<std::string> notes;
  timeline_itl_thresholds_ms(f);  // validated before the run
  if (f.use_beam_search)
    notes.push_back("--use-beam-search: vLLM's bench serve parses it but sends nothing of it (no request field); no effect here either");
  if (f.enable_multimodal_chat) notes.push_back("--enable-multimodal-chat: random-mm prompts are always chat messages with images here");
  return notes;
}

std::vector<double> timeline_itl_thresholds_ms(const ParityFlags& f) {
  if (f.timeline_itl_thresholds.empty()) return {25, 50};
  const std::string usage = "--timeline-itl-thresholds expects two increasing positive numbers (ms), e.g. 25,50 or 25 50";
  // vLLM's form is one comma-separated string ("25,50"); two words ("25 50") are accepted too.
  std::vector<std::string> parts;
  for (const auto& word : f.timeline_itl_thresholds) {
    std::size_t start = 0;
    for (std::size_t comma; (comma = word.find(',', start)) != std::string::npos; start = comma + 1)
      parts.push_back(word.substr(start, comma - start));
    parts.push_back(word.substr(start));
  }
  require(parts.size() == 2, usage);
  std::vector<double> out;
  for (const auto& text : parts) {
    std::size_t used = 0;
    double v = 0;
    try {
      v = std::stod(text, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    require(used == text.size() && v > 0 && std::isfinite(v), usage + ", got '" + text + "'");
    out.push_back(v);
  }
  require(out[0] < out[1], usage);
  return out;
}

}  // namespace encbench::cli
