#include "harness/device/measured_op_times.hpp"

#include <algorithm>
#include <cmath>

#include "harness/core/error.hpp"
#include "harness/device/sim_profile.hpp"
#include "harness/trace_read/trace_import.hpp"

namespace encbench::device {

namespace {

bool same_cost(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max({std::abs(a), std::abs(b), 1.0}); }

// Distance between two costs on a log scale, so a 2x difference counts the same at any size.
double cost_distance(double flops_a, double bytes_a, double flops_b, double bytes_b) {
  return std::abs(std::log1p(flops_a) - std::log1p(flops_b)) + std::abs(std::log1p(bytes_a) - std::log1p(bytes_b));
}

}  // namespace

OpTimeCounts& OpTimeCounts::operator+=(const OpTimeCounts& other) {
  exact += other.exact;
  scaled += other.scaled;
  name_only += other.name_only;
  mapped += other.mapped;
  fell_back += other.fell_back;
  return *this;
}

void MeasuredOpTimes::use_op_name_map(OpNameMap map) { op_map_ = std::move(map); }

void MeasuredOpTimes::add_to(ShapesByKey& table, std::string_view key, timeline::OpCategory category, double flops,
                             double bytes, Nanos duration_ns) {
  auto it = table.find(key);
  if (it == table.end()) it = table.emplace(std::string(key), std::vector<Shape>{}).first;
  auto shape = std::find_if(it->second.begin(), it->second.end(), [&](const Shape& s) {
    return s.category == category && same_cost(s.flops, flops) && same_cost(s.bytes, bytes);
  });
  if (shape == it->second.end()) {
    it->second.push_back(Shape{category, flops, bytes, {}, 0});
    shape = std::prev(it->second.end());
  }
  shape->durations.push_back(std::max<Nanos>(duration_ns, 0));
}

void MeasuredOpTimes::add(std::string_view name, timeline::OpCategory category, double flops, double bytes,
                          Nanos duration_ns) {
  add_to(by_name_, name, category, flops, bytes, duration_ns);
  ++samples_;
  const std::string_view role = op_map_.role_of_trace_kernel(name);
  if (role.empty()) return;
  add_to(by_role_, role, category, flops, bytes, duration_ns);
  if (!role_of_kernel_.contains(name)) role_of_kernel_.emplace(std::string(name), std::string(role));
}

void MeasuredOpTimes::finish() {
  for (ShapesByKey* table : {&by_name_, &by_role_}) {
    for (auto& [key, shapes] : *table) {
      for (Shape& s : shapes) {
        std::sort(s.durations.begin(), s.durations.end());
        s.median_ns = s.durations[s.durations.size() / 2];
        s.durations = {};  // only the median is used from here on
      }
    }
  }
}

Nanos MeasuredOpTimes::from_shapes(const SimProfile& profile, const std::vector<Shape>& shapes,
                                   timeline::OpCategory category, double flops, double bytes, bool by_role) const {
  const Shape* nearest = nullptr;
  double best = 0;
  for (const Shape& s : shapes) {
    if (!by_role && same_cost(s.flops, flops) && same_cost(s.bytes, bytes)) {
      exact_.fetch_add(1, std::memory_order_relaxed);
      return s.median_ns;
    }
    const double d = cost_distance(s.flops, s.bytes, flops, bytes);
    if (nearest == nullptr || d < best) {
      nearest = &s;
      best = d;
    }
  }
  (by_role ? mapped_ : nearest->flops <= 0 && nearest->bytes <= 0 ? name_only_ : scaled_)
      .fetch_add(1, std::memory_order_relaxed);
  if (nearest->flops <= 0 && nearest->bytes <= 0) return nearest->median_ns;
  const Nanos modelled_trace_op = modelled_duration_ns(profile, nearest->category, nearest->flops, nearest->bytes);
  const Nanos modelled_op = modelled_duration_ns(profile, category, flops, bytes);
  if (modelled_trace_op <= 0) return nearest->median_ns;
  return static_cast<Nanos>(std::llround(static_cast<double>(nearest->median_ns) * modelled_op / modelled_trace_op));
}

std::optional<Nanos> MeasuredOpTimes::lookup(const SimProfile& profile, std::string_view name,
                                             timeline::OpCategory category, double flops, double bytes) const {
  if (const auto it = by_name_.find(name); it != by_name_.end())
    return from_shapes(profile, it->second, category, flops, bytes, false);
  if (const std::string_view role = op_map_.role_of_encbench_op(name); !role.empty()) {
    if (const auto it = by_role_.find(role); it != by_role_.end())
      return from_shapes(profile, it->second, category, flops, bytes, true);
  }
  fell_back_.fetch_add(1, std::memory_order_relaxed);
  return std::nullopt;
}

OpTimeCounts MeasuredOpTimes::counts() const {
  return {exact_.load(), scaled_.load(), name_only_.load(), mapped_.load(), fell_back_.load()};
}

std::vector<std::string> MeasuredOpTimes::mapped_kernels() const {
  std::vector<std::string> lines;
  for (const auto& [kernel, role] : role_of_kernel_) lines.push_back(kernel + " -> " + role);
  std::sort(lines.begin(), lines.end());
  return lines;
}

std::string describe(const OpTimeCounts& c, const std::string& source) {
  return "op times from trace " + source + ": " + std::to_string(c.exact) + " ops exact, " + std::to_string(c.scaled) +
         " scaled by cost, " + std::to_string(c.name_only) + " by name only, " + std::to_string(c.mapped) +
         " mapped by kernel role, " + std::to_string(c.fell_back) + " fell back to the roofline (of " +
         std::to_string(c.total()) + ")";
}

std::string describe(const MeasuredOpTimes& table) { return describe(table.counts(), table.source); }

nlohmann::json to_json(const OpTimeCounts& c) {
  return {{"exact", c.exact}, {"scaled", c.scaled}, {"name_only", c.name_only}, {"mapped", c.mapped},
          {"fell_back", c.fell_back}, {"total", c.total()}};
}

nlohmann::json to_json(const MeasuredOpTimes& table) {
  nlohmann::json j = to_json(table.counts());
  j["source"] = table.source;
  j["names"] = table.names();
  j["samples"] = table.samples();
  j["op_map"] = table.op_map_origin().empty() ? nlohmann::json(nullptr) : nlohmann::json(table.op_map_origin());
  j["mapped_kernels"] = table.mapped_kernels();
  return j;
}

std::shared_ptr<MeasuredOpTimes> load_measured_op_times(const std::filesystem::path& trace_path,
                                                        const OpNameMap* op_map) {
  const trace::ImportedTrace imported = trace::import_trace_file(trace_path);
  const trace::DeviceTrace* busiest = &imported.devices.front();
  for (const trace::DeviceTrace& d : imported.devices) {
    if (d.timeline.device_ops.size() > busiest->timeline.device_ops.size()) busiest = &d;
  }
  auto table = std::make_shared<MeasuredOpTimes>();
  table->source = trace_path.string();
  if (op_map != nullptr) table->use_op_name_map(*op_map);
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
