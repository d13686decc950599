#pragma once
// How small a change a live A/B can see (`encbench bench ab`) and how many rounds a change of a
// given size needs (--plan).
//
// The MDE shown is the one of the test each verdict used (judgement.hpp: with rounds, the t test
// on the rounds' log values, and the smallest change that rule detects at the stated power), so a
// change beyond it is significant by construction. The plan asks the same two-sample bound
// how many rounds per arm bring it down to the planned change.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/judgement/judgement.hpp"
#include "reports/compare.hpp"

namespace encbench::scenario {

// alpha, power and the practical threshold: the judgement's own settings (judgement.hpp).
using judgement::Settings;

struct MdeRow {
  std::string metric, label;
  double base_value = 0;                 // A's pooled value
  std::size_t rounds_a = 0, rounds_b = 0;
  std::optional<double> round_sd_rel;    // s_p / |mean A rounds|; none with < 2 rounds on both sides
  std::optional<double> mde;             // of the verdict's own test (relative); none: not testable
  std::string basis;                     // that test's name (and, when not testable, what would settle it)
};

// The headline metrics (mean/median/p99 TTFT, mean/median/p99 TPOT, request and output
// throughput) present in both pooled arms.
std::vector<std::string> headline_metrics();
// The MDE of each headline metric is that of the test its verdict used (the comparison row's
// judgement); the round spread beside it is for the reader.
std::vector<MdeRow> minimum_detectable_effects(const reports::RunResult& a, const reports::RunResult& b,
                                               const reports::Comparison& comparison);

struct PlanRow {
  std::string metric, label;
  double round_sd_rel = 0;
  double within_share = 0;                // part of the round variance that more prompts shrink
  std::vector<std::pair<std::size_t, std::optional<int>>> rounds_by_prompts;  // prompts -> rounds per arm
};
struct Plan {
  double change = 0;                      // the --plan target (relative)
  std::size_t pilot_rounds = 0, prompts_per_round = 0;
  std::vector<PlanRow> rows;
  std::string summary;                    // one line: the headline answer
};
// Rounds per arm (>= 2, <= 200; none beyond) each metric needs to detect `change` at the
// settings' alpha and power, at the pilot's prompts per round and at 2x / 4x as many (the
// within-round part of the variance, estimated from per-request samples for means, scales as
// 1/prompts; the rest does not). Throws InvalidInput when the pilot has < 2 rounds per arm.
Plan plan_rounds(const reports::RunResult& a, const reports::RunResult& b, double change,
                 std::size_t prompts_per_round, const Settings& settings);

nlohmann::json to_json(const MdeRow& row);
nlohmann::json to_json(const Plan& plan);
void print_mde(std::ostream& out, const std::vector<MdeRow>& rows, const Settings& settings);
void print_plan(std::ostream& out, const Plan& plan);

}  // namespace encbench::scenario
