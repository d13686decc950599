#include "harness/serving/encoder_output_cache.hpp"

#include <cassert>

namespace encbench::serving {

bool EncoderOutputCache::reference_if_cached(const EncoderCacheKey& key) {
  const auto it = entries_.find(key);
  if (it == entries_.end()) return false;
  Entry& e = it->second;
  if (e.refs == 0) {
    lru_.erase(e.lru);
    freeable_ -= e.tokens;
  }
  ++e.refs;
  return true;
}

bool EncoderOutputCache::make_room(std::int64_t tokens) {
  if (tokens <= free_) return true;
  if (tokens > freeable_) return false;
  while (tokens > free_) {
    assert(!lru_.empty());
    const auto it = entries_.find(lru_.front());
    free_ += it->second.tokens;
    entries_.erase(it);
    lru_.pop_front();
    ++evictions_;
  }
  return true;
}

void EncoderOutputCache::allocate(const EncoderCacheKey& key, std::int64_t tokens) {
  assert(tokens <= free_ && !entries_.contains(key));
  entries_.emplace(key, Entry{tokens, 1, {}});
  free_ -= tokens;
  freeable_ -= tokens;
}

void EncoderOutputCache::release(const EncoderCacheKey& key) {
  const auto it = entries_.find(key);
  if (it == entries_.end() || it->second.refs == 0) return;
  Entry& e = it->second;
  if (--e.refs > 0) return;
  e.lru = lru_.insert(lru_.end(), key);
  freeable_ += e.tokens;
}

}  // namespace encbench::serving
