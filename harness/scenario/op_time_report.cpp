#include "harness/scenario/op_time_report.hpp"

#include <ostream>

namespace encbench::scenario {

namespace {

device::OpTimeCounts summed(const OpTimeTables& tables) {
  device::OpTimeCounts total;
  for (const auto& table : tables) total += table->counts();
  return total;
}

}  // namespace

nlohmann::json op_time_counts_json(const OpTimeTables& tables) {
  if (tables.empty()) return nullptr;
  nlohmann::json j = device::to_json(*tables.front());  // source, op map, names: the same file each repeat
  const nlohmann::json counts = device::to_json(summed(tables));
  for (const auto& [key, value] : counts.items()) j[key] = value;
  j["repeats"] = tables.size();
  return j;
}

void print_op_time_counts(std::ostream& out, const std::vector<std::string>& presets,
                          const std::vector<OpTimeTables>& tables_by_arm) {
  bool header = false;
  for (std::size_t a = 0; a < tables_by_arm.size() && a < presets.size(); ++a) {
    if (tables_by_arm[a].empty()) continue;
    if (!header) out << "\nEncoder op times (trace device; counts over all repeats, start-up forward included)\n";
    header = true;
    out << "  " << presets[a] << ": " << device::describe(summed(tables_by_arm[a]), tables_by_arm[a].front()->source)
        << "\n";
  }
}

}  // namespace encbench::scenario
