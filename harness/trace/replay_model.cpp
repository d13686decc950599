#include "harness/trace/replay_model.hpp"

#include "harness/core/glob.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <tuple>
#include <unordered_map>

#include "harness/core/error.hpp"

namespace encbench::trace {

using timeline::DeviceOp;
using timeline::HostSpan;
using timeline::HostSpanKind;

namespace {


std::size_t busiest_device(const ImportedTrace& trace) {
  std::size_t chosen = 0;
  for (std::size_t i = 1; i < trace.devices.size(); ++i) {
    if (trace.devices[i].timeline.device_ops.size() > trace.devices[chosen].timeline.device_ops.size()) chosen = i;
  }
  return chosen;
}

const DeviceTrace& choose_device(const ImportedTrace& trace, int device) {
  if (device < 0) return trace.devices[busiest_device(trace)];
  for (const DeviceTrace& d : trace.devices) {
    if (d.device == device) return d;
  }
  std::string known;
  for (const DeviceTrace& d : trace.devices) known += (known.empty() ? "" : ", ") + std::to_string(d.device);
  throw InvalidInput(trace.source + ": no device " + std::to_string(device) + " in the trace (devices: " + known + ")");
}

class ModelBuilder {
 public:
  ModelBuilder(const DeviceTrace& device, const ModelOptions& options, ReplayModel& model)
      : device_(device), options_(options), model_(model) {}

  void build() {
    add_ops();
    add_actions();
    fold_nested_calls();
    attach_graph_ops();
    link_waits_without_op();
    measure_host_times();
    measure_start_latencies();
    find_forwards();
  }

 private:
  std::uint32_t intern(const std::string& name) {
    const auto [it, inserted] = name_ids_.try_emplace(name, static_cast<std::uint32_t>(model_.names.size()));
    if (inserted) model_.names.push_back(name);
    return it->second;
  }

  void add_ops() {
    const auto& ops = device_.timeline.device_ops;
    model_.origin_ns = std::numeric_limits<Nanos>::max();
    for (const DeviceOp& op : ops) model_.origin_ns = std::min(model_.origin_ns, op.start_ns);
    for (const HostSpan& s : device_.timeline.host_spans) model_.origin_ns = std::min(model_.origin_ns, s.start_ns);
    std::map<int, std::int64_t> last_on_stream;
    for (const DeviceOp& op : ops) {
      ReplayOp r;
      r.name = intern(op.name);
      r.category = op.category;
      r.stream = op.stream;
      r.layer = op.layer;
      r.trace_submit_ns = op.submit_ns;
      r.trace_start_ns = op.start_ns;
      r.trace_end_ns = std::max(op.end_ns, op.start_ns);
      r.duration_ns = r.trace_end_ns - r.trace_start_ns;
      r.flops = op.flops;
      r.bytes = op.bytes;
      r.collective = is_collective_op(op.name, op.stream);
      const auto [it, inserted] = last_on_stream.try_emplace(op.stream, kNone);
      r.stream_prev = it->second;
      it->second = static_cast<std::int64_t>(model_.ops.size());
      op_index_[op.id] = static_cast<std::int64_t>(model_.ops.size());
      model_.ops.push_back(r);
    }
    for (const auto& [stream, last] : last_on_stream) model_.streams.push_back(stream);
  }

  std::int64_t op_of_id(std::uint64_t id) const {
    const auto it = op_index_.find(id);
    return it == op_index_.end() ? kNone : it->second;
  }
  std::int64_t op_of(const HostSpan& span) const { return span.op_id == 0 ? kNone : op_of_id(span.op_id); }

  HostAction action_from(const HostSpan& span) {
    HostAction a;
    a.thread = span.thread;
    a.name = intern(span.name);
    a.layer = span.layer;
    a.trace_start_ns = span.start_ns;
    a.trace_end_ns = std::max(span.end_ns, span.start_ns);
    return a;
  }

  // Launch calls first (so a wait on an op another call launched only waits), then waits.
  void add_actions() {
    std::vector<bool> launched(model_.ops.size(), false);
    for (const HostSpan& span : device_.timeline.host_spans) {
      const std::int64_t op = op_of(span);
      if (span.kind != HostSpanKind::api || op == kNone || launched[op]) continue;
      HostAction a = action_from(span);
      a.launches = true;
      a.op = op;
      launched[op] = true;
      model_.actions.push_back(a);
    }
    for (const HostSpan& span : device_.timeline.host_spans) {
      if (span.kind == HostSpanKind::work) {
        if (span.end_ns > span.start_ns) model_.work_spans.push_back({span.thread, span.start_ns, span.end_ns});
        continue;
      }
      if (span.kind != HostSpanKind::wait) continue;
      HostAction a = action_from(span);
      a.waits = true;
      a.awaited_op = op_of(span);
      // A blocking copy (cudaMemcpy) or encbench's synchronize marker: the wait submits it too.
      if (a.awaited_op != kNone && !launched[a.awaited_op]) {
        a.launches = true;
        a.op = a.awaited_op;
        launched[a.op] = true;
      }
      model_.actions.push_back(a);
    }
    std::sort(model_.actions.begin(), model_.actions.end(), [](const HostAction& x, const HostAction& y) {
      if (x.trace_start_ns != y.trace_start_ns) return x.trace_start_ns < y.trace_start_ns;
      return x.trace_end_ns > y.trace_end_ns;  // outer call first
    });
  }

  // A runtime call inside another call of the same thread (a driver call under its runtime
  // call) is part of the outer call's time: one action, which takes over the inner's op.
  void fold_nested_calls() {
    std::vector<HostAction> kept;
    kept.reserve(model_.actions.size());
    std::unordered_map<std::uint32_t, std::size_t> last_of_thread;
    for (const HostAction& a : model_.actions) {
      const auto it = last_of_thread.find(a.thread);
      if (it != last_of_thread.end() && a.trace_start_ns < kept[it->second].trace_end_ns) {
        HostAction& outer = kept[it->second];
        if (a.launches && !outer.launches) {
          outer.launches = true;
          outer.op = a.op;
        }
        if (a.waits && !outer.waits) {
          outer.waits = true;
          outer.awaited_op = a.awaited_op;
        }
        ++model_.counts.nested_calls_folded;
        continue;
      }
      last_of_thread[a.thread] = kept.size();
      kept.push_back(a);
    }
    model_.actions = std::move(kept);
    for (std::size_t i = 0; i < model_.actions.size(); ++i) {
      const HostAction& a = model_.actions[i];
      if (a.launches) model_.ops[a.op].launch = static_cast<std::int64_t>(i);
      model_.counts.launches += a.launches ? 1 : 0;
      model_.counts.waits += a.waits ? 1 : 0;
    }
  }

  // A call that launched several ops (a CUDA graph launch: one correlation id on many kernels)
  // carries the first as its op (the importer points the call at it); the others are launched
  // by the same action: the same call, i.e. the same thread, times and name in the launch links.
  void attach_graph_ops() {
    using CallKey = std::tuple<Nanos, Nanos, std::uint32_t, std::uint32_t>;
    const auto key_of = [&](const LaunchLink& l, std::int64_t op) {
      return CallKey{l.api_start_ns, l.api_end_ns, l.api_name, device_.timeline.device_ops[op].host_thread};
    };
    // Only the calls with an op their action does not carry (usually none: no map at all).
    std::map<CallKey, std::int64_t> action_of_call;
    for (const LaunchLink& l : device_.launches) {
      const std::int64_t op = op_of_id(l.op_id);
      if (op != kNone && model_.ops[op].launch == kNone) action_of_call.try_emplace(key_of(l, op), kNone);
    }
    if (action_of_call.empty()) return;
    for (const LaunchLink& l : device_.launches) {
      const std::int64_t op = op_of_id(l.op_id);
      if (op == kNone || model_.ops[op].launch == kNone) continue;
      const auto it = action_of_call.find(key_of(l, op));
      if (it != action_of_call.end() && it->second == kNone) it->second = model_.ops[op].launch;
    }
    for (const LaunchLink& l : device_.launches) {
      const std::int64_t op = op_of_id(l.op_id);
      if (op == kNone || model_.ops[op].launch != kNone) continue;
      const auto it = action_of_call.find(key_of(l, op));
      if (it == action_of_call.end() || it->second == kNone) continue;
      model_.ops[op].launch = it->second;
      model_.actions[it->second].also_launches.push_back(op);
      ++model_.counts.graph_ops;
    }
  }

  // A synchronize without an op id waits for what was submitted before it; the op it waited
  // for is the last of those to end before it returned (HTA's sync edge also comes from the op
  // that ends just before). Ops that ended after it returned were not waited for (another
  // stream, or an op the trace cannot tie to a launch).
  void link_waits_without_op() {
    std::vector<std::int64_t> by_end(model_.ops.size());
    for (std::size_t i = 0; i < by_end.size(); ++i) by_end[i] = static_cast<std::int64_t>(i);
    std::sort(by_end.begin(), by_end.end(), [&](std::int64_t a, std::int64_t b) {
      return model_.ops[a].trace_end_ns < model_.ops[b].trace_end_ns;
    });
    constexpr std::size_t kMaxScan = 4096;  // ops ending just before the wait: a few streams' worth
    for (HostAction& a : model_.actions) {
      if (!a.waits || a.awaited_op != kNone) continue;
      auto it = std::upper_bound(by_end.begin(), by_end.end(), a.trace_end_ns, [&](Nanos t, std::int64_t op) {
        return t < model_.ops[op].trace_end_ns;
      });
      for (std::size_t scanned = 0; it != by_end.begin() && scanned < kMaxScan; ++scanned) {
        --it;
        if (model_.ops[*it].trace_submit_ns <= a.trace_start_ns) {
          a.awaited_op = *it;
          break;
        }
      }
      if (a.awaited_op == kNone) ++model_.counts.waits_without_target;
    }
  }

  void measure_host_times() {
    std::unordered_map<std::uint32_t, std::int64_t> last_of_thread;
    std::vector<bool> blocked(model_.actions.size(), false);
    std::vector<Nanos> wakeups;
    for (std::size_t i = 0; i < model_.actions.size(); ++i) {
      HostAction& a = model_.actions[i];
      const auto [it, inserted] = last_of_thread.try_emplace(a.thread, kNone);
      a.thread_prev = it->second;
      it->second = static_cast<std::int64_t>(i);
      // A thread's first action counts its host work from replay time 0 (the trace's origin).
      const Nanos prev_end = a.thread_prev == kNone ? model_.origin_ns : model_.actions[a.thread_prev].trace_end_ns;
      a.host_gap_ns = std::max<Nanos>(a.trace_start_ns - prev_end, 0);
      const Nanos dur = a.trace_end_ns - a.trace_start_ns;
      a.call_ns = dur;
      if (a.launches) {
        a.submit_offset_ns = std::clamp<Nanos>(model_.ops[a.op].trace_submit_ns - a.trace_start_ns, 0, dur);
      }
      if (!a.waits || a.awaited_op == kNone) continue;
      const Nanos awaited_end = model_.ops[a.awaited_op].trace_end_ns;
      if (awaited_end <= a.trace_start_ns) continue;  // did not block: the call just cost its time
      // It blocked: the host resumed this long after the op ended.
      a.wakeup_ns = std::max<Nanos>(a.trace_end_ns - awaited_end, 0);
      a.call_ns = a.launches ? a.submit_offset_ns : 0;
      blocked[i] = true;
      wakeups.push_back(a.wakeup_ns);
    }
    model_.host_threads = static_cast<std::uint32_t>(last_of_thread.size());
    // A wait that did not block in the trace may block after an edit: it then wakes up after the
    // median wake-up of the trace's blocking waits.
    const Nanos typical_wakeup = median(wakeups);
    for (std::size_t i = 0; i < model_.actions.size(); ++i) {
      if (!blocked[i]) model_.actions[i].wakeup_ns = typical_wakeup;
    }
  }

  Nanos submit_in_trace(const ReplayOp& op) const {
    if (op.launch == kNone) return model_.origin_ns;
    const HostAction& a = model_.actions[op.launch];
    return a.trace_start_ns + a.submit_offset_ns;
  }
  Nanos ready_in_trace(const ReplayOp& op) const {
    return op.stream_prev == kNone ? model_.origin_ns : model_.ops[op.stream_prev].trace_end_ns;
  }

  // Host-bound ops (the launch came after the stream drained) measure the launch latency,
  // queued ops the gap after their predecessor; each gets the trace's median of the other.
  void measure_start_latencies() {
    std::vector<Nanos> latencies, gaps;
    for (const ReplayOp& op : model_.ops) {
      if (op.launch == kNone) ++model_.counts.ops_without_launch;
      const Nanos submit = submit_in_trace(op), ready = ready_in_trace(op);
      if (op.launch != kNone && submit >= ready) latencies.push_back(std::max<Nanos>(op.trace_start_ns - submit, 0));
      if (submit < ready) gaps.push_back(std::max<Nanos>(op.trace_start_ns - ready, 0));
    }
    const Nanos typical_latency = median(latencies), typical_gap = median(gaps);
    for (ReplayOp& op : model_.ops) {
      const Nanos submit = submit_in_trace(op), ready = ready_in_trace(op);
      const Nanos to_start = op.trace_start_ns;
      op.launch_latency_ns = std::clamp<Nanos>(to_start - submit, 0, submit >= ready ? to_start : typical_latency);
      op.queue_gap_ns = std::clamp<Nanos>(to_start - ready, 0, submit < ready ? to_start : typical_gap);
      if (op.launch == kNone) {
        // Queued before the trace began: nothing to wait for but the stream, measured.
        op.launch_latency_ns = 0;
        op.queue_gap_ns = std::max<Nanos>(to_start - ready, 0);
      }
    }
  }

  static Nanos median(std::vector<Nanos>& values) {
    if (values.empty()) return 0;
    std::nth_element(values.begin(), values.begin() + values.size() / 2, values.end());
    return values[values.size() / 2];
  }

  void find_forwards();
  void forwards_from_markers(const std::vector<const HostSpan*>& markers);
  void forwards_from_closing_waits();
  void close_forward(ForwardRange& f, Nanos host_end);

  const DeviceTrace& device_;
  const ModelOptions& options_;
  ReplayModel& model_;
  std::unordered_map<std::string, std::uint32_t> name_ids_;
  std::unordered_map<std::uint64_t, std::int64_t> op_index_;
};

// The forward ends when its last action and the ops its actions launched have ended.
void ModelBuilder::close_forward(ForwardRange& f, Nanos host_end) {
  Nanos end = host_end;
  for (std::size_t i = f.first_action; i < f.end_action; ++i) {
    const HostAction& a = model_.actions[i];
    end = std::max(end, a.trace_end_ns);
    for_each_launched(a, [&](std::int64_t op) { end = std::max(end, model_.ops[op].trace_end_ns); });
  }
  if (f.end_action > f.first_action) {
    f.lead_ns = std::max<Nanos>(model_.actions[f.first_action].trace_start_ns - f.trace_start_ns, 0);
    f.tail_ns = std::max<Nanos>(host_end - model_.actions[f.end_action - 1].trace_end_ns, 0);
  }
  f.trace_end_ns = end;
}

void ModelBuilder::forwards_from_markers(const std::vector<const HostSpan*>& markers) {
  for (const HostSpan* m : markers) {
    ForwardRange f;
    f.name = m->name;
    f.trace_start_ns = m->start_ns;
    const auto by_start = [](const HostAction& a, Nanos t) { return a.trace_start_ns < t; };
    f.first_action = static_cast<std::size_t>(
        std::lower_bound(model_.actions.begin(), model_.actions.end(), m->start_ns, by_start) - model_.actions.begin());
    f.end_action = static_cast<std::size_t>(
        std::lower_bound(model_.actions.begin(), model_.actions.end(), m->end_ns, by_start) - model_.actions.begin());
    if (f.end_action <= f.first_action) continue;  // a step with no device work
    close_forward(f, m->end_ns);
    model_.forwards.push_back(std::move(f));
  }
}

// encbench encode: each forward ends with a `forward_end` synchronize; it starts with the first
// host span after the previous one (the harness's own work between forwards is not recorded).
void ModelBuilder::forwards_from_closing_waits() {
  std::vector<Nanos> host_starts;
  for (const HostSpan& s : device_.timeline.host_spans) host_starts.push_back(s.start_ns);
  std::sort(host_starts.begin(), host_starts.end());
  std::size_t first = 0;
  Nanos previous_end = std::numeric_limits<Nanos>::min();
  for (std::size_t i = 0; i < model_.actions.size(); ++i) {
    const HostAction& a = model_.actions[i];
    if (!a.waits || !glob_match(options_.forward_end, model_.names[a.name])) continue;
    ForwardRange f;
    f.name = "forward " + std::to_string(model_.forwards.size());
    f.first_action = first;
    f.end_action = i + 1;
    f.closed_by_wait = true;
    const auto next_host = std::upper_bound(host_starts.begin(), host_starts.end(), previous_end);
    f.trace_start_ns = next_host == host_starts.end() ? model_.actions[first].trace_start_ns : *next_host;
    f.trace_start_ns = std::min(f.trace_start_ns, model_.actions[first].trace_start_ns);
    close_forward(f, a.trace_end_ns);
    model_.forwards.push_back(std::move(f));
    first = i + 1;
    previous_end = a.trace_end_ns;
  }
}

void ModelBuilder::find_forwards() {
  for (const std::string& marker : step_marker_candidates(options_.forward_marker)) {
    std::vector<const HostSpan*> markers;
    for (const HostSpan& s : device_.timeline.host_spans) {
      if (glob_match(marker, s.name)) markers.push_back(&s);
    }
    if (!markers.empty()) forwards_from_markers(markers);
    if (!model_.forwards.empty()) break;
  }
  if (model_.forwards.empty()) forwards_from_closing_waits();
  if (model_.forwards.empty() && !model_.actions.empty()) {
    ForwardRange f;
    f.name = "whole trace";
    f.end_action = model_.actions.size();
    f.trace_start_ns = model_.origin_ns;
    close_forward(f, model_.actions.back().trace_end_ns);
    model_.forwards.push_back(std::move(f));
  }
}

// An op queued behind a device-side event wait (torch_npu EVENT_WAIT on its stream for at least
// half of its queue gap) was released by the other stream: the op there that ended last before
// the wait did. Its queue gap is then labelled by that op (an allreduce), not by itself.
void label_stream_releases(const timeline::Timeline& timeline, ReplayModel& model) {
  const auto& waits = timeline.stream_waits;  // sorted by stream, then start
  if (waits.empty()) return;
  std::vector<std::int64_t> by_end(model.ops.size());
  for (std::size_t i = 0; i < by_end.size(); ++i) by_end[i] = static_cast<std::int64_t>(i);
  std::sort(by_end.begin(), by_end.end(),
            [&](std::int64_t a, std::int64_t b) { return model.ops[a].trace_end_ns < model.ops[b].trace_end_ns; });
  for (ReplayOp& op : model.ops) {
    if (op.stream_prev == kNone || op.queue_gap_ns <= 0) continue;
    const Nanos from = model.ops[op.stream_prev].trace_end_ns, to = op.trace_start_ns;
    auto w = std::upper_bound(waits.begin(), waits.end(), std::pair{op.stream, from},
                              [](const std::pair<int, Nanos>& key, const timeline::StreamWait& x) {
                                return key < std::pair{x.stream, x.end_ns};
                              });
    Nanos held = 0, released_at = 0;
    for (; w != waits.end() && w->stream == op.stream && w->start_ns < to; ++w) {
      held += std::min(w->end_ns, to) - std::max(w->start_ns, from);
      released_at = w->end_ns;
    }
    if (held <= 0 || 2 * held < to - from) continue;
    // The last op of another stream to end at or before the release (a few streams' worth back).
    auto it = std::upper_bound(by_end.begin(), by_end.end(), released_at,
                               [&](Nanos t, std::int64_t i) { return t < model.ops[i].trace_end_ns; });
    for (int scanned = 0; it != by_end.begin() && scanned < 64; ++scanned) {
      const ReplayOp& other = model.ops[*--it];
      if (other.stream == op.stream) continue;
      op.released_by = other.name;
      break;
    }
  }
}


}  // namespace

bool glob_match(std::string_view pattern, std::string_view text) { return glob_any(pattern, text); }

bool is_collective_op(std::string_view name, int stream) {
  if (stream >= kCollectiveStreamBase) return true;  // torch_npu's HCCL lane
  const auto starts = [&](std::string_view prefix) { return name.substr(0, prefix.size()) == prefix; };
  return starts("nccl") || starts("hcom_") || name.find("ncclDevKernel") != std::string_view::npos ||
         name.find("ncclKernel") != std::string_view::npos;
}

std::vector<std::string> step_marker_candidates(std::string_view marker) {
  if (marker != kDefaultStepMarker) return {std::string(marker)};
  return {std::string(kDefaultStepMarker), "execute_new_*_cached_*|execute_context_*_generation_*|execute_*_context_*_generation_*",
          "gpu_model_runner: forward"};
}

ReplayModel build_replay_model(const ImportedTrace& trace, int device, const ModelOptions& options) {
  require(!trace.devices.empty(), trace.source + ": no device ops in the trace");
  const DeviceTrace& chosen = choose_device(trace, device);
  ReplayModel model;
  model.source = trace.source;
  model.device_label = chosen.label;
  model.layout = trace.layout;
  require(!chosen.timeline.device_ops.empty(), trace.source + ": device " + chosen.label + " has no device ops");
  ModelBuilder(chosen, options, model).build();
  label_stream_releases(chosen.timeline, model);
  require(model.counts.ops_without_launch < model.ops.size(),
          trace.source + ": none of the " + std::to_string(model.ops.size()) +
              " device ops is tied to a host launch (no correlation ids or flow events): a replay needs "
              "args.correlation on the launch and the op (Kineto), HostToDevice flows (torch_npu) or "
              "encbench's own submit times");
  return model;
}

}  // namespace encbench::trace
