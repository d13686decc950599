#pragma once
// Per-op durations taken from a measured profiler trace, for `--device trace:FILE`: the sim
// device then runs on the trace's own op times instead of its roofline wherever the trace has
// the op, so preset A/B and A/B figures are anchored to the user's real device.
//
// Lookup of an op (name, cost):
//   exact      the trace has the name with the same cost (flops and bytes): its median duration;
//   scaled     the trace has the name with another cost: the nearest cost's median, scaled by
//              the roofline's ratio between the two costs (modelled(op) / modelled(trace op));
//   name_only  the trace has the name but no cost for it (Kineto/torch_npu kernels carry no
//              flops): its median duration as is;
//   mapped     the name is not in the trace, but the op name map (op_name_map.hpp) gives the op a
//              role (attention, gemm, ...) that some of the trace's kernels have (FlashAttention-
//              Score, MatMulV2, ...): those kernels' nearest cost scaled as above when they carry
//              a cost, else the median of all the role's kernels;
//   fell_back  neither: the roofline duration (sim_profile.hpp).
// The counts are kept (atomics: the real-clock sim device times ops on its own thread) and
// reported by encode, serve (shutdown line, result JSON, /metrics) and run (per arm).
#include <atomic>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/core/clock.hpp"
#include "harness/device/op_name_map.hpp"
#include "harness/timeline/trace_event.hpp"

namespace encbench::device {

struct SimProfile;

struct OpTimeCounts {
  std::size_t exact = 0, scaled = 0, name_only = 0, mapped = 0, fell_back = 0;
  std::size_t total() const { return exact + scaled + name_only + mapped + fell_back; }
  OpTimeCounts& operator+=(const OpTimeCounts& other);
};

class MeasuredOpTimes {
 public:
  // Ops whose names the trace lacks are looked up by role through this map (call before add()).
  void use_op_name_map(OpNameMap map);
  // One measured op; call finish() once all are added.
  void add(std::string_view name, timeline::OpCategory category, double flops, double bytes, Nanos duration_ns);
  void finish();

  // The op's duration from the trace, or nullopt (counted as fell_back) when neither its name nor
  // its role is in the trace.
  std::optional<Nanos> lookup(const SimProfile& profile, std::string_view name, timeline::OpCategory category,
                              double flops, double bytes) const;

  OpTimeCounts counts() const;
  std::size_t names() const { return by_name_.size(); }
  std::size_t samples() const { return samples_; }
  // The trace's kernel names that the map gave a role: "FlashAttentionScore -> attention", sorted.
  std::vector<std::string> mapped_kernels() const;
  const std::string& op_map_origin() const { return op_map_.origin; }
  std::string source;  // the trace file
  // Roofline for the ops that fall back, when the spec names none: an encbench trace's own sim
  // profile, else ascend-910b for torch_npu and h100-sxm for Kineto traces.
  std::string suggested_profile;

 private:
  struct Shape {
    timeline::OpCategory category = timeline::OpCategory::kernel;
    double flops = 0, bytes = 0;
    std::vector<Nanos> durations;
    Nanos median_ns = 0;
  };
  struct NameHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  using ShapesByKey = std::unordered_map<std::string, std::vector<Shape>, NameHash, std::equal_to<>>;
  static void add_to(ShapesByKey& table, std::string_view key, timeline::OpCategory category, double flops,
                     double bytes, Nanos duration_ns);
  // The duration from one name's (or role's) shapes; counts the kind of match.
  Nanos from_shapes(const SimProfile& profile, const std::vector<Shape>& shapes, timeline::OpCategory category,
                    double flops, double bytes, bool by_role) const;
  ShapesByKey by_name_;
  // The mapped kernels pooled by role: cost-less samples of one role and category share one
  // shape, so its median is the role's pooled median.
  ShapesByKey by_role_;
  std::unordered_map<std::string, std::string, NameHash, std::equal_to<>> role_of_kernel_;  // mapped ones
  OpNameMap op_map_;
  std::size_t samples_ = 0;
  mutable std::atomic<std::size_t> exact_{0}, scaled_{0}, name_only_{0}, mapped_{0}, fell_back_{0};
};

// "op times from trace t.json: 412 ops exact, 0 scaled by cost, 0 by name only, 40 mapped by
// kernel role, 3 fell back to the roofline (of 455)".
std::string describe(const MeasuredOpTimes& table);
std::string describe(const OpTimeCounts& counts, const std::string& source);
// {source, names, samples, exact, scaled, name_only, mapped, fell_back, op_map, mapped_kernels}
nlohmann::json to_json(const MeasuredOpTimes& table);
// {exact, scaled, name_only, mapped, fell_back, total}
nlohmann::json to_json(const OpTimeCounts& counts);

// Reads the trace (any format `encbench trace analyze` reads; the device with the most ops) into
// a table, giving its kernels roles through `op_map` when there is one. Throws InvalidInput for a
// bad trace.
std::shared_ptr<MeasuredOpTimes> load_measured_op_times(const std::filesystem::path& trace_path,
                                                        const OpNameMap* op_map = nullptr);

}  // namespace encbench::device
