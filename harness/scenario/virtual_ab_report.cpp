#include "harness/scenario/virtual_ab_report.hpp"

#include <algorithm>
#include <cmath>
#include <ostream>
#include <sstream>

#include "harness/core/result_json.hpp"
#include "harness/scenario/op_time_report.hpp"
#include "harness/scenario/published_table.hpp"
#include "reports/tables.hpp"

namespace encbench::scenario {

// The published metrics the run took as its input (the sample totals it was drawn to meet): not
// predictions, and marked so beside the others.
std::vector<std::string> conditioned_metric_keys(const PresetAbOptions& o) {
  std::vector<std::string> keys;
  if (o.workload.empty() || !o.sample_totals.applies_to(static_cast<std::size_t>(o.num_prompts))) return keys;
  if (o.sample_totals.text_tokens > 0) keys.push_back("total_input_tokens");
  if (o.sample_totals.output_tokens > 0) keys.push_back("total_output_tokens");
  return keys;
}

nlohmann::json serving_json(const ArmSeed& arm) { return client::to_vllm_json(arm.config, arm.result); }

std::vector<std::vector<nlohmann::json>> serving_json(const std::vector<std::vector<ArmSeed>>& by_arm) {
  std::vector<std::vector<nlohmann::json>> out(by_arm.size());
  for (std::size_t a = 0; a < by_arm.size(); ++a)
    for (const ArmSeed& r : by_arm[a]) out[a].push_back(serving_json(r));
  return out;
}

std::string vllm_block(const ArmSeed& arm) {
  std::ostringstream block;
  client::print_vllm_block(block, arm.config, arm.result);
  return block.str();
}

namespace {

double mean_of(const std::vector<nlohmann::json>& seeds, const std::string& key) {
  double sum = 0;
  for (const nlohmann::json& s : seeds) sum += s.value(key, 0.0);
  return seeds.empty() ? 0 : sum / static_cast<double>(seeds.size());
}

std::pair<double, double> range_of(const std::vector<nlohmann::json>& seeds, const std::string& key) {
  double lo = INFINITY, hi = -INFINITY;
  for (const nlohmann::json& s : seeds) {
    lo = std::min(lo, s.value(key, 0.0));
    hi = std::max(hi, s.value(key, 0.0));
  }
  return {lo, hi};
}

// One arm: its seeds as the result keeps them, and their spread. `serving`: serving_json of each
// seed, in order.
nlohmann::json arm_json(const std::string& preset, const std::vector<ArmSeed>& seeds_run,
                        const std::vector<nlohmann::json>& serving, const OpTimeTables& op_times) {
  nlohmann::json seeds = nlohmann::json::array();
  for (std::size_t k = 0; k < seeds_run.size(); ++k) {
    const ArmSeed& r = seeds_run[k];
    seeds.push_back({{"seed", r.seed}, {"serving", summary_of(serving[k])}, {"engine", engine_json(r.engine)},
                     {"wall_s", r.wall_s}});
  }
  nlohmann::json spread = nlohmann::json::object();
  for (const char* key : {"request_throughput", "duration", "mean_ttft_ms", "median_ttft_ms", "p99_ttft_ms",
                          "mean_tpot_ms", "mean_itl_ms", "max_concurrent_requests"}) {
    const auto [lo, hi] = range_of(serving, key);
    spread[key] = {{"mean", mean_of(serving, key)}, {"min", lo}, {"max", hi}};
  }
  nlohmann::json arm = {{"preset", preset}, {"seeds", seeds}, {"across_seeds", spread}};
  if (!op_times.empty()) arm["measured_op_times"] = op_time_counts_json(op_times);
  return arm;
}

}  // namespace

void print_virtual_ab(std::ostream& out, const PresetAbOptions& o, const VirtualAbRecord& record) {
  const auto& by_arm = record.by_arm;
  for (std::size_t a = 0; a < by_arm.size(); ++a)
    out << "\n[" << o.presets[a] << ", seed " << by_arm[a].front().seed << " of " << o.seeds << "]\n"
        << vllm_block(by_arm[a].front());
  out << "\nPreset A/B (VIRTUAL clock: modelled device, no HTTP): " << o.presets[0] << " (Before) vs " << o.presets[1]
      << " (After), " << o.model << " on " << o.device << ", " << o.seeds << " seed(s) of " << o.num_prompts
      << " requests per arm, pooled\n";
  out << reports::render_terminal(record.comparison);
  print_op_time_counts(out, o.presets, record.op_times);
  if (record.published) print_published_comparison(out, *record.published, o.presets);
  if (record.ttft_breakdown_ms)
    out << "\nMean TTFT broken down (seed " << o.seed << ", ms): " << record.ttft_breakdown_ms->dump() << "\n";
}

nlohmann::json virtual_ab_json(const PresetAbOptions& o, const VirtualAbRecord& record,
                               const std::vector<std::string>& argv) {
  nlohmann::json arms = nlohmann::json::array();
  for (std::size_t a = 0; a < record.by_arm.size(); ++a)
    arms.push_back(arm_json(o.presets[a], record.by_arm[a], record.serving[a], record.op_times[a]));
  nlohmann::json doc = make_result_envelope("encbench-preset-ab", kPresetAbSchemaVersion, argv, o.device);
  doc["clock"] = "virtual";
  doc["scenario"] = to_json(o);
  doc["model"] = record.model;
  doc["arms"] = arms;
  doc["verdict_valid"] = true;
  doc["seeds_completed"] = record.by_arm[0].size();
  doc["interrupted"] = static_cast<int>(record.by_arm[0].size()) < o.seeds;
  doc["invalid_reasons"] = nlohmann::json::array();
  doc["comparison"] = reports::to_json(record.comparison);
  if (record.published) doc["published_comparison"] = to_json(*record.published);
  if (record.ttft_breakdown_ms) {
    doc["ttft_breakdown_ms"] = *record.ttft_breakdown_ms;
    doc["timeline_html"] = o.outputs.timeline_html.string();
  }
  return doc;
}

}  // namespace encbench::scenario
