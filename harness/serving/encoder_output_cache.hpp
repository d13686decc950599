#pragma once
// vLLM V1's EncoderCacheManager (vllm/v1/core/encoder_cache_manager.py): encoder outputs keyed by
// the multimodal item's hash, sized in encoder tokens. An entry referenced by no request stays
// cached ("freeable") until an allocation needs its space; those entries are evicted oldest first
// (OrderedDict popitem(last=False)). A request that finds its item cached references it instead of
// running the encoder (check_and_update_cache).
// The model's key: images with the same non-zero hash (SchedImage::hash, vLLM's mm_hash) are the
// same image, whatever the text or other images around them; an image with hash 0 gets a key of
// its own (unique = true), so it never hits but its entry still takes its place in the LRU order
// as vLLM's would.
#include <cstdint>
#include <list>
#include <unordered_map>

#include "harness/core/mix64.hpp"

namespace encbench::serving {

struct EncoderCacheKey {
  std::uint64_t value = 0;
  bool unique = false;  // value is a per-scheduler serial number, not an image hash
  bool operator==(const EncoderCacheKey&) const = default;
};

struct EncoderCacheKeyHash {
  std::size_t operator()(const EncoderCacheKey& k) const {
    return static_cast<std::size_t>(splitmix64_finalise(k.value ^ (k.unique ? 0xD6E8FEB86659FD93ULL : 0)));
  }
};

class EncoderOutputCache {
 public:
  explicit EncoderOutputCache(std::int64_t size_tokens) : size_(size_tokens), free_(size_tokens), freeable_(size_tokens) {}

  // check_and_update_cache: true if the entry exists; the caller now holds one reference to it (an
  // unreferenced entry leaves the freeable set).
  bool reference_if_cached(const EncoderCacheKey& key);
  // can_allocate's space half: true if `tokens` more fit, evicting unreferenced entries oldest first
  // when the free space alone is short (the eviction stands even if the caller then gives up, as in
  // vLLM). The caller checks the encoder compute budget first.
  bool make_room(std::int64_t tokens);
  // allocate: a new entry with one reference. make_room(tokens) must have returned true.
  void allocate(const EncoderCacheKey& key, std::int64_t tokens);
  // free_encoder_input: drops one reference; with none left the entry becomes freeable (kept).
  void release(const EncoderCacheKey& key);

  std::int64_t size() const { return size_; }
  std::int64_t referenced_tokens() const { return size_ - freeable_; }  // held by requests
  std::int64_t resident_tokens() const { return size_ - free_; }        // held or kept for reuse
  std::int64_t evictions() const { return evictions_; }
  bool contains(const EncoderCacheKey& key) const { return entries_.contains(key); }

 private:
  struct Entry {
    std::int64_t tokens = 0;
    std::int64_t refs = 0;
    std::list<EncoderCacheKey>::iterator lru;  // valid while refs == 0
  };
  std::int64_t size_ = 0;
  std::int64_t free_ = 0;      // vLLM num_free_slots
  std::int64_t freeable_ = 0;  // vLLM num_freeable_slots: free + unreferenced entries
  std::int64_t evictions_ = 0;
  std::unordered_map<EncoderCacheKey, Entry, EncoderCacheKeyHash> entries_;
  std::list<EncoderCacheKey> lru_;  // unreferenced entries, oldest first
};

}  // namespace encbench::serving
