// serving::step_timing, the one rule for a step's length that the virtual loop and
// the live engine thread both call. Hand-computed steps, nanosecond-exact (the coefficients are
// binary fractions, so every sum is exact in double), and the virtual loop's steps and a lone
// request's TTFT from the same rule.
#include <gtest/gtest.h>

#include <vector>

#include "harness/serving/step_timing.hpp"
#include "harness/serving/virtual_loop.hpp"

namespace encbench::serving {
namespace {

// Device 10 ms + 1/64 ms per prefill token; host: schedule 2 ms (overlaps only with async
// scheduling) and launch 1 ms (overlaps in both modes).
StepCostModel cost(bool async) {
  StepCostModel c{.base_ms = 10, .per_seq_ms = 0, .per_prefill_token_ms = 0.015625};
  c.async_scheduling = async;
  c.host_parts = {{"schedule", 2, 0, true, false}, {"launch", 1, 0, true, true}};
  return c;
}

constexpr Nanos kMs = 1'000'000;

TEST(StepTiming, AsyncMovesTheEncoderHostLeadIntoTheOverlappedHostWork) {
  // Forward 40 ms of which 6 ms the device waits for the host before the first sync, plus 5 ms of
  // pre-processing: took 45, lead 11. Device 10 + 64/64 = 11 ms; overlapped host 3 + 11 = 14 ms.
  const EncoderStepTime encoder{40 * kMs, 5 * kMs, 6 * kMs};
  const StepTiming t = step_timing(cost(true), 1, 64, 0, encoder);
  EXPECT_EQ(t.overlapped_lead_ns, 11 * kMs);
  EXPECT_EQ(t.encoder_ns, 34 * kMs);
  EXPECT_EQ(t.lm_ns, 14 * kMs);
  EXPECT_EQ(t.total_ns(), 48 * kMs);  // not 45 + 11 = 56: the lead hides behind the device step
}

TEST(StepTiming, SyncKeepsTheEncoderSerialAndAddsTheSerialHostParts) {
  const EncoderStepTime encoder{40 * kMs, 5 * kMs, 6 * kMs};
  const StepTiming t = step_timing(cost(false), 1, 64, 0, encoder);
  EXPECT_EQ(t.overlapped_lead_ns, 0);
  EXPECT_EQ(t.encoder_ns, 45 * kMs);
  EXPECT_EQ(t.lm_ns, 13 * kMs);  // schedule 2 serial + max(device 11, launch 1)
  EXPECT_EQ(t.total_ns(), 58 * kMs);
}

TEST(StepTiming, TheLeadNeverExceedsWhatTheEncoderTookAndNoEncoderIsZero) {
  // A lead larger than the forward (a hook's inconsistency) is clipped to forward + extra.
  const StepTiming clipped = step_timing(cost(true), 1, 64, 0, EncoderStepTime{2 * kMs, 1 * kMs, 10 * kMs});
  EXPECT_EQ(clipped.overlapped_lead_ns, 3 * kMs);
  EXPECT_EQ(clipped.encoder_ns, 0);
  EXPECT_EQ(clipped.lm_ns, 11 * kMs);  // max(device 11, host 3 + lead 3)
  const StepTiming none = step_timing(cost(true), 1, 0, 0, EncoderStepTime{});
  EXPECT_EQ(none.encoder_ns, 0);
  EXPECT_EQ(none.lm_ns, 10 * kMs);
  EXPECT_EQ(step_timing(cost(false), 1, 0, 0, EncoderStepTime{}).lm_ns, 12 * kMs);
}

TEST(StepTiming, PostForwardHostWorkAddsOnlyWhatTheQueuedDeviceWorkDoesNotCover) {
  // 4 ms of host work after the forward returns; the forward left 1 ms of device work queued when
  // its host issued the last op: 3 ms of it leave the device idle, serial in both modes.
  const EncoderStepTime caught_up{40 * kMs, 5 * kMs, 6 * kMs, 4 * kMs, 1 * kMs};
  EXPECT_EQ(exposed_post_ns(caught_up), 3 * kMs);
  EXPECT_EQ(encoder_took_ns(caught_up), 48 * kMs);
  for (const bool async : {true, false}) {
    const StepTiming base = step_timing(cost(async), 1, 64, 0, EncoderStepTime{40 * kMs, 5 * kMs, 6 * kMs});
    const StepTiming t = step_timing(cost(async), 1, 64, 0, caught_up);
    EXPECT_EQ(t.encoder_ns, base.encoder_ns + 3 * kMs) << async;
    EXPECT_EQ(t.lm_ns, base.lm_ns) << async;  // the lead is the pre-forward work only
    EXPECT_EQ(t.overlapped_lead_ns, base.overlapped_lead_ns) << async;
  }
  // A forward whose host ran 10 ms ahead of the device hides all 4 ms: the step is as without it.
  const EncoderStepTime ahead{40 * kMs, 5 * kMs, 6 * kMs, 4 * kMs, 10 * kMs};
  EXPECT_EQ(exposed_post_ns(ahead), 0);
  EXPECT_EQ(step_timing(cost(true), 1, 64, 0, ahead).total_ns(), 48 * kMs);  // as in the first test
}

TEST(StepTiming, TheJitterFactorScalesBothParts) {
  const EncoderStepTime encoder{40 * kMs, 5 * kMs, 6 * kMs};
  const StepTiming t = step_timing(cost(true), 1, 64, 0, encoder, 1.5);
  EXPECT_EQ(t.encoder_ns, 51 * kMs);
  EXPECT_EQ(t.lm_ns, 21 * kMs);
  EXPECT_EQ(t.overlapped_lead_ns, 11 * kMs);  // the lead itself is before jitter
}

// A virtual-clock encoder of fixed cost: 40 ms forward per image, 6 ms of it host lead, 5 ms extra.
// With post: 4 ms of post-forward host work of which the forward's 1 ms end wait covers 1.
EncoderHook scripted_encoder(bool post = false) {
  return [post](const std::vector<vision::GridTHW>& grids) {
    EncoderStepResult r;
    r.forwards = 1;
    r.virtual_forward_ns = 40 * kMs * static_cast<Nanos>(grids.size());
    r.host_lead_ns = 6 * kMs;
    r.host_extra_ns = 5 * kMs;
    if (post) {
      r.host_post_ns = 4 * kMs;
      r.end_wait_ns = 1 * kMs;
    }
    return r;
  };
}

TEST(StepTiming, TheVirtualLoopsStepsAreTheRulesToTheNanosecond) {
  VirtualRequest r;
  r.request.prompt_tokens = 64;
  r.request.image_offset = 48;
  r.request.images = {{16, {1, 8, 8}}};
  r.request.output_tokens = 3;
  VirtualArmOptions options;
  options.keep_steps = true;
  for (const bool async : {true, false}) {
    const VirtualArmResult out = run_virtual_arm({r}, SchedulerConfig{}, cost(async), scripted_encoder(), options);
    ASSERT_EQ(out.steps.size(), 3u);
    const StepTiming first = step_timing(cost(async), 1, 64, 64, EncoderStepTime{40 * kMs, 5 * kMs, 6 * kMs});
    EXPECT_EQ(out.steps[0].start_ns - out.start_ns, 0);
    EXPECT_EQ(out.steps[0].encoder_ns, async ? 34 * kMs : 45 * kMs);
    EXPECT_EQ(out.steps[0].lm_ns, async ? 14 * kMs : 13 * kMs);
    EXPECT_EQ(out.steps[0].encoder_ns, first.encoder_ns);
    EXPECT_EQ(out.steps[0].lm_ns, first.lm_ns);
    const Nanos decode = async ? 10 * kMs : 12 * kMs;
    for (std::size_t i = 1; i < 3; ++i) {
      EXPECT_EQ(out.steps[i].encoder_ns, 0);
      EXPECT_EQ(out.steps[i].lm_ns, decode);
      EXPECT_EQ(out.steps[i].start_ns, out.steps[i - 1].start_ns + out.steps[i - 1].encoder_ns + out.steps[i - 1].lm_ns);
    }
    const client::RequestRecord& rec = out.records.at(0);
    EXPECT_EQ(rec.first_choices_ns - rec.sent_ns, async ? 48 * kMs : 58 * kMs);
    EXPECT_EQ(rec.end_ns - rec.sent_ns, (async ? 48 * kMs : 58 * kMs) + 2 * decode);
    // The post-forward host work reaches the loop's step through the same rule: 3 ms more encoder.
    const VirtualArmResult with_post = run_virtual_arm({r}, SchedulerConfig{}, cost(async), scripted_encoder(true), options);
    ASSERT_EQ(with_post.steps.size(), 3u);
    EXPECT_EQ(with_post.steps[0].encoder_ns, out.steps[0].encoder_ns + 3 * kMs);
    EXPECT_EQ(with_post.steps[0].lm_ns, out.steps[0].lm_ns);
    EXPECT_EQ(with_post.records.at(0).first_choices_ns - with_post.records.at(0).sent_ns,
              rec.first_choices_ns - rec.sent_ns + 3 * kMs);
  }
}

}  // namespace
}  // namespace encbench::serving
