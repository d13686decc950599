// libFuzzer target: a dataset file as `bench serve --dataset-path` reads it (harness/client/
// dataset.cpp): JSONL or a JSON array of vision-arena / custom rows, images inline (base64, byte
// arrays, data URLs) and decoded. The first byte picks the dataset name; the rest is the file, in
// memory. Selectors 5-7 read the file as vLLM's tokenizer datasets (harness/client/
// datasets_vllm*.cpp: burstgpt's CSV, sonnet's poem lines, sharegpt's JSON array) with the tiny
// Qwen2 tokenizer the tests ship. Property: samples, each with a prompt and output_len >= 1 (or
// the rows' own lengths), or an InvalidInput with a message; nothing else escapes.
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
  if (config.name == "burstgpt") return encbench::client::load_burstgpt(config, tiny_tokenizer());
  if (config.name == "sonnet") return encbench::client::load_sonnet(config, tiny_tokenizer());
  return encbench::client::load_sharegpt(config, tiny_tokenizer());
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  // % 8 keeps the committed seeds 0, 1 and 3 on their readers (and 0xc2 on custom, as named).
  static const char* const kNames[] = {"hf", "vision-arena", "custom", "custom_image", "custom_mm", "burstgpt", "sonnet", "sharegpt"};
  const int selector = data[0] % 8;
  const int fd = memfd_create("fuzz_dataset", 0);
  if (fd < 0) __builtin_trap();
  if (size > 1 && write(fd, data + 1, size - 1) != static_cast<ssize_t>(size - 1)) __builtin_trap();
  encbench::client::DatasetConfig config;
  config.name = kNames[selector];
  config.path = "/proc/self/fd/" + std::to_string(fd);
  config.num_prompts = 4;  // oversampled when the file has fewer rows
  config.custom_output_len = data[0] & 0x80 ? -1 : 16;
  try {
    const encbench::client::Dataset dataset =
        selector >= 5 ? load_with_tokenizer(config) : encbench::client::load_dataset(config);
    for (const auto& sample : dataset.samples)
      if (sample.prompt_len < 0) __builtin_trap();
  } catch (const encbench::InvalidInput& e) {
    if (std::string_view(e.what()).empty()) __builtin_trap();
  }
  close(fd);
  return 0;
}
