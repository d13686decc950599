#pragma once
// How long one engine step takes, split into its encoder part and its LM part: the one rule both
// drivers apply, the virtual loop (virtual_loop.hpp, on the virtual clock) and the live engine
// thread (server/engine_core_thread.hpp, which waits the result out on the real clock against
// absolute deadlines). Neither keeps a copy of the formula.
//
//   encoder took   = forward + host pre-processing (host_extra)
//   host lead      = min(took, host_extra + the forward's host waits before its first sync)
//   overlapped     = async scheduling ? host lead : 0   (execute_model runs step n+1's encoder
//                    host work while step n's LM still executes; issue 35 item 5)
//   encoder part   = took - overlapped
//   LM part        = StepCostModel::step_ms(sequences, prefill, context, overlapped)
//   both parts     x the step's jitter factor (1 = none), each truncated to whole nanoseconds
//
// What the forward is depends on the clock: the virtual-clock encoder's virtual_forward_ns, or
// on the live server with a real-clock encoder the forward's measured wall time (host_lead 0:
// a real-clock forward reports no lead).
#include <cstdint>

#include "harness/core/clock.hpp"
#include "harness/serving/step_cost.hpp"

namespace encbench::serving {

// The encoder part of a step as its clock gave it (all 0 when the step encoded nothing).
struct EncoderStepTime {
  Nanos forward_ns = 0;     // the forward itself
  Nanos host_extra_ns = 0;  // modelled host pre-processing of the step
  Nanos host_lead_ns = 0;   // of forward_ns: the device's waits for the host before the first sync
};

struct StepTiming {
  Nanos encoder_ns = 0;           // the serial encoder part
  Nanos lm_ns = 0;                // the LM part (with the overlapped host work and lead)
  Nanos overlapped_lead_ns = 0;   // the encoder host lead moved into the LM part (before jitter)
  Nanos total_ns() const { return encoder_ns + lm_ns; }
};

StepTiming step_timing(const StepCostModel& cost, std::int64_t sequences, std::int64_t prefill_tokens,
                       std::int64_t context_tokens, const EncoderStepTime& encoder, double jitter_factor = 1.0);

}  // namespace encbench::serving
