#include "harness/device/measured_op_times.hpp"

#include <algorithm>
#include <cmath>

#include "harness/core/error.hpp"
#include "harness/device/sim_profile.hpp"
#include "harness/trace/trace_import.hpp"

namespace encbench::device {

namespace {

bool same_cost(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max({std::abs(a), std::abs(b), 1.0}); }

// Distance between two costs on a log scale, so a 2x difference counts the same at any size.
double cost_distance(double flops_a, double bytes_a, double flops_b, double bytes_b) {
  return std::abs(std::log1p(flops_a) - std::log1p(flops_b)) + std::abs(std::log1p(bytes_a) - std::log1p(bytes_b));
}

}  // namespace

void MeasuredOpTimes::add(std::string_view name, timeline::OpCategory category, double flops, double bytes,
                          Nanos duration_ns) {
  auto it = by_name_.find(name);
  if (it == by_name_.end()) it = by_name_.emplace(std::string(name), std::vector<Shape>{}).first;
  auto shape = std::find_if(it->second.begin(), it->second.end(), [&](const Shape& s) {
    return s.category == category && same_cost(s.flops, flops) && same_cost(s.bytes, bytes);
  });
  if (shape == it->second.end()) {
    it->second.push_back(Shape{category, flops, bytes, {}, 0});
    shape = std::prev(it->second.end());
  }
  shape->durations.push_back(std::max<Nanos>(duration_ns, 0));
  ++samples_;
}

void MeasuredOpTimes::finish() {
  for (auto& [name, shapes] : by_name_) {
    for (Shape& s : shapes) {
      std::sort(s.durations.begin(), s.durations.end());
      s.median_ns = s.durations[s.durations.size() / 2];
      s.durations = {};  // only the median is used from here on
    }
  }
}

std::optional<Nanos> MeasuredOpTimes::lookup(const SimProfile& profile, std::string_view name,
                                             timeline::OpCategory category, double flops, double bytes) const {
  const auto it = by_name_.find(name);
  if (it == by_name_.end()) {
    fell_back_.fetch_add(1, std::memory_order_relaxed);
    return std::nullopt;
  }
  const Shape* nearest = nullptr;
  double best = 0;
  for (const Shape& s : it->second) {
    if (same_cost(s.flops, flops) && same_cost(s.bytes, bytes)) {
      exact_.fetch_add(1, std::memory_order_relaxed);
      return s.median_ns;
    }
    const double d = cost_distance(s.flops, s.bytes, flops, bytes);
    if (nearest == nullptr || d < best) {
      nearest = &s;
      best = d;
    }
  }
  if (nearest->flops <= 0 && nearest->bytes <= 0) {
    name_only_.fetch_add(1, std::memory_order_relaxed);
    return nearest->median_ns;
  }
  const Nanos modelled_trace_op = modelled_duration_ns(profile, nearest->category, nearest->flops, nearest->bytes);
  const Nanos modelled_op = modelled_duration_ns(profile, category, flops, bytes);
  scaled_.fetch_add(1, std::memory_order_relaxed);
  if (modelled_trace_op <= 0) return nearest->median_ns;
  return static_cast<Nanos>(std::llround(static_cast<double>(nearest->median_ns) * modelled_op / modelled_trace_op));
}

OpTimeCounts MeasuredOpTimes::counts() const {
  return {exact_.load(), scaled_.load(), name_only_.load(), fell_back_.load()};
}

std::string describe(const MeasuredOpTimes& table) {
  const OpTimeCounts c = table.counts();
  return "op times from trace " + table.source + ": " + std::to_string(c.exact) + " ops exact, " +
         std::to_string(c.scaled) + " scaled by cost, " + std::to_string(c.name_only) + " by name only, " +
         std::to_string(c.fell_back) + " fell back to the roofline (of " +
         std::to_string(c.exact + c.scaled + c.name_only + c.fell_back) + ")";
}

nlohmann::json to_json(const MeasuredOpTimes& table) {
  const OpTimeCounts c = table.counts();
  return {{"source", table.source}, {"names", table.names()}, {"samples", table.samples()}, {"exact", c.exact},
          {"scaled", c.scaled}, {"name_only", c.name_only}, {"fell_back", c.fell_back}};
}

std::shared_ptr<MeasuredOpTimes> load_measured_op_times(const std::filesystem::path& trace_path) {
  const trace::ImportedTrace imported = trace::import_trace_file(trace_path);
  const trace::DeviceTrace* busiest = &imported.devices.front();
  for (const trace::DeviceTrace& d : imported.devices) {
    if (d.timeline.device_ops.size() > busiest->timeline.device_ops.size()) busiest = &d;
  }
  auto table = std::make_shared<MeasuredOpTimes>();
  table->source = trace_path.string();
  const std::string& kind = busiest->timeline.device_kind;
  table->suggested_profile = imported.layout == trace::TraceLayout::torch_npu ? "ascend-910b"
                             : kind.starts_with("sim:")                       ? kind.substr(4)
                                                                               : "h100-sxm";
  for (const timeline::DeviceOp& op : busiest->timeline.device_ops) {
    if (op.category == timeline::OpCategory::sync) continue;  // markers, no duration of their own
    table->add(op.name, op.category, op.flops, op.bytes, op.end_ns - op.start_ns);
  }
  require(table->samples() > 0, trace_path.string() + ": the trace has no device op with a duration");
  table->finish();
  return table;
}

}  // namespace encbench::device
