#pragma once
// The virtual A/B's run record and its reporters: the runner (run_virtual_closed_loop) measures
// and compares; these turn what it recorded into the terminal report and the result document
// (encbench-closed-loop/3). `encbench report` draws the same document (reports/html_closed_loop.cpp).
#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/scenario/preset_ab.hpp"
#include "harness/scenario/virtual_experiment.hpp"
#include "reports/compare.hpp"

namespace encbench::scenario {

// What one `run --clock virtual` measured: per arm and seed the vLLM metrics and the engine and
// encoder counters, the trace devices' op-time tables, and the model they ran on.
struct VirtualAbRecord {
  std::vector<std::vector<ArmSeed>> by_arm;  // [arm][seed], in run order
  std::vector<OpTimeTables> op_times;       // per arm; empty tables on sim: devices
  std::string description;                  // the shared model in one line
  nlohmann::json model;                     // serving model and workload, as the result records them
};

// `serving` below is serving_json(record.by_arm), made once by the caller: vLLM's keys of every
// arm and seed (turning 500 requests' metrics into them costs ~15 ms of CPU per arm and seed here;
// a report needs them three times, the main job 0.6 s of CPU more when each made its own).

// Each arm's first seed as vLLM prints it, the pooled Before/After table, the measured op-time
// counts and, when the scenario has them, the published numbers beside the model's (returned as
// the result's "published_comparison"; null without).
nlohmann::json print_virtual_ab(std::ostream& out, const PresetAbOptions& options, const VirtualAbRecord& record,
                                const std::vector<std::vector<nlohmann::json>>& serving,
                                const reports::Comparison& comparison);

// The result document: the scenario, the model, per arm its seeds (serving summary, engine
// counters, wall time) and their spread, the comparison and the published rows.
nlohmann::json virtual_ab_json(const PresetAbOptions& options, const VirtualAbRecord& record,
                               const std::vector<std::vector<nlohmann::json>>& serving,
                               const reports::Comparison& comparison, const nlohmann::json& published,
                               const std::vector<std::string>& argv);

}  // namespace encbench::scenario
