#include "harness/serving/step_timing.hpp"

#include <algorithm>

namespace encbench::serving {

Nanos exposed_post_ns(const EncoderStepTime& encoder) {
  return std::max<Nanos>(0, encoder.host_post_ns - std::max<Nanos>(0, encoder.end_wait_ns));
}

Nanos encoder_took_ns(const EncoderStepTime& encoder) {
  return encoder.forward_ns + encoder.host_extra_ns + exposed_post_ns(encoder);
}

StepTiming step_timing(const StepCostModel& cost, std::int64_t sequences, std::int64_t prefill_tokens,
                       std::int64_t context_tokens, const EncoderStepTime& encoder, double jitter_factor) {
  StepTiming t;
  const Nanos took = encoder_took_ns(encoder);
  // Host work before the forward's first sync: the step's pre-processing and the device's waits
  // for the eager host (what async scheduling can run during the previous step's LM).
  const Nanos lead = std::min(took, encoder.host_extra_ns + encoder.host_lead_ns);
  t.overlapped_lead_ns = cost.async_scheduling ? lead : 0;
  const Nanos encoder_ns = took - t.overlapped_lead_ns;
  const Nanos lm_ns = static_cast<Nanos>(
      cost.step_ms(sequences, prefill_tokens, context_tokens, static_cast<double>(t.overlapped_lead_ns) / 1e6) * 1e6);
  t.lm_ns = static_cast<Nanos>(static_cast<double>(lm_ns) * jitter_factor);
  t.encoder_ns = static_cast<Nanos>(static_cast<double>(encoder_ns) * jitter_factor);
  return t;
}

}  // namespace encbench::serving
