#include "harness/client/datasets_random_mm.hpp"

#include <algorithm>
#include <cmath>

#include "harness/client/datasets_tokens.hpp"
#include "harness/client/image.hpp"
#include "harness/core/error.hpp"

namespace encbench::client {

MmItemSampling mm_item_sampling(const RandomDatasetConfig& config) {
  require(config.mm_base_items >= 0, "--random-mm-base-items-per-request must be >= 0");
  require(config.mm_items_range_ratio >= 0 && config.mm_items_range_ratio <= 1,
          "--random-mm-num-mm-items-range-ratio must be in [0, 1]");
  MmItemSampling s;
  double total = 0;  // Python's sum(): left to right from 0
  for (const auto& b : config.buckets) {
    require(b.probability >= 0, "--random-mm-bucket-config: Bucket config values must be non-negative");
    if (b.probability > 0) {
      s.buckets.push_back(b);
      total += b.probability;
    }
  }
  require(!s.buckets.empty(), "--random-mm-bucket-config: Bucket config values must be non-zero");
  for (auto& b : s.buckets) b.probability /= total;
  const double n = config.mm_base_items;
  s.max_items = std::min(config.mm_limit_images, static_cast<int>(std::ceil(n * (1 + config.mm_items_range_ratio))));
  s.min_items = std::max(0, static_cast<int>(std::floor(n * (1 - config.mm_items_range_ratio))));
  require(s.min_items <= s.max_items, "Min num mm items is greater than max mm items: " + std::to_string(s.min_items) +
                                          " > " + std::to_string(s.max_items));
  return s;
}

std::size_t draw_mm_items(const MmItemSampling& sampling, NumpyGenerator& rng,
                          const std::function<void(const MmImage&)>& on_image) {
  const auto count = static_cast<std::size_t>(rng.integers(sampling.min_items, sampling.max_items + 1));
  std::vector<double> p;
  for (const auto& b : sampling.buckets) p.push_back(b.probability);
  // Images are the only modality and count <= the image limit, so vLLM's branch that drops a
  // modality at its limit is never taken: every choice yields an item.
  for (std::size_t k = 0; k < count; ++k) {
    const ImageBucket& b = sampling.buckets[rng.choice(p)];
    MmImage image;
    image.height = b.height;
    image.width = b.width;
    image.rgb.resize(static_cast<std::size_t>(b.height) * static_cast<std::size_t>(b.width) * 3);
    rng.fill_uint8(image.rgb.data(), image.rgb.size());
    on_image(image);
  }
  return count;
}

namespace {

// vLLM's process_image of a PIL image: RGB, saved as JPEG with PIL's defaults, base64 data URL.
std::string jpeg_url(const MmImage& image) {
  RgbImage rgb;
  rgb.info.width = image.width;
  rgb.info.height = image.height;
  rgb.rgb = image.rgb;
  return jpeg_data_url(encode_jpeg(rgb));
}

void add_items(Dataset& ds, std::size_t i, const MmItemSampling& sampling, NumpyGenerator& rng, const MmImageSink& on_image) {
  SampleRequest& s = ds.samples[i];
  draw_mm_items(sampling, rng, [&](const MmImage& image) {
    if (on_image) on_image(i, image);
    s.image_urls.push_back(jpeg_url(image));
  });
  if (!s.image_urls.empty()) ds.multimodal = true;
}

}  // namespace

Dataset load_random_mm(const DatasetConfig& config, const tokenizer::Tokenizer* tok, const MmImageSink& on_image) {
  require(config.num_prompts > 0, "--num-prompts must be > 0");
  const MmItemSampling sampling = mm_item_sampling(config.random);
  if (tok == nullptr) {
    DatasetConfig words = config;
    words.name = "random";
    Dataset ds = load_dataset(words);
    ds.layout = "random-mm";
    NumpyGenerator rng(config.seed);
    for (std::size_t i = 0; i < ds.samples.size(); ++i) add_items(ds, i, sampling, rng, on_image);
    return ds;
  }
  Dataset ds;
  ds.layout = "random-mm";
  ds.ignore_eos_default = true;
  ds.source_rows = config.num_prompts;
  ds.samples.resize(config.num_prompts);
  NumpyGenerator rng(config.seed);
  const RandomPromptPlan plan = draw_random_prompt_plan(*tok, config.random, config.num_prompts, rng);
  for (std::size_t i = 0; i < config.num_prompts; ++i) {
    const TokenPrompt p = random_token_prompt(*tok, plan, i, rng);
    SampleRequest& s = ds.samples[i];
    s.source_row = i;
    s.prompt = p.prompt;
    s.prompt_len = p.prompt_len;
    s.output_len = config.output_len ? *config.output_len : static_cast<int>(p.output_len);
    add_items(ds, i, sampling, rng, on_image);
  }
  return ds;
}

}  // namespace encbench::client
