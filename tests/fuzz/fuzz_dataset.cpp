// libFuzzer target: a dataset file as `bench serve --dataset-path` reads it (harness/client/
// dataset.cpp): JSONL or a JSON array of vision-arena / custom rows, images inline (base64, byte
// arrays, data URLs) and decoded. The first byte picks the dataset name; the rest is the file, in
// memory. Property: samples, each with a prompt and output_len >= 1 (or the rows' own lengths),
// or an InvalidInput with a message; nothing else escapes.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "harness/client/dataset.hpp"
#include "harness/core/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  static const char* const kNames[] = {"hf", "vision-arena", "custom", "custom_image", "custom_mm"};
  const int fd = memfd_create("fuzz_dataset", 0);
  if (fd < 0) __builtin_trap();
  if (size > 1 && write(fd, data + 1, size - 1) != static_cast<ssize_t>(size - 1)) __builtin_trap();
  encbench::client::DatasetConfig config;
  config.name = kNames[data[0] % 5];
  config.path = "/proc/self/fd/" + std::to_string(fd);
  config.num_prompts = 4;  // oversampled when the file has fewer rows
  config.custom_output_len = data[0] & 0x80 ? -1 : 16;
  try {
    const encbench::client::Dataset dataset = encbench::client::load_dataset(config);
    for (const auto& sample : dataset.samples)
      if (sample.prompt_len < 0) __builtin_trap();
  } catch (const encbench::InvalidInput& e) {
    if (std::string_view(e.what()).empty()) __builtin_trap();
  }
  close(fd);
  return 0;
}
