// Edits of a replay model: --drop, --host-scale, --launch-overhead-us, --kernel (replay.hpp).
#include <algorithm>
#include <charconv>
#include <cmath>
#include <unordered_map>

#include "harness/core/error.hpp"
#include "harness/core/glob.hpp"
#include "harness/trace/replay.hpp"

namespace encbench::trace {

namespace {

Nanos scaled(Nanos ns, double factor) { return static_cast<Nanos>(std::llround(static_cast<double>(ns) * factor)); }

// Which ops and actions --drop removes. An op goes when its name matches or its launch call
// goes; a call goes when its name matches or it only launches / waits for dropped ops.
struct DropPlan {
  std::vector<bool> op_dropped, action_dropped;
};

DropPlan plan_drop(const ReplayModel& model, const std::string& pattern, EditReport& report) {
  DropPlan plan{std::vector<bool>(model.ops.size(), false), std::vector<bool>(model.actions.size(), false)};
  if (pattern.empty()) return plan;
  std::vector<bool> name_matches(model.names.size());
  for (std::size_t i = 0; i < model.names.size(); ++i) name_matches[i] = glob_match(pattern, model.names[i]);
  for (std::size_t i = 0; i < model.ops.size(); ++i) plan.op_dropped[i] = name_matches[model.ops[i].name];
  for (std::size_t i = 0; i < model.actions.size(); ++i) {
    const HostAction& a = model.actions[i];
    if (name_matches[a.name]) for_each_launched(a, [&](std::int64_t op) { plan.op_dropped[op] = true; });
  }
  for (std::size_t i = 0; i < model.actions.size(); ++i) {
    const HostAction& a = model.actions[i];
    bool launch_gone = a.launches;  // every op it launched (a graph launch: all of them) dropped
    for_each_launched(a, [&](std::int64_t op) { launch_gone = launch_gone && plan.op_dropped[op]; });
    const bool wait_gone = a.waits && a.awaited_op != kNone && plan.op_dropped[a.awaited_op] &&
                           (!a.launches || launch_gone);
    plan.action_dropped[i] = name_matches[a.name] || (launch_gone && (!a.waits || wait_gone)) ||
                             (!a.launches && wait_gone && name_matches[model.ops[a.awaited_op].name]);
  }
  for (std::size_t i = 0; i < model.ops.size(); ++i) report.dropped_ops += plan.op_dropped[i] ? 1 : 0;
  for (std::size_t i = 0; i < model.actions.size(); ++i) {
    if (!plan.action_dropped[i]) continue;
    report.dropped_launches += model.actions[i].launches ? 1 : 0;
    report.dropped_waits += model.actions[i].waits ? 1 : 0;
  }
  require(report.dropped_ops + report.dropped_launches + report.dropped_waits > 0,
          "--drop '" + pattern + "' matches no device op and no host call in " + model.source +
              " (names are matched whole; use * for prefixes, e.g. 'aclrtSynchronize*')");
  return plan;
}

// Host work that only dropped calls need: a work span (framework op) on the same thread that
// encloses dropped calls and no kept call. Its time outside those calls is removed from the
// host work before the next kept call. Returns the removed ns per action index.
std::vector<Nanos> host_work_only_dropped_need(const ReplayModel& model, const DropPlan& plan) {
  std::vector<Nanos> removed_before(model.actions.size(), 0);
  Nanos covered_until = 0;
  std::uint32_t covered_thread = 0;
  for (const WorkSpan& w : model.work_spans) {
    if (w.thread == covered_thread && w.start_ns < covered_until) continue;  // inside one counted
    const auto first = std::lower_bound(model.actions.begin(), model.actions.end(), w.start_ns,
                                        [](const HostAction& a, Nanos t) { return a.trace_start_ns < t; });
    Nanos calls_inside = 0;
    std::size_t dropped_inside = 0, kept_inside = 0;
    for (auto it = first; it != model.actions.end() && it->trace_start_ns < w.end_ns; ++it) {
      if (it->thread != w.thread) continue;
      const bool dropped = plan.action_dropped[static_cast<std::size_t>(it - model.actions.begin())];
      (dropped ? dropped_inside : kept_inside) += 1;
      calls_inside += it->trace_end_ns - it->trace_start_ns;
    }
    if (dropped_inside == 0 || kept_inside != 0) continue;
    // Charge it to the next call of the thread after the span.
    for (auto it = first; it != model.actions.end(); ++it) {
      const auto index = static_cast<std::size_t>(it - model.actions.begin());
      if (it->thread != w.thread || it->trace_start_ns < w.end_ns || plan.action_dropped[index]) continue;
      removed_before[index] += std::max<Nanos>(w.end_ns - w.start_ns - calls_inside, 0);
      break;
    }
    covered_thread = w.thread;
    covered_until = w.end_ns;
  }
  return removed_before;
}

void relink_streams_and_threads(ReplayModel& model) {
  std::unordered_map<int, std::int64_t> last_on_stream;
  for (std::size_t i = 0; i < model.ops.size(); ++i) {
    ReplayOp& op = model.ops[i];
    const auto [it, inserted] = last_on_stream.try_emplace(op.stream, kNone);
    op.stream_prev = it->second;
    it->second = static_cast<std::int64_t>(i);
    op.launch = kNone;
  }
  std::unordered_map<std::uint32_t, std::int64_t> last_of_thread;
  for (std::size_t i = 0; i < model.actions.size(); ++i) {
    HostAction& a = model.actions[i];
    const auto [it, inserted] = last_of_thread.try_emplace(a.thread, kNone);
    a.thread_prev = it->second;
    it->second = static_cast<std::int64_t>(i);
    for_each_launched(a, [&](std::int64_t op) { model.ops[op].launch = static_cast<std::int64_t>(i); });
  }
}

// The first op at or before `op` on its stream that survives (a stream sync then waits for it).
std::int64_t surviving_stream_predecessor(const ReplayModel& model, const DropPlan& plan, std::int64_t op) {
  while (op != kNone && plan.op_dropped[op]) op = model.ops[op].stream_prev;
  return op;
}

ReplayModel apply_drop(const ReplayModel& model, const DropPlan& plan, EditReport& report) {
  const std::vector<Nanos> removed = host_work_only_dropped_need(model, plan);
  for (Nanos ns : removed) report.dropped_host_work_ns += ns;
  ReplayModel out = model;
  out.ops.clear();
  out.actions.clear();
  std::vector<std::int64_t> new_op(model.ops.size(), kNone);
  for (std::size_t i = 0; i < model.ops.size(); ++i) {
    if (plan.op_dropped[i]) continue;
    new_op[i] = static_cast<std::int64_t>(out.ops.size());
    out.ops.push_back(model.ops[i]);
  }
  std::vector<std::size_t> new_action_at(model.actions.size() + 1, 0);
  std::unordered_map<std::uint32_t, Nanos> carried;  // host work of dropped calls, per thread
  for (std::size_t i = 0; i < model.actions.size(); ++i) {
    new_action_at[i] = out.actions.size();
    HostAction a = model.actions[i];
    Nanos& carry = carried[a.thread];
    if (plan.action_dropped[i]) {
      carry += a.host_gap_ns;
      continue;
    }
    a.host_gap_ns = std::max<Nanos>(a.host_gap_ns + carry - removed[i], 0);
    carry = 0;
    if (a.launches) {
      std::vector<std::int64_t> kept;
      for_each_launched(a, [&](std::int64_t op) {
        if (new_op[op] != kNone) kept.push_back(new_op[op]);
      });
      a.launches = !kept.empty();
      a.op = a.launches ? kept.front() : kNone;
      a.also_launches.assign(kept.begin() + (a.launches ? 1 : 0), kept.end());
    }
    if (a.waits && a.awaited_op != kNone) {
      const std::int64_t target = surviving_stream_predecessor(model, plan, a.awaited_op);
      a.awaited_op = target == kNone ? kNone : new_op[target];
    }
    out.actions.push_back(a);
  }
  new_action_at[model.actions.size()] = out.actions.size();
  for (ForwardRange& f : out.forwards) {
    f.first_action = new_action_at[f.first_action];
    f.end_action = new_action_at[f.end_action];
  }
  relink_streams_and_threads(out);
  return out;
}

}  // namespace

KernelEdit parse_kernel_edit(std::string_view text) {
  const auto eq = text.rfind('=');
  require(eq != std::string_view::npos && eq > 0 && eq + 1 < text.size(),
          "--kernel must be PATTERN=xFACTOR or PATTERN=DURATION (e.g. 'FlashAttention*=x0.8', 'attn=120us'), got '" +
              std::string(text) + "'");
  KernelEdit edit;
  edit.pattern = std::string(text.substr(0, eq));
  std::string_view value = text.substr(eq + 1);
  const bool is_factor = value.front() == 'x';
  if (is_factor) value.remove_prefix(1);
  double number = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), number);
  require(ec == std::errc() && std::isfinite(number) && number >= 0,
          "--kernel '" + std::string(text) + "': expected a number >= 0 after '='");
  const std::string_view unit(end, static_cast<std::size_t>(value.data() + value.size() - end));
  if (is_factor) {
    require(unit.empty(), "--kernel '" + std::string(text) + "': a factor has no unit (x0.8)");
    edit.factor = number;
    return edit;
  }
  const double ns_per_unit = unit == "ns" ? 1.0 : unit == "us" ? 1e3 : unit == "ms" ? 1e6 : -1.0;
  require(ns_per_unit > 0, "--kernel '" + std::string(text) + "': a duration needs a unit: ns, us or ms");
  edit.duration_ns = static_cast<Nanos>(std::llround(number * ns_per_unit));
  return edit;
}

ReplayModel apply_edits(const ReplayModel& model, const ReplayEdits& edits, EditReport& report) {
  require(std::isfinite(edits.host_scale) && edits.host_scale >= 0, "--host-scale must be a number >= 0");
  ReplayModel out = edits.drop.empty() ? model : apply_drop(model, plan_drop(model, edits.drop, report), report);
  for (HostAction& a : out.actions) {
    a.host_gap_ns = scaled(a.host_gap_ns, edits.host_scale);
    if (edits.launch_overhead_ns && a.launches && !a.waits) {
      const Nanos overhead = *edits.launch_overhead_ns;
      a.submit_offset_ns = a.call_ns > 0 ? scaled(a.submit_offset_ns, static_cast<double>(overhead) / a.call_ns) : 0;
      a.call_ns = overhead;
    }
  }
  for (ForwardRange& f : out.forwards) {
    f.lead_ns = scaled(f.lead_ns, edits.host_scale);
    f.tail_ns = scaled(f.tail_ns, edits.host_scale);
  }
  for (const KernelEdit& edit : edits.kernels) {
    std::size_t matches = 0;
    for (ReplayOp& op : out.ops) {
      if (!glob_match(edit.pattern, out.names[op.name])) continue;
      op.duration_ns = edit.duration_ns ? *edit.duration_ns : scaled(op.duration_ns, edit.factor);
      ++matches;
    }
    require(matches > 0, "--kernel '" + edit.pattern + "' matches no device op in " + model.source);
    report.kernel_matches.push_back(matches);
  }
  return out;
}

}  // namespace encbench::trace
