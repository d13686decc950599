// vLLM V1's content-keyed caches in the scheduler model: prefix caching (vllm/v1/core/
// kv_cache_manager.py, block_pool.py, single_type_kv_cache_manager.py) and the encoder cache
// (encoder_cache_manager.py), each rule on a case small enough to work out by hand, plus the block
// pool against an independent, deliberately naive reference over random operation sequences.
#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <map>
#include <optional>
#include <random>

#include "harness/serving/encoder_output_cache.hpp"
#include "harness/serving/prefix_block_pool.hpp"
#include "harness/serving/scheduler.hpp"

namespace encbench::serving {
namespace {

SchedRequest prompt(std::int64_t tokens, std::int64_t output, std::uint64_t content) {
  SchedRequest r;
  r.prompt_tokens = tokens;
  r.output_tokens = output;
  r.content_hash = content;
  return r;
}

// A prompt's content fixes its image, so by default its image identity is its content's (0 with
// content 0: unknown); `image_id` gives the same image under another text, or another image.
SchedRequest with_image(std::int64_t before, std::int64_t image, std::int64_t after, std::int64_t output,
                        std::uint64_t content, std::optional<std::uint64_t> image_id = std::nullopt) {
  SchedRequest r = prompt(before + image + after, output, content);
  r.image_offset = before;
  r.images.push_back({image, {1, 2, static_cast<int>(image * 2)}, image_id.value_or(content)});
  return r;
}

std::map<RequestId, std::int64_t> tokens_by_id(const StepPlan& plan) {
  std::map<RequestId, std::int64_t> out;
  for (const auto& item : plan.items) out[item.id] = item.tokens;
  return out;
}

std::int64_t context_of(const StepPlan& plan, RequestId id) {
  for (const auto& item : plan.items)
    if (item.id == id) return item.context_tokens;
  return -1;
}

// Runs one request alone to its end (its blocks and encoder output then stay cached, unreferenced).
void run_to_end(Scheduler& s) {
  for (int step = 0; step < 10000 && s.has_work(); ++step) {
    (void)s.schedule();
    (void)s.complete();
  }
  ASSERT_FALSE(s.has_work());
}

TEST(PrefixCache, DuplicateComputesOnlyTheUncachedRemainderAndSharesTheBlocks) {
  Scheduler s({.max_num_seqs = 8, .max_num_batched_tokens = 4096, .kv_block_tokens = 128});
  s.add(1, prompt(700, 4, 42));
  EXPECT_EQ(tokens_by_id(s.schedule()), (std::map<RequestId, std::int64_t>{{1, 700}}));
  (void)s.complete();
  EXPECT_EQ(s.kv_blocks_used(), 6);    // ceil(700 / 128)
  EXPECT_EQ(s.kv_blocks_cached(), 5);  // the full prompt blocks only
  s.add(2, prompt(700, 4, 42));
  const StepPlan& plan = s.schedule();
  // 5 full blocks (640 tokens) are cached; the duplicate computes the other 60 but attends to 700.
  EXPECT_EQ(tokens_by_id(plan), (std::map<RequestId, std::int64_t>{{1, 1}, {2, 60}}));
  EXPECT_EQ(context_of(plan, 2), 700);
  EXPECT_EQ(plan.prefill_tokens, 60);
  // Shared blocks count once: request 1's 6 plus one new block for the duplicate's tail.
  EXPECT_EQ(s.kv_blocks_used(), 7);
  EXPECT_EQ(s.counters().prefix_cache_queries, 1400);
  EXPECT_EQ(s.counters().prefix_cache_hits, 640);
  (void)s.complete();
  run_to_end(s);
  EXPECT_EQ(s.kv_blocks_used(), 0);
  EXPECT_EQ(s.kv_blocks_cached(), 5);  // freed, still cached (capacity is unlimited: never evicted)
}

TEST(PrefixCache, APromptOfWholeBlocksRecomputesItsLastBlock) {
  // max_cache_hit_length = num_tokens - 1 = 639 tokens, and hits are whole blocks: 4 of the 5
  // (vLLM's comment: "This can trigger recomputation of an entire block").
  Scheduler s({.max_num_seqs = 8, .max_num_batched_tokens = 4096, .kv_block_tokens = 128});
  s.add(1, prompt(640, 1, 5));
  run_to_end(s);
  EXPECT_EQ(s.kv_blocks_cached(), 5);
  s.add(2, prompt(640, 1, 5));
  EXPECT_EQ(tokens_by_id(s.schedule()), (std::map<RequestId, std::int64_t>{{2, 128}}));
  EXPECT_EQ(s.counters().prefix_cache_hits, 512);
}

TEST(PrefixCache, AChunkThatFillsABlockWithoutANewOneCachesIt) {
  // vLLM's allocate_slots caches full blocks on every call, even when it adds none. Step 1: E
  // encodes its image, F stops before its own (no encoder budget left), A prefills 6 tokens.
  // Step 2: F's image takes the encoder budget, so A stops before its image at token 8: its block 1
  // is now full although A needed no new block, and must answer lookups.
  Scheduler s({.max_num_seqs = 8, .max_num_batched_tokens = 12, .encoder_budget_tokens = 4, .kv_block_tokens = 4});
  s.add(1, with_image(0, 4, 0, 5, 0));
  s.add(2, with_image(2, 4, 0, 5, 0));
  s.add(3, with_image(8, 4, 4, 5, 61));
  EXPECT_EQ(tokens_by_id(s.schedule()), (std::map<RequestId, std::int64_t>{{1, 4}, {2, 2}, {3, 6}}));
  (void)s.complete();
  EXPECT_EQ(s.kv_blocks_cached(), 1);
  const StepPlan& plan = s.schedule();
  EXPECT_EQ(tokens_by_id(plan), (std::map<RequestId, std::int64_t>{{1, 1}, {2, 4}, {3, 2}}));
  EXPECT_EQ(plan.encoded, std::vector<RequestId>{2});
  EXPECT_EQ(s.kv_blocks_cached(), 2);
}

TEST(PrefixCache, ContentHashZeroNeverHits) {
  Scheduler s({.max_num_seqs = 8, .max_num_batched_tokens = 4096, .encoder_budget_tokens = 2000,
               .kv_block_tokens = 128});
  s.add(1, with_image(10, 600, 90, 1, 0));
  run_to_end(s);
  EXPECT_EQ(s.kv_blocks_cached(), 0);
  s.add(2, with_image(10, 600, 90, 1, 0));
  const StepPlan& plan = s.schedule();
  EXPECT_EQ(tokens_by_id(plan), (std::map<RequestId, std::int64_t>{{2, 700}}));
  EXPECT_EQ(plan.encoded, std::vector<RequestId>{2});
  EXPECT_EQ(s.counters().prefix_cache_hits, 0);
  EXPECT_EQ(s.counters().prefix_cache_queries, 1400);
  EXPECT_EQ(s.counters().encoder_cache_hits, 0);
}

TEST(PrefixCache, ImageInsideTheCachedPrefixIsNotEncoded) {
  // Image tokens [10, 610) end inside the 640 cached tokens: already in the decoder's KV cache.
  Scheduler s({.max_num_seqs = 8, .max_num_batched_tokens = 4096, .encoder_budget_tokens = 1000,
               .kv_block_tokens = 128});
  s.add(1, with_image(10, 600, 90, 1, 77));
  EXPECT_EQ(s.schedule().encoded, std::vector<RequestId>{1});
  (void)s.complete();
  s.add(2, with_image(10, 600, 90, 1, 77));
  const StepPlan& plan = s.schedule();
  EXPECT_TRUE(plan.encoded.empty());
  EXPECT_EQ(plan.encoder_tokens, 0);
  EXPECT_EQ(tokens_by_id(plan), (std::map<RequestId, std::int64_t>{{2, 60}}));
  EXPECT_EQ(s.counters().encoder_prefix_skips, 1);
  EXPECT_EQ(s.counters().encoder_cache_hits, 0);
  EXPECT_EQ(s.encoder_cache_used(), 0);
}

TEST(PrefixCache, ImageEndingInTheUncachedTailUsesTheEncoderCacheOrIsEncodedAgain) {
  // Image tokens [50, 650) end past the 640 cached tokens: the prefill restarts inside the image,
  // so its encoder output is needed: from the encoder cache while kept, else encoded again.
  Scheduler s({.max_num_seqs = 8, .max_num_batched_tokens = 4096, .encoder_budget_tokens = 1000,
               .kv_block_tokens = 128});
  s.add(1, with_image(50, 600, 50, 1, 88));
  run_to_end(s);
  EXPECT_EQ(s.encoder_cache_used(), 0);        // consumed, no reference left
  EXPECT_EQ(s.encoder_cache_resident(), 600);  // but kept for reuse
  s.add(2, with_image(50, 600, 50, 1, 88));
  const StepPlan& hit = s.schedule();
  EXPECT_TRUE(hit.encoded.empty());
  EXPECT_EQ(tokens_by_id(hit), (std::map<RequestId, std::int64_t>{{2, 60}}));
  EXPECT_EQ(s.counters().encoder_cache_hits, 1);
  (void)s.complete();
  // A unique 600-token image needs the space: only 400 are free, so request 1's output is evicted.
  s.add(3, with_image(0, 600, 4, 1, 0));
  EXPECT_EQ(s.schedule().encoded, std::vector<RequestId>{3});
  (void)s.complete();
  EXPECT_EQ(s.encoder_cache_resident(), 600);
  s.add(4, with_image(50, 600, 50, 1, 88));
  const StepPlan& again = s.schedule();
  EXPECT_EQ(again.encoded, std::vector<RequestId>{4});
  EXPECT_EQ(again.encoder_tokens, 600);
  EXPECT_EQ(tokens_by_id(again), (std::map<RequestId, std::int64_t>{{4, 60}}));  // the KV prefix still hits
  EXPECT_EQ(s.counters().encoder_cache_hits, 1);
}

TEST(PrefixCache, TheSameImageUnderAnotherTextHitsTheEncoderCacheButNoBlock) {
  // vLLM keys the encoder cache on the image's mm_hash (EncoderCacheManager: mm_features[i]
  // .identifier; the hash sees the image and the processor's kwargs, not the text), and the
  // prefix cache on block hashes chained from the first block, whose tokens are the template's
  // and the text's (its bench client sends [text, image]). Another text over the same image:
  // block 0 differs, so no block hits and the whole prompt is prefilled, but the image's kept
  // encoder output serves it. Another image under another text hits neither.
  Scheduler s({.max_num_seqs = 8, .max_num_batched_tokens = 4096, .encoder_budget_tokens = 1000,
               .kv_block_tokens = 128});
  s.add(1, with_image(50, 600, 50, 1, 88, 5));
  run_to_end(s);
  ASSERT_EQ(s.encoder_cache_resident(), 600);  // kept for reuse
  s.add(2, with_image(50, 600, 50, 1, 89, 5));
  const StepPlan& same_image = s.schedule();
  EXPECT_TRUE(same_image.encoded.empty());
  EXPECT_EQ(same_image.encoder_tokens, 0);
  EXPECT_EQ(tokens_by_id(same_image), (std::map<RequestId, std::int64_t>{{2, 700}}));  // no prefix hit
  EXPECT_EQ(s.counters().encoder_cache_hits, 1);
  EXPECT_EQ(s.counters().prefix_cache_hits, 0);
  EXPECT_EQ(s.counters().prefix_cache_queries, 700 + 700);
  EXPECT_EQ(s.counters().encoder_prefix_skips, 0);
  (void)s.complete();
  run_to_end(s);
  s.add(3, with_image(50, 600, 50, 1, 90, 6));
  const StepPlan& other_image = s.schedule();
  EXPECT_EQ(other_image.encoded, std::vector<RequestId>{3});
  EXPECT_EQ(other_image.encoder_tokens, 600);
  EXPECT_EQ(s.counters().encoder_cache_hits, 1);
  EXPECT_EQ(s.counters().prefix_cache_hits, 0);
  (void)s.complete();
  // The first prompt again (text and image): 5 whole blocks hit (640 of its 700 tokens), and its
  // image, which ends at 650 past them, was evicted by image 6 (600 + 600 > 1000): encoded again.
  s.add(4, with_image(50, 600, 50, 1, 88, 5));
  const StepPlan& repeat = s.schedule();
  EXPECT_EQ(tokens_by_id(repeat), (std::map<RequestId, std::int64_t>{{4, 60}}));
  EXPECT_EQ(repeat.encoded, std::vector<RequestId>{4});
  EXPECT_EQ(s.counters().prefix_cache_hits, 640);
}

TEST(PrefixCache, FreedBlocksAreEvictedLeastRecentlyFreedAndTailFirst) {
  // 8 blocks of 4 tokens. A (12-token prompt) and B finish and free their 3 blocks each, tail
  // first: the queue is [2 never used] A2 A1 A0 B2 B1 B0. A unique 16-token request takes the two
  // never-used blocks and then A2 and A1 (evicting them); C frees C3..C0 after B0. A's duplicate
  // finds only A0 and its two new blocks come from the queue head, B2 and B1, so B's duplicate
  // finds only B0 although it could have taken 2 blocks (its last token must be computed).
  Scheduler s({.max_num_seqs = 8, .max_num_batched_tokens = 100, .kv_capacity_tokens = 32, .kv_block_tokens = 4});
  s.add(1, prompt(12, 1, 1));
  run_to_end(s);
  s.add(2, prompt(12, 1, 2));
  run_to_end(s);
  EXPECT_EQ(s.kv_blocks_cached(), 6);
  s.add(3, prompt(16, 1, 0));
  run_to_end(s);
  EXPECT_EQ(s.kv_blocks_cached(), 4);  // A0 and B0..B2
  s.add(4, prompt(12, 1, 1));
  EXPECT_EQ(tokens_by_id(s.schedule()), (std::map<RequestId, std::int64_t>{{4, 8}}));
  (void)s.complete();
  s.add(5, prompt(12, 1, 2));
  EXPECT_EQ(tokens_by_id(s.schedule()), (std::map<RequestId, std::int64_t>{{5, 8}}));
  (void)s.complete();
  EXPECT_EQ(s.counters().prefix_cache_hits, 4 + 4);
  // Without request 4 in between, B's duplicate takes its 2 allowed blocks.
  Scheduler t({.max_num_seqs = 8, .max_num_batched_tokens = 100, .kv_capacity_tokens = 32, .kv_block_tokens = 4});
  t.add(1, prompt(12, 1, 2));
  run_to_end(t);
  t.add(2, prompt(12, 1, 2));
  EXPECT_EQ(tokens_by_id(t.schedule()), (std::map<RequestId, std::int64_t>{{2, 4}}));
  EXPECT_EQ(s.kv_blocks_used(), 0);
}

TEST(PrefixCache, HitsOnBlocksInUseTakeNoCapacity) {
  // 6 blocks of 4 tokens. A (16-token prompt) holds 5 blocks after its first decode; its duplicate
  // hits 3 of them (15 tokens may hit: 3 whole blocks) and needs one new block: it fits in the one
  // free block only because the hits are shared.
  Scheduler s({.max_num_seqs = 8, .max_num_batched_tokens = 100, .kv_capacity_tokens = 24, .kv_block_tokens = 4});
  s.add(1, prompt(16, 3, 9));
  (void)s.schedule();
  (void)s.complete();
  s.add(2, prompt(16, 3, 9));
  const StepPlan& plan = s.schedule();
  EXPECT_EQ(tokens_by_id(plan), (std::map<RequestId, std::int64_t>{{1, 1}, {2, 4}}));
  EXPECT_TRUE(plan.preempted.empty());
  EXPECT_EQ(s.kv_blocks_used(), 6);
}

TEST(PrefixCache, AHitOnAFreeCachedBlockCostsCapacity) {
  // 4 blocks of 4 tokens. A finishes (its 3 prompt blocks cached, free); C (unique) holds 2 blocks,
  // one of them A's evicted tail block. A's duplicate hits A0 and A1 (free), which must leave the
  // free queue: 2 hits + 1 new block > the 2 free blocks, so it waits behind C.
  Scheduler s({.max_num_seqs = 8, .max_num_batched_tokens = 100, .kv_capacity_tokens = 16, .kv_block_tokens = 4});
  s.add(1, prompt(12, 1, 3));
  run_to_end(s);
  s.add(2, prompt(5, 4, 0));  // 2 blocks: the never-used one, then A2 (evicted)
  (void)s.schedule();
  (void)s.complete();
  EXPECT_EQ(s.kv_blocks_cached(), 2);
  s.add(3, prompt(12, 1, 3));
  const StepPlan& plan = s.schedule();
  EXPECT_EQ(tokens_by_id(plan), (std::map<RequestId, std::int64_t>{{2, 1}}));
  EXPECT_EQ(s.waiting(), 1u);
  EXPECT_EQ(s.counters().prefix_cache_queries, 12 + 5);  // only admissions are recorded
  (void)s.complete();
}

TEST(PrefixCache, APreemptedRequestHitsItsPromptAgainAndCountsApart) {
  // The preemption case of scheduler_test, with shared content: request 2's prompt blocks stay
  // cached after it is preempted (request 1's new block takes the never-used... none: it takes
  // request 2's freed tail block B1), so on resume it hits B0 and recomputes 4 + 1 tokens.
  Scheduler s({.max_num_seqs = 8, .max_num_batched_tokens = 100, .kv_capacity_tokens = 16, .kv_block_tokens = 4});
  s.add(1, prompt(8, 3, 0));
  s.add(2, prompt(8, 3, 21));
  (void)s.schedule();
  (void)s.complete();
  EXPECT_EQ(s.schedule().preempted, std::vector<RequestId>{2});
  (void)s.complete();
  (void)s.schedule();
  ASSERT_EQ(s.complete().size(), 1u);  // request 1 finished
  EXPECT_EQ(tokens_by_id(s.schedule()), (std::map<RequestId, std::int64_t>{{2, 5}}));
  EXPECT_EQ(s.counters().preempted_prefix_cache_queries, 9);
  EXPECT_EQ(s.counters().preempted_prefix_cache_hits, 4);
  EXPECT_EQ(s.counters().prefix_cache_hits, 0);
}

TEST(EncoderCache, AResumedRequestReusesItsKeptOutputOnlyWithSharedContent) {
  // Request 2's image [0, 6) is encoded and consumed in step 1; request 1's decode then preempts it
  // (its tail block B1 is evicted, B0 stays cached). On resume, shared content hits B0 (4 tokens):
  // the image ends past it, and its kept encoder output serves it. Unique content (hash 0) never
  // hits: it recomputes its 8 prompt tokens and 1 generated token and encodes again, as before.
  for (const std::uint64_t content : {std::uint64_t{0}, std::uint64_t{55}}) {
    Scheduler s({.max_num_seqs = 8, .max_num_batched_tokens = 100, .encoder_budget_tokens = 100,
                 .kv_capacity_tokens = 16, .kv_block_tokens = 4});
    s.add(1, prompt(8, 3, 0));
    s.add(2, with_image(0, 6, 2, 3, content));
    EXPECT_EQ(s.schedule().encoded, std::vector<RequestId>{2});
    (void)s.complete();
    EXPECT_EQ(s.schedule().preempted, std::vector<RequestId>{2});
    (void)s.complete();
    (void)s.schedule();
    ASSERT_EQ(s.complete().size(), 1u);
    const StepPlan& resumed = s.schedule();
    if (content == 0) {
      EXPECT_EQ(tokens_by_id(resumed), (std::map<RequestId, std::int64_t>{{2, 9}}));
      EXPECT_EQ(resumed.encoded, std::vector<RequestId>{2});
      EXPECT_EQ(s.counters().encoder_cache_hits, 0);
    } else {
      EXPECT_EQ(tokens_by_id(resumed), (std::map<RequestId, std::int64_t>{{2, 5}}));
      EXPECT_TRUE(resumed.encoded.empty());
      EXPECT_EQ(s.counters().encoder_cache_hits, 1);
    }
  }
}

TEST(EncoderCache, UnreferencedOutputsAreReusedAndEvictedOldestFirst) {
  // Blocks larger than any prompt: no prefix hits, only the encoder cache is at work.
  Scheduler s({.max_num_seqs = 8, .max_num_batched_tokens = 4096, .encoder_budget_tokens = 1000,
               .kv_block_tokens = 1024});
  s.add(1, with_image(0, 400, 4, 1, 11));
  run_to_end(s);
  s.add(2, with_image(0, 400, 4, 1, 12));
  run_to_end(s);
  EXPECT_EQ(s.encoder_cache_resident(), 800);
  s.add(3, with_image(0, 400, 4, 1, 11));  // reuses 11 (no encode), which becomes the newest
  EXPECT_TRUE(s.schedule().encoded.empty());
  (void)s.complete();
  EXPECT_EQ(s.counters().encoder_cache_hits, 1);
  s.add(4, with_image(0, 400, 4, 1, 0));  // 200 free: evicts the oldest unreferenced, 12
  EXPECT_EQ(s.schedule().encoded, std::vector<RequestId>{4});
  (void)s.complete();
  s.add(5, with_image(0, 400, 4, 1, 11));
  EXPECT_TRUE(s.schedule().encoded.empty());
  (void)s.complete();
  s.add(6, with_image(0, 400, 4, 1, 12));
  EXPECT_EQ(s.schedule().encoded, std::vector<RequestId>{6});
  (void)s.complete();
  EXPECT_EQ(s.counters().encoder_cache_hits, 2);
  EXPECT_EQ(s.encoder_cache_used(), 0);
}

TEST(EncoderCache, SameImagesScheduledTogetherAreEncodedOnce) {
  // vLLM allocates the encoder cache entry as soon as the first request is scheduled, so the
  // second request of the same step finds it (its output is ready before the LM forward).
  Scheduler s({.max_num_seqs = 8, .max_num_batched_tokens = 4096, .encoder_budget_tokens = 1000,
               .kv_block_tokens = 1024});
  s.add(1, with_image(0, 400, 4, 2, 31));
  s.add(2, with_image(0, 400, 4, 2, 31));
  const StepPlan& plan = s.schedule();
  EXPECT_EQ(plan.encoded, std::vector<RequestId>{1});
  EXPECT_EQ(tokens_by_id(plan), (std::map<RequestId, std::int64_t>{{1, 404}, {2, 404}}));
  EXPECT_EQ(s.encoder_cache_used(), 400);  // one entry, two references
  (void)s.complete();
  EXPECT_EQ(s.encoder_cache_used(), 0);
  EXPECT_EQ(s.encoder_cache_resident(), 400);
}

TEST(EncoderCache, ManagerBookkeepingMatchesVllm) {
  EncoderOutputCache c(1000);
  const EncoderCacheKey a{1, false}, b{2, false}, u{1, true};
  EXPECT_FALSE(c.reference_if_cached(a));
  ASSERT_TRUE(c.make_room(600));
  c.allocate(a, 600);
  EXPECT_FALSE(c.contains(u));  // a unique key never matches a content key of the same value
  EXPECT_FALSE(c.make_room(500));  // 400 free, nothing freeable
  EXPECT_EQ(c.evictions(), 0);
  c.release(a);
  EXPECT_EQ(c.referenced_tokens(), 0);
  EXPECT_EQ(c.resident_tokens(), 600);
  ASSERT_TRUE(c.make_room(300));  // fits in the free 400: nothing evicted
  c.allocate(b, 300);
  EXPECT_TRUE(c.reference_if_cached(a));  // back from freeable
  EXPECT_FALSE(c.make_room(200));         // 100 free and nothing freeable
  c.release(a);
  ASSERT_TRUE(c.make_room(200));  // evicts a
  EXPECT_EQ(c.evictions(), 1);
  EXPECT_FALSE(c.contains(a));
  EXPECT_EQ(c.resident_tokens(), 300);
}

// A naive reference of vLLM's block pool, written from block_pool.py's text: every block in a
// list, the free queue a std::deque searched linearly, the hash map a std::map of ordered vectors.
class ReferencePool {
 public:
  explicit ReferencePool(int n) : ref_(n, 0), key_(n) {
    for (int i = 0; i < n; ++i) queue_.push_back(i);
  }
  int free_count() const { return static_cast<int>(queue_.size()); }
  std::vector<int> hit(std::uint64_t content, int max_blocks) const {
    std::vector<int> out;
    for (int i = 0; i < max_blocks; ++i) {
      const auto it = map_.find({content, i});
      if (it == map_.end() || it->second.empty()) break;
      out.push_back(it->second.front());
    }
    return out;
  }
  void touch(const std::vector<int>& blocks) {
    for (int b : blocks) {
      if (ref_[b] == 0) queue_.erase(std::find(queue_.begin(), queue_.end(), b));
      ++ref_[b];
    }
  }
  int allocate() {
    const int b = queue_.front();
    queue_.pop_front();
    if (key_[b]) {
      auto& ids = map_[*key_[b]];
      ids.erase(std::find(ids.begin(), ids.end(), b));
      key_[b].reset();
    }
    ref_[b] = 1;
    return b;
  }
  void cache(int b, std::pair<std::uint64_t, int> key) {
    key_[b] = key;
    map_[key].push_back(b);
  }
  void free(const std::vector<int>& blocks) {
    for (auto it = blocks.rbegin(); it != blocks.rend(); ++it)
      if (--ref_[*it] == 0) queue_.push_back(*it);
  }
  std::vector<int> used_queue(int created) const {  // the queue without the never-used blocks
    std::vector<int> out;
    for (int b : queue_)
      if (b < created) out.push_back(b);
    return out;
  }

 private:
  std::vector<int> ref_;
  std::vector<std::optional<std::pair<std::uint64_t, int>>> key_;
  std::deque<int> queue_;
  std::map<std::pair<std::uint64_t, int>, std::vector<int>> map_;
};

TEST(PrefixBlockPool, MatchesANaiveReferenceOverRandomRequestSequences) {
  constexpr int kBlocks = 24;
  for (unsigned seed = 1; seed <= 200; ++seed) {
    std::mt19937 rng(seed);
    PrefixBlockPool pool(kBlocks);
    ReferencePool ref(kBlocks);
    std::vector<std::vector<int>> live;  // block lists of requests holding blocks
    int created = 0;
    for (int op = 0; op < 120; ++op) {
      if (!live.empty() && (rng() % 3 == 0 || pool.free_blocks() < 4)) {
        const std::size_t victim = rng() % live.size();
        std::vector<PrefixBlockPool::BlockId> ids(live[victim].begin(), live[victim].end());
        pool.free(ids);
        ref.free(live[victim]);
        live.erase(live.begin() + static_cast<std::ptrdiff_t>(victim));
      } else {
        // A request of 1..6 blocks whose first `full` blocks are prompt blocks of content 1..4.
        const std::uint64_t content = 1 + rng() % 4;
        const int blocks = 1 + static_cast<int>(rng() % 6);
        const int full = static_cast<int>(rng() % (blocks + 1));
        std::vector<PrefixBlockPool::BlockId> hits;
        pool.find_longest_hit(content, full, hits);
        const std::vector<int> ref_hits = ref.hit(content, full);
        ASSERT_EQ(std::vector<int>(hits.begin(), hits.end()), ref_hits) << "seed " << seed << " op " << op;
        const int fresh = blocks - static_cast<int>(hits.size());
        if (fresh + pool.unreferenced(hits) > pool.free_blocks()) continue;
        pool.touch(hits);
        ref.touch(ref_hits);
        std::vector<int> mine(hits.begin(), hits.end());
        for (int i = 0; i < fresh; ++i) {
          const auto id = pool.allocate();
          ASSERT_EQ(id, ref.allocate()) << "seed " << seed << " op " << op;
          created = std::max(created, id + 1);
          mine.push_back(id);
        }
        for (int i = static_cast<int>(hits.size()); i < full; ++i) {
          pool.cache(mine[static_cast<std::size_t>(i)], {content, i});
          ref.cache(mine[static_cast<std::size_t>(i)], {content, i});
        }
        live.push_back(mine);
      }
      ASSERT_EQ(pool.free_blocks(), ref.free_count()) << "seed " << seed << " op " << op;
      const auto queue = pool.free_queue();
      ASSERT_EQ(std::vector<int>(queue.begin(), queue.end()), ref.used_queue(created)) << "seed " << seed;
      std::int64_t used = 0;
      for (const auto& r : live) used += static_cast<std::int64_t>(r.size());
      ASSERT_LE(pool.used_blocks(), used);  // shared blocks count once
      ASSERT_LE(pool.used_blocks(), kBlocks);
    }
  }
}

// Runs the scheduler until it has no work, adding up the tokens and encoder tokens it scheduled.
void drain(Scheduler& s, std::int64_t& tokens, std::int64_t& encoder) {
  for (int step = 0; step < 200000 && s.has_work(); ++step) {
    const StepPlan& plan = s.schedule();
    tokens += plan.tokens();
    encoder += plan.encoder_tokens;
    EXPECT_LE(s.encoder_cache_resident(), s.config().encoder_budget_tokens);
    (void)s.complete();
  }
  EXPECT_FALSE(s.has_work());
}

TEST(PrefixCache, RandomDuplicatesSaveExactlyTheirHitsAndFreeEverything) {
  // Without preemption (unlimited KV) every request computes prompt + output - 1 tokens less its
  // prefix hit, and encodes its image unless it came from the encoder cache or lay inside the hit.
  for (unsigned seed = 1; seed <= 30; ++seed) {
    std::mt19937 rng(seed);
    Scheduler s({.max_num_seqs = 16, .max_num_batched_tokens = 2048, .encoder_budget_tokens = 2048,
                 .kv_block_tokens = 64});
    std::int64_t expected_tokens = 0, prompts = 0, images = 0, tokens = 0, encoder = 0;
    for (RequestId id = 1; id <= 120; ++id) {
      const std::uint64_t content = rng() % 2 == 0 ? 0 : 1 + rng() % 20;
      // A content's prompt is a function of its hash; unique ones vary freely.
      std::mt19937 shape(content == 0 ? static_cast<unsigned>(rng()) : static_cast<unsigned>(content));
      const std::int64_t before = 5 + shape() % 300, after = 1 + shape() % 100;
      const std::int64_t output = 1 + rng() % 8;
      s.add(id, with_image(before, 256, after, output, content));
      prompts += before + 256 + after;
      expected_tokens += before + 256 + after + output - 1;
      images += 256;
      if (id % 7 == 0) drain(s, tokens, encoder);  // later duplicates then find freed, cached blocks
    }
    drain(s, tokens, encoder);
    const SchedulerCounters& c = s.counters();
    ASSERT_EQ(c.preemptions, 0);
    EXPECT_GT(c.prefix_cache_hits, 0) << "seed " << seed;
    EXPECT_EQ(c.prefix_cache_queries, prompts);
    EXPECT_EQ(tokens, expected_tokens - c.prefix_cache_hits) << "seed " << seed;
    EXPECT_EQ(encoder, images - 256 * (c.encoder_cache_hits + c.encoder_prefix_skips)) << "seed " << seed;
    EXPECT_GT(c.encoder_cache_hits + c.encoder_prefix_skips, 0);
    EXPECT_EQ(s.kv_blocks_used(), 0);
    EXPECT_EQ(s.encoder_cache_used(), 0);
  }
}

TEST(PrefixCache, UnderKvPressureSharedBlocksSurvivePreemptionAndEveryRequestFinishes) {
  // A small KV cache (40 blocks of 16) with duplicates: preemption frees blocks other requests
  // share, resumes look the prefix up again, evictions take free cached blocks. Every request must
  // still emit exactly its tokens in order, capacity must hold every step, and nothing may leak.
  for (unsigned seed = 1; seed <= 20; ++seed) {
    std::mt19937 rng(seed);
    Scheduler s({.max_num_seqs = 12, .max_num_batched_tokens = 256, .encoder_budget_tokens = 256,
                 .kv_capacity_tokens = 640, .kv_block_tokens = 16});
    std::map<RequestId, std::int64_t> expected_outputs, next_index;
    for (RequestId id = 1; id <= 60; ++id) {
      const std::uint64_t content = rng() % 3 == 0 ? 0 : 1 + rng() % 6;
      std::mt19937 shape(content == 0 ? static_cast<unsigned>(rng()) : static_cast<unsigned>(content));
      const std::int64_t before = 4 + shape() % 60, image = 32 + shape() % 64, after = 1 + shape() % 40;
      const std::int64_t output = 1 + rng() % 60;
      s.add(id, with_image(before, image, after, output, content));
      expected_outputs[id] = output;
    }
    for (int step = 0; step < 100000 && s.has_work(); ++step) {
      (void)s.schedule();
      ASSERT_LE(s.kv_blocks_used(), s.kv_blocks_total());
      ASSERT_LE(s.kv_blocks_cached(), s.kv_blocks_total());
      ASSERT_LE(s.encoder_cache_resident(), 256);
      for (const EmittedToken& t : s.complete()) {
        ASSERT_EQ(t.index, next_index[t.id]++) << "seed " << seed << " request " << t.id;
        ASSERT_EQ(t.finished, t.index + 1 == expected_outputs[t.id]);
      }
    }
    ASSERT_FALSE(s.has_work()) << "seed " << seed;
    for (const auto& [id, output] : expected_outputs) EXPECT_EQ(next_index[id], output) << "request " << id;
    const SchedulerCounters& c = s.counters();
    EXPECT_GT(c.preemptions, 0) << "seed " << seed;  // the case this test is for
    EXPECT_GT(c.prefix_cache_hits + c.preempted_prefix_cache_hits, 0) << "seed " << seed;
    EXPECT_EQ(s.kv_blocks_used(), 0);
    EXPECT_EQ(s.encoder_cache_used(), 0);
  }
}

}  // namespace
}  // namespace encbench::serving
