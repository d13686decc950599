#pragma once
// Turns a profiler trace (Kineto, torch_npu or encbench's own Chrome trace) into the plain
// encbench::timeline::Timeline, one per device, so that the project's one gap analysis
// (timeline/gaps.hpp) runs on real traces exactly as on encbench's own recordings.
//
// Device ops: X events on device tracks (Kineto cat kernel/gpu_memcpy/gpu_memset/...,
// torch_npu "Ascend Hardware" tasks, encbench device tracks). Each is linked to the host event
// that launched it by args.correlation (Kineto, as HTA does) or else by a flow (ac2g,
// HostToDevice, torch_to_npu, encbench's own s/f pairs); the launch's start becomes submit_ns.
// Host spans: runtime API events are `api` (synchronize calls and blocking copies `wait`), all
// other host X events `work`.
#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "harness/timeline/trace_event.hpp"
#include "harness/trace_read/trace_reader.hpp"

namespace encbench::trace {

enum class TraceLayout : std::uint8_t { kineto, torch_npu, encbench };
std::string_view to_string(TraceLayout layout);  // "kineto", "torch_npu", "encbench"

// One device op with the host launch event it came from (HTA's CPU/GPU correlation pair).
struct LaunchLink {
  int stream = 0;
  std::uint64_t op_id = 0;           // DeviceOp::id in the device's timeline
  std::uint32_t api_name = kNoString;  // index into ImportedTrace::names
  Nanos api_start_ns = 0, api_end_ns = 0;
  Nanos op_start_ns = 0, op_end_ns = 0;
  bool api_is_runtime = false;       // the launch is a runtime/driver API call (not a framework op)
};

struct DeviceTrace {
  int device = 0;
  std::string label;                  // "GPU 0", "NPU 1", "cuda:0"
  timeline::Timeline timeline;        // device ops of this device, all host spans of the trace
  std::vector<LaunchLink> launches;   // sorted by api_start_ns
  std::size_t ops_without_launch = 0; // no correlation/flow partner: treated as queued (as HTA)
};

struct ImportCounts {
  std::size_t device_ops = 0;
  std::size_t host_spans = 0;
  std::size_t linked_by_correlation = 0;
  std::size_t linked_by_flow = 0;
  std::size_t recorded_submit = 0;            // encbench traces: submit time in the op's args
  std::size_t unlinked_ops = 0;
  std::size_t skipped_device_sync = 0;        // cuda_sync, EVENT_WAIT/RECORD tasks: not busy time
  std::size_t skipped_device_annotations = 0; // gpu_user_annotation, derived lanes
};

struct ImportedTrace {
  TraceLayout layout = TraceLayout::kineto;
  std::vector<DeviceTrace> devices;  // sorted by device
  std::vector<std::string> names;    // interned names used by LaunchLink
  ImportCounts counts;
  ReadStats read;
  std::string source;                // path or label
};

// Interprets a RawTrace. Throws InvalidInput when no device events are found.
ImportedTrace import_raw_trace(RawTrace raw, const std::string& source_name);
// Reads and interprets a trace file (plain or gzip).
ImportedTrace import_trace_file(const std::filesystem::path& path, const ReadLimits& limits = {});
// Same from text (tests, small inputs).
ImportedTrace import_trace_text(std::string_view json_text, const std::string& source_name = "<text>");

// True for the host API names that launch device work (HTA's launch-event set, plus the
// torch_npu/CANN launch APIs).
bool is_launch_api_name(std::string_view name);
// True for host API calls that block until the device is done (synchronize, blocking copies).
bool is_blocking_api_name(std::string_view name);

}  // namespace encbench::trace
