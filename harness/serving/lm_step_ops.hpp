#pragma once
// The LM forward of one engine step as host work and device work from its op list, like the
// encoder's (issue 59), as data in the serving-model file:
//
//   "lm_step_ops": {"source": "...",
//     "host_model":  {"name": "<scenarios/devices/host-models name or path>", "source": "..."},
//     "decode_step": {"name": "<op set>", "source": "..."},   // a step of decodes only
//     "mixed_step":  {"name": "<op set>", "source": "..."},   // a step with prompt tokens
//     "device_kernels": {"per_layer": n, "per_layer_qk_norm": n, "per_step": n, "source": "..."},
//     "op_sets": {"<name>": {"per_layer": {"<host op class>": calls, ...},
//                            "per_layer_qk_norm": {...}, "per_step": {...}, "source": "..."}, ...}}
//
// Host time of a step = layers x (per_layer + per_layer_qk_norm when the LM normalises q and k)
// + per_step, each call at its class's cost in the host model (eager: every torch op pays
// torch_dispatch + kernel_launch; a graph replay is one call for many kernels). It is the host
// launching the forward and the sampler: it overlaps the step's own device work in both
// scheduling modes (serving/step_cost.hpp), so it sets the step only where it is the longer.
// Device time adds kernels x the profile's kernel_fixed_ns (the device's gap between queued
// tasks) to the roofline terms. The class names are checked against the host model when the step
// cost is built (serving_cost.cpp); here only the shape, the counts' range and the sources.
#include <map>
#include <string>

#include <nlohmann/json.hpp>

namespace encbench::serving {

// Calls per host op class (a name of device::HostOpClass).
using HostOpCalls = std::map<std::string, double>;

struct LmOpSet {
  std::string name;
  HostOpCalls per_layer;
  HostOpCalls per_layer_qk_norm;
  HostOpCalls per_step;
  std::string source;
};

struct LmStepOps {
  std::string origin;  // the file it was read from, for errors raised when it is applied
  std::string source;
  std::string host_model, host_model_source;
  std::string decode_step, decode_step_source;
  std::string mixed_step, mixed_step_source;
  double kernels_per_layer = 0, kernels_per_layer_qk_norm = 0, kernels_per_step = 0;
  std::string kernels_source;
  std::map<std::string, LmOpSet> op_sets;

  bool enabled() const { return !op_sets.empty(); }
  const LmOpSet& set(bool decode_only) const { return op_sets.at(decode_only ? decode_step : mixed_step); }
};

// Upper bound of one count (calls or kernels per layer or per step).
inline constexpr double kMaxLmOpCount = 1e4;

// Throws InvalidInput naming `origin`, the key and its accepted range for an unknown key, a count
// that is negative, not a number or above kMaxLmOpCount, a missing source, or a decode_step /
// mixed_step that names no op set.
LmStepOps parse_lm_step_ops(const nlohmann::json& value, const std::string& origin);
nlohmann::json to_json(const LmStepOps& ops);

}  // namespace encbench::serving
