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

double StepCostModel::step_ms(std::int64_t sequences, std::int64_t prefill_tokens,
                              std::int64_t context_tokens) const {
  const double device = lm_device_ms(sequences, prefill_tokens, context_tokens);
  const double host = host_ms(sequences);
  return async_scheduling ? std::max(device, host) : device + host;
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
