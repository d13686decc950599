#pragma once
// Device profiles for the `sim:<profile>` backend: the numbers of a real accelerator, each with
// the public source it comes from, read from scenarios/devices/<profile>.json (or a user's file).
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/core/clock.hpp"
#include "harness/timeline/trace_event.hpp"

namespace encbench::device {

class MeasuredOpTimes;

struct SourcedNumber {
  double value = 0;
  std::string source;  // public datasheet / whitepaper, or "estimate: ..." with the reasoning
};

// The fraction of the roofline one class of ops achieves: e.g. the encoder's GEMMs reach
// 0.6 of the Cube peak, a strided pad copy half the bandwidth. `ops`: op-name globs ('*', '?',
// '|' alternatives) naming the class's ops. An op no class names runs at the roofline (1.0).
struct OpEfficiency {
  std::string op_class;  // "matmul", "attention_fusion", ...
  std::string ops;
  SourcedNumber fraction;  // (0, 1]
};

struct SimProfile {
  std::string name;          // "ascend-910b"
  std::string display_name;  // "Huawei Ascend 910B"
  std::filesystem::path path;
  // Which peak the roofline uses for kernels: the dense fp16/bf16 tensor (matrix) figure, since
  // the encoder's projections and attention run in half precision on these devices.
  std::string roofline_peak = "fp16_dense";
  SourcedNumber peak_fp32_flops_per_s;
  SourcedNumber peak_fp16_flops_per_s;  // dense fp16/bf16 tensor/cube peak (no sparsity)
  SourcedNumber mem_bytes_per_s;        // device memory (HBM) bandwidth
  SourcedNumber kernel_fixed_ns;        // per-kernel fixed cost on the device (launch latency)
  SourcedNumber d2h_latency_ns;
  SourcedNumber d2h_bytes_per_s;
  SourcedNumber h2d_latency_ns;
  SourcedNumber h2d_bytes_per_s;
  SourcedNumber host_wakeup_ns;         // host resumes this long after the op it waited for ends
  // Device memory size: the default memory budget of a sim device (0 = unknown, unlimited).
  // Optional in the file ("memory_bytes").
  SourcedNumber memory_bytes;
  // `--device trace:FILE`: op durations measured in a trace, consulted before the roofline
  // (measured_op_times.hpp). Null for a plain sim:<profile> device.
  std::shared_ptr<const MeasuredOpTimes> measured;
  // Optional "op_efficiency": {"<class>": {"value": (0, 1], "source": "...", "ops": "glob|glob"}}.
  // Classes are tried in name order; the first whose globs match an op's name applies.
  std::vector<OpEfficiency> op_efficiency;

  // The achieved fraction of the roofline for an op of this name (1.0 when no class names it).
  double efficiency_of(std::string_view op_name) const;

  double roofline_flops_per_s() const {
    return roofline_peak == "fp32" ? peak_fp32_flops_per_s.value : peak_fp16_flops_per_s.value;
  }
};

// scenarios/devices: $ENCBENCH_SCENARIOS_DIR/devices when that variable is set (or the variable's
// folder itself when it has no devices/ subfolder), else <source root>/scenarios/devices.
std::filesystem::path default_profiles_dir();
// Profile names (file stems) in a folder, sorted.
std::vector<std::string> list_sim_profiles(const std::filesystem::path& profiles_dir);
// `name_or_path`: a profile name in profiles_dir, or a path to a JSON file (contains '/' or ends
// in .json). Throws InvalidInput for an unknown profile (listing the known ones) or a malformed
// file (naming the field).
SimProfile load_sim_profile(const std::string& name_or_path, const std::filesystem::path& profiles_dir);
SimProfile parse_sim_profile(const nlohmann::json& json, const std::string& origin);
nlohmann::json to_json(const SimProfile& profile);

// Modelled duration of one op (roofline):
//   kernel      kernel_fixed + max(flops / roofline peak, bytes / mem bandwidth)
//   memset      kernel_fixed + bytes / mem bandwidth
//   memcpy_h2d  h2d_latency + bytes / h2d bandwidth;  memcpy_d2h likewise with the d2h numbers
//   sync        0 (a marker)
Nanos modelled_duration_ns(const SimProfile& profile, timeline::OpCategory category, double flops,
                           double bytes);

// What a sim device charges for an op: the measured duration when the profile has a trace table
// with the op's name (measured_op_times.hpp), else modelled_duration_ns.
Nanos op_duration_ns(const SimProfile& profile, std::string_view name, timeline::OpCategory category, double flops,
                     double bytes);

}  // namespace encbench::device
