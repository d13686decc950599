#pragma once
// Turns a profiler trace (Kineto, torch_npu or encbench's own Chrome trace) into the plain
// encbench::timeline::Timeline, one per device, so that the project's one gap analysis
// (timeline/gaps.hpp) runs on real traces exactly as on encbench's own recordings.
//
// Device ops: X events on device tracks (Kineto cat kernel/gpu_memcpy/gpu_memset/...,
// torch_npu "Ascend Hardware" tasks by npu_task_kind and HCCL collectives, encbench device tracks). Each is linked to the host event
// that launched it by args.correlation (Kineto, as HTA does) or else by a flow (ac2g,
// HostToDevice, torch_to_npu, encbench's own s/f pairs); the launch's start becomes submit_ns.
// Host spans: runtime API events are `api` (synchronize calls and blocking copies `wait`), all
// other host X events `work`. A copy call that returns only after its copy has ended (a
// cudaMemcpyAsync to pageable memory: the host waited for the copy and the stream before it)
// is a `wait` too. The profiler's own span (Kineto's "PyTorch Profiler (N)") is no host work.
#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <optional>
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

// The profiler's own extent of a device's step, when the trace carries one: torch_npu's
// "Overlap Analysis" lane (its Computing and Communication slices; step_trace_time.csv's Stage).
struct ProfilerStepExtent {
  Nanos start_ns = 0, end_ns = 0;
  std::string source;  // "torch_npu Overlap Analysis (Computing, Communication)"
};

struct DeviceTrace {
  int device = 0;
  std::string label;                  // "GPU 0", "NPU 1", "cuda:0"
  timeline::Timeline timeline;        // device ops of this device, all host spans of the trace
  std::vector<LaunchLink> launches;   // sorted by api_start_ns; several per call for a graph launch
  std::size_t ops_without_launch = 0; // no correlation/flow partner: treated as queued (as HTA)
  // Clock skew between host and device: ops that start before the host launched them (the
  // launch point a correlation or flow gives is later than the op's start). Their submit time is
  // taken as their start (never host_wait); counted and the largest shown.
  std::size_t skewed_ops = 0;
  Nanos max_skew_ns = 0;
  std::optional<ProfilerStepExtent> profiler_extent;
};

struct ImportCounts {
  std::size_t device_ops = 0;
  std::size_t host_spans = 0;
  std::size_t linked_by_correlation = 0;
  std::size_t linked_by_flow = 0;
  std::size_t recorded_submit = 0;            // encbench traces: submit time in the op's args
  std::size_t unlinked_ops = 0;
  std::size_t skipped_device_sync = 0;        // cuda_sync; torch_npu wait/record tasks: not busy time
  std::size_t skipped_device_annotations = 0; // gpu_user_annotation, placeholder tasks, derived lanes
  std::size_t collectives = 0;                // torch_npu HCCL "Group N Communication" ops (busy)
  std::size_t skipped_profiler_spans = 0;     // Kineto's own "PyTorch Profiler (N)" span (cat Trace)
  std::size_t stream_wait_tasks = 0;          // torch_npu EVENT_WAIT tasks kept as Timeline::stream_waits
  std::size_t blocking_copy_calls = 0;        // copy calls that returned after their copy ended: waits
  std::size_t skewed_ops = 0;                 // ops starting before their launch (all devices)
  Nanos max_skew_ns = 0;
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

// torch_npu "Ascend Hardware" tasks, by args."Task Type", case-insensitively (one rule; docs/trace.md):
//   placeholder  Task Type contains "place_holder" (PLACE_HOLDER_SQE: PROFILING_ENABLE/DISABLE and
//                the profiler's own EVENT_RECORD markers): an annotation, not an op;
//   sync         Task Type contains "wait" or "record" (EVENT_WAIT_SQE, EVENT_RECORD_SQE, Notify
//                Wait, Notify Record): the stream only waits for another stream or rank; not busy.
//                A collective's waiting is busy through the collective itself (HCCL lane below);
//   op           everything else (AI_CORE, AI_VECTOR_CORE, MIX_AIV, AI_CPU, SDMA, PCIE_DMA, Write Value).
enum class NpuTaskKind : std::uint8_t { op, sync, placeholder };
NpuTaskKind npu_task_kind(std::string_view task_type);
// torch_npu's HCCL lane: "Group N Communication" threads hold the collectives (hcom_allReduce_...),
// busy time as step_trace_time.csv's Communication; "Plane N" threads repeat their tasks.
bool is_npu_collective_thread(std::string_view thread_name);
// Collectives get a stream of their own: this + the HCCL lane's thread id (no physical stream id
// is in the trace for them, and their tasks' stream would overlap them).
inline constexpr int kCollectiveStreamBase = 10000;

}  // namespace encbench::trace
