#pragma once
// How long one engine step takes, split into its encoder part and its LM part: the one rule both
// drivers apply, the virtual loop (virtual_loop.hpp, on the virtual clock) and the live engine
// thread (server/engine_core_thread.hpp, which waits the result out on the real clock against
// absolute deadlines). Neither keeps a copy of the formula.
//
//   exposed post   = max(0, host_post - end_wait): the step's host work after the tower's forward
//                    returns (vLLM's encoder-cache writes, output checks, _gather_mm_embeddings,
//                    the embedding merge) runs while the device still executes what the host
//                    queued; only what outlasts that queue (end_wait: the forward's device work
//                    left when its host had issued the last op) leaves the device idle. A forward
//                    that syncs in its last layer ends with the host caught up (end_wait ~ the
//                    merger), one that runs ahead hides it.
//   encoder took   = forward + host pre-processing (host_extra) + exposed post
//   host lead      = min(took, host_extra + the forward's host waits before its first sync)
//   overlapped     = async scheduling ? host lead : 0   (execute_model runs step n+1's encoder
//                    host work while step n's LM still executes)
//   encoder part   = took - overlapped
//   LM part        = StepCostModel::step_ms(sequences, prefill, context, overlapped)
//   both parts     x the step's jitter factor (1 = none), each truncated to whole nanoseconds
//
// What the forward is depends on the clock: the virtual-clock encoder's virtual_forward_ns, or
// on the live server with a real-clock encoder the forward's measured wall time (host_lead 0 and
// end_wait 0: a real-clock forward reports neither, so its post work adds whole).
#include <cstdint>

#include "harness/core/clock.hpp"
#include "harness/serving/step_cost.hpp"

namespace encbench::serving {

// The encoder part of a step as its clock gave it (all 0 when the step encoded nothing).
struct EncoderStepTime {
  Nanos forward_ns = 0;     // the forward itself
  Nanos host_extra_ns = 0;  // modelled host pre-processing of the step
  Nanos host_lead_ns = 0;   // of forward_ns: the device's waits for the host before the first sync
  Nanos host_post_ns = 0;   // modelled host work of the step after the forward returns
  Nanos end_wait_ns = 0;    // of forward_ns: device work still queued when the host issued its last op
};

// The step's modelled post-forward host work that the forward's queued device work does not cover.
Nanos exposed_post_ns(const EncoderStepTime& encoder);
// What the encoder part of a step took before any overlap: forward + host_extra + exposed post.
Nanos encoder_took_ns(const EncoderStepTime& encoder);

struct StepTiming {
  Nanos encoder_ns = 0;           // the serial encoder part
  Nanos lm_ns = 0;                // the LM part (with the overlapped host work and lead)
  Nanos overlapped_lead_ns = 0;   // the encoder host lead moved into the LM part (before jitter)
  Nanos total_ns() const { return encoder_ns + lm_ns; }
};

StepTiming step_timing(const StepCostModel& cost, std::int64_t sequences, std::int64_t prefill_tokens,
                       std::int64_t context_tokens, const EncoderStepTime& encoder, double jitter_factor = 1.0);

}  // namespace encbench::serving
