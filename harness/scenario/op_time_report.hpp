#pragma once
// `encbench run` on a trace:FILE device: how each arm's encoder ops got their times (exact,
// scaled, name only, mapped by kernel role, fell back to the roofline), summed over the arm's
// repeats. A run whose ops mostly fell back measures the roofline, not the trace: the line says so.
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/device/measured_op_times.hpp"

namespace encbench::scenario {

using OpTimeTables = std::vector<std::shared_ptr<const device::MeasuredOpTimes>>;

// The counts of one arm's tables added up, with the first table's source, op map and names.
nlohmann::json op_time_counts_json(const OpTimeTables& tables);
// "Op times (trace ...)" and one describe() line per arm that has tables; nothing otherwise.
void print_op_time_counts(std::ostream& out, const std::vector<std::string>& presets,
                          const std::vector<OpTimeTables>& tables_by_arm);

}  // namespace encbench::scenario
