// Critical path of a replayed forward (replay.hpp).
//
// The replay records, for every host call and device op, which dependency set its time (the
// term that won the max in the event rules): host order, launch, stream order or the awaited
// op. Walking those back from the node that ends the forward gives the chain of host work,
// calls, launch latencies, device ops and wake-ups whose durations add up to the forward's
// time: shorten anything off this chain and the forward does not get shorter. The edge kinds
// are HTA's critical-path graph's (CPU op order, kernel launch, kernel-kernel on a stream,
// sync), taken from the replay instead of being rebuilt from the trace.
#include <algorithm>
#include <map>
#include <utility>

#include "harness/trace/replay.hpp"

namespace encbench::trace {

namespace {

class PathWalker {
 public:
  PathWalker(const ReplayModel& model, const ReplayTimes& times, Nanos floor_ns)
      : model_(model), t_(times), floor_(floor_ns) {}

  // Walks back from a node (an op when is_op, else a host action) to the forward's start.
  void walk(bool is_op, std::int64_t node) {
    std::size_t guard = model_.actions.size() + model_.ops.size() + 1;
    while (node != kNone && guard-- > 0) {
      const auto i = static_cast<std::size_t>(node);
      if (is_op) {
        std::tie(is_op, node) = step_op(i);
      } else {
        std::tie(is_op, node) = step_action(i);
      }
    }
  }

  void add_tail(std::uint32_t name, Nanos from, Nanos to) { add("host_work", name, from, to); }

  std::map<std::pair<std::string, std::uint32_t>, std::pair<Nanos, std::size_t>> totals;

 private:
  // Adds [from, to) clipped at the forward's start.
  bool add(const char* kind, std::uint32_t name, Nanos from, Nanos to) {
    const Nanos clipped_from = std::max(from, floor_);
    if (to > clipped_from) {
      auto& total = totals[{kind, name}];
      total.first += to - clipped_from;
      total.second += 1;
    }
    return from > floor_;
  }

  std::pair<bool, std::int64_t> step_op(std::size_t i) {
    const ReplayOp& o = model_.ops[i];
    if (!add(o.collective ? "collective" : "device_op", o.name, t_.op_start[i], t_.op_end[i])) return {false, kNone};
    switch (t_.op_bound[i]) {
      case Bound::launch: {
        const Nanos submitted = t_.op_start[i] - o.launch_latency_ns;
        if (!add("launch_latency", o.name, submitted, t_.op_start[i])) return {false, kNone};
        const HostAction& a = model_.actions[o.launch];
        if (!add("launch_call", a.name, t_.action_start[o.launch], submitted)) return {false, kNone};
        return host_before(static_cast<std::size_t>(o.launch));
      }
      case Bound::stream_order: {
        // A queue gap that was the stream waiting for another stream is named after what released it.
        const bool released = o.released_by != ReplayOp::kNoReleaser;
        if (!add(released ? "cross_stream_wait" : "queue_gap", released ? o.released_by : o.name,
                 t_.op_start[i] - o.queue_gap_ns, t_.op_start[i])) {
          return {false, kNone};
        }
        return {true, o.stream_prev};
      }
      default: return {false, kNone};
    }
  }

  std::pair<bool, std::int64_t> step_action(std::size_t i) {
    const HostAction& a = model_.actions[i];
    if (t_.action_bound[i] == Bound::awaited_op) {
      const Nanos awaited_end = t_.op_end[a.awaited_op];
      if (!add("wait_wakeup", a.name, awaited_end, t_.action_end[i])) return {false, kNone};
      return {true, a.awaited_op};
    }
    if (!add(a.waits ? "wait_call" : "launch_call", a.name, t_.action_start[i], t_.action_end[i])) return {false, kNone};
    return host_before(i);
  }

  // The host work before action i, then the previous action of its thread.
  std::pair<bool, std::int64_t> host_before(std::size_t i) {
    const HostAction& a = model_.actions[i];
    const Nanos prev_end = a.thread_prev == kNone ? 0 : t_.action_end[a.thread_prev];
    if (!add("host_work", a.name, prev_end, t_.action_start[i])) return {false, kNone};
    return {false, a.thread_prev};
  }

  const ReplayModel& model_;
  const ReplayTimes& t_;
  Nanos floor_;
};

}  // namespace

CriticalPath critical_path(const ReplayModel& model, const ReplayTimes& times, const ForwardRange& forward,
                           Nanos forward_start_ns, std::size_t top) {
  CriticalPath path;
  if (forward.end_action <= forward.first_action) return path;
  // The node that ends the forward: its last call, or a later-ending op one of its calls launched.
  bool end_is_op = false;
  std::int64_t end_node = static_cast<std::int64_t>(forward.end_action - 1);
  Nanos end_ns = times.action_end[forward.end_action - 1];
  for (std::size_t i = forward.first_action; i < forward.end_action; ++i) {
    for_each_launched(model.actions[i], [&](std::int64_t op) {
      if (times.op_end[op] <= end_ns) return;
      end_ns = times.op_end[op];
      end_node = op;
      end_is_op = true;
    });
  }
  PathWalker walker(model, times, forward_start_ns);
  // Host work after the last call (inside a step marker) may be what ends the forward.
  const std::size_t last = forward.end_action - 1;
  if (forward.tail_ns > 0 && times.action_end[last] + forward.tail_ns >= end_ns) {
    walker.add_tail(model.actions[last].name, times.action_end[last], times.action_end[last] + forward.tail_ns);
    end_is_op = false;
    end_node = static_cast<std::int64_t>(last);
  }
  walker.walk(end_is_op, end_node);
  for (const auto& [key, total] : walker.totals) {
    path.segments.push_back({key.first, model.names[key.second], total.first, total.second});
    path.length_ns += total.first;
    Nanos& bucket = key.first == "device_op" || key.first == "collective" ? path.device_ns
                    : key.first == "host_work"                          ? path.host_ns
                    : key.first == "launch_latency" || key.first == "queue_gap" || key.first == "cross_stream_wait"
                        ? path.latency_ns
                        : path.wait_ns;
    bucket += total.first;
  }
  std::sort(path.segments.begin(), path.segments.end(),
            [](const CriticalSegment& a, const CriticalSegment& b) { return a.total_ns > b.total_ns; });
  if (path.segments.size() > top) path.segments.resize(top);
  return path;
}

nlohmann::json to_json(const CriticalPath& path) {
  nlohmann::json segments = nlohmann::json::array();
  for (const CriticalSegment& s : path.segments) {
    segments.push_back({{"kind", s.kind}, {"name", s.name}, {"total_us", s.total_ns / 1e3}, {"count", s.count}});
  }
  return {{"length_us", path.length_ns / 1e3},
          {"device_us", path.device_ns / 1e3},
          {"host_work_us", path.host_ns / 1e3},
          {"calls_and_wakeups_us", path.wait_ns / 1e3},
          {"launch_latency_and_queue_gaps_us", path.latency_ns / 1e3},
          {"top_segments", segments}};
}

}  // namespace encbench::trace
