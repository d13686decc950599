#pragma once
// The time of one engine step, given what the scheduler put in it (scheduler.hpp):
//
//   lm_device_ms = base_ms + per_seq_ms * sequences + per_prefill_token_ms * prefill_tokens
//                + per_context_token_ms * context_tokens
//   host parts   = the engine core's per-step CPU work as vLLM V1 runs it (schedule, prepare
//                  inputs, launch, sampled-token D2H + sync, update_from_output, output
//                  serialisation), each base_ms + per_seq_ms * sequences, and for each mode
//                  (async scheduling on / off) whether it overlaps the device step
//   step_ms      = encoder_ms + serial_host_ms + max(lm_device_ms, overlapped_host_ms)
//                  with async scheduling the encoder forward's host lead (the device waiting for
//                  the eager host before the forward's first sync) moves from encoder_ms into
//                  overlapped_host_ms: execute_model runs step n+1's encoder on the host while
//                  step n's LM still executes
//
// i.e. the parts that overlap hide behind the device step up to its length, exactly, and the
// rest add. Which part overlaps in which mode is read from vLLM V1's code (docs/calibration.md
// "Engine-core host parts"): with async scheduling (vLLM >= 0.14 default, EngineCore.
// step_with_batch_queue + AsyncScheduler + AsyncGPUModelRunnerOutput) all of them run while the
// device executes the neighbouring step; without it (EngineCore.step) schedule, input
// preparation, the blocking sampled-token copy and update_from_output run while the device
// waits. With no parts the host is one part host_base_ms + host_per_seq_ms * sequences that
// overlaps only under async scheduling (the rule before issue 35 item 5).
// The encoder runs serially in the step before the LM forward (vLLM's execute_model:
// _execute_mm_encoder, then the forward). Every coefficient carries its source (a roofline, a
// fit, a flag).
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace encbench::serving {

// The host launching the LM forward and the sampler of one step (serving/lm_step_ops.hpp), by the
// step's kind: a step of decodes only replays what vllm-ascend captured for it, a step with prompt
// tokens runs the mixed path. It overlaps the step's own device work in both scheduling modes.
struct LmLaunchHost {
  double decode_ms = 0;
  double mixed_ms = 0;
  double ms(std::int64_t prefill_tokens) const { return prefill_tokens > 0 ? mixed_ms : decode_ms; }
};

// One part of the engine core's host work per step, and whether it overlaps the device step.
struct EngineHostPart {
  std::string name;
  double base_ms = 0;      // per step
  double per_seq_ms = 0;   // per sequence in the step
  bool overlaps_async = true;   // with async scheduling
  bool overlaps_sync = false;   // without it
  double ms(std::int64_t sequences) const { return base_ms + per_seq_ms * static_cast<double>(sequences); }
};

// The host side of a step split by the rule above (all in ms).
struct HostSplit {
  double serial_ms = 0;
  double overlapped_ms = 0;
};

struct StepCostModel {
  double base_ms = 5.0;               // fixed device cost of a forward (+ weights read)
  double per_seq_ms = 0.05;           // per sequence in the batch
  double per_prefill_token_ms = 0.02; // per prompt token computed in the step
  double per_context_token_ms = 0;    // per token of context the step's sequences attend to
  double host_base_ms = 0;            // engine-core host work per step
  double host_per_seq_ms = 0;         // engine-core host work per sequence
  bool async_scheduling = false;
  // Empty: one part {host_base_ms, host_per_seq_ms} overlapping only under async scheduling.
  std::vector<EngineHostPart> host_parts;
  LmLaunchHost lm_launch;  // 0 without lm_step_ops
  std::string source = "defaults (no source; pass --lm-* flags or use a sim device and a preset "
                       "with a language_model block)";

  double lm_device_ms(std::int64_t sequences, std::int64_t prefill_tokens, std::int64_t context_tokens) const {
    return base_ms + per_seq_ms * static_cast<double>(sequences) +
           per_prefill_token_ms * static_cast<double>(prefill_tokens) +
           per_context_token_ms * static_cast<double>(context_tokens);
  }
  // All the engine core's host work of a step, overlapped or not (the forward's launch by the
  // step's kind: prefill_tokens 0 is a step of decodes only).
  double host_ms(std::int64_t sequences, std::int64_t prefill_tokens = 0) const;
  HostSplit host_split(std::int64_t sequences, std::int64_t prefill_tokens = 0) const;
  // The step without its encoder part. `encoder_lead_ms`: the encoder's host work of this step
  // that overlaps the device step like an overlapped part (the virtual loop passes the forward's
  // host lead under async scheduling, 0 without it).
  double step_ms(std::int64_t sequences, std::int64_t prefill_tokens, std::int64_t context_tokens = 0,
                 double encoder_lead_ms = 0) const;
};

// Reads {"lm_cost_model": {"base_ms", "per_seq_ms", "per_prefill_token_ms"}} from a device
// profile's JSON (`origin` names it in errors); keys that are absent keep the defaults above.
// Throws InvalidInput when a present key is not a non-negative number.
StepCostModel step_cost_from_profile(const nlohmann::json& profile, const std::string& origin);

}  // namespace encbench::serving
