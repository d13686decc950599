#pragma once
// The virtual A/B's run record and its reporters: the runner (run_virtual_preset_ab) measures
// and compares; these turn what it recorded into the terminal report and the result document
// (encbench-preset-ab/3). `encbench report` draws the same document (reports/html_preset_ab.cpp).
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/scenario/preset_ab.hpp"
#include "harness/scenario/published_table.hpp"
#include "harness/scenario/virtual_experiment.hpp"
#include "reports/compare.hpp"

namespace encbench::scenario {

// What one `run --clock virtual` measured and how it compares: per arm and seed the vLLM metrics
// and the engine and encoder counters, the trace devices' op-time tables, the model they ran on;
// then vLLM's keys of every seed, the pooled comparison, the published numbers beside the model's
// and, with --plot-timeline, the first seed's TTFT broken down. The runner fills it; the reporters
// below only read it.
struct VirtualAbRecord {
  std::vector<std::vector<ArmSeed>> by_arm;  // [arm][seed], in run order
  std::vector<OpTimeTables> op_times;       // per arm; empty tables on sim: devices
  std::string description;                  // the shared model in one line
  nlohmann::json model;                     // serving model and workload, as the result records them
  // vLLM's keys of every arm and seed (serving_json(by_arm)), made once: turning 500 requests'
  // metrics into them costs ~15 ms of CPU per arm and seed, and the comparison, the published
  // table and the result document all read them.
  std::vector<std::vector<nlohmann::json>> serving;
  reports::Comparison comparison;            // pooled over the seeds, as the live loop pools its rounds
  std::optional<PublishedComparison> published;  // when the scenario has published numbers
  std::optional<nlohmann::json> ttft_breakdown_ms;  // per preset, with --plot-timeline
};

// The published metrics the run took as its input (the sample totals it was drawn to meet): not
// predictions, and marked so in the published table.
std::vector<std::string> conditioned_metric_keys(const PresetAbOptions& options);

// Each arm's first seed as vLLM prints it, the pooled Before/After table, the measured op-time
// counts, the published numbers beside the model's, and the TTFT breakdown when recorded.
void print_virtual_ab(std::ostream& out, const PresetAbOptions& options, const VirtualAbRecord& record);

// The result document: the scenario, the model, per arm its seeds (serving summary, engine
// counters, wall time) and their spread, the comparison, the published rows and the TTFT
// breakdown (encbench-preset-ab/3).
nlohmann::json virtual_ab_json(const PresetAbOptions& options, const VirtualAbRecord& record,
                               const std::vector<std::string>& argv);

}  // namespace encbench::scenario
