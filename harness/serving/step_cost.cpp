#include "harness/serving/step_cost.hpp"

#include <algorithm>

namespace encbench::engine {

double StepCostModel::step_ms(std::int64_t sequences, std::int64_t prefill_tokens,
                              std::int64_t context_tokens) const {
  const double device = lm_device_ms(sequences, prefill_tokens, context_tokens);
  const double host = host_ms(sequences);
  return async_scheduling ? std::max(device, host) : device + host;
}

}  // namespace encbench::engine
