#include "harness/serving/scheduler.hpp"

#include <algorithm>
#include <string>

#include "harness/core/error.hpp"

namespace encbench::serving {
namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

}  // namespace

std::int64_t SchedRequest::image_tokens() const {
  std::int64_t tokens = 0;
  for (const SchedImage& image : images) tokens += image.tokens;
  return tokens;
}

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
  for (const SchedImage& image : request.images) {
    require(image.tokens >= 1, "an image has at least one token");
    // vLLM encodes an image whole in one step: one larger than the budget could never run.
    require(image.tokens <= config_.encoder_budget_tokens,
            "an image of " + std::to_string(image.tokens) + " tokens exceeds the encoder budget of " +
                std::to_string(config_.encoder_budget_tokens) + " per step");
  }
  require(request.image_offset >= 0 && request.image_offset + request.image_tokens() <= request.prompt_tokens,
          "a request's image tokens must lie inside its prompt");
  const std::int64_t need_blocks =
      ceil_div(request.prompt_tokens + request.output_tokens, config_.kv_block_tokens);
  require(kv_blocks_total_ == 0 || need_blocks <= kv_blocks_total_,
          "a request of " + std::to_string(request.prompt_tokens + request.output_tokens) +
              " tokens needs more KV blocks than the cache holds (" + std::to_string(kv_blocks_total_) + ")");
  require(!seqs_.contains(id), "request id " + std::to_string(id) + " is already queued");
  Seq seq{.request = std::move(request)};
  for (const SchedImage& image : seq.request.images)
    seq.image_keys.push_back(image.hash != 0 ? EncoderCacheKey{image.hash, false}
                                             : EncoderCacheKey{next_unique_images_++, true});
  seq.holds.assign(seq.request.images.size(), 0);
  seqs_.emplace(id, std::move(seq));
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
  // Outputs still held were not consumed yet: kept, now freeable (consumed ones were released).
  for (std::size_t i = 0; i < seq.holds.size(); ++i)
    if (seq.holds[i]) encoder_cache_.release(seq.image_keys[i]);
  std::fill(seq.holds.begin(), seq.holds.end(), 0);
  seq.computed = 0;
  seq.scheduled = 0;
}

std::int64_t Scheduler::plan_tokens(Seq& seq, const Budget& budget) {
  images_.clear();
  std::int64_t tokens = std::min(seq.target() - seq.computed, budget.tokens);
  std::int64_t to_encode = 0;  // vLLM num_embeds_to_schedule: this request's images encoded so far
  std::int64_t start = seq.request.image_offset;  // image i's first token: the images follow one another
  for (std::size_t i = 0; i < seq.request.images.size(); start += seq.request.images[i++].tokens) {
    const std::int64_t length = seq.request.images[i].tokens;
    if (start >= seq.computed + tokens) break;  // not reached in this step
    // Already in the KV cache (the cached prefix included), or its output held since a step before.
    if (start + length <= seq.computed || seq.holds[i]) continue;
    // The same image twice in one request: vLLM encodes it once (mm_hashes_to_schedule).
    const bool repeated = std::any_of(images_.begin(), images_.end(), [&](const ImagePlan& p) {
      return p.use == ImageUse::encode && seq.image_keys[p.index] == seq.image_keys[i];
    });
    if (repeated) continue;
    if (encoder_cache_.reference_if_cached(seq.image_keys[i])) {
      seq.holds[i] = 1;
      images_.push_back({i, ImageUse::cached});
      continue;
    }
    // vLLM can_allocate: the compute budget first, then cache space for this request's images so
    // far and this one (evicting unreferenced outputs).
    if (length <= budget.encoder - to_encode && encoder_cache_.make_room(to_encode + length)) {
      to_encode += length;
      images_.push_back({i, ImageUse::encode});
      continue;
    }
    // No room for this image in this step: prefill up to just before it.
    tokens = std::max<std::int64_t>(0, start - seq.computed);
    break;
  }
  return tokens;
}

void Scheduler::unplan_cached(Seq& seq) {
  // vLLM untouches the encoder cache of a request it could not schedule.
  for (const ImagePlan& p : images_)
    if (p.use == ImageUse::cached) {
      encoder_cache_.release(seq.image_keys[p.index]);
      seq.holds[p.index] = 0;
    }
  images_.clear();
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
  std::int64_t end = seq.request.image_offset;
  for (const SchedImage& image : seq.request.images)
    if ((end += image.tokens) <= hit_tokens) ++counters_.encoder_prefix_skips;
}

std::int64_t Scheduler::take(RequestId id, Seq& seq, std::int64_t tokens) {
  seq.scheduled = tokens;
  // A decode step computes the one token sampled last; anything else is prompt or recompute.
  const bool prefill = !(seq.generated > 0 && tokens == 1 && seq.computed == seq.target() - 1);
  plan_.items.push_back({id, tokens, seq.computed + tokens, prefill});
  (prefill ? plan_.prefill_tokens : plan_.decode_tokens) += tokens;
  plan_.context_tokens += seq.computed + tokens;
  std::int64_t encoded = 0;
  for (const ImagePlan& p : images_) {
    if (p.use == ImageUse::cached) {
      ++counters_.encoder_cache_hits;
      continue;
    }
    const SchedImage& image = seq.request.images[p.index];
    seq.holds[p.index] = 1;
    encoder_cache_.allocate(seq.image_keys[p.index], image.tokens);
    encoded += image.tokens;
    plan_.grids.push_back(image.grid);
  }
  if (encoded > 0) plan_.encoded.push_back(id);
  plan_.encoder_tokens += encoded;
  images_.clear();
  return encoded;
}

void Scheduler::preempt_last_running(StepPlan& plan) {
  const RequestId victim = running_.back();
  running_.pop_back();
  Seq& seq = seqs_.at(victim);
  release(seq);
  seq.preempted = true;
  // Unknown images never hit, not even their own output on resume (vLLM's mm_hash would): they get
  // a fresh key, and the old output waits in the LRU order for eviction as vLLM's would.
  for (EncoderCacheKey& key : seq.image_keys)
    if (key.unique) key.value = next_unique_images_++;
  waiting_.push_front(victim);
  plan.preempted.push_back(victim);
  ++counters_.preemptions;
}

void Scheduler::schedule_running(Budget& budget) {
  for (std::size_t index = 0; index < running_.size() && budget.tokens > 0;) {
    const RequestId id = running_[index];
    Seq& seq = seqs_.at(id);
    const std::int64_t tokens = plan_tokens(seq, budget);
    if (tokens == 0) {
      unplan_cached(seq);
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
    if (!scheduled) break;  // preempted itself: release() dropped what plan_tokens referenced
    budget.encoder -= take(id, seq, tokens);
    budget.tokens -= tokens;
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
    const std::int64_t tokens = plan_tokens(seq, budget);
    if (tokens == 0 || !allocate_blocks(seq, tokens, hits_)) {  // first come, first served
      // vLLM sets num_computed_tokens only on admission.
      unplan_cached(seq);
      seq.computed = 0;
      break;
    }
    record_admission(seq, hit_tokens);
    waiting_.pop_front();
    running_.push_back(id);
    plan_.admitted.push_back(id);
    budget.encoder -= take(id, seq, tokens);
    budget.tokens -= tokens;
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
    seq.computed += seq.scheduled;
    seq.scheduled = 0;
    // vLLM _free_encoder_inputs: an image consumed into the KV cache keeps its output, freeable.
    std::int64_t end = seq.request.image_offset;
    for (std::size_t i = 0; i < seq.holds.size(); ++i) {
      end += seq.request.images[i].tokens;
      if (seq.holds[i] && end <= seq.computed) {
        encoder_cache_.release(seq.image_keys[i]);
        seq.holds[i] = 0;
      }
    }
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
