#include "harness/serving/scheduler.hpp"

#include <algorithm>
#include <string>

#include "harness/core/error.hpp"

namespace encbench::serving {
namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

}  // namespace

Scheduler::Scheduler(SchedulerConfig config) : config_(config) {
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
  seqs_.emplace(id, Seq{std::move(request)});
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
  kv_blocks_used_ -= seq.blocks;
  seq.blocks = 0;
  if (seq.encoded && seq.computed < seq.request.image_offset + seq.request.encoder_tokens)
    encoder_cache_used_ -= seq.request.encoder_tokens;  // still cached, not yet consumed
  seq.encoded = false;
  seq.computed = 0;
  seq.scheduled = 0;
}

std::int64_t Scheduler::plan_tokens(Seq& seq, Budget& budget, bool& encode) {
  encode = false;
  std::int64_t tokens = std::min(seq.target() - seq.computed, budget.tokens);
  const SchedRequest& r = seq.request;
  const std::int64_t image_end = r.image_offset + r.encoder_tokens;
  const bool overlaps = r.encoder_tokens > 0 && !seq.encoded && seq.computed < image_end &&
                        seq.computed + tokens > r.image_offset;
  if (!overlaps) return tokens;
  const std::int64_t cache_free = config_.encoder_budget_tokens - encoder_cache_used_;
  if (r.encoder_tokens <= budget.encoder && r.encoder_tokens <= cache_free) {
    encode = true;
    return tokens;
  }
  // No room for the image this step: prefill up to just before it.
  return std::max<std::int64_t>(0, r.image_offset - seq.computed);
}

bool Scheduler::allocate_blocks(Seq& seq, std::int64_t tokens) {
  const std::int64_t need = ceil_div(seq.computed + tokens, config_.kv_block_tokens) - seq.blocks;
  if (need <= 0) return true;
  if (kv_blocks_total_ > 0 && kv_blocks_used_ + need > kv_blocks_total_) return false;
  seq.blocks += need;
  kv_blocks_used_ += need;
  counters_.max_kv_blocks_used = std::max(counters_.max_kv_blocks_used, kv_blocks_used_);
  return true;
}

void Scheduler::take(RequestId id, Seq& seq, std::int64_t tokens, bool encode) {
  seq.scheduled = tokens;
  // A decode step computes the one token sampled last; anything else is prompt or recompute.
  const bool prefill = !(seq.generated > 0 && tokens == 1 && seq.computed == seq.target() - 1);
  plan_.items.push_back({id, tokens, seq.computed + tokens, prefill});
  (prefill ? plan_.prefill_tokens : plan_.decode_tokens) += tokens;
  plan_.context_tokens += seq.computed + tokens;
  if (encode) {
    seq.encoded = true;
    encoder_cache_used_ += seq.request.encoder_tokens;
    plan_.encoder_tokens += seq.request.encoder_tokens;
    plan_.encoded.push_back(id);
    plan_.grids.insert(plan_.grids.end(), seq.request.images.begin(), seq.request.images.end());
  }
}

void Scheduler::preempt_last_running(StepPlan& plan) {
  const RequestId victim = running_.back();
  running_.pop_back();
  release(seqs_.at(victim));
  waiting_.push_front(victim);
  plan.preempted.push_back(victim);
  ++counters_.preemptions;
}

void Scheduler::schedule_running(Budget& budget) {
  for (std::size_t index = 0; index < running_.size() && budget.tokens > 0;) {
    const RequestId id = running_[index];
    Seq& seq = seqs_.at(id);
    bool encode = false;
    const std::int64_t tokens = plan_tokens(seq, budget, encode);
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
    take(id, seq, tokens, encode);
    budget.tokens -= tokens;
    if (encode) budget.encoder -= seq.request.encoder_tokens;
    ++index;
  }
}

void Scheduler::schedule_waiting(Budget& budget) {
  while (!waiting_.empty() && budget.tokens > 0 &&
         static_cast<std::int64_t>(running_.size()) < config_.max_num_seqs) {
    const RequestId id = waiting_.front();
    Seq& seq = seqs_.at(id);
    bool encode = false;
    const std::int64_t tokens = plan_tokens(seq, budget, encode);
    if (tokens == 0 || !allocate_blocks(seq, tokens)) break;  // first come, first served
    waiting_.pop_front();
    running_.push_back(id);
    plan_.admitted.push_back(id);
    take(id, seq, tokens, encode);
    budget.tokens -= tokens;
    if (encode) budget.encoder -= seq.request.encoder_tokens;
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
    if (was_cached && seq.computed >= image_end) encoder_cache_used_ -= seq.request.encoder_tokens;
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
