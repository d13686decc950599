#include "harness/trace_read/trace_lanes.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <limits>
#include <string>

#include "harness/timeline/chrome_trace.hpp"

namespace encbench::trace {

using timeline::HostSpanKind;
using timeline::OpCategory;

namespace {

bool contains_ignoring_case(std::string_view text, std::string_view part) {
  const auto lower = [](char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); };
  return std::search(text.begin(), text.end(), part.begin(), part.end(),
                     [&](char a, char b) { return lower(a) == lower(b); }) != text.end();
}

bool contains(std::string_view text, std::string_view part) { return text.find(part) != std::string_view::npos; }

bool is_kineto_device_cat(std::string_view cat) {
  return cat == "kernel" || cat == "Kernel" || cat == "gpu_memcpy" || cat == "Memcpy" ||
         cat == "gpu_memset" || cat == "Memset" || cat == "mtia_ccp_events";
}

// Trailing integer of "stream 7", "Stream 12", "NPU 1"; -1 when none.
std::int64_t trailing_integer(std::string_view text) {
  std::size_t end = text.size();
  while (end > 0 && std::isspace(static_cast<unsigned char>(text[end - 1]))) --end;
  std::size_t begin = end;
  while (begin > 0 && std::isdigit(static_cast<unsigned char>(text[begin - 1]))) --begin;
  if (begin == end) return -1;
  std::int64_t value = -1;
  std::from_chars(text.data() + begin, text.data() + end, value);
  return value;
}

// torch_npu lanes that are derived from, or describe, the device rather than host activity.
bool is_npu_device_side_lane(std::string_view process_name, std::string_view label) {
  if (label.rfind("NPU", 0) == 0) return true;
  static constexpr std::array<std::string_view, 14> kLanes = {
      "Ascend Hardware", "HCCL", "Communication", "Overlap Analysis", "AI Core Freq",
      "AI Core Utilization", "Stars Soc Info", "Stars Chip Trans", "Acc PMU", "HBM", "LLC",
      "NPU MEM", "QoS", "Device"};
  return std::find(kLanes.begin(), kLanes.end(), process_name) != kLanes.end();
}

OpCategory category_from_kineto(std::string_view cat, std::string_view name) {
  if (cat == "gpu_memset" || cat == "Memset") return OpCategory::memset;
  if (cat == "gpu_memcpy" || cat == "Memcpy") {
    if (contains(name, "DtoH") || contains(name, "Device -> Host") || contains(name, "Device -> Pinned") ||
        contains(name, "Device -> Pageable")) {
      return OpCategory::memcpy_d2h;
    }
    if (contains(name, "HtoD") || contains(name, "-> Device")) return OpCategory::memcpy_h2d;
  }
  // Device-to-device copies (and everything else) occupy the stream like a kernel.
  return OpCategory::kernel;
}

OpCategory category_from_npu(std::string_view task_type, std::string_view name) {
  if (contains(task_type, "MEMCPY") || contains(name, "MemCopy") || contains(name, "Memcpy")) {
    if (contains(name, "D2H") || contains(name, "DtoH")) return OpCategory::memcpy_d2h;
    if (contains(name, "H2D") || contains(name, "HtoD")) return OpCategory::memcpy_h2d;
  }
  if (contains(task_type, "MEMSET") || contains(name, "Memset")) return OpCategory::memset;
  return OpCategory::kernel;
}

std::int64_t numeric_or(TrackKey key, std::int64_t fallback) {
  return key < kStringIdTag ? static_cast<std::int64_t>(key) : fallback;
}

}  // namespace

bool is_blocking_api_name(std::string_view name) {
  if (name.find("Synchronize") != std::string_view::npos) return true;  // cuda*/cu*/hip*/aclrt*
  static constexpr std::array<std::string_view, 12> kBlockingCopies = {
      "cudaMemcpy",     "cudaMemcpy2D",       "cudaMemcpy3D",     "cudaMemcpyToSymbol",
      "cudaMemcpyFromSymbol", "cuMemcpyDtoH_v2", "cuMemcpyHtoD_v2", "cuMemcpy",
      "hipMemcpy",      "aclrtMemcpy",        "cudaMemset",       "hipMemset"};
  return std::find(kBlockingCopies.begin(), kBlockingCopies.end(), name) != kBlockingCopies.end();
}

NpuTaskKind npu_task_kind(std::string_view task_type) {
  if (contains_ignoring_case(task_type, "place_holder")) return NpuTaskKind::placeholder;
  if (contains_ignoring_case(task_type, "wait") || contains_ignoring_case(task_type, "record")) return NpuTaskKind::sync;
  return NpuTaskKind::op;
}

bool is_npu_collective_thread(std::string_view thread_name) {
  return contains_ignoring_case(thread_name, "communication");
}

bool is_npu_event_wait(std::string_view task_type) { return contains_ignoring_case(task_type, "event_wait"); }

bool parse_encbench_category(std::string_view text, OpCategory& out) {
  const auto parsed = timeline::op_category_from_string(text);
  if (parsed) out = *parsed;
  return parsed.has_value();
}

bool parse_encbench_span_kind(std::string_view text, HostSpanKind& out) {
  const auto parsed = timeline::host_span_kind_from_string(text);
  if (parsed) out = *parsed;
  return parsed.has_value();
}

TraceLanes::TraceLanes(const RawTrace& raw) : raw_(raw) {
  bool has_ascend_hardware = false;
  for (const auto& [pid, name] : raw_.process_names) {
    has_ascend_hardware |= name == "Ascend Hardware";
    kineto_npu_ |= name == "NPU";
  }
  layout_ = raw_.encbench_format == "encbench-chrome-trace" ? TraceLayout::encbench
            : has_ascend_hardware                          ? TraceLayout::torch_npu
                                                           : TraceLayout::kineto;
}

std::string_view TraceLanes::process_name(TrackKey pid) const {
  const auto it = raw_.process_names.find(pid);
  return it == raw_.process_names.end() ? std::string_view{} : std::string_view{it->second};
}

std::string_view TraceLanes::thread_name(TrackKey pid, TrackKey tid) const {
  const auto it = raw_.thread_names.find({pid, tid});
  return it == raw_.thread_names.end() ? std::string_view{} : std::string_view{it->second};
}

std::string_view TraceLanes::process_label(TrackKey pid) const {
  const auto it = raw_.process_labels.find(pid);
  return it == raw_.process_labels.end() ? std::string_view{} : std::string_view{it->second};
}

bool TraceLanes::is_collective(const RawEvent& e) const {
  return layout_ == TraceLayout::torch_npu && process_name(e.pid) == "HCCL" &&
         is_npu_collective_thread(thread_name(e.pid, e.tid));
}

ThreadKey TraceLanes::thread_key(const RawEvent& e) const {
  if (layout_ == TraceLayout::torch_npu && e.pid < kStringIdTag && e.pid >= 1024) return {e.pid >> 10, e.tid};
  return {e.pid, e.tid};
}

EventRole TraceLanes::role_of(const RawEvent& e) const {
  const std::string_view cat = raw_.str(e.cat);
  switch (layout_) {
    case TraceLayout::kineto:
      if (is_kineto_device_cat(cat)) return EventRole::device_op;
      if (cat == "cuda_sync") return EventRole::device_sync;
      if (cat == "gpu_user_annotation") return EventRole::device_annotation;
      // Kineto's span of the profiling session itself ("PyTorch Profiler (0)", cat "Trace"): it
      // covers the whole file, so as host work it would open every range at the profiler's start.
      if (cat == "Trace") return EventRole::profiler_span;
      return EventRole::host;
    case TraceLayout::torch_npu: return torch_npu_role(e);
    case TraceLayout::encbench: return encbench_role(e);
  }
  return EventRole::host;
}

EventRole TraceLanes::torch_npu_role(const RawEvent& e) const {
  const std::string_view pname = process_name(e.pid);
  if (pname == "Ascend Hardware") {
    // Event/notify waits and records only hold the stream for another stream or rank; like
    // Kineto's cuda_sync (excluded by HTA) they are not busy time. The profiler's own
    // placeholder tasks are not work at all.
    switch (npu_task_kind(raw_.str(e.task_type))) {
      case NpuTaskKind::op: return EventRole::device_op;
      case NpuTaskKind::sync: return EventRole::device_sync;
      case NpuTaskKind::placeholder: return EventRole::device_annotation;
    }
  }
  // A collective is busy from its start to its end, its waits for other ranks included
  // (torch_npu's Communication), on a stream of its own.
  if (is_collective(e)) return EventRole::device_op;
  return is_npu_device_side_lane(pname, process_label(e.pid)) ? EventRole::device_annotation : EventRole::host;
}

EventRole TraceLanes::encbench_role(const RawEvent& e) const {
  // timeline/chrome_trace.hpp: host pid, device pid (one tid per stream), gap track.
  OpCategory category{};
  if (e.pid == timeline::kHostPid) return EventRole::host;
  if (e.pid == timeline::kDevicePid && e.tid != timeline::kGapTrackTid &&
      parse_encbench_category(raw_.str(e.category_arg), category)) {
    return EventRole::device_op;
  }
  return EventRole::device_annotation;  // idle-gap annotations and anything derived
}

int TraceLanes::device_of(const RawEvent& e) const {
  switch (layout_) {
    case TraceLayout::kineto:
      if (e.device_arg >= 0) return static_cast<int>(e.device_arg);
      return static_cast<int>(numeric_or(e.pid, 0));
    case TraceLayout::torch_npu: {
      const std::int64_t from_label = trailing_integer(process_label(e.pid));
      if (from_label >= 0) return static_cast<int>(from_label);
      // get_pid_format packs (pid << 10) | (sort_index << 5) | device_id.
      const std::int64_t pid = numeric_or(e.pid, 0);
      return pid >= 1024 ? static_cast<int>(pid & 31) : 0;
    }
    case TraceLayout::encbench:
      return 0;  // one device per encbench recording
  }
  return 0;
}

int TraceLanes::stream_of(const RawEvent& e) const {
  if (is_collective(e)) {  // any tid a file may hold: no int overflow, never a negative stream
    const std::int64_t stream = kCollectiveStreamBase + numeric_or(e.tid, 0);
    return static_cast<int>(std::clamp<std::int64_t>(stream, 0, std::numeric_limits<int>::max()));
  }
  if (e.stream_arg >= 0) return static_cast<int>(e.stream_arg);
  if (e.tid < kStringIdTag) return static_cast<int>(e.tid);
  const std::int64_t n = trailing_integer(raw_.track_name(e.tid));
  return n >= 0 ? static_cast<int>(n) : 0;
}

HostSpanKind TraceLanes::host_kind_of(const RawEvent& e) const {
  const std::string_view cat = raw_.str(e.cat);
  const std::string_view name = raw_.str(e.name);
  if (layout_ == TraceLayout::encbench) {
    HostSpanKind kind = HostSpanKind::work;
    parse_encbench_span_kind(raw_.str(e.category_arg), kind);
    return kind;
  }
  // privateuse1_runtime: PyTorch's out-of-tree backend runtime (torch_npu's MSPTI export).
  const bool runtime = cat == "cuda_runtime" || cat == "cuda_driver" || cat == "runtime" || cat == "driver" ||
                       cat == "privateuse1_runtime" || cat == "privateuse1_driver" || name.rfind("aclrt", 0) == 0 ||
                       (layout_ == TraceLayout::torch_npu && process_name(e.pid) == "CANN");
  if (!runtime) return HostSpanKind::work;
  return is_blocking_api_name(name) || is_blocking_api_name(name.substr(name.find('@') + 1)) ? HostSpanKind::wait
                                                                                             : HostSpanKind::api;
}

OpCategory TraceLanes::category_of(const RawEvent& e, std::string_view name) const {
  OpCategory category = OpCategory::kernel;
  switch (layout_) {
    case TraceLayout::kineto: category = category_from_kineto(raw_.str(e.cat), name); break;
    case TraceLayout::torch_npu: category = category_from_npu(raw_.str(e.task_type), name); break;
    case TraceLayout::encbench: parse_encbench_category(raw_.str(e.category_arg), category); break;
  }
  return category;
}

void TraceLanes::label_device(DeviceTrace& dt) const {
  switch (layout_) {
    case TraceLayout::kineto:
      // torch_npu's MSPTI export is Kineto's layout with an "NPU" device process.
      dt.label = (kineto_npu_ ? "NPU " : "GPU ") + std::to_string(dt.device);
      dt.timeline.device_kind = (kineto_npu_ ? "npu:" : "cuda:") + std::to_string(dt.device);
      break;
    case TraceLayout::torch_npu:
      dt.label = "NPU " + std::to_string(dt.device);
      dt.timeline.device_kind = "npu:" + std::to_string(dt.device);
      break;
    case TraceLayout::encbench:
      dt.timeline.device_kind = raw_.encbench_device_kind.empty() ? "encbench" : raw_.encbench_device_kind;
      dt.label = dt.timeline.device_kind;
      break;
  }
}

}  // namespace encbench::trace
