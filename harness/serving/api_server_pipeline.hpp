#pragma once
// vLLM's API server as a request passes it (api_server_model.hpp has the costs), both clocks:
//
//   sent -> media loading pool (decode) -> the process's serial input processing -> scheduler
//
// 1. Decode. The chat front end loads a data-URL image with MediaConnector.load_from_url_async,
//    which runs _load_data_url (base64 decode, PIL open and convert to RGB) with
//    loop.run_in_executor on global_thread_pool, a ThreadPoolExecutor of
//    VLLM_MEDIA_LOADING_THREAD_COUNT (default 8) workers: off the event loop, up to that many
//    images at once, FIFO. The request continues when its images are loaded.
// 2. Serial processing, one request at a time per API-server process (its asyncio loop):
//    InputProcessor.process_inputs -> BaseMultiModalProcessor._cached_apply_hf_processor: the
//    mm_hash of every item (blake3 of the encoded image bytes since vLLM PR #29621), the processor
//    cache lookup, the HF processor on the items that missed only, vLLM's prompt update.
//    The multimodal processor cache (--mm-processor-cache-gb, default 4, type "lru") is an LRU
//    over mm_hash, sized by the processed tensors' bytes (MultiModalCache.get_item_size: nbytes
//    of pixel_values and image_grid_thw), one per API-server process (mirrored in the engine
//    core, which keeps the tensors; the API server keeps their size). A hit skips the HF
//    processor for that item; decode, hash and the prompt update still run.
//
// Both stages are FIFO queues (ApiServerQueue). decode() must be called in send order and
// process() in the order decodes end (the virtual loop orders them; the live server calls both
// under one lock as requests arrive). Plain state: no clock, no threads.
#include <cstdint>
#include <list>
#include <span>
#include <unordered_map>
#include <vector>

#include "harness/core/clock.hpp"
#include "harness/vision/grid.hpp"
#include "harness/serving/api_server_model.hpp"

namespace encbench::serving {

// The bytes vLLM's processor cache counts for one image item of a Qwen-VL processor:
// pixel_values (patches x 3 channels x temporal_patch x patch^2 elements, the still image repeated
// to fill the temporal patch) at `bytes_per_element`, plus image_grid_thw (3 int64).
std::int64_t processor_item_bytes(long long patches, int patch_size, int temporal_patch_size,
                                  double bytes_per_element);

// One image as the API server's processor cache sees it: vLLM's cache looks each item up on its
// mm_hash and runs the HF processor on the missing ones only (_cached_apply_hf_processor). Both
// clocks build them (the virtual loop's requests, the live server's parsed images).
struct ProcessorItem {
  std::int64_t pixels = 0;  // width x height as sent
  std::uint64_t key = 0;    // its mm_hash; 0: no lookup (a miss that is not stored)
  std::int64_t bytes = 0;   // what the cache counts for it (processor_item_bytes)
};
std::int64_t total_pixels(std::span<const ProcessorItem> images);

// vLLM's LRUCache as the processor cache uses it for one item per lookup: get_and_update_item.
class ProcessorCacheLru {
 public:
  explicit ProcessorCacheLru(std::int64_t capacity_bytes) : capacity_(capacity_bytes) {}
  // index_ holds iterators into order_: a copy would point into the source's list. Moves keep them
  // valid (std::list's nodes move with it).
  ProcessorCacheLru(const ProcessorCacheLru&) = delete;
  ProcessorCacheLru& operator=(const ProcessorCacheLru&) = delete;
  ProcessorCacheLru(ProcessorCacheLru&&) = default;
  ProcessorCacheLru& operator=(ProcessorCacheLru&&) = default;
  // A hit makes the item the most recent; a miss stores it, evicting the least recently used
  // until it fits. Key 0 (content unknown) never hits and is not stored; nor is an item larger
  // than the whole cache. Returns whether it hit.
  bool lookup_and_insert(std::uint64_t key, std::int64_t bytes);
  bool contains(std::uint64_t key) const { return index_.contains(key); }
  std::int64_t used_bytes() const { return used_; }
  std::size_t items() const { return index_.size(); }
  std::int64_t evictions() const { return evictions_; }

 private:
  struct Entry {
    std::uint64_t key;
    std::int64_t bytes;
  };
  std::int64_t capacity_;
  std::int64_t used_ = 0;
  std::int64_t evictions_ = 0;
  std::list<Entry> order_;  // front: most recently used
  std::unordered_map<std::uint64_t, std::list<Entry>::iterator> index_;
};

struct ApiServerProcessed {
  Nanos start_ns = 0;       // its serial processing began
  Nanos end_ns = 0;         // and ended: it reaches the scheduler
  Nanos cost_ns = 0;        // the serial processing's modelled cost
  std::int64_t cache_hits = 0;  // of its images, those the processor cache held
};

struct ApiServerPipelineCounters {
  std::int64_t requests = 0;
  std::int64_t processor_cache_hits = 0;  // images
  std::int64_t processor_cache_evictions = 0;
  Nanos decode_ns = 0;   // modelled decode on the media pool, all requests
  Nanos serial_ns = 0;   // modelled serial processing, all requests
};

class ApiServerPipeline {
 public:
  explicit ApiServerPipeline(ApiServerModel model);
  const ApiServerModel& model() const { return model_; }
  // When its images are decoded: FIFO over the media pool's threads; at `sent` without a pool
  // (the decode is then part of the serial cost). Calls in send order.
  Nanos decode(Nanos sent, std::int64_t image_pixels);
  // The serial part on the API-server process that frees first, from `decoded` on. Calls in the
  // order decodes end. Each image is looked up in that process's processor cache on its own key
  // (vLLM's mm_hash, not the prompt text).
  ApiServerProcessed process(Nanos decoded, std::span<const ProcessorItem> images, std::int64_t prompt_tokens);
  ApiServerPipelineCounters counters() const;

 private:
  ApiServerModel model_;
  ApiServerQueue media_pool_;
  ApiServerQueue processes_;
  std::vector<ProcessorCacheLru> caches_;  // one per API-server process; empty without a cache
  ApiServerPipelineCounters counters_;
};

}  // namespace encbench::serving
