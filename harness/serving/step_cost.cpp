#include "harness/serving/step_cost.hpp"

#include <algorithm>

#include "harness/core/error.hpp"

namespace encbench::serving {
namespace {

double require_non_negative(const nlohmann::json& object, const char* key, double fallback,
                            const std::string& where) {
  const auto it = object.find(key);
  if (it == object.end()) return fallback;
  require(it->is_number() && it->get<double>() >= 0,
          where + ": lm_cost_model." + key + " must be a non-negative number");
  return it->get<double>();
}

}  // namespace

HostSplit StepCostModel::host_split(std::int64_t sequences, std::int64_t prefill_tokens) const {
  HostSplit split;
  const auto add = [&](const EngineHostPart& part) {
    const bool overlaps = async_scheduling ? part.overlaps_async : part.overlaps_sync;
    (overlaps ? split.overlapped_ms : split.serial_ms) += part.ms(sequences);
  };
  if (host_parts.empty())
    add(EngineHostPart{"engine-core host", host_base_ms, host_per_seq_ms, true, false});
  for (const EngineHostPart& part : host_parts) add(part);
  split.overlapped_ms += lm_launch.ms(prefill_tokens);  // launches run while their own kernels execute
  return split;
}

double StepCostModel::host_ms(std::int64_t sequences, std::int64_t prefill_tokens) const {
  const HostSplit split = host_split(sequences, prefill_tokens);
  return split.serial_ms + split.overlapped_ms;
}

double StepCostModel::step_ms(std::int64_t sequences, std::int64_t prefill_tokens, std::int64_t context_tokens,
                              double encoder_lead_ms) const {
  const double device = lm_device_ms(sequences, prefill_tokens, context_tokens);
  const HostSplit host = host_split(sequences, prefill_tokens);
  // The overlapped parts run while the device executes the neighbouring step: hidden up to the
  // device time, exactly; the serial ones run while the device waits.
  return host.serial_ms + std::max(device, host.overlapped_ms + encoder_lead_ms);
}

StepCostModel step_cost_from_profile(const nlohmann::json& profile, const std::string& origin) {
  StepCostModel model;
  const auto it = profile.find("lm_cost_model");
  if (it == profile.end()) return model;
  require(it->is_object(), origin + ": lm_cost_model must be an object");
  model.base_ms = require_non_negative(*it, "base_ms", model.base_ms, origin);
  model.per_seq_ms = require_non_negative(*it, "per_seq_ms", model.per_seq_ms, origin);
  model.per_prefill_token_ms = require_non_negative(*it, "per_prefill_token_ms", model.per_prefill_token_ms, origin);
  return model;
}

}  // namespace encbench::serving
