#include "harness/serving/prefix_block_pool.hpp"

#include <algorithm>
#include <cassert>

namespace encbench::serving {

PrefixBlockPool::PrefixBlockPool(std::int64_t total_blocks) : total_(total_blocks), never_used_(total_blocks) {
  if (total_ > 0) blocks_.reserve(static_cast<std::size_t>(total_));
}

void PrefixBlockPool::find_longest_hit(std::uint64_t content_hash, std::int64_t max_blocks,
                                       std::vector<BlockId>& out) const {
  for (std::int64_t index = 0; index < max_blocks; ++index) {
    const auto it = cached_by_key_.find({content_hash, index});
    if (it == cached_by_key_.end()) return;  // a chain: no later block can be cached without this one
    out.push_back(it->second.front());
  }
}

std::int64_t PrefixBlockPool::unreferenced(std::span<const BlockId> blocks) const {
  return std::count_if(blocks.begin(), blocks.end(),
                       [this](BlockId id) { return blocks_[static_cast<std::size_t>(id)].ref == 0; });
}

void PrefixBlockPool::touch(std::span<const BlockId> blocks) {
  for (const BlockId id : blocks) {
    Block& b = blocks_[static_cast<std::size_t>(id)];
    if (b.ref == 0) {
      unlink(id);
      ++used_;
    }
    ++b.ref;
  }
}

PrefixBlockPool::BlockId PrefixBlockPool::allocate() {
  BlockId id = kNone;
  if (unlimited() && !spare_.empty()) {
    id = spare_.back();
    spare_.pop_back();
  } else if (unlimited() || never_used_ > 0) {
    id = static_cast<BlockId>(blocks_.size());
    blocks_.push_back({});
    if (!unlimited()) --never_used_;
  } else {
    assert(head_ != kNone);
    id = head_;
    unlink(id);
    evict(id);
  }
  blocks_[static_cast<std::size_t>(id)].ref = 1;
  ++used_;
  return id;
}

void PrefixBlockPool::cache(BlockId block, PrefixBlockKey key) {
  Block& b = blocks_[static_cast<std::size_t>(block)];
  assert(!b.hashed);
  b.key = key;
  b.hashed = true;
  ++cached_;
  cached_by_key_[key].push_back(block);  // insertion order: a lookup returns the earliest
}

void PrefixBlockPool::free(std::span<const BlockId> request_blocks) {
  for (auto it = request_blocks.rbegin(); it != request_blocks.rend(); ++it) {
    Block& b = blocks_[static_cast<std::size_t>(*it)];
    assert(b.ref > 0);
    if (--b.ref > 0) continue;
    --used_;
    if (unlimited() && !b.hashed)
      spare_.push_back(*it);  // nothing is ever evicted here: an unhashed free block is just spare
    else
      enqueue_tail(*it);
  }
}

void PrefixBlockPool::evict(BlockId id) {
  Block& b = blocks_[static_cast<std::size_t>(id)];
  if (!b.hashed) return;
  const auto it = cached_by_key_.find(b.key);
  assert(it != cached_by_key_.end());
  std::erase(it->second, id);
  if (it->second.empty()) cached_by_key_.erase(it);
  b.hashed = false;
  --cached_;
}

void PrefixBlockPool::enqueue_tail(BlockId id) {
  Block& b = blocks_[static_cast<std::size_t>(id)];
  b.prev = tail_;
  b.next = kNone;
  if (tail_ != kNone)
    blocks_[static_cast<std::size_t>(tail_)].next = id;
  else
    head_ = id;
  tail_ = id;
  b.queued = true;
  ++queue_length_;
}

void PrefixBlockPool::unlink(BlockId id) {
  Block& b = blocks_[static_cast<std::size_t>(id)];
  assert(b.queued);
  if (b.prev != kNone)
    blocks_[static_cast<std::size_t>(b.prev)].next = b.next;
  else
    head_ = b.next;
  if (b.next != kNone)
    blocks_[static_cast<std::size_t>(b.next)].prev = b.prev;
  else
    tail_ = b.prev;
  b.prev = b.next = kNone;
  b.queued = false;
  --queue_length_;
}

bool PrefixBlockPool::key_of(BlockId block, PrefixBlockKey& key) const {
  const Block& b = blocks_.at(static_cast<std::size_t>(block));
  if (b.hashed) key = b.key;
  return b.hashed;
}

std::vector<PrefixBlockPool::BlockId> PrefixBlockPool::free_queue() const {
  std::vector<BlockId> out;
  for (BlockId id = head_; id != kNone; id = blocks_[static_cast<std::size_t>(id)].next) out.push_back(id);
  return out;
}

}  // namespace encbench::serving
