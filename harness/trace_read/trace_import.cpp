#include "harness/trace_read/trace_import.hpp"

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

bool contains_ignoring_case(std::string_view text, std::string_view part) {
  const auto lower = [](char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); };
  return std::search(text.begin(), text.end(), part.begin(), part.end(),
                     [&](char a, char b) { return lower(a) == lower(b); }) != text.end();
}

}  // namespace

NpuTaskKind npu_task_kind(std::string_view task_type) {
  if (contains_ignoring_case(task_type, "place_holder")) return NpuTaskKind::placeholder;
  if (contains_ignoring_case(task_type, "wait") || contains_ignoring_case(task_type, "record")) return NpuTaskKind::sync;
  return NpuTaskKind::op;
}

bool is_npu_collective_thread(std::string_view thread_name) {
  return contains_ignoring_case(thread_name, "communication");
}

namespace {

using timeline::DeviceOp;
using timeline::HostSpan;
using timeline::HostSpanKind;
using timeline::OpCategory;

enum class Role : std::uint8_t { host, device_op, device_sync, device_annotation, profiler_span, flow, other };

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

// A copy call that returned only after its copy ended blocked the host on it (and on the
// stream's work before it): cudaMemcpyAsync to or from pageable memory is synchronous. Booked
// as a launch it would hide the device time the host waited for.
bool is_blocking_copy(const HostSpan& call, const DeviceOp& op) {
  const bool copy = op.category == OpCategory::memcpy_d2h || op.category == OpCategory::memcpy_h2d ||
                    op.category == OpCategory::memset;
  return copy && call.kind == HostSpanKind::api && call.end_ns >= op.end_ns && op.start_ns >= call.start_ns;
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

constexpr std::size_t kNpos = std::numeric_limits<std::size_t>::max();

using ThreadKey = std::pair<TrackKey, TrackKey>;

// Interprets a RawTrace in passes, each a method: layout, event roles, tracks, launch links
// (correlation ids, then flows), host spans, then one Timeline per device. The per-event
// vectors are indexed like raw.events.
class TraceImporter {
 public:
  TraceImporter(RawTrace raw, const std::string& source_name) : raw_(std::move(raw)), source_(source_name) {
    out_.source = source_name;
    out_.read = raw_.stats;
  }

  ImportedTrace run() {
    detect_layout();
    assign_roles();
    collect_tracks();
    link_by_correlation();
    link_by_flows();
    build_host_spans();
    build_device_traces();
    return std::move(out_);
  }

 private:
  // --- names and keys ----------------------------------------------------------------------------
  std::string_view process_name(TrackKey pid) const {
    const auto it = raw_.process_names.find(pid);
    return it == raw_.process_names.end() ? std::string_view{} : std::string_view{it->second};
  }
  std::string_view thread_name(TrackKey pid, TrackKey tid) const {
    const auto it = raw_.thread_names.find({pid, tid});
    return it == raw_.thread_names.end() ? std::string_view{} : std::string_view{it->second};
  }
  bool is_collective(const RawEvent& e) const {
    return out_.layout == TraceLayout::torch_npu && process_name(e.pid) == "HCCL" &&
           is_npu_collective_thread(thread_name(e.pid, e.tid));
  }
  std::string_view process_label(TrackKey pid) const {
    const auto it = raw_.process_labels.find(pid);
    return it == raw_.process_labels.end() ? std::string_view{} : std::string_view{it->second};
  }
  static std::int64_t numeric_or(TrackKey key, std::int64_t fallback) {
    return key < kStringIdTag ? static_cast<std::int64_t>(key) : fallback;
  }
  // One host thread per OS thread: torch_npu puts the Python and CANN lanes of one thread in
  // different (packed) pids with the same tid; (pid << 10) | (sort_index << 5) | device.
  ThreadKey thread_key(const RawEvent& e) const {
    if (out_.layout == TraceLayout::torch_npu && e.pid < kStringIdTag && e.pid >= 1024) return {e.pid >> 10, e.tid};
    return {e.pid, e.tid};
  }

  void detect_layout() {
    bool has_ascend_hardware = false;
    for (const auto& [pid, name] : raw_.process_names) has_ascend_hardware |= name == "Ascend Hardware";
    for (const auto& [pid, name] : raw_.process_names) kineto_npu_ |= name == "NPU";
    out_.layout = raw_.encbench_format == "encbench-chrome-trace" ? TraceLayout::encbench
                  : has_ascend_hardware                          ? TraceLayout::torch_npu
                                                                 : TraceLayout::kineto;
  }

  // --- pass 1: roles -----------------------------------------------------------------------------
  Role role_of(const RawEvent& e) const {
    const std::string_view cat = raw_.str(e.cat);
    switch (out_.layout) {
      case TraceLayout::kineto:
        if (is_kineto_device_cat(cat)) return Role::device_op;
        if (cat == "cuda_sync") return Role::device_sync;
        if (cat == "gpu_user_annotation") return Role::device_annotation;
        // Kineto's span of the profiling session itself ("PyTorch Profiler (0)", cat "Trace"):
        // it covers the whole file, so as host work it would open every range at the profiler's
        // start.
        if (cat == "Trace") return Role::profiler_span;
        return Role::host;
      case TraceLayout::torch_npu: {
        const std::string_view pname = process_name(e.pid);
        if (pname == "Ascend Hardware") {
          // Event/notify waits and records only hold the stream for another stream or rank; like
          // Kineto's cuda_sync (excluded by HTA) they are not busy time. The profiler's own
          // placeholder tasks are not work at all.
          switch (npu_task_kind(raw_.str(e.task_type))) {
            case NpuTaskKind::op: return Role::device_op;
            case NpuTaskKind::sync: return Role::device_sync;
            case NpuTaskKind::placeholder: return Role::device_annotation;
          }
        }
        // A collective is busy from its start to its end, its waits for other ranks included
        // (torch_npu's Communication), on a stream of its own.
        if (is_collective(e)) return Role::device_op;
        return is_npu_device_side_lane(pname, process_label(e.pid)) ? Role::device_annotation : Role::host;
      }
      case TraceLayout::encbench: {
        // timeline/chrome_trace.hpp: host pid, device pid (one tid per stream), gap track.
        OpCategory category{};
        if (e.pid == timeline::kHostPid) return Role::host;
        if (e.pid == timeline::kDevicePid && e.tid != timeline::kGapTrackTid &&
            parse_encbench_category(raw_.str(e.category_arg), category)) {
          return Role::device_op;
        }
        return Role::device_annotation;  // idle-gap annotations and anything derived
      }
    }
    return Role::host;
  }

  void assign_roles() {
    roles_.assign(raw_.events.size(), Role::other);
    std::map<TrackKey, bool> device_pids;  // pids that carry device ops
    for (std::size_t i = 0; i < raw_.events.size(); ++i) {
      const RawEvent& e = raw_.events[i];
      roles_[i] = (e.ph == 's' || e.ph == 't' || e.ph == 'f') ? Role::flow : role_of(e);
      if (roles_[i] == Role::device_op) device_pids[e.pid] = true;
    }
    // Anything else on a device process (Kineto annotations with unknown cats) is not host work.
    for (std::size_t i = 0; i < raw_.events.size(); ++i) {
      if (roles_[i] == Role::host && device_pids.count(raw_.events[i].pid) != 0) roles_[i] = Role::device_annotation;
    }
  }

  // A torch_npu event wait task holds its stream until another stream records the event (the
  // compute stream waiting for a collective's stream): kept so that the gap it holds is classed
  // cross_stream_wait. Notify waits (another rank) and records are not cross-stream waits.
  void note_stream_wait(const RawEvent& e) {
    if (out_.layout != TraceLayout::torch_npu || e.dur_ns <= 0) return;
    if (!contains_ignoring_case(raw_.str(e.task_type), "event_wait")) return;
    stream_waits_[device_of(e)].push_back({stream_of(e), e.ts_ns, e.ts_ns + e.dur_ns});
    ++out_.counts.stream_wait_tasks;
  }

  // --- tracks: device index and stream of each op, host threads -------------------------------------
  int device_of(const RawEvent& e) const {
    switch (out_.layout) {
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
  int stream_of(const RawEvent& e) const {
    if (is_collective(e)) {  // any tid a file may hold: no int overflow, never a negative stream
      const std::int64_t stream = kCollectiveStreamBase + numeric_or(e.tid, 0);
      return static_cast<int>(std::clamp<std::int64_t>(stream, 0, std::numeric_limits<int>::max()));
    }
    if (e.stream_arg >= 0) return static_cast<int>(e.stream_arg);
    if (e.tid < kStringIdTag) return static_cast<int>(e.tid);
    const std::int64_t n = trailing_integer(raw_.track_name(e.tid));
    return n >= 0 ? static_cast<int>(n) : 0;
  }

  void collect_tracks() {
    op_track_.resize(raw_.events.size());
    for (std::size_t i = 0; i < raw_.events.size(); ++i) {
      const RawEvent& e = raw_.events[i];
      trace_start_ = std::min(trace_start_, e.ts_ns);
      switch (roles_[i]) {
        case Role::device_op:
          op_track_[i] = {device_of(e), stream_of(e)};
          device_tracks_[{e.pid, e.tid}].push_back({e.ts_ns, e.ts_ns + e.dur_ns, i});
          ++out_.counts.device_ops;
          if (is_collective(e)) ++out_.counts.collectives;
          break;
        case Role::device_sync:
          ++out_.counts.skipped_device_sync;
          note_stream_wait(e);
          break;
        case Role::profiler_span: ++out_.counts.skipped_profiler_spans; break;
        case Role::device_annotation:
          ++out_.counts.skipped_device_annotations;
          note_profiler_extent(e);
          break;
        case Role::host:
          host_tracks_[{e.pid, e.tid}].push_back({e.ts_ns, e.ts_ns + e.dur_ns, i});
          host_thread_ids_.try_emplace(thread_key(e), 0);
          break;
        default: break;
      }
    }
    if (out_.counts.device_ops == 0) {
      std::ostringstream message;
      message << source_ << ": no device events found (" << raw_.stats.events_total
              << " events read; looked for Kineto device categories kernel/gpu_memcpy/gpu_memset, "
                 "torch_npu \"Ascend Hardware\" tasks and encbench device tracks). Was the trace "
                 "recorded with device activities enabled (e.g. ProfilerActivity.CUDA / NPU)?";
      throw InvalidInput(message.str());
    }
    std::uint32_t next_id = 0;
    for (auto& [key, id] : host_thread_ids_) {
      id = out_.layout == TraceLayout::encbench && key.second >= 1 && key.second < kStringIdTag
               ? static_cast<std::uint32_t>(key.second - 1)
               : next_id;
      ++next_id;
    }
    for (auto& [key, slices] : device_tracks_) sort_track(slices);
    for (auto& [key, slices] : host_tracks_) sort_track(slices);
  }

  // torch_npu's Overlap Analysis lane: its Computing and Communication slices span the device's
  // step as torch_npu measures it (step_trace_time.csv: Stage = their extent, Free = the rest).
  void note_profiler_extent(const RawEvent& e) {
    if (out_.layout != TraceLayout::torch_npu || process_name(e.pid) != "Overlap Analysis") return;
    const std::string_view name = raw_.str(e.name);
    if (name != "Computing" && name != "Communication") return;
    const auto [it, inserted] = profiler_extents_.try_emplace(device_of(e), e.ts_ns, e.ts_ns + e.dur_ns);
    if (inserted) return;
    it->second.first = std::min(it->second.first, e.ts_ns);
    it->second.second = std::max(it->second.second, e.ts_ns + e.dur_ns);
  }

  // --- links: correlation first (as HTA), then flows -----------------------------------------------
  void link_by_correlation() {
    launch_of_.assign(raw_.events.size(), kNpos);
    submit_of_.assign(raw_.events.size(), 0);
    has_submit_.assign(raw_.events.size(), false);
    link_priority_.assign(raw_.events.size(), std::numeric_limits<int>::max());
    std::unordered_map<std::int64_t, std::size_t> host_by_correlation;
    for (std::size_t i = 0; i < raw_.events.size(); ++i) {
      const RawEvent& e = raw_.events[i];
      if (roles_[i] != Role::host || e.correlation == kNoValue) continue;
      const auto [it, inserted] = host_by_correlation.try_emplace(e.correlation, i);
      // Prefer the runtime call over a driver call or framework op carrying the same id.
      if (!inserted && raw_.str(raw_.events[it->second].cat) != "cuda_runtime" && raw_.str(e.cat) == "cuda_runtime") {
        it->second = i;
      }
    }
    for (std::size_t i = 0; i < raw_.events.size(); ++i) {
      const RawEvent& e = raw_.events[i];
      if (roles_[i] != Role::device_op || e.correlation == kNoValue) continue;
      const auto it = host_by_correlation.find(e.correlation);
      if (it == host_by_correlation.end()) continue;
      launch_of_[i] = it->second;
      submit_of_[i] = raw_.events[it->second].ts_ns;
      has_submit_[i] = true;
      link_priority_[i] = -1;
    }
  }

  void link_by_flows() {
    struct FlowEnds {
      std::size_t start = kNpos, finish = kNpos;
    };
    std::map<std::pair<std::uint32_t, std::int64_t>, FlowEnds> flows;
    for (std::size_t i = 0; i < raw_.events.size(); ++i) {
      if (roles_[i] != Role::flow) continue;
      const RawEvent& e = raw_.events[i];
      if (flow_priority(raw_.str(e.cat), raw_.str(e.name)) < 0) continue;
      FlowEnds& ends = flows[{e.cat, e.flow_id}];
      if (e.ph == 's' && ends.start == kNpos) ends.start = i;
      if (e.ph == 'f') ends.finish = i;
    }
    for (const auto& [key, ends] : flows) {
      if (ends.start != kNpos && ends.finish != kNpos) link_flow(raw_.events[ends.start], raw_.events[ends.finish]);
    }
  }

  void link_flow(const RawEvent& s, const RawEvent& f) {
    const auto track = device_tracks_.find({f.pid, f.tid});
    if (track == device_tracks_.end()) return;
    const std::size_t op = find_slice(track->second, f.ts_ns, !f.binds_enclosing);
    if (op == kNpos) return;
    const int priority = flow_priority(raw_.str(s.cat), raw_.str(s.name));
    if (priority >= link_priority_[op]) return;
    link_priority_[op] = priority;
    submit_of_[op] = s.ts_ns;
    has_submit_[op] = true;
    launch_of_[op] = kNpos;
    const auto host_track = host_tracks_.find({s.pid, s.tid});
    if (host_track != host_tracks_.end()) {
      const std::size_t host = find_slice(host_track->second, s.ts_ns, false);
      if (host != kNpos) launch_of_[op] = host;
    }
  }

  // --- host spans -----------------------------------------------------------------------------------
  HostSpanKind host_kind_of(const RawEvent& e) const {
    const std::string_view cat = raw_.str(e.cat);
    const std::string_view name = raw_.str(e.name);
    if (out_.layout == TraceLayout::encbench) {
      HostSpanKind kind = HostSpanKind::work;
      parse_encbench_span_kind(raw_.str(e.category_arg), kind);
      return kind;
    }
    // privateuse1_runtime: PyTorch's out-of-tree backend runtime (torch_npu's MSPTI export).
    const bool runtime = cat == "cuda_runtime" || cat == "cuda_driver" || cat == "runtime" || cat == "driver" ||
                         cat == "privateuse1_runtime" || cat == "privateuse1_driver" ||
                         name.rfind("aclrt", 0) == 0 ||
                         (out_.layout == TraceLayout::torch_npu && process_name(e.pid) == "CANN");
    if (!runtime) return HostSpanKind::work;
    return is_blocking_api_name(name) || is_blocking_api_name(name.substr(name.find('@') + 1)) ? HostSpanKind::wait
                                                                                               : HostSpanKind::api;
  }

  void build_host_spans() {
    for (const auto& [key, id] : host_thread_ids_) {
      const auto named = raw_.thread_names.find(key);
      std::string name = std::string(process_name(key.first));
      if (name.empty()) name = "pid " + raw_.track_name(key.first);
      name += named != raw_.thread_names.end() ? " / " + named->second : " / tid " + raw_.track_name(key.second);
      host_threads_.push_back({id, std::move(name)});
    }
    std::sort(host_threads_.begin(), host_threads_.end(),
              [](const auto& a, const auto& b) { return a.thread < b.thread; });
    host_kind_.assign(raw_.events.size(), HostSpanKind::work);
    span_of_event_.assign(raw_.events.size(), kNpos);
    for (std::size_t i = 0; i < raw_.events.size(); ++i) {
      if (roles_[i] != Role::host) continue;
      span_of_event_[i] = host_spans_.size();
      const RawEvent& e = raw_.events[i];
      host_kind_[i] = host_kind_of(e);
      HostSpan span;
      span.name = std::string(raw_.str(e.name));
      span.kind = host_kind_[i];
      span.thread = host_thread_ids_.at(thread_key(e));
      if (e.op_id_arg > 0) span.op_id = static_cast<std::uint64_t>(e.op_id_arg);
      span.start_ns = e.ts_ns;
      span.end_ns = e.ts_ns + e.dur_ns;
      span.layer = static_cast<int>(e.layer_arg);
      host_spans_.push_back(std::move(span));
    }
    out_.counts.host_spans = host_spans_.size();
  }

  // --- per-device timelines --------------------------------------------------------------------------
  std::uint32_t launch_name(std::uint32_t raw_name) {
    const auto [it, inserted] = name_index_.try_emplace(raw_name, static_cast<std::uint32_t>(out_.names.size()));
    if (inserted) out_.names.emplace_back(raw_.str(raw_name));
    return it->second;
  }

  void label_device(DeviceTrace& dt) const {
    switch (out_.layout) {
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

  DeviceOp make_op(std::size_t i, std::uint64_t id) {
    const RawEvent& e = raw_.events[i];
    DeviceOp op;
    op.id = id;
    op.name = std::string(raw_.str(e.name));
    op.stream = op_track_[i].stream;
    op.layer = static_cast<int>(e.layer_arg);
    op.start_ns = e.ts_ns;
    op.end_ns = e.ts_ns + e.dur_ns;
    op.bytes = e.bytes;
    op.flops = e.flops;
    switch (out_.layout) {
      case TraceLayout::kineto: op.category = category_from_kineto(raw_.str(e.cat), op.name); break;
      case TraceLayout::torch_npu: op.category = category_from_npu(raw_.str(e.task_type), op.name); break;
      case TraceLayout::encbench: parse_encbench_category(raw_.str(e.category_arg), op.category); break;
    }
    if (out_.layout == TraceLayout::encbench) {
      // encbench's writer records the exact submit time and ids of its own ops.
      if (e.op_id_arg > 0) op.id = static_cast<std::uint64_t>(e.op_id_arg);
      if (e.host_thread_arg >= 0) op.host_thread = static_cast<std::uint32_t>(e.host_thread_arg);
      if (e.submit_to_start_ns_arg != kNoValue) {
        submit_of_[i] = op.start_ns - e.submit_to_start_ns_arg;
        has_submit_[i] = true;
      }
    }
    // Unknown launch time: treated as already queued, like HTA's NaN runtime timestamp (never
    // host_wait). Counted and reported so the user knows.
    op.submit_ns = has_submit_[i] ? std::min(submit_of_[i], op.start_ns) : trace_start_;
    return op;
  }

  void count_link(std::size_t i, DeviceTrace& dt) {
    if (has_submit_[i] && submit_of_[i] > raw_.events[i].ts_ns) {
      const Nanos skew = submit_of_[i] - raw_.events[i].ts_ns;
      ++dt.skewed_ops;
      dt.max_skew_ns = std::max(dt.max_skew_ns, skew);
      ++out_.counts.skewed_ops;
      out_.counts.max_skew_ns = std::max(out_.counts.max_skew_ns, skew);
    }
    if (!has_submit_[i]) {
      ++dt.ops_without_launch;
      ++out_.counts.unlinked_ops;
    } else if (link_priority_[i] < 0) {
      ++out_.counts.linked_by_correlation;
    } else if (link_priority_[i] < std::numeric_limits<int>::max()) {
      ++out_.counts.linked_by_flow;
    } else {
      ++out_.counts.recorded_submit;
    }
  }

  // A call that launches several ops (a CUDA graph launch: one correlation id on many kernels)
  // points at the first of them; every op keeps its own LaunchLink.
  void record_launch(std::size_t i, DeviceOp& op, DeviceTrace& dt, std::vector<bool>& span_linked) {
    const RawEvent& host = raw_.events[launch_of_[i]];
    op.host_thread = host_thread_ids_.at(thread_key(host));
    LaunchLink link;
    link.stream = op.stream;
    link.op_id = op.id;
    link.api_name = launch_name(host.name);
    link.api_start_ns = host.ts_ns;
    link.api_end_ns = host.ts_ns + host.dur_ns;
    link.op_start_ns = op.start_ns;
    link.op_end_ns = op.end_ns;
    link.api_is_runtime = host_kind_[launch_of_[i]] != HostSpanKind::work;
    dt.launches.push_back(link);
    // The launch span points at its op, as encbench's recorder does for its own API spans.
    const std::size_t span = span_of_event_[launch_of_[i]];
    if (span_linked[span]) return;
    span_linked[span] = true;
    HostSpan& call = dt.timeline.host_spans[span];
    call.op_id = op.id;
    if (is_blocking_copy(call, op)) {
      call.kind = HostSpanKind::wait;
      ++out_.counts.blocking_copy_calls;
    }
  }

  DeviceTrace build_device(int device, std::vector<std::size_t>& events, bool only_device) {
    std::sort(events.begin(), events.end(), [this](std::size_t a, std::size_t b) {
      const RawEvent& x = raw_.events[a];
      const RawEvent& y = raw_.events[b];
      return x.ts_ns != y.ts_ns ? x.ts_ns < y.ts_ns : a < b;
    });
    DeviceTrace dt;
    dt.device = device;
    label_device(dt);
    dt.timeline.host_threads = host_threads_;
    // Every device sees all host spans; the common single-device case takes them without a copy.
    dt.timeline.host_spans = only_device ? std::move(host_spans_) : host_spans_;
    if (const auto extent = profiler_extents_.find(device); extent != profiler_extents_.end()) {
      dt.profiler_extent = ProfilerStepExtent{extent->second.first, extent->second.second,
                                              "torch_npu Overlap Analysis (Computing, Communication)"};
    }
    if (auto waits = stream_waits_.find(device); waits != stream_waits_.end()) {
      dt.timeline.stream_waits = std::move(waits->second);
      std::sort(dt.timeline.stream_waits.begin(), dt.timeline.stream_waits.end(),
                [](const timeline::StreamWait& a, const timeline::StreamWait& b) {
                  return std::pair{a.stream, a.start_ns} < std::pair{b.stream, b.start_ns};
                });
    }
    std::vector<bool> span_linked(dt.timeline.host_spans.size(), false);
    std::map<int, std::string> stream_names;
    for (std::size_t k = 0; k < events.size(); ++k) {
      const std::size_t i = events[k];
      DeviceOp op = make_op(i, k + 1);
      count_link(i, dt);
      if (launch_of_[i] != kNpos) record_launch(i, op, dt, span_linked);
      if (!stream_names.count(op.stream)) {
        const RawEvent& e = raw_.events[i];
        const auto named = raw_.thread_names.find({e.pid, e.tid});
        stream_names[op.stream] =
            named != raw_.thread_names.end() ? named->second : "stream " + std::to_string(op.stream);
      }
      dt.timeline.device_ops.push_back(std::move(op));
    }
    for (const auto& [stream, name] : stream_names) dt.timeline.streams.push_back({stream, name});
    std::sort(dt.launches.begin(), dt.launches.end(), [](const LaunchLink& a, const LaunchLink& b) {
      return a.api_start_ns != b.api_start_ns ? a.api_start_ns < b.api_start_ns : a.op_id < b.op_id;
    });
    std::sort(dt.timeline.host_spans.begin(), dt.timeline.host_spans.end(),
              [](const HostSpan& a, const HostSpan& b) { return a.start_ns < b.start_ns; });
    return dt;
  }

  void build_device_traces() {
    std::map<int, std::vector<std::size_t>> ops_by_device;
    for (const auto& [key, slices] : device_tracks_) {
      for (const TrackSlice& s : slices) ops_by_device[op_track_[s.event].device].push_back(s.event);
    }
    for (auto& [device, events] : ops_by_device) {
      out_.devices.push_back(build_device(device, events, ops_by_device.size() == 1));
    }
  }

  RawTrace raw_;
  std::string source_;
  ImportedTrace out_;
  std::vector<Role> roles_;
  std::vector<DeviceTrackInfo> op_track_;
  std::map<ThreadKey, std::vector<TrackSlice>> device_tracks_, host_tracks_;
  std::map<ThreadKey, std::uint32_t> host_thread_ids_;
  Nanos trace_start_ = std::numeric_limits<Nanos>::max();
  std::vector<std::size_t> launch_of_;  // device op -> the host event that launched it
  std::vector<Nanos> submit_of_;
  std::vector<bool> has_submit_;
  std::vector<int> link_priority_;
  std::vector<HostSpanKind> host_kind_;
  std::vector<std::size_t> span_of_event_;
  std::vector<timeline::HostThreadTrack> host_threads_;
  std::vector<HostSpan> host_spans_;
  std::unordered_map<std::uint32_t, std::uint32_t> name_index_;  // raw string -> out.names
  std::map<int, std::pair<Nanos, Nanos>> profiler_extents_;     // device -> Overlap Analysis extent
  std::map<int, std::vector<timeline::StreamWait>> stream_waits_;  // device -> event wait tasks
  bool kineto_npu_ = false;  // a Kineto-layout trace whose device process is "NPU" (MSPTI export)
};

}  // namespace

ImportedTrace import_raw_trace(RawTrace raw, const std::string& source_name) {
  return TraceImporter(std::move(raw), source_name).run();
}

ImportedTrace import_trace_file(const std::filesystem::path& path, const ReadLimits& limits) {
  return import_raw_trace(read_raw_trace_file(path, limits), path.string());
}

ImportedTrace import_trace_text(std::string_view json_text, const std::string& source_name) {
  std::istringstream input{std::string(json_text)};
  RawTrace raw = read_raw_trace(input, source_name);
  raw.stats.file_bytes = raw.stats.json_bytes = json_text.size();
  return import_raw_trace(std::move(raw), source_name);
}

}  // namespace encbench::trace
