// vLLM V1 scheduling rules (vllm/v1/core/sched/scheduler.py, v0.16), each on a case small enough
// to work out by hand.
#include <gtest/gtest.h>

#include <map>

#include "harness/core/error.hpp"
#include "harness/serving/scheduler.hpp"
#include "harness/serving/step_cost.hpp"

namespace encbench::serving {
namespace {

SchedRequest text(std::int64_t prompt, std::int64_t output) {
  SchedRequest r;
  r.prompt_tokens = prompt;
  r.output_tokens = output;
  return r;
}

SchedRequest with_image(std::int64_t text_before, std::int64_t image_tokens, std::int64_t after, std::int64_t output) {
  SchedRequest r;
  r.prompt_tokens = text_before + image_tokens + after;
  r.image_offset = text_before;
  r.images.push_back({image_tokens, {1, 2, static_cast<int>(image_tokens * 2)}});  // any grid: the scheduler only carries it
  r.output_tokens = output;
  return r;
}

std::map<RequestId, std::int64_t> tokens_by_id(const StepPlan& plan) {
  std::map<RequestId, std::int64_t> out;
  for (const auto& item : plan.items) out[item.id] = item.tokens;
  return out;
}

TEST(Scheduler, RunningFirstThenWaitingFcfsWithChunkedPrefill) {
  Scheduler s({.max_num_seqs = 8, .max_num_batched_tokens = 15});
  s.add(1, text(10, 4));
  s.add(2, text(10, 4));
  s.add(3, text(10, 4));
  // Step 1: request 1 whole, request 2 chunked to the 5 tokens left, request 3 waits.
  EXPECT_EQ(tokens_by_id(s.schedule()), (std::map<RequestId, std::int64_t>{{1, 10}, {2, 5}}));
  auto emitted = s.complete();
  ASSERT_EQ(emitted.size(), 1u);  // only request 1 finished its prompt: its first token
  EXPECT_EQ(emitted[0].id, 1u);
  EXPECT_EQ(emitted[0].index, 0);
  // Step 2: running first (1 decodes one token, 2 finishes its prompt), then 3 gets the rest (9).
  const StepPlan& plan = s.schedule();
  EXPECT_EQ(tokens_by_id(plan), (std::map<RequestId, std::int64_t>{{1, 1}, {2, 5}, {3, 9}}));
  EXPECT_EQ(plan.decode_tokens, 1);
  EXPECT_EQ(plan.prefill_tokens, 14);
  EXPECT_EQ(plan.admitted, std::vector<RequestId>{3});
}

TEST(Scheduler, SeatsLimitRunningRequests) {
  Scheduler s({.max_num_seqs = 2, .max_num_batched_tokens = 1000});
  for (RequestId id = 1; id <= 3; ++id) s.add(id, text(10, 2));
  EXPECT_EQ(s.schedule().items.size(), 2u);
  EXPECT_EQ(s.waiting(), 1u);
  (void)s.complete();
  EXPECT_EQ(s.schedule().items.size(), 2u);  // the two decodes; no seat for request 3
  const auto done = s.complete();
  ASSERT_EQ(done.size(), 2u);
  EXPECT_TRUE(done[0].finished && done[1].finished);
  EXPECT_EQ(tokens_by_id(s.schedule()), (std::map<RequestId, std::int64_t>{{3, 10}}));
}

TEST(Scheduler, EmitsFirstTokenAfterPrefillThenOnePerStepUntilOutputLength) {
  Scheduler s({.max_num_seqs = 4, .max_num_batched_tokens = 4});
  s.add(7, text(6, 3));
  (void)s.schedule();
  EXPECT_TRUE(s.complete().empty());  // 4 of 6 prompt tokens: nothing yet
  std::vector<EmittedToken> all;
  for (int step = 0; step < 3; ++step) {
    (void)s.schedule();
    for (const auto& t : s.complete()) all.push_back(t);
  }
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].index, 0);
  EXPECT_EQ(all[2].index, 2);
  EXPECT_FALSE(all[1].finished);
  EXPECT_TRUE(all[2].finished);
  EXPECT_FALSE(s.has_work());
}

TEST(Scheduler, WholeImageEncoderBudgetCutsPrefillBeforeTheImage) {
  // Encoder budget 1000 per step: the first request's 600-token image fits, the second's does not
  // fit beside it, so the second prefills only its 10 text tokens before the image.
  Scheduler s({.max_num_seqs = 8, .max_num_batched_tokens = 5000, .encoder_budget_tokens = 1000});
  s.add(1, with_image(10, 600, 5, 2));
  s.add(2, with_image(10, 600, 5, 2));
  const StepPlan& plan = s.schedule();
  EXPECT_EQ(tokens_by_id(plan), (std::map<RequestId, std::int64_t>{{1, 615}, {2, 10}}));
  EXPECT_EQ(plan.encoded, std::vector<RequestId>{1});
  EXPECT_EQ(plan.encoder_tokens, 600);
  EXPECT_EQ(plan.grids.size(), 1u);
  (void)s.complete();
  EXPECT_EQ(s.encoder_cache_used(), 0);  // request 1 consumed its image in the same step
  const StepPlan& next = s.schedule();
  EXPECT_EQ(next.encoded, std::vector<RequestId>{2});
  EXPECT_EQ(tokens_by_id(next), (std::map<RequestId, std::int64_t>{{1, 1}, {2, 605}}));
}

TEST(Scheduler, ImageThatCannotStartBlocksLaterWaitingRequestsFcfs) {
  // Request 1's image starts at its first token: with no encoder room it cannot advance at all,
  // and FCFS admission stops there (request 2, text only, waits behind it).
  Scheduler s({.max_num_seqs = 8, .max_num_batched_tokens = 5000, .encoder_budget_tokens = 700});
  s.add(1, with_image(0, 600, 5, 3));
  s.add(2, with_image(0, 600, 5, 3));
  s.add(3, text(20, 3));
  EXPECT_EQ(tokens_by_id(s.schedule()), (std::map<RequestId, std::int64_t>{{1, 605}}));
  EXPECT_EQ(s.waiting(), 2u);
}

// A request of several images, each `tokens` long with its own identity, after `text_before`.
SchedRequest with_images(std::int64_t text_before, const std::vector<std::pair<std::int64_t, std::uint64_t>>& images,
                         std::int64_t after, std::int64_t output) {
  SchedRequest r;
  r.image_offset = text_before;
  for (const auto& [tokens, hash] : images)
    r.images.push_back({tokens, {1, 2, static_cast<int>(tokens * 2)}, hash});
  r.prompt_tokens = text_before + r.image_tokens() + after;
  r.output_tokens = output;
  return r;
}

TEST(Scheduler, ImagesOfOneRequestAreScheduledOneByOneWithinTheEncoderBudget) {
  // vLLM _try_schedule_encoder_inputs: three 400-token images under a 1000-token encoder budget.
  // The first two fit (800); the third does not fit beside them, so this step's prefill stops
  // just before it, and the next step encodes it and finishes the prompt.
  Scheduler s({.max_num_seqs = 8, .max_num_batched_tokens = 5000, .encoder_budget_tokens = 1000});
  s.add(1, with_images(10, {{400, 0}, {400, 0}, {400, 0}}, 5, 2));
  const StepPlan& first = s.schedule();
  EXPECT_EQ(tokens_by_id(first), (std::map<RequestId, std::int64_t>{{1, 810}}));
  EXPECT_EQ(first.encoder_tokens, 800);
  EXPECT_EQ(first.grids.size(), 2u);
  EXPECT_EQ(first.encoded, std::vector<RequestId>{1});
  EXPECT_TRUE(s.complete().empty());
  EXPECT_EQ(s.encoder_cache_used(), 0);  // both consumed by the 810 tokens
  const StepPlan& second = s.schedule();
  EXPECT_EQ(tokens_by_id(second), (std::map<RequestId, std::int64_t>{{1, 405}}));
  EXPECT_EQ(second.encoder_tokens, 400);
  EXPECT_EQ(second.grids.size(), 1u);
  const std::vector<EmittedToken> out = s.complete();
  ASSERT_EQ(out.size(), 1u);  // the prompt is done: first token
  EXPECT_EQ(out[0].index, 0);
}

TEST(Scheduler, EachImageHitsTheEncoderCacheOnItsOwnHash) {
  // Request 1 shows images A and B; request 2, later, B and C: only C runs through the encoder,
  // B's output is referenced (vLLM keys the encoder cache per item, on its mm_hash).
  Scheduler s({.max_num_seqs = 8, .max_num_batched_tokens = 5000, .encoder_budget_tokens = 2000});
  s.add(1, with_images(10, {{300, 0xA}, {200, 0xB}}, 5, 3));
  EXPECT_EQ(s.schedule().encoder_tokens, 500);
  (void)s.complete();
  s.add(2, with_images(10, {{200, 0xB}, {100, 0xC}}, 5, 3));
  const StepPlan& plan = s.schedule();
  EXPECT_EQ(tokens_by_id(plan), (std::map<RequestId, std::int64_t>{{1, 1}, {2, 315}}));
  EXPECT_EQ(plan.encoder_tokens, 100);
  ASSERT_EQ(plan.grids.size(), 1u);
  EXPECT_EQ(plan.grids[0].w, 200);  // C's grid (1 x 2 x 2*100)
  EXPECT_EQ(s.counters().encoder_cache_hits, 1);
  (void)s.complete();
  // The same image twice in one request is encoded once.
  s.add(3, with_images(0, {{250, 0xD}, {250, 0xD}}, 5, 2));
  const StepPlan& twice = s.schedule();
  EXPECT_EQ(twice.encoder_tokens, 250);
  EXPECT_EQ(twice.grids.size(), 1u);
}

TEST(Scheduler, ARequestWhoseImagesTogetherExceedTheBudgetStillRuns) {
  // Each image fits the per-step budget, all of them do not: vLLM accepts the request and spreads
  // its images over steps; only an image larger than the budget alone is refused.
  Scheduler s({.max_num_seqs = 8, .max_num_batched_tokens = 5000, .encoder_budget_tokens = 500});
  EXPECT_NO_THROW(s.add(1, with_images(0, {{400, 0}, {400, 0}, {400, 0}}, 5, 1)));
  EXPECT_THROW(s.add(2, with_images(0, {{100, 0}, {501, 0}}, 5, 1)), InvalidInput);
  std::int64_t steps = 0, encoded = 0;
  while (s.has_work() && steps < 10) {
    encoded += s.schedule().encoder_tokens;
    (void)s.complete();
    ++steps;
  }
  EXPECT_EQ(encoded, 1200);
  EXPECT_EQ(steps, 3);  // one image a step; the last step also finishes the prompt and its token
}

TEST(Scheduler, KvCacheFullPreemptsTheLastAdmittedAndItRecomputesPromptAndOutput) {
  // 4 blocks of 4 tokens. Two requests of 8-token prompts take 2 blocks each; the first decode
  // needs a third block for request 1, so request 2 (admitted last) is preempted.
  Scheduler s({.max_num_seqs = 8, .max_num_batched_tokens = 100, .kv_capacity_tokens = 16, .kv_block_tokens = 4});
  s.add(1, text(8, 3));
  s.add(2, text(8, 3));
  EXPECT_EQ(s.schedule().items.size(), 2u);
  EXPECT_EQ(s.complete().size(), 2u);  // both first tokens
  EXPECT_EQ(s.kv_blocks_used(), 4);
  const StepPlan& plan = s.schedule();
  EXPECT_EQ(plan.preempted, std::vector<RequestId>{2});
  EXPECT_EQ(tokens_by_id(plan), (std::map<RequestId, std::int64_t>{{1, 1}}));
  EXPECT_TRUE(plan.admitted.empty());  // no admissions in a step that preempted
  (void)s.complete();
  EXPECT_EQ(s.counters().preemptions, 1);
  // Request 1 decodes to the end; request 2 then resumes with prompt + its 1 generated token.
  (void)s.schedule();
  ASSERT_EQ(s.complete().size(), 1u);
  const StepPlan& resumed = s.schedule();
  EXPECT_EQ(tokens_by_id(resumed), (std::map<RequestId, std::int64_t>{{2, 9}}));
  const auto tokens = s.complete();
  ASSERT_EQ(tokens.size(), 1u);
  EXPECT_EQ(tokens[0].index, 1);  // its second token, not a second first token
}

TEST(Scheduler, RemoveFreesBlocksAndEncoderCache) {
  Scheduler s({.max_num_seqs = 8, .max_num_batched_tokens = 100, .encoder_budget_tokens = 500,
               .kv_capacity_tokens = 1024, .kv_block_tokens = 16});
  s.add(1, with_image(10, 400, 5, 2));
  (void)s.schedule();
  EXPECT_GT(s.kv_blocks_used(), 0);
  EXPECT_EQ(s.encoder_cache_used(), 400);  // encoded, prefill (100 tokens) not past it yet
  EXPECT_TRUE(s.remove(1));
  EXPECT_TRUE(s.complete().empty());
  EXPECT_EQ(s.kv_blocks_used(), 0);
  EXPECT_EQ(s.encoder_cache_used(), 0);
  EXPECT_FALSE(s.remove(1));
}

TEST(Scheduler, RefusesRequestsThatCouldNeverRun) {
  Scheduler s({.max_num_seqs = 8, .max_num_batched_tokens = 100, .encoder_budget_tokens = 100,
               .kv_capacity_tokens = 256, .kv_block_tokens = 16});
  EXPECT_THROW(s.add(1, with_image(0, 200, 0, 1)), InvalidInput);  // image over the encoder budget
  EXPECT_THROW(s.add(2, text(300, 10)), InvalidInput);             // more KV than the cache
  EXPECT_THROW(Scheduler({.max_num_seqs = 0}), InvalidInput);
  s.add(3, text(10, 1));
  EXPECT_THROW(s.add(3, text(10, 1)), InvalidInput);  // duplicate id
}

TEST(StepCost, AsyncSchedulingOverlapsHostAndDeviceWithoutItTheyAdd) {
  StepCostModel c{.base_ms = 10, .per_seq_ms = 0, .per_prefill_token_ms = 0.01, .per_context_token_ms = 0,
                  .host_base_ms = 4, .host_per_seq_ms = 0.5};
  // device 10 + 100 * 0.01 = 11 ms; host 4 + 8 * 0.5 = 8 ms
  EXPECT_DOUBLE_EQ(c.step_ms(8, 100, 0), 19.0);
  c.async_scheduling = true;
  EXPECT_DOUBLE_EQ(c.step_ms(8, 100, 0), 11.0);
  EXPECT_DOUBLE_EQ(c.step_ms(40, 0, 0), 24.0);  // host-bound: 4 + 20 > 10
}

}  // namespace
}  // namespace encbench::serving
