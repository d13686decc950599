#pragma once
// vLLM V1's KV block pool with prefix caching (vllm/v1/core/block_pool.py, kv_cache_utils.py's
// FreeKVCacheBlockQueue), reduced to what the scheduler model needs:
//   - a block is either referenced by requests (ref > 0) or free; free blocks sit in one LRU queue,
//     never-used blocks first (vLLM's queue starts with every block), freed blocks appended at the
//     tail; an allocation pops the head;
//   - a full block can carry a hash; a freed block keeps it (it is still a cache hit) until an
//     allocation pops it (eviction). Several blocks may carry the same hash (vLLM does not
//     de-duplicate); a lookup returns the earliest cached one;
//   - a hit on a free block takes it out of the queue (touch), so it stops being free.
// The model's block hash is (content_hash, block index): vLLM chains each full block's hash on the
// previous one and its tokens plus the multimodal hashes inside it, so two prompts share block i
// exactly when their first (i + 1) * block_size tokens and images are equal; requests with the
// same non-zero content hash carry the same prompt.
// Every operation is O(1) per block: an intrusive doubly linked list over a vector, one hash map.
#include <cstdint>
#include <limits>
#include <span>
#include <unordered_map>
#include <vector>

#include "harness/core/mix64.hpp"

namespace encbench::serving {

struct PrefixBlockKey {
  std::uint64_t content_hash = 0;
  std::int64_t index = 0;  // block index inside the prompt
  bool operator==(const PrefixBlockKey&) const = default;
};

struct PrefixBlockKeyHash {
  std::size_t operator()(const PrefixBlockKey& k) const {
    // splitmix64 finaliser over both fields: content hashes may be small consecutive integers.
    return static_cast<std::size_t>(
        splitmix64_finalise(k.content_hash ^ (static_cast<std::uint64_t>(k.index) * kSplitmix64Gamma)));
  }
};

class PrefixBlockPool {
 public:
  using BlockId = std::int32_t;

  // total_blocks 0 = unlimited: blocks are created on demand and a cached block is never evicted.
  explicit PrefixBlockPool(std::int64_t total_blocks);

  // Blocks an allocation may take now: never used, freed, or cached with no reference.
  std::int64_t free_blocks() const {
    return unlimited() ? std::numeric_limits<std::int64_t>::max() : never_used_ + queue_length_;
  }
  std::int64_t used_blocks() const { return used_; }  // physical blocks with a reference
  std::int64_t cached_blocks() const { return cached_; }  // blocks carrying a hash, referenced or not
  bool unlimited() const { return total_ == 0; }

  // vLLM FullAttentionManager.find_longest_cache_hit: the cached blocks for indices 0, 1, ... of
  // `content_hash`, stopping at the first miss or at max_blocks. Appends to `out`.
  void find_longest_hit(std::uint64_t content_hash, std::int64_t max_blocks, std::vector<BlockId>& out) const;
  // Hit blocks that are free now (ref 0): taking them costs free capacity, as in vLLM's
  // get_num_blocks_to_allocate.
  std::int64_t unreferenced(std::span<const BlockId> blocks) const;
  // vLLM BlockPool.touch: one more reference each; a free one leaves the queue.
  void touch(std::span<const BlockId> blocks);
  // vLLM get_new_blocks: pops the queue head, evicting the hash it carried. Needs free_blocks() >= 1.
  BlockId allocate();
  // vLLM cache_full_blocks for one block: the block now answers lookups of `key`.
  void cache(BlockId block, PrefixBlockKey key);
  // vLLM SingleTypeKVCacheManager.free: drops one reference of each, in reverse order, so that a
  // request's tail blocks reach the queue first and are evicted first. Hashes are kept.
  void free(std::span<const BlockId> request_blocks);

  // For tests: the hash a block carries (false if none) and the free queue, head first.
  bool key_of(BlockId block, PrefixBlockKey& key) const;
  std::vector<BlockId> free_queue() const;
  std::int32_t ref_count(BlockId block) const { return blocks_.at(static_cast<std::size_t>(block)).ref; }

 private:
  static constexpr BlockId kNone = -1;
  struct Block {
    PrefixBlockKey key;
    std::int32_t ref = 0;
    BlockId prev = kNone;
    BlockId next = kNone;
    bool hashed = false;
    bool queued = false;
  };
  void enqueue_tail(BlockId id);
  void unlink(BlockId id);
  void evict(BlockId id);

  std::int64_t total_ = 0;
  std::int64_t never_used_ = 0;  // limited pool: blocks not created yet (the queue's implicit head)
  std::int64_t queue_length_ = 0;
  std::int64_t used_ = 0;
  std::int64_t cached_ = 0;
  std::vector<Block> blocks_;
  BlockId head_ = kNone;
  BlockId tail_ = kNone;
  std::vector<BlockId> spare_;  // unlimited pool: freed blocks without a hash, reused first
  std::unordered_map<PrefixBlockKey, std::vector<BlockId>, PrefixBlockKeyHash> cached_by_key_;
};

}  // namespace encbench::serving
