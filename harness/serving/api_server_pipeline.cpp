#include "harness/serving/api_server_pipeline.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace encbench::serving {

std::int64_t processor_item_bytes(long long patches, int patch_size, int temporal_patch_size,
                                  double bytes_per_element) {
  const double elements = static_cast<double>(patches) * 3.0 * temporal_patch_size * patch_size * patch_size;
  constexpr std::int64_t kGridThwBytes = 3 * 8;
  return static_cast<std::int64_t>(std::llround(elements * bytes_per_element)) + kGridThwBytes;
}

std::int64_t total_pixels(std::span<const ProcessorItem> images) {
  std::int64_t pixels = 0;
  for (const ProcessorItem& image : images) pixels += image.pixels;
  return pixels;
}

bool ProcessorCacheLru::lookup_and_insert(std::uint64_t key, std::int64_t bytes) {
  if (key == 0) return false;
  if (const auto it = index_.find(key); it != index_.end()) {
    order_.splice(order_.begin(), order_, it->second);
    return true;
  }
  if (bytes > capacity_) return false;
  while (used_ + bytes > capacity_ && !order_.empty()) {
    used_ -= order_.back().bytes;
    index_.erase(order_.back().key);
    order_.pop_back();
    ++evictions_;
  }
  order_.push_front({key, bytes});
  index_[key] = order_.begin();
  used_ += bytes;
  return false;
}

ApiServerPipeline::ApiServerPipeline(ApiServerModel model)
    : model_(std::move(model)), media_pool_(model_.media_threads()), processes_(model_.processes()) {
  const std::int64_t capacity = model_.processor_cache_capacity_bytes();
  if (capacity > 0)
    for (int p = 0; p < std::max(model_.processes(), 1); ++p) caches_.emplace_back(capacity);
}

Nanos ApiServerPipeline::decode(Nanos sent, std::int64_t image_pixels) {
  if (!model_.pooled_decode()) return sent;
  const Nanos cost = model_.decode_cost_ns(image_pixels);
  counters_.decode_ns += cost;
  return media_pool_.admit(sent, cost);
}

ApiServerProcessed ApiServerPipeline::process(Nanos decoded, std::span<const ProcessorItem> images,
                                              std::int64_t prompt_tokens) {
  const ApiServerQueue::Start slot = processes_.next(decoded);
  ApiServerProcessed out;
  ApiServerModel::SerialWork work{.prompt_tokens = prompt_tokens};
  for (const ProcessorItem& image : images) {
    const bool hit = !caches_.empty() && image.pixels > 0 && caches_[slot.process].lookup_and_insert(image.key, image.bytes);
    (hit ? work.cached_pixels : work.processed_pixels) += image.pixels;
    if (!hit) work.processed_images.push_back(image.pixels);
    out.cache_hits += hit ? 1 : 0;
  }
  const std::int64_t image_pixels = work.cached_pixels + work.processed_pixels;
  out.cost_ns = model_.serial_cost_ns(work);
  out.start_ns = slot.start_ns;
  out.end_ns = slot.start_ns + out.cost_ns;
  processes_.occupy(slot.process, out.end_ns);
  ++counters_.requests;
  counters_.processor_cache_hits += out.cache_hits;
  counters_.serial_ns += out.cost_ns;
  if (!model_.pooled_decode()) counters_.decode_ns += model_.decode_cost_ns(image_pixels);
  return out;
}

ApiServerPipelineCounters ApiServerPipeline::counters() const {
  ApiServerPipelineCounters c = counters_;
  c.processor_cache_evictions = 0;
  for (const ProcessorCacheLru& cache : caches_) c.processor_cache_evictions += cache.evictions();
  return c;
}

}  // namespace encbench::serving
