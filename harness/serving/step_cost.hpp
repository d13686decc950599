#pragma once
// The time of one engine step, given what the scheduler put in it (scheduler.hpp):
//
//   lm_device_ms = base_ms + per_seq_ms * sequences + per_prefill_token_ms * prefill_tokens
//                + per_context_token_ms * context_tokens
//   host_ms      = host_base_ms + host_per_seq_ms * sequences   (scheduling, input preparation,
//                  sampling bookkeeping and output processing of the engine core, on the CPU)
//   step_ms      = encoder_ms + (async_scheduling ? max(lm_device_ms, host_ms)
//                                                 : lm_device_ms + host_ms)
//
// The encoder runs serially in the step before the LM forward (vLLM's execute_model:
// _execute_mm_encoder, then the forward). With async scheduling (vLLM >= 0.14 default) the host
// prepares step n+1 while the device runs step n, so host and device time overlap; without it
// they add. Every coefficient carries its source (a roofline, a fit, a flag).
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace encbench::serving {

struct StepCostModel {
  double base_ms = 5.0;               // fixed device cost of a forward (+ weights read)
  double per_seq_ms = 0.05;           // per sequence in the batch
  double per_prefill_token_ms = 0.02; // per prompt token computed in the step
  double per_context_token_ms = 0;    // per token of context the step's sequences attend to
  double host_base_ms = 0;            // engine-core host work per step
  double host_per_seq_ms = 0;         // engine-core host work per sequence
  bool async_scheduling = false;
  std::string source = "defaults (no source; pass --lm-* flags or use a sim device and a preset "
                       "with a language_model block)";

  double lm_device_ms(std::int64_t sequences, std::int64_t prefill_tokens, std::int64_t context_tokens) const {
    return base_ms + per_seq_ms * static_cast<double>(sequences) +
           per_prefill_token_ms * static_cast<double>(prefill_tokens) +
           per_context_token_ms * static_cast<double>(context_tokens);
  }
  double host_ms(std::int64_t sequences) const {
    return host_base_ms + host_per_seq_ms * static_cast<double>(sequences);
  }
  // The step without its encoder part.
  double step_ms(std::int64_t sequences, std::int64_t prefill_tokens, std::int64_t context_tokens = 0) const;
};

// Reads {"lm_cost_model": {"base_ms", "per_seq_ms", "per_prefill_token_ms"}} from a device
// profile's JSON (`origin` names it in errors); keys that are absent keep the defaults above.
// Throws InvalidInput when a present key is not a non-negative number.
StepCostModel step_cost_from_profile(const nlohmann::json& profile, const std::string& origin);

}  // namespace encbench::serving
