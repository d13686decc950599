#pragma once
// vLLM V1's scheduler (v0.16, vllm/v1/core/sched/scheduler.py) as a plain state machine: no
// threads, no clock, no HTTP. A driver adds requests, asks for the next step's plan, runs the
// step however it models time (the live server sleeps a modelled LM time after the real encoder;
// the virtual preset A/B advances an event queue), then completes the step and learns which
// tokens came out.
//
// The rules, each as vLLM applies them:
//   - one token budget per step (max_num_batched_tokens); running requests first, in admission
//     order: a decode takes one token, a prefill (or a recompute after preemption) its next chunk;
//     then waiting requests first come, first served while seats (max_num_seqs) and budget last;
//   - chunked prefill: a request's remaining tokens are cut to the budget left;
//   - whole-image encoder scheduling, image by image (_try_schedule_encoder_inputs): each image's
//     tokens are encoded in the first step whose token range overlaps them, if the step's encoder
//     compute budget (less what the request's earlier images take in it) and the encoder cache
//     have room; otherwise the prefill stops just before that image (a waiting request that cannot
//     advance at all ends admission for the step: FCFS). An image's encoder output stays cached
//     until the prefill has consumed it;
//   - KV cache in blocks of kv_block_tokens: a step's tokens need their blocks; a running request
//     that cannot get them preempts the most recently admitted running request (freed, its
//     computed tokens reset to 0, back to the front of the waiting queue; it recomputes prompt and
//     generated tokens when it resumes); a waiting request that cannot get them ends admission.
//   - prefix caching (on by default in vLLM V1): a waiting request first takes the longest chain of
//     cached full blocks of its prompt (at most num_tokens - 1 tokens, whole blocks) as computed;
//     those blocks are shared (one more reference, no new capacity unless they were free), an image
//     inside them is not encoded, and full prompt blocks are cached as soon as they are scheduled.
//     Freed blocks keep their hash until an allocation evicts them, least recently freed first;
//   - the encoder cache is keyed by each image's hash: an image whose output is cached (referenced
//     or kept after use) is referenced instead of encoded; unreferenced outputs are evicted oldest
//     first when space is needed.
// The model's identities: SchedRequest::content_hash (the prompt) for prefix caching,
// SchedImage::hash (each image) for the encoder cache. With all 0 (unique content) nothing is
// ever a hit and the scheduler behaves exactly as without the caches.
// Simplifications (stated): a request's images follow one another from image_offset (the text
// between them, vision_start/end tokens included, counts before the first); blocks that hold
// generated tokens are never cached (two requests' outputs
// differ; vLLM caches them too, which lets a preempted request hit its own output on resume), nor
// are the blocks of a content-hash-0 prompt (vLLM would let its resume hit them as well).
#include <cstdint>
#include <deque>
#include <span>
#include <unordered_map>
#include <vector>

#include "harness/vision/grid.hpp"
#include "harness/serving/encoder_output_cache.hpp"
#include "harness/serving/prefix_block_pool.hpp"

namespace encbench::serving {

using RequestId = std::uint64_t;

struct SchedulerConfig {
  int max_num_seqs = 256;
  std::int64_t max_num_batched_tokens = 8192;
  // Encoder compute budget per step and encoder cache size, in multimodal (post-merge) tokens.
  // vLLM: max(max_num_batched_tokens, max tokens of one item). 0 = max_num_batched_tokens.
  std::int64_t encoder_budget_tokens = 0;
  // KV cache capacity in tokens (rounded down to whole blocks); 0 = unlimited.
  std::int64_t kv_capacity_tokens = 0;
  std::int64_t kv_block_tokens = 128;
};

// One image of a prompt (vLLM's mm_feature): encoded, cached and consumed on its own.
struct SchedImage {
  std::int64_t tokens = 1;   // its multimodal (post-merge) tokens: the encoder's output, the budget's unit
  vision::GridTHW grid{};   // what the encoder runs on
  // Its identity (vLLM's mm_hash: the encoded image bytes, not the text around it). The encoder
  // cache keys on it, as vLLM's EncoderCacheManager keys on mm_feature.identifier, so the same
  // image in another prompt reuses its encoder output. 0 = unknown, never a hit.
  std::uint64_t hash = 0;
};

struct SchedRequest {
  std::int64_t prompt_tokens = 1;   // everything prefilled: text, template and image tokens
  std::int64_t image_offset = 0;    // position of the first image's first token in the prompt
  std::vector<SchedImage> images;   // in prompt order, one after another from image_offset
  std::int64_t output_tokens = 1;   // tokens generated before it finishes
  // Identity of the prompt's content (text and images): requests with the same non-zero hash send
  // the same prompt (vLLM's bench client oversamples a dataset smaller than --num-prompts by
  // duplicating rows), so prefix caching, whose block hashes chain the prompt's tokens and the
  // images' hashes, can hit. 0 = unique content, never a hit.
  std::uint64_t content_hash = 0;
  std::int64_t image_tokens() const;  // all its images' tokens
};

struct ScheduledItem {
  RequestId id = 0;
  std::int64_t tokens = 0;          // tokens computed for it in this step
  std::int64_t context_tokens = 0;  // tokens it attends to (computed before + this step's)
  bool prefill = false;             // prompt or recompute chunk (false: one decode token)
};

struct StepPlan {
  std::vector<ScheduledItem> items;
  std::vector<RequestId> encoded;   // requests with at least one image through the encoder this step
  std::vector<vision::GridTHW> grids;       // the images encoded, request by request in that order
  std::vector<RequestId> admitted;  // left the waiting queue this step (first time or resumed)
  std::vector<RequestId> preempted; // sent back to the waiting queue this step
  std::int64_t prefill_tokens = 0;
  std::int64_t decode_tokens = 0;
  std::int64_t context_tokens = 0;
  std::int64_t encoder_tokens = 0;
  bool empty() const { return items.empty(); }
  std::int64_t sequences() const { return static_cast<std::int64_t>(items.size()); }
  std::int64_t tokens() const { return prefill_tokens + decode_tokens; }
};

struct EmittedToken {
  RequestId id = 0;
  std::int64_t index = 0;  // 0 = the first token
  bool finished = false;
};

// The one set of engine-core counters: the scheduler fills it, and the live engine's stats
// (server::EngineCoreStats) and the virtual loop's counters (VirtualEngineCounters) hold it.
struct SchedulerCounters {
  std::int64_t steps = 0;           // steps that scheduled something
  std::int64_t preemptions = 0;
  std::int64_t max_running = 0;
  std::int64_t max_step_tokens = 0;
  std::int64_t max_step_encoder_tokens = 0;
  std::int64_t max_kv_blocks_used = 0;
  std::int64_t max_waiting = 0;     // longest waiting queue at the start of a step
  // vLLM's PrefixCacheStats, recorded when a waiting request is admitted: tokens looked up
  // (num_tokens) and tokens found in cached blocks; a request preempted before counts apart, as in
  // vLLM (its resume may hit its own blocks). Hit rate = prefix_cache_hits / prefix_cache_queries.
  std::int64_t prefix_cache_queries = 0;
  std::int64_t prefix_cache_hits = 0;
  std::int64_t preempted_prefix_cache_queries = 0;
  std::int64_t preempted_prefix_cache_hits = 0;
  std::int64_t encoder_cache_hits = 0;    // images whose output came from the encoder cache
  std::int64_t encoder_prefix_skips = 0;  // images that lay inside their request's cached prefix
};

class Scheduler {
 public:
  explicit Scheduler(SchedulerConfig config);  // throws InvalidInput for bad limits

  // Queues a request at the tail of the waiting queue. Throws InvalidInput for a request that
  // could never run (no budget ever fits its image, or its KV need exceeds the whole cache).
  void add(RequestId id, SchedRequest request);
  // Removes a waiting or running request (client gone, encoder failed); false if unknown.
  bool remove(RequestId id);

  // Plans the next step. An empty plan with has_work() means nothing could be scheduled now.
  const StepPlan& schedule();
  // Applies the last plan as executed: advances every scheduled request, frees consumed encoder
  // outputs and finished requests. Requests removed since schedule() are skipped.
  std::vector<EmittedToken> complete();

  bool has_work() const { return !waiting_.empty() || !running_.empty(); }
  std::size_t waiting() const { return waiting_.size(); }
  std::size_t running() const { return running_.size(); }
  std::int64_t kv_blocks_total() const { return kv_blocks_total_; }
  std::int64_t kv_blocks_used() const { return kv_pool_.used_blocks(); }  // physical, shared ones once
  std::int64_t kv_blocks_cached() const { return kv_pool_.cached_blocks(); }
  // Encoder tokens held by requests (the budget-relevant part) and held or kept for reuse.
  std::int64_t encoder_cache_used() const { return encoder_cache_.referenced_tokens(); }
  std::int64_t encoder_cache_resident() const { return encoder_cache_.resident_tokens(); }
  const SchedulerConfig& config() const { return config_; }
  const SchedulerCounters& counters() const { return counters_; }

 private:
  using BlockId = PrefixBlockPool::BlockId;
  struct Seq {
    SchedRequest request;
    std::vector<EncoderCacheKey> image_keys;  // each image's encoder cache entry
    std::vector<char> holds;     // per image: holds a reference to its encoder output
    std::int64_t computed = 0;   // tokens whose KV exists
    std::int64_t generated = 0;  // tokens emitted
    std::vector<BlockId> blocks; // KV blocks held, in token order
    std::int64_t hashed_blocks = 0;  // leading blocks cached under its content (vLLM num_cached_block)
    bool preempted = false;      // preempted at least once (vLLM num_preemptions > 0)
    std::int64_t scheduled = 0;  // this step
    std::int64_t target() const { return request.prompt_tokens + generated; }
  };
  struct Budget {
    std::int64_t tokens = 0;
    std::int64_t encoder = 0;
  };
  enum class ImageUse { encode, cached };
  struct ImagePlan {
    std::size_t index = 0;  // which of the request's images
    ImageUse use = ImageUse::encode;
  };
  // Tokens `seq` may compute this step within `budget` (0: none). The images the step reaches go
  // to images_: to encode, or cached (their output now referenced: holds set).
  std::int64_t plan_tokens(Seq& seq, const Budget& budget);
  // Drops the references plan_tokens took for images_ of a request it did not schedule after all.
  void unplan_cached(Seq& seq);
  // vLLM allocate_slots: `hits` are the cached blocks a waiting request starts from.
  bool allocate_blocks(Seq& seq, std::int64_t tokens, std::span<const BlockId> hits = {});
  void cache_full_blocks(Seq& seq, std::int64_t tokens);
  void record_admission(const Seq& seq, std::int64_t hit_tokens);
  void release(Seq& seq);
  void preempt_last_running(StepPlan& plan);
  void schedule_running(Budget& budget);
  void schedule_waiting(Budget& budget);
  // Schedules `tokens` of `seq` with images_; returns the encoder tokens it spends.
  std::int64_t take(RequestId id, Seq& seq, std::int64_t tokens);

  SchedulerConfig config_;
  std::int64_t kv_blocks_total_ = 0;  // 0: unlimited
  PrefixBlockPool kv_pool_;
  EncoderOutputCache encoder_cache_;
  std::uint64_t next_unique_images_ = 0;  // serial numbers of image-hash-0 encoder entries
  std::vector<BlockId> hits_;             // scratch: one waiting request's prefix hit
  std::vector<ImagePlan> images_;         // scratch: the images plan_tokens reached
  std::unordered_map<RequestId, Seq> seqs_;
  std::deque<RequestId> waiting_;
  std::vector<RequestId> running_;  // admission order
  StepPlan plan_;
  SchedulerCounters counters_;
};

}  // namespace encbench::serving
