// The serving model's coefficients applied to a language model on a device: the step cost the
// engine charges and the KV capacity (apart from serving_model.cpp, which only reads the
// coefficients, so that the file reader links without the roofline, engine or device).
#include <sstream>

#include "harness/core/error.hpp"
#include "harness/serving/lm_roofline.hpp"
#include "harness/serving/serving_model.hpp"

namespace encbench::serving {

serving::StepCostModel step_cost_model(const ServingModel& m, const LanguageModelDims& dims,
                                      const device::SimProfile& profile, bool async_scheduling) {
  const LmRoofline r = lm_roofline(dims, profile, m.lm_fixed_ms.value);
  const double f = m.achieved_flops_fraction.value, b = m.achieved_bandwidth_fraction.value;
  serving::StepCostModel c;
  c.base_ms = r.fixed_ms + r.weights_ms / b;
  c.per_seq_ms = m.lm_per_seq_ms.value;
  c.per_prefill_token_ms = r.prefill_ms_per_token / f;
  c.per_context_token_ms = r.context_ms_per_token / b;
  c.host_base_ms = m.host_base_ms.value;
  c.host_per_seq_ms = m.host_per_seq_ms.value;
  c.async_scheduling = async_scheduling;
  for (const EngineHostPartSpec& part : m.engine_host_parts.parts)
    c.host_parts.push_back({part.name, part.base_share * m.host_base_ms.value, part.per_seq_ms,
                            part.overlaps_async, part.overlaps_sync});
  std::ostringstream s;
  s << "serving model " << (m.path.empty() ? m.name : m.path.string()) << ": roofline of " << dims.source << " on "
    << profile.name << " at " << f * 100 << " % of peak FLOP/s and " << b * 100 << " % of bandwidth ("
    << r.derivation << "); host " << c.host_base_ms << " ms + " << c.host_per_seq_ms << " ms/seq per step, ";
  if (c.host_parts.empty()) {
    s << (async_scheduling ? "overlapped (async scheduling)" : "serial (no async scheduling)");
  } else {
    s << "in " << c.host_parts.size() << " parts (" << m.engine_host_parts.source << "), "
      << (async_scheduling ? "async scheduling" : "no async scheduling") << ":";
    for (const EngineHostPart& p : c.host_parts)
      s << " " << p.name << " " << p.base_ms << " ms + " << p.per_seq_ms << " ms/seq "
        << ((async_scheduling ? p.overlaps_async : p.overlaps_sync) ? "overlapped" : "serial") << ";";
  }
  c.source = s.str();
  return c;
}

std::int64_t kv_capacity_tokens(const ServingModel& m, const LanguageModelDims& dims) {
  if (m.device_memory_gib.value <= 0) return 0;
  const double bytes = (m.device_memory_gib.value * m.gpu_memory_utilization.value - m.reserved_gib.value) *
                       1073741824.0;
  require(bytes > 0, "serving model " + m.name + ": nothing is left for the KV cache (device_memory_gib * " +
                         "gpu_memory_utilization <= reserved_gib)");
  return static_cast<std::int64_t>(bytes / dims.kv_bytes_per_token());
}

}  // namespace encbench::serving
