// The serving model's coefficients applied to a language model on a device: the step cost the
// engine charges and the KV capacity (apart from serving_model.cpp, which only reads the
// coefficients, so that the file reader links without the roofline, engine or device).
#include <sstream>

#include "harness/core/error.hpp"
#include "harness/device/host_model.hpp"
#include "harness/serving/lm_roofline.hpp"
#include "harness/serving/serving_model.hpp"

namespace encbench::serving {
namespace {

// Host ms of `calls` at the host model's cost per class; an unknown class is an InvalidInput
// naming the serving-model file, the key and the accepted names.
double host_calls_ms(const HostOpCalls& calls, double times, const device::HostModel& host, const std::string& where) {
  double ns = 0;
  for (const auto& [name, n] : calls) {
    const auto op_class = device::parse_host_op_class(name);
    if (!op_class) {
      std::string known;
      for (device::HostOpClass c : device::kHostOpClasses) known += (known.empty() ? "" : ", ") + std::string(to_string(c));
      throw InvalidInput(where + "." + name + ": unknown host op class (known: " + known + ")");
    }
    ns += n * static_cast<double>(host.cost(*op_class));
  }
  return times * ns / 1e6;
}

double op_set_host_ms(const LmOpSet& set, const LanguageModelDims& dims, const device::HostModel& host,
                      const std::string& origin) {
  const std::string where = origin + ": lm_step_ops.op_sets." + set.name;
  return host_calls_ms(set.per_layer, dims.layers, host, where + ".per_layer") +
         host_calls_ms(set.per_layer_qk_norm, dims.qk_norm ? dims.layers : 0, host, where + ".per_layer_qk_norm") +
         host_calls_ms(set.per_step, 1, host, where + ".per_step");
}

// The forward's launch host time by step kind, and its kernels' device gaps (ms per step).
void apply_lm_step_ops(const LmStepOps& ops, const LanguageModelDims& dims, const device::SimProfile& profile,
                       const std::filesystem::path& profiles_dir, StepCostModel& c, std::ostringstream& s) {
  const device::HostModel host =
      device::load_host_model(ops.host_model, profiles_dir.empty() ? device::default_profiles_dir() : profiles_dir);
  c.lm_launch.decode_ms = op_set_host_ms(ops.set(true), dims, host, ops.origin);
  c.lm_launch.mixed_ms = op_set_host_ms(ops.set(false), dims, host, ops.origin);
  const double kernels = dims.layers * (ops.kernels_per_layer + (dims.qk_norm ? ops.kernels_per_layer_qk_norm : 0)) +
                         ops.kernels_per_step;
  const double gaps_ms = kernels * profile.kernel_fixed_ns.value / 1e6;
  c.base_ms += gaps_ms;
  s << "; LM ops (" << ops.origin << " lm_step_ops, host model " << host.name << "): launch " << c.lm_launch.decode_ms
    << " ms a decode step (" << ops.decode_step << "), " << c.lm_launch.mixed_ms << " ms a mixed step ("
    << ops.mixed_step << "), overlapping the step's device work; " << kernels << " kernels x "
    << profile.kernel_fixed_ns.value / 1e3 << " us = " << gaps_ms << " ms of device gaps";
}

}  // namespace

serving::StepCostModel step_cost_model(const ServingModel& m, const LanguageModelDims& dims,
                                      const device::SimProfile& profile, bool async_scheduling,
                                      const std::filesystem::path& profiles_dir) {
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
  if (m.lm_step_ops.enabled()) apply_lm_step_ops(m.lm_step_ops, dims, profile, profiles_dir, c, s);
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
