#pragma once
// Per-op durations taken from a measured profiler trace, for `--device trace:FILE`: the sim
// device then runs on the trace's own op times instead of its roofline wherever the trace has
// the op, so closed-loop and A/B figures are anchored to the user's real device.
//
// Lookup of an op (name, cost):
//   exact      the trace has the name with the same cost (flops and bytes): its median duration;
//   scaled     the trace has the name with another cost: the nearest cost's median, scaled by
//              the roofline's ratio between the two costs (modelled(op) / modelled(trace op));
//   name_only  the trace has the name but no cost for it (Kineto/torch_npu kernels carry no
//              flops): its median duration as is;
//   fell_back  the name is not in the trace: the roofline duration (sim_profile.hpp).
// The counts are kept (atomics: the real-clock sim device times ops on its own thread) and
// reported in encode's output and JSON.
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
#include "harness/timeline/trace_event.hpp"

namespace encbench::device {

struct SimProfile;

struct OpTimeCounts {
  std::size_t exact = 0, scaled = 0, name_only = 0, fell_back = 0;
};

class MeasuredOpTimes {
 public:
  // One measured op; call finish() once all are added.
  void add(std::string_view name, timeline::OpCategory category, double flops, double bytes, Nanos duration_ns);
  void finish();

  // The op's duration from the trace, or nullopt (counted as fell_back) when its name is absent.
  std::optional<Nanos> lookup(const SimProfile& profile, std::string_view name, timeline::OpCategory category,
                              double flops, double bytes) const;

  OpTimeCounts counts() const;
  std::size_t names() const { return by_name_.size(); }
  std::size_t samples() const { return samples_; }
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
  std::unordered_map<std::string, std::vector<Shape>, NameHash, std::equal_to<>> by_name_;
  std::size_t samples_ = 0;
  mutable std::atomic<std::size_t> exact_{0}, scaled_{0}, name_only_{0}, fell_back_{0};
};

// "trace t.json: 412 ops exact, 0 scaled, 0 name-only, 3 fell back to the roofline (of 415)".
std::string describe(const MeasuredOpTimes& table);
// {source, names, samples, exact, scaled, name_only, fell_back}
nlohmann::json to_json(const MeasuredOpTimes& table);

// Reads the trace (any format `encbench trace analyze` reads; the device with the most ops) into
// a table. Throws InvalidInput for a bad trace.
std::shared_ptr<MeasuredOpTimes> load_measured_op_times(const std::filesystem::path& trace_path);

}  // namespace encbench::device
