#include "harness/trace/trace_import.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <limits>
#include <map>
#include <sstream>
#include <unordered_map>

#include "harness/core/error.hpp"
#include "harness/timeline/chrome_trace.hpp"

namespace encbench::trace {

std::string_view to_string(TraceLayout layout) {
  switch (layout) {
    case TraceLayout::kineto: return "kineto";
    case TraceLayout::torch_npu: return "torch_npu";
    case TraceLayout::encbench: return "encbench";
  }
  return "unknown";
}

bool is_blocking_api_name(std::string_view name) {
  if (name.find("Synchronize") != std::string_view::npos) return true;  // cuda*/cu*/hip*/aclrt*
  static constexpr std::array<std::string_view, 12> kBlockingCopies = {
      "cudaMemcpy",     "cudaMemcpy2D",       "cudaMemcpy3D",     "cudaMemcpyToSymbol",
      "cudaMemcpyFromSymbol", "cuMemcpyDtoH_v2", "cuMemcpyHtoD_v2", "cuMemcpy",
      "hipMemcpy",      "aclrtMemcpy",        "cudaMemset",       "hipMemset"};
  return std::find(kBlockingCopies.begin(), kBlockingCopies.end(), name) != kBlockingCopies.end();
}

namespace {

using timeline::DeviceOp;
using timeline::HostSpan;
using timeline::HostSpanKind;
using timeline::OpCategory;

enum class Role : std::uint8_t { host, device_op, device_sync, device_annotation, flow, other };

bool is_kineto_device_cat(std::string_view cat) {
  return cat == "kernel" || cat == "Kernel" || cat == "gpu_memcpy" || cat == "Memcpy" ||
         cat == "gpu_memset" || cat == "Memset" || cat == "mtia_ccp_events";
}

bool contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
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

// Lower number = more trustworthy launch link. Kineto's ac2g starts on the runtime launch call;
// CANN's HostToDevice on the node launch; torch_to_npu only on the framework op (earlier).
int flow_priority(std::string_view cat, std::string_view name) {
  if (cat == "ac2g" || name == "ac2g") return 0;
  if (cat == "HostToDevice") return 1;
  if (cat == "async_npu" || name == "torch_to_npu") return 2;
  if (cat == "fwdbwd" || cat == "async_task_queue" || name == "enqueue_to_dequeue") return -1;
  return 3;
}

struct TrackSlice {
  Nanos start = 0, end = 0;
  std::size_t event = 0;  // index into raw.events
};

// Slices of one track sorted by start, longer first on equal starts, so that walking back from
// a time finds the innermost enclosing slice first.
void sort_track(std::vector<TrackSlice>& slices) {
  std::sort(slices.begin(), slices.end(), [](const TrackSlice& a, const TrackSlice& b) {
    if (a.start != b.start) return a.start < b.start;
    if (a.end != b.end) return a.end > b.end;
    return a.event < b.event;
  });
}

// Innermost slice enclosing t (start <= t <= end); else, when allow_next, the first slice that
// starts at or after t. Returns npos when none.
std::size_t find_slice(const std::vector<TrackSlice>& slices, Nanos t, bool allow_next) {
  constexpr std::size_t npos = std::numeric_limits<std::size_t>::max();
  auto it = std::upper_bound(slices.begin(), slices.end(), t,
                             [](Nanos value, const TrackSlice& s) { return value < s.start; });
  const auto next = it;
  constexpr int kMaxWalkBack = 64;  // nesting depth bound; deeper stacks are not launch sites
  for (int steps = 0; it != slices.begin() && steps < kMaxWalkBack; ++steps) {
    --it;
    if (it->end >= t) return it->event;
  }
  if (allow_next && next != slices.end()) return next->event;
  return npos;
}

struct DeviceTrackInfo {
  int device = 0;
  int stream = 0;
};

}  // namespace

ImportedTrace import_raw_trace(RawTrace raw, const std::string& source_name) {
  ImportedTrace out;
  out.source = source_name;
  out.read = raw.stats;

  bool has_ascend_hardware = false;
  for (const auto& [pid, name] : raw.process_names) has_ascend_hardware |= name == "Ascend Hardware";
  out.layout = raw.encbench_format == "encbench-chrome-trace" ? TraceLayout::encbench
               : has_ascend_hardware        ? TraceLayout::torch_npu
                                            : TraceLayout::kineto;

  auto process_name = [&raw](TrackKey pid) -> std::string_view {
    const auto it = raw.process_names.find(pid);
    return it == raw.process_names.end() ? std::string_view{} : std::string_view{it->second};
  };
  auto process_label = [&raw](TrackKey pid) -> std::string_view {
    const auto it = raw.process_labels.find(pid);
    return it == raw.process_labels.end() ? std::string_view{} : std::string_view{it->second};
  };
  auto numeric_or = [](TrackKey key, std::int64_t fallback) {
    return key < kStringIdTag ? static_cast<std::int64_t>(key) : fallback;
  };

  // --- pass 1: roles -------------------------------------------------------------------------
  std::vector<Role> roles(raw.events.size(), Role::other);
  std::map<TrackKey, bool> device_pids;  // pids that carry device ops
  for (std::size_t i = 0; i < raw.events.size(); ++i) {
    const RawEvent& e = raw.events[i];
    if (e.ph == 's' || e.ph == 't' || e.ph == 'f') {
      roles[i] = Role::flow;
      continue;
    }
    const std::string_view cat = raw.str(e.cat);
    Role role = Role::host;
    switch (out.layout) {
      case TraceLayout::kineto:
        if (is_kineto_device_cat(cat)) role = Role::device_op;
        else if (cat == "cuda_sync") role = Role::device_sync;
        else if (cat == "gpu_user_annotation") role = Role::device_annotation;
        break;
      case TraceLayout::torch_npu: {
        const std::string_view pname = process_name(e.pid);
        if (pname == "Ascend Hardware") {
          const std::string_view task = raw.str(e.task_type);
          // Event/notify record and wait tasks hold the stream for cross-stream sync; like
          // Kineto's cuda_sync (excluded by HTA) they are not busy time.
          role = (contains(task, "WAIT") || contains(task, "RECORD")) ? Role::device_sync : Role::device_op;
        } else if (is_npu_device_side_lane(pname, process_label(e.pid))) {
          role = Role::device_annotation;
        }
        break;
      }
      case TraceLayout::encbench: {
        // timeline/chrome_trace.hpp: host pid, device pid (one tid per stream), gap track.
        OpCategory category{};
        if (e.pid == timeline::kHostPid) role = Role::host;
        else if (e.pid == timeline::kDevicePid && e.tid != timeline::kGapTrackTid &&
                 parse_encbench_category(raw.str(e.category_arg), category)) role = Role::device_op;
        else role = Role::device_annotation;  // idle-gap annotations and anything derived
        break;
      }
    }
    roles[i] = role;
    if (role == Role::device_op) device_pids[e.pid] = true;
  }
  // Anything else on a device process (Kineto annotations with unknown cats) is not host work.
  for (std::size_t i = 0; i < raw.events.size(); ++i) {
    if (roles[i] == Role::host && device_pids.count(raw.events[i].pid) != 0) {
      roles[i] = Role::device_annotation;
    }
  }

  // --- device ops: device index and stream -----------------------------------------------------
  auto device_of = [&](const RawEvent& e) -> int {
    switch (out.layout) {
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
  };
  auto stream_of = [&](const RawEvent& e) -> int {
    if (e.stream_arg >= 0) return static_cast<int>(e.stream_arg);
    if (e.tid < kStringIdTag) return static_cast<int>(e.tid);
    const std::int64_t n = trailing_integer(raw.track_name(e.tid));
    return n >= 0 ? static_cast<int>(n) : 0;
  };

  // One host thread per OS thread: torch_npu puts the Python and CANN lanes of one thread in
  // different (packed) pids with the same tid; (pid << 10) | (sort_index << 5) | device.
  auto thread_key = [&](const RawEvent& e) -> std::pair<TrackKey, TrackKey> {
    if (out.layout == TraceLayout::torch_npu && e.pid < kStringIdTag && e.pid >= 1024) return {e.pid >> 10, e.tid};
    return {e.pid, e.tid};
  };
  std::vector<DeviceTrackInfo> op_track(raw.events.size());
  std::map<std::pair<TrackKey, TrackKey>, std::vector<TrackSlice>> device_tracks;
  std::map<std::pair<TrackKey, TrackKey>, std::vector<TrackSlice>> host_tracks;
  std::map<std::pair<TrackKey, TrackKey>, std::uint32_t> host_thread_ids;
  Nanos trace_start = std::numeric_limits<Nanos>::max();
  for (std::size_t i = 0; i < raw.events.size(); ++i) {
    const RawEvent& e = raw.events[i];
    trace_start = std::min(trace_start, e.ts_ns);
    switch (roles[i]) {
      case Role::device_op:
        op_track[i] = {device_of(e), stream_of(e)};
        device_tracks[{e.pid, e.tid}].push_back({e.ts_ns, e.ts_ns + e.dur_ns, i});
        ++out.counts.device_ops;
        break;
      case Role::device_sync: ++out.counts.skipped_device_sync; break;
      case Role::device_annotation: ++out.counts.skipped_device_annotations; break;
      case Role::host: {
        host_tracks[{e.pid, e.tid}].push_back({e.ts_ns, e.ts_ns + e.dur_ns, i});
        host_thread_ids.try_emplace(thread_key(e), 0);
        break;
      }
      default: break;
    }
  }
  if (out.counts.device_ops == 0) {
    std::ostringstream message;
    message << source_name << ": no device events found (" << raw.stats.events_total
            << " events read; looked for Kineto device categories kernel/gpu_memcpy/gpu_memset, "
               "torch_npu \"Ascend Hardware\" tasks and encbench device tracks). Was the trace "
               "recorded with device activities enabled (e.g. ProfilerActivity.CUDA / NPU)?";
    throw InvalidInput(message.str());
  }
  {
    std::uint32_t next_id = 0;
    for (auto& [key, id] : host_thread_ids) {
      id = out.layout == TraceLayout::encbench && key.second >= 1 && key.second < kStringIdTag
               ? static_cast<std::uint32_t>(key.second - 1)
               : next_id;
      ++next_id;
    }
  }
  for (auto& [key, slices] : device_tracks) sort_track(slices);
  for (auto& [key, slices] : host_tracks) sort_track(slices);

  // --- host spans -------------------------------------------------------------------------------
  auto host_kind_of = [&](const RawEvent& e) -> HostSpanKind {
    const std::string_view cat = raw.str(e.cat);
    const std::string_view name = raw.str(e.name);
    if (out.layout == TraceLayout::encbench) {
      HostSpanKind kind = HostSpanKind::work;
      parse_encbench_span_kind(raw.str(e.category_arg), kind);
      return kind;
    }
    const bool runtime = cat == "cuda_runtime" || cat == "cuda_driver" || cat == "runtime" ||
                         cat == "driver" || name.rfind("aclrt", 0) == 0 ||
                         (out.layout == TraceLayout::torch_npu && process_name(e.pid) == "CANN");
    if (!runtime) return HostSpanKind::work;
    return is_blocking_api_name(name) || is_blocking_api_name(name.substr(name.find('@') + 1))
               ? HostSpanKind::wait
               : HostSpanKind::api;
  };

  // --- links: correlation first (as HTA), then flows ---------------------------------------------
  constexpr std::size_t npos = std::numeric_limits<std::size_t>::max();
  std::vector<std::size_t> launch_of(raw.events.size(), npos);  // device op -> host event
  std::vector<Nanos> submit_of(raw.events.size(), 0);
  std::vector<bool> has_submit(raw.events.size(), false);
  std::vector<int> link_priority(raw.events.size(), std::numeric_limits<int>::max());

  std::unordered_map<std::int64_t, std::size_t> host_by_correlation;
  for (std::size_t i = 0; i < raw.events.size(); ++i) {
    const RawEvent& e = raw.events[i];
    if (roles[i] != Role::host || e.correlation == kNoValue) continue;
    const auto [it, inserted] = host_by_correlation.try_emplace(e.correlation, i);
    // Prefer the runtime call over a driver call or framework op carrying the same id.
    if (!inserted && raw.str(raw.events[it->second].cat) != "cuda_runtime" &&
        raw.str(e.cat) == "cuda_runtime") {
      it->second = i;
    }
  }
  for (std::size_t i = 0; i < raw.events.size(); ++i) {
    const RawEvent& e = raw.events[i];
    if (roles[i] != Role::device_op || e.correlation == kNoValue) continue;
    const auto it = host_by_correlation.find(e.correlation);
    if (it == host_by_correlation.end()) continue;
    launch_of[i] = it->second;
    submit_of[i] = raw.events[it->second].ts_ns;
    has_submit[i] = true;
    link_priority[i] = -1;
  }

  struct FlowEnds {
    std::size_t start = npos, finish = npos;
  };
  std::map<std::pair<std::uint32_t, std::int64_t>, FlowEnds> flows;
  for (std::size_t i = 0; i < raw.events.size(); ++i) {
    if (roles[i] != Role::flow) continue;
    const RawEvent& e = raw.events[i];
    if (flow_priority(raw.str(e.cat), raw.str(e.name)) < 0) continue;
    FlowEnds& ends = flows[{e.cat, e.flow_id}];
    if (e.ph == 's' && ends.start == npos) ends.start = i;
    if (e.ph == 'f') ends.finish = i;
  }
  for (const auto& [key, ends] : flows) {
    if (ends.start == npos || ends.finish == npos) continue;
    const RawEvent& s = raw.events[ends.start];
    const RawEvent& f = raw.events[ends.finish];
    const auto track = device_tracks.find({f.pid, f.tid});
    if (track == device_tracks.end()) continue;
    const std::size_t op = find_slice(track->second, f.ts_ns, !f.binds_enclosing);
    if (op == npos) continue;
    const int priority = flow_priority(raw.str(s.cat), raw.str(s.name));
    if (priority >= link_priority[op]) continue;
    link_priority[op] = priority;
    submit_of[op] = s.ts_ns;
    has_submit[op] = true;
    launch_of[op] = npos;
    const auto host_track = host_tracks.find({s.pid, s.tid});
    if (host_track != host_tracks.end()) {
      const std::size_t host = find_slice(host_track->second, s.ts_ns, false);
      if (host != npos) launch_of[op] = host;
    }
  }

  // --- per-device timelines ----------------------------------------------------------------------
  std::vector<timeline::HostThreadTrack> host_threads;
  for (const auto& [key, id] : host_thread_ids) {
    const auto named = raw.thread_names.find(key);
    std::string name = std::string(process_name(key.first));
    if (name.empty()) name = "pid " + raw.track_name(key.first);
    name += named != raw.thread_names.end() ? " / " + named->second : " / tid " + raw.track_name(key.second);
    host_threads.push_back({id, std::move(name)});
  }
  std::sort(host_threads.begin(), host_threads.end(),
            [](const auto& a, const auto& b) { return a.thread < b.thread; });

  std::vector<HostSpan> host_spans;
  std::vector<HostSpanKind> host_kind(raw.events.size(), HostSpanKind::work);
  std::vector<std::size_t> span_of_event(raw.events.size(), npos);
  for (std::size_t i = 0; i < raw.events.size(); ++i) {
    if (roles[i] != Role::host) continue;
    span_of_event[i] = host_spans.size();
    const RawEvent& e = raw.events[i];
    host_kind[i] = host_kind_of(e);
    HostSpan span;
    span.name = std::string(raw.str(e.name));
    span.kind = host_kind[i];
    span.thread = host_thread_ids.at(thread_key(e));
    if (e.op_id_arg > 0) span.op_id = static_cast<std::uint64_t>(e.op_id_arg);
    span.start_ns = e.ts_ns;
    span.end_ns = e.ts_ns + e.dur_ns;
    span.layer = static_cast<int>(e.layer_arg);
    host_spans.push_back(std::move(span));
  }
  out.counts.host_spans = host_spans.size();

  std::map<int, std::vector<std::size_t>> ops_by_device;
  for (const auto& [key, slices] : device_tracks) {
    for (const TrackSlice& s : slices) ops_by_device[op_track[s.event].device].push_back(s.event);
  }

  std::unordered_map<std::uint32_t, std::uint32_t> name_index;  // raw string -> out.names
  auto launch_name = [&](std::uint32_t raw_name) {
    const auto [it, inserted] = name_index.try_emplace(raw_name, static_cast<std::uint32_t>(out.names.size()));
    if (inserted) out.names.emplace_back(raw.str(raw_name));
    return it->second;
  };

  for (auto& [device, events] : ops_by_device) {
    std::sort(events.begin(), events.end(), [&raw](std::size_t a, std::size_t b) {
      const RawEvent& x = raw.events[a];
      const RawEvent& y = raw.events[b];
      if (x.ts_ns != y.ts_ns) return x.ts_ns < y.ts_ns;
      return a < b;
    });
    DeviceTrace dt;
    dt.device = device;
    switch (out.layout) {
      case TraceLayout::kineto:
        dt.label = "GPU " + std::to_string(device);
        dt.timeline.device_kind = "cuda:" + std::to_string(device);
        break;
      case TraceLayout::torch_npu:
        dt.label = "NPU " + std::to_string(device);
        dt.timeline.device_kind = "npu:" + std::to_string(device);
        break;
      case TraceLayout::encbench:
        dt.timeline.device_kind = raw.encbench_device_kind.empty() ? "encbench" : raw.encbench_device_kind;
        dt.label = dt.timeline.device_kind;
        break;
    }
    dt.timeline.host_threads = host_threads;
    // Every device sees all host spans; the common single-device case takes them without a copy.
    if (ops_by_device.size() == 1) {
      dt.timeline.host_spans = std::move(host_spans);
    } else {
      dt.timeline.host_spans = host_spans;
    }
    std::map<int, std::string> stream_names;
    for (std::size_t k = 0; k < events.size(); ++k) {
      const std::size_t i = events[k];
      const RawEvent& e = raw.events[i];
      DeviceOp op;
      op.id = k + 1;
      op.name = std::string(raw.str(e.name));
      op.stream = op_track[i].stream;
      op.layer = static_cast<int>(e.layer_arg);
      op.start_ns = e.ts_ns;
      op.end_ns = e.ts_ns + e.dur_ns;
      op.bytes = e.bytes;
      op.flops = e.flops;
      switch (out.layout) {
        case TraceLayout::kineto: op.category = category_from_kineto(raw.str(e.cat), op.name); break;
        case TraceLayout::torch_npu: op.category = category_from_npu(raw.str(e.task_type), op.name); break;
        case TraceLayout::encbench: parse_encbench_category(raw.str(e.category_arg), op.category); break;
      }
      if (out.layout == TraceLayout::encbench) {
        // encbench's writer records the exact submit time and ids of its own ops.
        if (e.op_id_arg > 0) op.id = static_cast<std::uint64_t>(e.op_id_arg);
        if (e.host_thread_arg >= 0) op.host_thread = static_cast<std::uint32_t>(e.host_thread_arg);
        if (e.submit_to_start_ns_arg != kNoValue) {
          submit_of[i] = op.start_ns - e.submit_to_start_ns_arg;
          has_submit[i] = true;
        }
      }
      // Unknown launch time: treated as already queued, like HTA's NaN runtime timestamp (never
      // host_wait). Counted and reported so the user knows.
      op.submit_ns = has_submit[i] ? std::min(submit_of[i], op.start_ns) : trace_start;
      if (!has_submit[i]) {
        ++dt.ops_without_launch;
        ++out.counts.unlinked_ops;
      } else if (link_priority[i] < 0) {
        ++out.counts.linked_by_correlation;
      } else if (link_priority[i] < std::numeric_limits<int>::max()) {
        ++out.counts.linked_by_flow;
      } else {
        ++out.counts.recorded_submit;
      }
      if (launch_of[i] != npos) {
        const RawEvent& host = raw.events[launch_of[i]];
        op.host_thread = host_thread_ids.at(thread_key(host));
        LaunchLink link;
        link.stream = op.stream;
        link.op_id = op.id;
        link.api_name = launch_name(host.name);
        link.api_start_ns = host.ts_ns;
        link.api_end_ns = host.ts_ns + host.dur_ns;
        link.op_start_ns = op.start_ns;
        link.op_end_ns = op.end_ns;
        link.api_is_runtime = host_kind[launch_of[i]] != HostSpanKind::work;
        dt.launches.push_back(link);
        // The launch span points at its op, as encbench's recorder does for its own API spans.
        dt.timeline.host_spans[span_of_event[launch_of[i]]].op_id = op.id;
      }
      if (!stream_names.count(op.stream)) {
        const auto named = raw.thread_names.find({e.pid, e.tid});
        stream_names[op.stream] =
            named != raw.thread_names.end() ? named->second : "stream " + std::to_string(op.stream);
      }
      dt.timeline.device_ops.push_back(std::move(op));
    }
    for (const auto& [stream, name] : stream_names) dt.timeline.streams.push_back({stream, name});
    std::sort(dt.launches.begin(), dt.launches.end(), [](const LaunchLink& a, const LaunchLink& b) {
      return a.api_start_ns != b.api_start_ns ? a.api_start_ns < b.api_start_ns : a.op_id < b.op_id;
    });
    std::sort(dt.timeline.host_spans.begin(), dt.timeline.host_spans.end(),
              [](const HostSpan& a, const HostSpan& b) { return a.start_ns < b.start_ns; });
    out.devices.push_back(std::move(dt));
  }
  return out;
}

ImportedTrace import_trace_file(const std::filesystem::path& path) {
  return import_raw_trace(read_raw_trace_file(path), path.string());
}

ImportedTrace import_trace_text(std::string_view json_text, const std::string& source_name) {
  std::istringstream input{std::string(json_text)};
  RawTrace raw = read_raw_trace(input, source_name);
  raw.stats.file_bytes = raw.stats.json_bytes = json_text.size();
  return import_raw_trace(std::move(raw), source_name);
}

}  // namespace encbench::trace
