// Discrete-event replay of a trace's model, and what it yields (replay.hpp).
#include "harness/trace/replay.hpp"

#include <algorithm>
#include <map>
#include <sstream>
#include <unordered_map>

#include "harness/core/error.hpp"
#include "harness/timeline/event_rules.hpp"

namespace encbench::trace {

namespace {

// Program order per host thread and stream order per stream, as index lists.
struct Queues {
  std::vector<std::vector<std::size_t>> threads, streams;
};

Queues build_queues(const ReplayModel& model) {
  Queues q;
  std::unordered_map<std::uint32_t, std::size_t> thread_slot;
  for (std::size_t i = 0; i < model.actions.size(); ++i) {
    const auto [it, inserted] = thread_slot.try_emplace(model.actions[i].thread, q.threads.size());
    if (inserted) q.threads.emplace_back();
    q.threads[it->second].push_back(i);
  }
  std::unordered_map<int, std::size_t> stream_slot;
  for (std::size_t i = 0; i < model.ops.size(); ++i) {
    const auto [it, inserted] = stream_slot.try_emplace(model.ops[i].stream, q.streams.size());
    if (inserted) q.streams.emplace_back();
    q.streams[it->second].push_back(i);
  }
  return q;
}

class Replayer {
 public:
  explicit Replayer(const ReplayModel& model) : model_(model), queues_(build_queues(model)) {
    t_.action_start.assign(model.actions.size(), 0);
    t_.action_end.assign(model.actions.size(), 0);
    t_.action_bound.assign(model.actions.size(), Bound::origin);
    t_.op_start.assign(model.ops.size(), 0);
    t_.op_end.assign(model.ops.size(), 0);
    t_.op_bound.assign(model.ops.size(), Bound::origin);
    started_.assign(model.actions.size(), false);
    action_done_.assign(model.actions.size(), false);
    op_done_.assign(model.ops.size(), false);
  }

  // Advances every thread and stream as far as its dependencies allow, round after round. A
  // round without progress while work remains is a dependency cycle.
  ReplayTimes run() {
    std::vector<std::size_t> thread_at(queues_.threads.size(), 0), stream_at(queues_.streams.size(), 0);
    std::size_t remaining = model_.actions.size() + model_.ops.size();
    while (remaining > 0) {
      std::size_t progressed = 0;
      for (std::size_t t = 0; t < queues_.threads.size(); ++t) {
        progressed += advance_thread(queues_.threads[t], thread_at[t]);
      }
      for (std::size_t s = 0; s < queues_.streams.size(); ++s) {
        progressed += advance_stream(queues_.streams[s], stream_at[s]);
      }
      if (progressed == 0) throw InvalidInput(describe_cycle(thread_at, stream_at));
      remaining -= progressed;
    }
    return std::move(t_);
  }

 private:
  Nanos submit_of(std::size_t op) const {
    const ReplayOp& o = model_.ops[op];
    if (o.launch == kNone) return 0;
    return t_.action_start[o.launch] + model_.actions[o.launch].submit_offset_ns;
  }

  void start_action(std::size_t i) {
    const HostAction& a = model_.actions[i];
    const Nanos prev_end = a.thread_prev == kNone ? 0 : t_.action_end[a.thread_prev];
    t_.action_start[i] = prev_end + a.host_gap_ns;
    t_.action_bound[i] = a.thread_prev == kNone ? Bound::origin : Bound::host_order;
    started_[i] = true;
  }

  void finish_action(std::size_t i) {
    const HostAction& a = model_.actions[i];
    const Nanos call_end = t_.action_start[i] + a.call_ns;
    Nanos end = call_end;
    if (a.waits && a.awaited_op != kNone) {
      const Nanos after_wait =
          timeline::rules::host_after_wait_ns(t_.action_start[i], t_.op_end[a.awaited_op], a.wakeup_ns);
      if (after_wait > call_end) {
        end = after_wait;
        t_.action_bound[i] = Bound::awaited_op;
      }
    }
    t_.action_end[i] = end;
    action_done_[i] = true;
  }

  std::size_t advance_thread(const std::vector<std::size_t>& queue, std::size_t& at) {
    std::size_t done = 0;
    while (at < queue.size()) {
      const std::size_t i = queue[at];
      if (!started_[i]) start_action(i);
      const HostAction& a = model_.actions[i];
      if (a.waits && a.awaited_op != kNone && !op_done_[a.awaited_op]) break;
      finish_action(i);
      ++at;
      ++done;
    }
    return done;
  }

  std::size_t advance_stream(const std::vector<std::size_t>& queue, std::size_t& at) {
    std::size_t done = 0;
    while (at < queue.size()) {
      const std::size_t i = queue[at];
      const ReplayOp& o = model_.ops[i];
      if (o.launch != kNone && !started_[o.launch]) break;
      // The sim device's rule, on when the op reaches the device and when the stream can take it.
      const Nanos arrives = submit_of(i) + o.launch_latency_ns;
      const Nanos ready = (o.stream_prev == kNone ? 0 : t_.op_end[o.stream_prev]) + o.queue_gap_ns;
      t_.op_start[i] = timeline::rules::op_start_ns(arrives, ready);
      t_.op_end[i] = t_.op_start[i] + o.duration_ns;
      t_.op_bound[i] = o.launch != kNone && arrives >= ready ? Bound::launch
                       : o.stream_prev != kNone           ? Bound::stream_order
                                                           : Bound::origin;
      op_done_[i] = true;
      ++at;
      ++done;
    }
    return done;
  }

  std::string describe_cycle(const std::vector<std::size_t>& thread_at, const std::vector<std::size_t>& stream_at) const {
    std::ostringstream out;
    out << model_.source << ": the trace's dependencies form a cycle, the replay cannot go on:";
    for (std::size_t t = 0; t < queues_.threads.size(); ++t) {
      if (thread_at[t] >= queues_.threads[t].size()) continue;
      const HostAction& a = model_.actions[queues_.threads[t][thread_at[t]]];
      out << " host thread " << a.thread << " waits in '" << model_.names[a.name] << "' for op '"
          << model_.names[model_.ops[a.awaited_op].name] << "';";
    }
    for (std::size_t s = 0; s < queues_.streams.size(); ++s) {
      if (stream_at[s] >= queues_.streams[s].size()) continue;
      const ReplayOp& o = model_.ops[queues_.streams[s][stream_at[s]]];
      out << " stream " << o.stream << " holds op '" << model_.names[o.name] << "' until its launch '"
          << model_.names[model_.actions[o.launch].name] << "' runs;";
    }
    out << " (a wait on an op that is launched after the wait, or stream order against launch order)";
    return out.str();
  }

  const ReplayModel& model_;
  Queues queues_;
  ReplayTimes t_;
  std::vector<bool> started_, action_done_, op_done_;
};

// Forward start/end on a time axis given node times (trace or replay).
ForwardTimes forward_times(const ReplayModel& model, const ForwardRange& f, const std::vector<Nanos>& action_start,
                           const std::vector<Nanos>& action_end, const std::vector<Nanos>& op_end) {
  ForwardTimes out;
  out.name = f.name;
  if (f.end_action <= f.first_action) return out;
  out.start_ns = action_start[f.first_action] - f.lead_ns;
  out.end_ns = action_end[f.end_action - 1] + f.tail_ns;
  for (std::size_t i = f.first_action; i < f.end_action; ++i) {
    const HostAction& a = model.actions[i];
    out.end_ns = std::max(out.end_ns, action_end[i]);
    if (a.waits) ++out.waits;
    if (!a.launches) continue;
    // A synchronize marker (encbench's sync op) is neither device work nor a launch; a graph
    // launch is one launch of all its ops.
    for_each_launched(a, [&](std::int64_t op) {
      out.end_ns = std::max(out.end_ns, op_end[op]);
      if (model.ops[op].category != timeline::OpCategory::sync) ++out.ops;
    });
    if (model.ops[a.op].category != timeline::OpCategory::sync) ++out.launches;
  }
  return out;
}

}  // namespace

ReplayTimes replay(const ReplayModel& model) { return Replayer(model).run(); }

std::vector<ForwardTimes> trace_forward_times(const ReplayModel& model) {
  std::vector<Nanos> start, end, op_end;
  for (const HostAction& a : model.actions) {
    start.push_back(a.trace_start_ns - model.origin_ns);
    end.push_back(a.trace_end_ns - model.origin_ns);
  }
  for (const ReplayOp& o : model.ops) op_end.push_back(o.trace_end_ns - model.origin_ns);
  std::vector<ForwardTimes> out;
  for (const ForwardRange& f : model.forwards) out.push_back(forward_times(model, f, start, end, op_end));
  return out;
}

timeline::Timeline replay_timeline(const ReplayModel& model, const ReplayTimes& times) {
  timeline::Timeline tl;
  tl.device_kind = model.device_label + " (replay)";
  tl.modelled = true;
  for (int s : model.streams) tl.streams.push_back({s, "stream " + std::to_string(s)});
  tl.device_ops.reserve(model.ops.size());
  for (std::size_t i = 0; i < model.ops.size(); ++i) {
    const ReplayOp& o = model.ops[i];
    timeline::DeviceOp op;
    op.id = i + 1;
    op.name = model.names[o.name];
    op.category = o.category;
    op.stream = o.stream;
    op.layer = o.layer;
    op.start_ns = times.op_start[i];
    op.end_ns = times.op_end[i];
    op.submit_ns = o.launch == kNone ? 0 : times.action_start[o.launch] + model.actions[o.launch].submit_offset_ns;
    op.submit_ns = std::min(op.submit_ns, op.start_ns);
    if (o.launch != kNone) op.host_thread = model.actions[o.launch].thread;
    tl.device_ops.push_back(std::move(op));
  }
  std::sort(tl.device_ops.begin(), tl.device_ops.end(),
            [](const auto& a, const auto& b) { return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.id < b.id; });
  for (std::size_t i = 0; i < model.actions.size(); ++i) {
    const HostAction& a = model.actions[i];
    timeline::HostSpan span;
    span.name = model.names[a.name];
    span.kind = a.waits ? timeline::HostSpanKind::wait : timeline::HostSpanKind::api;
    span.thread = a.thread;
    span.start_ns = times.action_start[i];
    span.end_ns = times.action_end[i];
    span.layer = a.layer;
    if (a.launches) span.op_id = static_cast<std::uint64_t>(a.op) + 1;
    tl.host_spans.push_back(std::move(span));
  }
  return tl;
}

ReplayMetrics measure_replay(const ReplayModel& model, const ReplayTimes& times, Nanos kernel_wait_threshold_ns,
                             std::size_t critical_path_top) {
  ReplayMetrics m;
  for (const ForwardRange& f : model.forwards) {
    ForwardTimes ft = forward_times(model, f, times.action_start, times.action_end, times.op_end);
    ft.critical_path = critical_path(model, times, f, ft.start_ns, critical_path_top);
    m.forwards.push_back(std::move(ft));
  }
  timeline::GapOptions options;
  options.kernel_wait_threshold_ns = kernel_wait_threshold_ns;
  m.device_idle = timeline::analyze_gaps(replay_timeline(model, times), options);
  return m;
}

}  // namespace encbench::trace
