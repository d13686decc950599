#pragma once
// The virtual clock's host time as declared data: what each device call and each piece
// of host-side work of the encoder costs the host, by op class, each cost with its source. Read
// from scenarios/devices/host-models/<name>.json (or a user's file):
//
//   {"schema": "encbench-host-model", "schema_version": 1, "name": "...", "description": "...",
//    "op_classes": {"kernel_launch": {"ns": 2000, "source": "..."}, ...}}
//
// Every class of kHostOpClasses must be present (a missing one, an unknown one, a negative or
// non-integral cost or a missing source is an InvalidInput naming the file and key). A virtual
// figure computed with a host model is a function of code, model files and inputs alone: no CPU
// clock is read, so repeats, builds (-O levels, sanitizers) and machines give the same bits.
//
// How host time is obtained on the virtual clock (HostTime):
//   model     the host model's cost per call (default)
//   measured  the host thread's CPU time between device calls (a measurement of this machine:
//             results and metric names say so, and compare judges it like wall-clock data)
//   none      nothing but the per-op launch overhead (DeviceOptions::launch_overhead_ns)
#include <array>
#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "harness/core/clock.hpp"

namespace encbench::device {

enum class HostOpClass : std::size_t {
  kernel_launch,  // submitting one kernel (runtime launch API; framework dispatch: launch_overhead_ns)
  memset,         // submitting one device memset
  h2d_copy,       // host part of a host-to-device copy call (staging, enqueue)
  d2h_copy,       // host part of a device-to-host copy call before it blocks (.cpu())
  stream_sync,    // host part of a stream/device/event synchronize call before it blocks
  event_record,   // recording an event on a stream
  event_wait,     // making a stream wait for an event
  allocation,     // a device tensor from the framework's caching allocator (torch.empty)
  host_tensor,    // building a host tensor from host data (positions, index lists)
  host_scalar,    // Python-level scalar work: scale, pad decision, cache-key check, list select
  host_math,      // a small op on a CPU tensor through the eager dispatcher (cumsum, diff)
  input_prep,     // per-forward input preparation before the blocks (cu_seqlens, window index)
  torch_dispatch,  // one eager torch op called from Python: interpreter, pybind, ATen dispatcher and the
                   // framework's op queue, charged before the op's runtime launch (kernel_launch etc.)
  tensor_view,     // a Python-level view op without device work (view, chunk, unbind, slice, rearrange
                   // of a contiguous tensor): interpreter + dispatcher, no launch
};
inline constexpr std::size_t kHostOpClassCount = 14;
inline constexpr std::array<HostOpClass, kHostOpClassCount> kHostOpClasses = {
    HostOpClass::kernel_launch, HostOpClass::memset,       HostOpClass::h2d_copy,    HostOpClass::d2h_copy,
    HostOpClass::stream_sync,   HostOpClass::event_record, HostOpClass::event_wait,  HostOpClass::allocation,
    HostOpClass::host_tensor,   HostOpClass::host_scalar,  HostOpClass::host_math,   HostOpClass::input_prep,
    HostOpClass::torch_dispatch, HostOpClass::tensor_view};

std::string_view to_string(HostOpClass op_class);
std::optional<HostOpClass> parse_host_op_class(std::string_view text);

// Costs are bounded (0 .. 1 s per call): a larger one is a typo, not a host.
inline constexpr Nanos kMaxHostOpCostNs = 1'000'000'000;

struct HostOpCost {
  Nanos ns = 0;
  std::string source;
};

struct HostModel {
  std::string name;
  std::string description;
  std::filesystem::path path;  // empty for built-in models
  std::array<HostOpCost, kHostOpClassCount> costs{};

  Nanos cost(HostOpClass op_class) const { return costs[static_cast<std::size_t>(op_class)].ns; }
};

// The host model with every cost 0 (what HostTime::none and HostTime::measured charge per class).
HostModel zero_host_model(std::string name, std::string source);

// Throws InvalidInput naming `origin` and the key for anything but a complete, valid model.
HostModel parse_host_model(const nlohmann::json& json, const std::string& origin);
nlohmann::json to_json(const HostModel& model);
// `name_or_path`: a model name in <profiles_dir>/host-models, or a path to a JSON file (contains
// '/' or ends in .json). Throws InvalidInput for an unknown name (listing the known ones).
HostModel load_host_model(const std::string& name_or_path, const std::filesystem::path& profiles_dir);

// The host model encode/ab/micro/instr use by default.
inline constexpr std::string_view kDefaultHostModel = "torch-npu-eager";

enum class HostTime { model, measured, none };
std::string_view to_string(HostTime host_time);            // "model" | "measured" | "none"
HostTime parse_host_time(std::string_view text);            // throws InvalidInput naming the choices
// The flag's spelling: "cpu" is the measured mode ("--virtual-host-time cpu").
HostTime parse_virtual_host_time_flag(std::string_view text);

}  // namespace encbench::device
