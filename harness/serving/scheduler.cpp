#include "harness/serving/scheduler.hpp"

#include <algorithm>
#include <string>

#include "harness/core/error.hpp"

namespace encbench::serving {
namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

}  // namespace

Scheduler::Scheduler(SchedulerConfig config) : config_(config), kv_pool_(0), encoder_cache_(0) {
  require(config_.max_num_seqs >= 1, "--max-num-seqs must be at least 1");
  require(config_.max_num_batched_tokens >= 1, "--max-num-batched-tokens must be at least 1");
  require(config_.encoder_budget_tokens >= 0, "the encoder budget must not be negative");
  require(config_.kv_block_tokens >= 1, "the KV block size must be at least 1 token");
  require(config_.kv_capacity_tokens >= 0, "the KV capacity must not be negative");
  if (config_.encoder_budget_tokens == 0) config_.encoder_budget_tokens = config_.max_num_batched_tokens;
  kv_blocks_total_ = config_.kv_capacity_tokens / config_.kv_block_tokens;
  require(config_.kv_capacity_tokens == 0 || kv_blocks_total_ >= 1,
          "the KV capacity (" + std::to_string(config_.kv_capacity_tokens) + " tokens) is below one block of " +
              std::to_string(config_.kv_block_tokens));
  kv_pool_ = PrefixBlockPool(kv_blocks_total_);
  // vLLM sizes the encoder cache like the encoder compute budget (both max(budget, largest item)).
  encoder_cache_ = EncoderOutputCache(config_.encoder_budget_tokens);
}

void Scheduler::add(RequestId id, SchedRequest request) {
  request.prompt_tokens = std::max<std::int64_t>(1, request.prompt_tokens);
  request.output_tokens = std::max<std::int64_t>(1, request.output_tokens);
  require(request.encoder_tokens >= 0 && request.image_offset >= 0 &&
              request.image_offset + request.encoder_tokens <= request.prompt_tokens,
          "a request's image tokens must lie inside its prompt");
  require(request.encoder_tokens <= config_.encoder_budget_tokens,
          "a request's " + std::to_string(request.encoder_tokens) + " image tokens exceed the encoder budget of " +
              std::to_string(config_.encoder_budget_tokens) + " per step");
  const std::int64_t need_blocks =
      ceil_div(request.prompt_tokens + request.output_tokens, config_.kv_block_tokens);
  require(kv_blocks_total_ == 0 || need_blocks <= kv_blocks_total_,
          "a request of " + std::to_string(request.prompt_tokens + request.output_tokens) +
              " tokens needs more KV blocks than the cache holds (" + std::to_string(kv_blocks_total_) + ")");
  require(!seqs_.contains(id), "request id " + std::to_string(id) + " is already queued");
  const EncoderCacheKey images = request.image_hash != 0 ? EncoderCacheKey{request.image_hash, false}
                                                         : EncoderCacheKey{next_unique_images_++, true};
  seqs_.emplace(id, Seq{std::move(request), images});
  waiting_.push_back(id);
}

bool Scheduler::remove(RequestId id) {
  const auto it = seqs_.find(id);
  if (it == seqs_.end()) return false;
  release(it->second);
  std::erase(waiting_, id);
  std::erase(running_, id);
  seqs_.erase(it);
  return true;
}

void Scheduler::release(Seq& seq) {
  kv_pool_.free(seq.blocks);  // cached blocks stay hits until evicted
  seq.blocks.clear();
  seq.hashed_blocks = 0;
  if (seq.encoded && seq.computed < seq.request.image_offset + seq.request.encoder_tokens)
    encoder_cache_.release(seq.images);  // still needed, not yet consumed: kept, now freeable
  seq.encoded = false;
  seq.computed = 0;
  seq.scheduled = 0;
}

std::int64_t Scheduler::plan_tokens(Seq& seq, Budget& budget, ImageUse& use) {
  use = ImageUse::none;
  std::int64_t tokens = std::min(seq.target() - seq.computed, budget.tokens);
  const SchedRequest& r = seq.request;
  const std::int64_t image_end = r.image_offset + r.encoder_tokens;
  const bool overlaps = r.encoder_tokens > 0 && !seq.encoded && seq.computed < image_end &&
                        seq.computed + tokens > r.image_offset;
  if (!overlaps) return tokens;  // includes images inside the cached prefix: already in the KV
  if (encoder_cache_.reference_if_cached(seq.images)) {
    seq.encoded = true;
    use = ImageUse::cached;
    return tokens;
  }
  // vLLM can_allocate: the compute budget first, then cache space (evicting unreferenced outputs).
  if (r.encoder_tokens <= budget.encoder && encoder_cache_.make_room(r.encoder_tokens)) {
    use = ImageUse::encode;
    return tokens;
  }
  // No room for the image this step: prefill up to just before it.
  return std::max<std::int64_t>(0, r.image_offset - seq.computed);
}

bool Scheduler::allocate_blocks(Seq& seq, std::int64_t tokens, std::span<const BlockId> hits) {
  const std::int64_t fresh = ceil_div(seq.computed + tokens, config_.kv_block_tokens) -
                             static_cast<std::int64_t>(seq.blocks.size() + hits.size());
  // vLLM get_num_blocks_to_allocate: a hit on a free (unreferenced) block takes it from the free
  // queue, so it costs capacity like a new block; a hit on a block in use costs nothing.
  const std::int64_t need = std::max<std::int64_t>(0, fresh) + kv_pool_.unreferenced(hits);
  if (kv_blocks_total_ > 0 && need > 0 && need > kv_pool_.free_blocks()) return false;
  kv_pool_.touch(hits);  // before the new blocks, so that their evictions cannot take a hit
  seq.blocks.insert(seq.blocks.end(), hits.begin(), hits.end());
  seq.hashed_blocks += static_cast<std::int64_t>(hits.size());
  for (std::int64_t i = 0; i < fresh; ++i) seq.blocks.push_back(kv_pool_.allocate());
  cache_full_blocks(seq, tokens);  // also when no block was added: a chunk may have filled one
  counters_.max_kv_blocks_used = std::max(counters_.max_kv_blocks_used, kv_pool_.used_blocks());
  return true;
}

void Scheduler::cache_full_blocks(Seq& seq, std::int64_t tokens) {
  // vLLM caches the full blocks up to the tokens just scheduled, before they are computed; the
  // model caches only full prompt blocks of shared content (see the header).
  if (seq.request.content_hash == 0) return;
  const std::int64_t full = std::min(seq.computed + tokens, seq.request.prompt_tokens) / config_.kv_block_tokens;
  for (; seq.hashed_blocks < full; ++seq.hashed_blocks)
    kv_pool_.cache(seq.blocks[static_cast<std::size_t>(seq.hashed_blocks)],
                   {seq.request.content_hash, seq.hashed_blocks});
}

void Scheduler::record_admission(const Seq& seq, std::int64_t hit_tokens) {
  const std::int64_t queries = seq.target();  // vLLM records request.num_tokens
  (seq.preempted ? counters_.preempted_prefix_cache_queries : counters_.prefix_cache_queries) += queries;
  (seq.preempted ? counters_.preempted_prefix_cache_hits : counters_.prefix_cache_hits) += hit_tokens;
  const SchedRequest& r = seq.request;
  if (r.encoder_tokens > 0 && hit_tokens >= r.image_offset + r.encoder_tokens) ++counters_.encoder_prefix_skips;
}

void Scheduler::take(RequestId id, Seq& seq, std::int64_t tokens, ImageUse use) {
  seq.scheduled = tokens;
  // A decode step computes the one token sampled last; anything else is prompt or recompute.
  const bool prefill = !(seq.generated > 0 && tokens == 1 && seq.computed == seq.target() - 1);
  plan_.items.push_back({id, tokens, seq.computed + tokens, prefill});
  (prefill ? plan_.prefill_tokens : plan_.decode_tokens) += tokens;
  plan_.context_tokens += seq.computed + tokens;
  if (use == ImageUse::cached) ++counters_.encoder_cache_hits;
  if (use == ImageUse::encode) {
    seq.encoded = true;
    encoder_cache_.allocate(seq.images, seq.request.encoder_tokens);
    plan_.encoder_tokens += seq.request.encoder_tokens;
    plan_.encoded.push_back(id);
    plan_.grids.insert(plan_.grids.end(), seq.request.images.begin(), seq.request.images.end());
  }
}

void Scheduler::preempt_last_running(StepPlan& plan) {
  const RequestId victim = running_.back();
  running_.pop_back();
  Seq& seq = seqs_.at(victim);
  release(seq);
  seq.preempted = true;
  // Unknown images never hit, not even their own output on resume (vLLM's mm_hash would): they get
  // a fresh key, and the old output waits in the LRU order for eviction as vLLM's would.
  if (seq.images.unique) seq.images.value = next_unique_images_++;
  waiting_.push_front(victim);
  plan.preempted.push_back(victim);
  ++counters_.preemptions;
}

void Scheduler::schedule_running(Budget& budget) {
  for (std::size_t index = 0; index < running_.size() && budget.tokens > 0;) {
    const RequestId id = running_[index];
    Seq& seq = seqs_.at(id);
    ImageUse use = ImageUse::none;
    const std::int64_t tokens = plan_tokens(seq, budget, use);
    if (tokens == 0) {
      ++index;
      continue;
    }
    bool scheduled = true;
    while (!allocate_blocks(seq, tokens)) {
      const bool self = running_.back() == id;
      preempt_last_running(plan_);
      if (self) {
        scheduled = false;
        break;
      }
    }
    if (!scheduled) break;
    take(id, seq, tokens, use);
    budget.tokens -= tokens;
    if (use == ImageUse::encode) budget.encoder -= seq.request.encoder_tokens;
    ++index;
  }
}

void Scheduler::schedule_waiting(Budget& budget) {
  while (!waiting_.empty() && budget.tokens > 0 &&
         static_cast<std::int64_t>(running_.size()) < config_.max_num_seqs) {
    const RequestId id = waiting_.front();
    Seq& seq = seqs_.at(id);
    // vLLM get_computed_blocks: the longest chain of cached full blocks, leaving at least the last
    // token to compute (its logits are needed); only full prompt blocks are ever cached here.
    hits_.clear();
    if (seq.request.content_hash != 0) {
      const std::int64_t max_blocks =
          std::min(seq.target() - 1, seq.request.prompt_tokens) / config_.kv_block_tokens;
      kv_pool_.find_longest_hit(seq.request.content_hash, max_blocks, hits_);
    }
    const std::int64_t hit_tokens = static_cast<std::int64_t>(hits_.size()) * config_.kv_block_tokens;
    seq.computed = hit_tokens;
    ImageUse use = ImageUse::none;
    const std::int64_t tokens = plan_tokens(seq, budget, use);
    if (tokens == 0 || !allocate_blocks(seq, tokens, hits_)) {  // first come, first served
      // vLLM untouches the encoder cache of a request it could not schedule, and sets
      // num_computed_tokens only on admission.
      if (use == ImageUse::cached) encoder_cache_.release(seq.images);
      seq.encoded = false;
      seq.computed = 0;
      break;
    }
    record_admission(seq, hit_tokens);
    waiting_.pop_front();
    running_.push_back(id);
    plan_.admitted.push_back(id);
    take(id, seq, tokens, use);
    budget.tokens -= tokens;
    if (use == ImageUse::encode) budget.encoder -= seq.request.encoder_tokens;
  }
}

const StepPlan& Scheduler::schedule() {
  counters_.max_waiting = std::max(counters_.max_waiting, static_cast<std::int64_t>(waiting_.size()));
  plan_ = StepPlan{};
  Budget budget{config_.max_num_batched_tokens, config_.encoder_budget_tokens};
  schedule_running(budget);
  // vLLM admits no waiting request in a step that had to preempt.
  if (plan_.preempted.empty()) schedule_waiting(budget);
  if (!plan_.empty()) {
    ++counters_.steps;
    counters_.max_running = std::max(counters_.max_running, static_cast<std::int64_t>(running_.size()));
    counters_.max_step_tokens = std::max(counters_.max_step_tokens, plan_.tokens());
    counters_.max_step_encoder_tokens = std::max(counters_.max_step_encoder_tokens, plan_.encoder_tokens);
  }
  return plan_;
}

std::vector<EmittedToken> Scheduler::complete() {
  std::vector<EmittedToken> emitted;
  emitted.reserve(plan_.items.size());
  for (const ScheduledItem& item : plan_.items) {
    const auto it = seqs_.find(item.id);
    if (it == seqs_.end() || it->second.scheduled == 0) continue;  // removed meanwhile
    Seq& seq = it->second;
    const std::int64_t image_end = seq.request.image_offset + seq.request.encoder_tokens;
    const bool was_cached = seq.encoded && seq.computed < image_end;
    seq.computed += seq.scheduled;
    seq.scheduled = 0;
    // vLLM _free_encoder_inputs: consumed into the KV cache, the output is kept but freeable.
    if (was_cached && seq.computed >= image_end) encoder_cache_.release(seq.images);
    if (seq.computed < seq.target()) continue;
    const bool finished = seq.generated + 1 >= seq.request.output_tokens;
    emitted.push_back({item.id, seq.generated, finished});
    ++seq.generated;
    if (finished) {
      release(seq);
      std::erase(running_, item.id);
      seqs_.erase(it);
    }
  }
  plan_.items.clear();
  return emitted;
}

}  // namespace encbench::serving
