#include "harness/trace_read/trace_import.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <sstream>
#include <unordered_map>

#include "harness/core/error.hpp"
#include "harness/trace_read/trace_lanes.hpp"

// The import in three passes over the raw events, each its own piece: sorting events into
// tracks (what each event is, per TraceLanes), linking device ops to their launches
// (correlation ids, then flows), and building one Timeline per device from both.
namespace encbench::trace {

std::string_view to_string(TraceLayout layout) {
  switch (layout) {
    case TraceLayout::kineto: return "kineto";
    case TraceLayout::torch_npu: return "torch_npu";
    case TraceLayout::encbench: return "encbench";
  }
  return "unknown";
}

namespace {

using timeline::DeviceOp;
using timeline::HostSpan;
using timeline::HostSpanKind;
using timeline::OpCategory;

constexpr std::size_t kNpos = std::numeric_limits<std::size_t>::max();

// A copy call that returned only after its copy ended blocked the host on it (and on the
// stream's work before it): cudaMemcpyAsync to or from pageable memory is synchronous. Booked
// as a launch it would hide the device time the host waited for.
bool is_blocking_copy(const HostSpan& call, const DeviceOp& op) {
  const bool copy = op.category == OpCategory::memcpy_d2h || op.category == OpCategory::memcpy_h2d ||
                    op.category == OpCategory::memset;
  return copy && call.kind == HostSpanKind::api && call.end_ns >= op.end_ns && op.start_ns >= call.start_ns;
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
// starts at or after t. Returns kNpos when none.
std::size_t find_slice(const std::vector<TrackSlice>& slices, Nanos t, bool allow_next) {
  auto it = std::upper_bound(slices.begin(), slices.end(), t,
                             [](Nanos value, const TrackSlice& s) { return value < s.start; });
  const auto next = it;
  constexpr int kMaxWalkBack = 64;  // nesting depth bound; deeper stacks are not launch sites
  for (int steps = 0; it != slices.begin() && steps < kMaxWalkBack; ++steps) {
    --it;
    if (it->end >= t) return it->event;
  }
  if (allow_next && next != slices.end()) return next->event;
  return kNpos;
}

struct DeviceTrackInfo {
  int device = 0;
  int stream = 0;
};

// Pass 1's result: every event's role, device ops and host spans by track (sorted), host
// threads numbered, and what torch_npu's device-side lanes add (event waits, step extent).
// The per-event vectors are indexed like raw.events.
struct EventTracks {
  std::vector<EventRole> roles;
  std::vector<DeviceTrackInfo> op_track;
  std::map<ThreadKey, std::vector<TrackSlice>> device_tracks, host_tracks;
  std::map<ThreadKey, std::uint32_t> host_thread_ids;
  Nanos trace_start = std::numeric_limits<Nanos>::max();
  std::map<int, std::pair<Nanos, Nanos>> profiler_extents;      // device -> Overlap Analysis extent
  std::map<int, std::vector<timeline::StreamWait>> stream_waits;  // device -> event wait tasks
};

void assign_roles(const RawTrace& raw, const TraceLanes& lanes, EventTracks& t) {
  t.roles.assign(raw.events.size(), EventRole::other);
  std::map<TrackKey, bool> device_pids;  // pids that carry device ops
  for (std::size_t i = 0; i < raw.events.size(); ++i) {
    const RawEvent& e = raw.events[i];
    t.roles[i] = (e.ph == 's' || e.ph == 't' || e.ph == 'f') ? EventRole::flow : lanes.role_of(e);
    if (t.roles[i] == EventRole::device_op) device_pids[e.pid] = true;
  }
  // Anything else on a device process (Kineto annotations with unknown cats) is not host work.
  for (std::size_t i = 0; i < raw.events.size(); ++i) {
    if (t.roles[i] == EventRole::host && device_pids.count(raw.events[i].pid) != 0) {
      t.roles[i] = EventRole::device_annotation;
    }
  }
}

// A torch_npu event wait task holds its stream until another stream records the event (the
// compute stream waiting for a collective's stream): kept so that the gap it holds is classed
// cross_stream_wait. Notify waits (another rank) and records are not cross-stream waits.
void note_stream_wait(const RawTrace& raw, const TraceLanes& lanes, const RawEvent& e, EventTracks& t,
                      ImportCounts& counts) {
  if (lanes.layout() != TraceLayout::torch_npu || e.dur_ns <= 0) return;
  if (!is_npu_event_wait(raw.str(e.task_type))) return;
  t.stream_waits[lanes.device_of(e)].push_back({lanes.stream_of(e), e.ts_ns, e.ts_ns + e.dur_ns});
  ++counts.stream_wait_tasks;
}

// torch_npu's Overlap Analysis lane: its Computing and Communication slices span the device's
// step as torch_npu measures it (step_trace_time.csv: Stage = their extent, Free = the rest).
void note_profiler_extent(const RawTrace& raw, const TraceLanes& lanes, const RawEvent& e, EventTracks& t) {
  if (lanes.layout() != TraceLayout::torch_npu || lanes.process_name(e.pid) != "Overlap Analysis") return;
  const std::string_view name = raw.str(e.name);
  if (name != "Computing" && name != "Communication") return;
  const auto [it, inserted] = t.profiler_extents.try_emplace(lanes.device_of(e), e.ts_ns, e.ts_ns + e.dur_ns);
  if (inserted) return;
  it->second.first = std::min(it->second.first, e.ts_ns);
  it->second.second = std::max(it->second.second, e.ts_ns + e.dur_ns);
}

void number_host_threads(const TraceLanes& lanes, EventTracks& t) {
  std::uint32_t next_id = 0;
  for (auto& [key, id] : t.host_thread_ids) {
    id = lanes.layout() == TraceLayout::encbench && key.second >= 1 && key.second < kStringIdTag
             ? static_cast<std::uint32_t>(key.second - 1)
             : next_id;
    ++next_id;
  }
}

EventTracks collect_tracks(const RawTrace& raw, const TraceLanes& lanes, const std::string& source,
                           ImportCounts& counts) {
  EventTracks t;
  assign_roles(raw, lanes, t);
  t.op_track.resize(raw.events.size());
  for (std::size_t i = 0; i < raw.events.size(); ++i) {
    const RawEvent& e = raw.events[i];
    t.trace_start = std::min(t.trace_start, e.ts_ns);
    switch (t.roles[i]) {
      case EventRole::device_op:
        t.op_track[i] = {lanes.device_of(e), lanes.stream_of(e)};
        t.device_tracks[{e.pid, e.tid}].push_back({e.ts_ns, e.ts_ns + e.dur_ns, i});
        ++counts.device_ops;
        if (lanes.is_collective(e)) ++counts.collectives;
        break;
      case EventRole::device_sync:
        ++counts.skipped_device_sync;
        note_stream_wait(raw, lanes, e, t, counts);
        break;
      case EventRole::profiler_span: ++counts.skipped_profiler_spans; break;
      case EventRole::device_annotation:
        ++counts.skipped_device_annotations;
        note_profiler_extent(raw, lanes, e, t);
        break;
      case EventRole::host:
        t.host_tracks[{e.pid, e.tid}].push_back({e.ts_ns, e.ts_ns + e.dur_ns, i});
        t.host_thread_ids.try_emplace(lanes.thread_key(e), 0);
        break;
      default: break;
    }
  }
  if (counts.device_ops == 0) {
    std::ostringstream message;
    message << source << ": no device events found (" << raw.stats.events_total
            << " events read; looked for Kineto device categories kernel/gpu_memcpy/gpu_memset, "
               "torch_npu \"Ascend Hardware\" tasks and encbench device tracks). Was the trace "
               "recorded with device activities enabled (e.g. ProfilerActivity.CUDA / NPU)?";
    throw InvalidInput(message.str());
  }
  number_host_threads(lanes, t);
  for (auto& [key, slices] : t.device_tracks) sort_track(slices);
  for (auto& [key, slices] : t.host_tracks) sort_track(slices);
  return t;
}

// Pass 2's result: each device op's launch (the host event, kNpos when none or unknown), submit
// time and how it was found (-1 correlation, flow priorities 0.., max: not linked).
struct LaunchTable {
  std::vector<std::size_t> launch_of;
  std::vector<Nanos> submit_of;
  std::vector<bool> has_submit;
  std::vector<int> link_priority;
};

// HTA's rule: the runtime event and the op carry the same args.correlation.
void link_by_correlation(const RawTrace& raw, const EventTracks& t, LaunchTable& links) {
  std::unordered_map<std::int64_t, std::size_t> host_by_correlation;
  for (std::size_t i = 0; i < raw.events.size(); ++i) {
    const RawEvent& e = raw.events[i];
    if (t.roles[i] != EventRole::host || e.correlation == kNoValue) continue;
    const auto [it, inserted] = host_by_correlation.try_emplace(e.correlation, i);
    // Prefer the runtime call over a driver call or framework op carrying the same id.
    if (!inserted && raw.str(raw.events[it->second].cat) != "cuda_runtime" && raw.str(e.cat) == "cuda_runtime") {
      it->second = i;
    }
  }
  for (std::size_t i = 0; i < raw.events.size(); ++i) {
    const RawEvent& e = raw.events[i];
    if (t.roles[i] != EventRole::device_op || e.correlation == kNoValue) continue;
    const auto it = host_by_correlation.find(e.correlation);
    if (it == host_by_correlation.end()) continue;
    links.launch_of[i] = it->second;
    links.submit_of[i] = raw.events[it->second].ts_ns;
    links.has_submit[i] = true;
    links.link_priority[i] = -1;
  }
}

void link_flow(const RawTrace& raw, const EventTracks& t, const RawEvent& s, const RawEvent& f, LaunchTable& links) {
  const auto track = t.device_tracks.find({f.pid, f.tid});
  if (track == t.device_tracks.end()) return;
  const std::size_t op = find_slice(track->second, f.ts_ns, !f.binds_enclosing);
  if (op == kNpos) return;
  const int priority = flow_priority(raw.str(s.cat), raw.str(s.name));
  if (priority >= links.link_priority[op]) return;
  links.link_priority[op] = priority;
  links.submit_of[op] = s.ts_ns;
  links.has_submit[op] = true;
  links.launch_of[op] = kNpos;
  const auto host_track = t.host_tracks.find({s.pid, s.tid});
  if (host_track != t.host_tracks.end()) {
    const std::size_t host = find_slice(host_track->second, s.ts_ns, false);
    if (host != kNpos) links.launch_of[op] = host;
  }
}

void link_by_flows(const RawTrace& raw, const EventTracks& t, LaunchTable& links) {
  struct FlowEnds {
    std::size_t start = kNpos, finish = kNpos;
  };
  std::map<std::pair<std::uint32_t, std::int64_t>, FlowEnds> flows;
  for (std::size_t i = 0; i < raw.events.size(); ++i) {
    if (t.roles[i] != EventRole::flow) continue;
    const RawEvent& e = raw.events[i];
    if (flow_priority(raw.str(e.cat), raw.str(e.name)) < 0) continue;
    FlowEnds& ends = flows[{e.cat, e.flow_id}];
    if (e.ph == 's' && ends.start == kNpos) ends.start = i;
    if (e.ph == 'f') ends.finish = i;
  }
  for (const auto& [key, ends] : flows) {
    if (ends.start != kNpos && ends.finish != kNpos) {
      link_flow(raw, t, raw.events[ends.start], raw.events[ends.finish], links);
    }
  }
}

// Correlation first (as HTA), then flows where they are more trustworthy.
LaunchTable link_launches(const RawTrace& raw, const EventTracks& t) {
  LaunchTable links;
  links.launch_of.assign(raw.events.size(), kNpos);
  links.submit_of.assign(raw.events.size(), 0);
  links.has_submit.assign(raw.events.size(), false);
  links.link_priority.assign(raw.events.size(), std::numeric_limits<int>::max());
  link_by_correlation(raw, t, links);
  link_by_flows(raw, t, links);
  return links;
}

// Pass 3: host spans, then one DeviceTrace per device with its ops, launch links and counts.
class TimelineBuilder {
 public:
  TimelineBuilder(const RawTrace& raw, const TraceLanes& lanes, const EventTracks& tracks, LaunchTable& links,
                  ImportedTrace& out)
      : raw_(raw), lanes_(lanes), tracks_(tracks), links_(links), out_(out) {}

  void build() {
    build_host_spans();
    std::map<int, std::vector<std::size_t>> ops_by_device;
    for (const auto& [key, slices] : tracks_.device_tracks) {
      for (const TrackSlice& s : slices) ops_by_device[tracks_.op_track[s.event].device].push_back(s.event);
    }
    for (auto& [device, events] : ops_by_device) {
      out_.devices.push_back(build_device(device, events, ops_by_device.size() == 1));
    }
  }

 private:
  void build_host_spans() {
    for (const auto& [key, id] : tracks_.host_thread_ids) {
      const auto named = raw_.thread_names.find(key);
      std::string name = std::string(lanes_.process_name(key.first));
      if (name.empty()) name = "pid " + raw_.track_name(key.first);
      name += named != raw_.thread_names.end() ? " / " + named->second : " / tid " + raw_.track_name(key.second);
      host_threads_.push_back({id, std::move(name)});
    }
    std::sort(host_threads_.begin(), host_threads_.end(),
              [](const auto& a, const auto& b) { return a.thread < b.thread; });
    host_kind_.assign(raw_.events.size(), HostSpanKind::work);
    span_of_event_.assign(raw_.events.size(), kNpos);
    for (std::size_t i = 0; i < raw_.events.size(); ++i) {
      if (tracks_.roles[i] != EventRole::host) continue;
      span_of_event_[i] = host_spans_.size();
      const RawEvent& e = raw_.events[i];
      host_kind_[i] = lanes_.host_kind_of(e);
      HostSpan span;
      span.name = std::string(raw_.str(e.name));
      span.kind = host_kind_[i];
      span.thread = tracks_.host_thread_ids.at(lanes_.thread_key(e));
      if (e.op_id_arg > 0) span.op_id = static_cast<std::uint64_t>(e.op_id_arg);
      span.start_ns = e.ts_ns;
      span.end_ns = e.ts_ns + e.dur_ns;
      span.layer = static_cast<int>(e.layer_arg);
      host_spans_.push_back(std::move(span));
    }
    out_.counts.host_spans = host_spans_.size();
  }

  std::uint32_t launch_name(std::uint32_t raw_name) {
    const auto [it, inserted] = name_index_.try_emplace(raw_name, static_cast<std::uint32_t>(out_.names.size()));
    if (inserted) out_.names.emplace_back(raw_.str(raw_name));
    return it->second;
  }

  DeviceOp make_op(std::size_t i, std::uint64_t id) {
    const RawEvent& e = raw_.events[i];
    DeviceOp op;
    op.id = id;
    op.name = std::string(raw_.str(e.name));
    op.stream = tracks_.op_track[i].stream;
    op.layer = static_cast<int>(e.layer_arg);
    op.start_ns = e.ts_ns;
    op.end_ns = e.ts_ns + e.dur_ns;
    op.bytes = e.bytes;
    op.flops = e.flops;
    op.category = lanes_.category_of(e, op.name);
    if (lanes_.layout() == TraceLayout::encbench) {
      // encbench's writer records the exact submit time and ids of its own ops.
      if (e.op_id_arg > 0) op.id = static_cast<std::uint64_t>(e.op_id_arg);
      if (e.host_thread_arg >= 0) op.host_thread = static_cast<std::uint32_t>(e.host_thread_arg);
      if (e.submit_to_start_ns_arg != kNoValue) {
        links_.submit_of[i] = op.start_ns - e.submit_to_start_ns_arg;
        links_.has_submit[i] = true;
      }
    }
    // Unknown launch time: treated as already queued, like HTA's NaN runtime timestamp (never
    // host_wait). Counted and reported so the user knows.
    op.submit_ns = links_.has_submit[i] ? std::min(links_.submit_of[i], op.start_ns) : tracks_.trace_start;
    return op;
  }

  void count_link(std::size_t i, DeviceTrace& dt) {
    if (links_.has_submit[i] && links_.submit_of[i] > raw_.events[i].ts_ns) {
      const Nanos skew = links_.submit_of[i] - raw_.events[i].ts_ns;
      ++dt.skewed_ops;
      dt.max_skew_ns = std::max(dt.max_skew_ns, skew);
      ++out_.counts.skewed_ops;
      out_.counts.max_skew_ns = std::max(out_.counts.max_skew_ns, skew);
    }
    if (!links_.has_submit[i]) {
      ++dt.ops_without_launch;
      ++out_.counts.unlinked_ops;
    } else if (links_.link_priority[i] < 0) {
      ++out_.counts.linked_by_correlation;
    } else if (links_.link_priority[i] < std::numeric_limits<int>::max()) {
      ++out_.counts.linked_by_flow;
    } else {
      ++out_.counts.recorded_submit;
    }
  }

  // A call that launches several ops (a CUDA graph launch: one correlation id on many kernels)
  // points at the first of them; every op keeps its own LaunchLink.
  void record_launch(std::size_t i, DeviceOp& op, DeviceTrace& dt, std::vector<bool>& span_linked) {
    const std::size_t launch = links_.launch_of[i];
    const RawEvent& host = raw_.events[launch];
    op.host_thread = tracks_.host_thread_ids.at(lanes_.thread_key(host));
    LaunchLink link;
    link.stream = op.stream;
    link.op_id = op.id;
    link.api_name = launch_name(host.name);
    link.api_start_ns = host.ts_ns;
    link.api_end_ns = host.ts_ns + host.dur_ns;
    link.op_start_ns = op.start_ns;
    link.op_end_ns = op.end_ns;
    link.api_is_runtime = host_kind_[launch] != HostSpanKind::work;
    dt.launches.push_back(link);
    // The launch span points at its op, as encbench's recorder does for its own API spans.
    const std::size_t span = span_of_event_[launch];
    if (span_linked[span]) return;
    span_linked[span] = true;
    HostSpan& call = dt.timeline.host_spans[span];
    call.op_id = op.id;
    if (is_blocking_copy(call, op)) {
      call.kind = HostSpanKind::wait;
      ++out_.counts.blocking_copy_calls;
    }
  }

  // The device's empty trace: label, host threads and spans, step extent, event waits.
  DeviceTrace start_device(int device, bool only_device) {
    DeviceTrace dt;
    dt.device = device;
    lanes_.label_device(dt);
    dt.timeline.host_threads = host_threads_;
    // Every device sees all host spans; the common single-device case takes them without a copy.
    dt.timeline.host_spans = only_device ? std::move(host_spans_) : host_spans_;
    if (const auto extent = tracks_.profiler_extents.find(device); extent != tracks_.profiler_extents.end()) {
      dt.profiler_extent = ProfilerStepExtent{extent->second.first, extent->second.second,
                                              "torch_npu Overlap Analysis (Computing, Communication)"};
    }
    if (const auto waits = tracks_.stream_waits.find(device); waits != tracks_.stream_waits.end()) {
      dt.timeline.stream_waits = waits->second;
      std::sort(dt.timeline.stream_waits.begin(), dt.timeline.stream_waits.end(),
                [](const timeline::StreamWait& a, const timeline::StreamWait& b) {
                  return std::pair{a.stream, a.start_ns} < std::pair{b.stream, b.start_ns};
                });
    }
    return dt;
  }

  DeviceTrace build_device(int device, std::vector<std::size_t>& events, bool only_device) {
    std::sort(events.begin(), events.end(), [this](std::size_t a, std::size_t b) {
      const RawEvent& x = raw_.events[a];
      const RawEvent& y = raw_.events[b];
      return x.ts_ns != y.ts_ns ? x.ts_ns < y.ts_ns : a < b;
    });
    DeviceTrace dt = start_device(device, only_device);
    std::vector<bool> span_linked(dt.timeline.host_spans.size(), false);
    std::map<int, std::string> stream_names;
    for (std::size_t k = 0; k < events.size(); ++k) {
      const std::size_t i = events[k];
      DeviceOp op = make_op(i, k + 1);
      count_link(i, dt);
      if (links_.launch_of[i] != kNpos) record_launch(i, op, dt, span_linked);
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

  const RawTrace& raw_;
  const TraceLanes& lanes_;
  const EventTracks& tracks_;
  LaunchTable& links_;  // encbench traces add the submit times their ops record
  ImportedTrace& out_;
  std::vector<HostSpanKind> host_kind_;
  std::vector<std::size_t> span_of_event_;
  std::vector<timeline::HostThreadTrack> host_threads_;
  std::vector<HostSpan> host_spans_;
  std::unordered_map<std::uint32_t, std::uint32_t> name_index_;  // raw string -> out.names
};

}  // namespace

ImportedTrace import_raw_trace(RawTrace raw, const std::string& source_name) {
  ImportedTrace out;
  out.source = source_name;
  out.read = raw.stats;
  const TraceLanes lanes(raw);
  out.layout = lanes.layout();
  const EventTracks tracks = collect_tracks(raw, lanes, source_name, out.counts);
  LaunchTable links = link_launches(raw, tracks);
  TimelineBuilder(raw, lanes, tracks, links, out).build();
  return out;
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
