#pragma once
// The verdicts of a configuration sweep (config_sweep.hpp) and how they are printed and written.
//
// Per configuration: its load curve (the headline metrics' means over rounds at each load), the
// capacity at the SLO bracketed between loads (reports/capacity_bracket.hpp), start-up time over
// rounds (process start to ready, and to the first token it served), each round's /metrics.
// Across configurations, at each load: the best by the ranking metric and every other one judged
// against it by the project's one rule (judgement.hpp; rounds are the unit, independent design);
// a winner only when every other configuration is judged worse. The Pareto fronts as vLLM's
// `sweep plot_pareto` draws its own (output tokens/s per device against tokens/s per user), and
// capacity at the SLO against TTFT at the lightest load. JSON schema encbench-config-sweep/1;
// reports/config_sweep_html.hpp draws the page from it.
#include <filesystem>
#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/judgement/judgement.hpp"
#include "harness/scenario/config_sweep.hpp"
#include "harness/scenario/sweep.hpp"

namespace encbench::scenario {

struct ConfigSweepJudging {
  std::string rank_metric = "mean_e2el_ms";  // a bench serve result key (latency _ms or throughput)
  judgement::Settings settings;
  std::vector<SloTerm> slo;                  // empty: no capacity
  // Live rounds are independent; virtual-time seeds give every configuration the same requests.
  judgement::RoundDesign design = judgement::RoundDesign::independent;
};

// Throws InvalidInput (--rank-by) unless `key` is a metric the sweep records.
void validate_rank_metric(const std::string& key);

// The analysis as JSON (encbench-config-sweep/1, the envelope included).
nlohmann::json analyse_config_sweep(const ConfigSweepOptions& options, const ConfigSweepRecord& record,
                                    const ConfigSweepJudging& judging, const std::vector<std::string>& argv);

// Terminal tables: per load the configurations with the verdict against the best and the winner;
// per configuration capacity and start-up; the fronts; failures; wall time against the rounds'.
void print_config_sweep(const nlohmann::json& analysis, std::ostream& out);

}  // namespace encbench::scenario
