// libFuzzer target: a dataset file as `bench serve --dataset-path` reads it (harness/client/
// dataset.cpp): JSONL or a JSON array of vision-arena / custom rows, images inline (base64, byte
// arrays, data URLs) and decoded. The first byte picks the dataset name; the rest is the file, in
// memory. Selectors 5-7 read the file as vLLM's tokenizer datasets (harness/client/
// datasets_vllm*.cpp: burstgpt's CSV, sonnet's poem lines, sharegpt's JSON array) with the tiny
// Qwen2 tokenizer the tests ship. A first byte whose low nibble is 8 reads it as a timed_trace
// JSONL (vLLM's TimedTrace; bit 0x80: ms timestamps, x 0.001, and 4-id chunks); the committed seeds
// (first bytes 0x00-0x07, 0xc2) keep their readers. Property: samples, each with a prompt and
// output_len >= 1 (or the rows' own lengths), or an InvalidInput with a message; nothing else
// escapes. timed_trace: every sample has its token ids, prompt_len = their count <= the row's
// input_length bound, and a send time in [0, 1e9] s, non-decreasing in file order.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "harness/client/dataset.hpp"
#include "harness/client/datasets_vllm.hpp"
#include "harness/core/error.hpp"
#include "harness/tokenizer/tokenizer.hpp"

namespace {
const encbench::tokenizer::Tokenizer& tiny_tokenizer() {
  static const auto tok =
      encbench::tokenizer::Tokenizer::load(std::string(ENCBENCH_SOURCE_DIR) + "/tests/tokenizer/data/tiny-qwen2/tokenizer.json");
  return tok;
}

// 5-7: the readers that need a tokenizer; small sonnet lengths keep its retries short.
encbench::client::Dataset load_with_tokenizer(encbench::client::DatasetConfig config) {
  config.vllm_text.sonnet_input_len = 48;
  config.vllm_text.sonnet_prefix_len = 12;
  config.vllm_text.sonnet_output_len = 8;
  if (config.name == "timed_trace") return encbench::client::load_timed_trace(config, tiny_tokenizer());
  if (config.name == "burstgpt") return encbench::client::load_burstgpt(config, tiny_tokenizer());
  if (config.name == "sonnet") return encbench::client::load_sonnet(config, tiny_tokenizer());
  return encbench::client::load_sharegpt(config, tiny_tokenizer());
}
// timed_trace's own property (see the top).
void check_timed_trace(const encbench::client::Dataset& dataset) {
  if (dataset.arrival_s.size() != dataset.samples.size()) __builtin_trap();
  double previous = 0;
  for (std::size_t i = 0; i < dataset.samples.size(); ++i) {
    const auto& s = dataset.samples[i];
    if (!s.prompt_token_ids || static_cast<std::int64_t>(s.prompt_token_ids->size()) != s.prompt_len) __builtin_trap();
    if (s.prompt_len > (1 << 24) || s.output_len < 1) __builtin_trap();
    const double t = dataset.arrival_s[i];
    if (!(t >= previous && t <= encbench::client::kMaxTraceSendTimeS)) __builtin_trap();
    previous = t;
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  // % 8 keeps the committed seeds 0, 1 and 3 on their readers (and 0xc2 on custom, as named).
  static const char* const kNames[] = {"hf", "vision-arena", "custom", "custom_image", "custom_mm", "burstgpt", "sonnet", "sharegpt"};
  // A new reader takes a first byte no committed seed has (low nibble 8), so none is remapped.
  const bool timed_trace = (data[0] & 0x0f) == 8;
  const int selector = timed_trace ? 8 : data[0] % 8;
  const int fd = memfd_create("fuzz_dataset", 0);
  if (fd < 0) __builtin_trap();
  if (size > 1 && write(fd, data + 1, size - 1) != static_cast<ssize_t>(size - 1)) __builtin_trap();
  encbench::client::DatasetConfig config;
  config.name = timed_trace ? "timed_trace" : kNames[selector];
  config.vllm_text.sec_multiplier = data[0] & 0x80 ? 0.001 : 1.0;
  config.vllm_text.chunk_hash_size = data[0] & 0x80 ? 4 : 16;
  config.path = "/proc/self/fd/" + std::to_string(fd);
  config.num_prompts = 4;  // oversampled when the file has fewer rows
  config.custom_output_len = data[0] & 0x80 ? -1 : 16;
  try {
    const encbench::client::Dataset dataset =
        selector >= 5 ? load_with_tokenizer(config) : encbench::client::load_dataset(config);
    for (const auto& sample : dataset.samples)
      if (sample.prompt_len < 0) __builtin_trap();
    if (timed_trace) check_timed_trace(dataset);
  } catch (const encbench::InvalidInput& e) {
    if (std::string_view(e.what()).empty()) __builtin_trap();
  }
  close(fd);
  return 0;
}
