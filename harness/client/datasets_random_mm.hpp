#pragma once
// random-mm as vLLM's RandomMultiModalDataset draws it (vllm/benchmarks/datasets/datasets.py @
// 003cf0297cf60998854c652a0ca2b310dd3375af): one np.random.default_rng(seed) for everything, in
// vLLM's order: input lengths, output lengths and offsets (arrays of num_prompts), the prefix, then
// per request its prompt (padding ids when re-encoding comes up short), its item count
// rng.integers(min, max + 1), and per item a bucket rng.choice(buckets, p) followed at once by the
// item's pixels rng.integers(0, 256, (h, w, 3), uint8). Each image is sent as vLLM's
// process_image sends it: a JPEG (quality 75, 4:2:0, PIL's defaults) data URL. With the same seed
// and tokenizer the prompts, item counts, sizes and pixels are vLLM's.
#include <cstdint>
#include <functional>
#include <vector>

#include "harness/client/dataset.hpp"
#include "harness/client/numpy_random.hpp"
#include "harness/tokenizer/tokenizer.hpp"

namespace encbench::client {

// get_mm_item_sampling_params: the item count range [max(0, floor(n(1-r))), min(limit, ceil(n(1+r)))]
// and the buckets with zero probability dropped and the rest divided by their sum (normalize_bucket_config).
struct MmItemSampling {
  int min_items = 0, max_items = 0;
  std::vector<ImageBucket> buckets;
};
MmItemSampling mm_item_sampling(const RandomDatasetConfig& config);

struct MmImage {
  int height = 0, width = 0;
  std::vector<std::uint8_t> rgb;  // height * width * 3, row-major (numpy's (h, w, 3) array)
};
// One request's items (get_mm_item_iterator + generate_synthetic_image); returns the count.
std::size_t draw_mm_items(const MmItemSampling& sampling, NumpyGenerator& rng,
                          const std::function<void(const MmImage&)>& on_image);

// The dataset. With `tok` the prompts are vLLM's token prompts (datasets_tokens.hpp) drawn between
// the items as vLLM draws them; without one the prompts are the `random` dataset's words and the
// items come from default_rng(seed) with vLLM's item draws but without the prompt draws before
// them (they need the vocabulary), so not vLLM's images. on_image (optional) sees each image's
// pixels with its request index before it is encoded.
using MmImageSink = std::function<void(std::size_t request, const MmImage&)>;
Dataset load_random_mm(const DatasetConfig& config, const tokenizer::Tokenizer* tok, const MmImageSink& on_image = {});

}  // namespace encbench::client
