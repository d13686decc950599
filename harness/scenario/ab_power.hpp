#pragma once
// How small a change a live A/B can see (`encbench bench ab`), from the spread its own rounds
// showed, and how many rounds a change of a given size needs (--plan).
//
// The comparison (reports/compare.cpp) calls a pooled metric FASTER/SLOWER only when the U test
// on per-request samples is significant AND the change clears the between-round bound
//   t(1 - alpha/2, df) * s_p * sqrt(1/kA + 1/kB)
// (s_p: pooled standard deviation of the per-round values of the two arms, df = kA + kB - 2).
// The per-round values are the limiting evidence, so the minimum detectable effect at power
// 1 - beta is the usual two-sample one on them (docs/ab.md):
//   MDE = (t(1 - alpha/2, df) + t(1 - beta, df)) * s_p * sqrt(1/kA + 1/kB) / |mean of A's rounds|
// never below the practical threshold the verdict also requires. With one round per arm there is
// no round spread: the per-request estimate (z(1-alpha/2) + z(1-beta)) * sqrt(vA/nA + vB/nB) / |A|
// is shown instead (means only), marked as blind to round-to-round drift.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reports/result.hpp"

namespace encbench::scenario {

struct PowerSettings {
  double alpha = 0.05;      // two-sided
  double power = 0.80;
  double threshold = 0.02;  // practical threshold of the verdict (relative)
};

struct MdeRow {
  std::string metric, label;
  double base_value = 0;                 // A's pooled value
  std::size_t rounds_a = 0, rounds_b = 0;
  std::optional<double> round_sd_rel;    // s_p / |mean A rounds|; none with < 2 rounds on both sides
  std::optional<double> mde_rounds;      // from the round spread (relative)
  std::optional<double> mde_requests;    // per-request estimate (means only)
  std::optional<double> mde;             // what the run can detect (relative), >= threshold; none: unknown
  std::string basis;                     // "rounds", "requests (blind to drift)", "threshold", "unknown"
};

// The headline metrics (mean/median/p99 TTFT, mean/median/p99 TPOT, request and output
// throughput) present in both pooled arms.
std::vector<std::string> headline_metrics();
std::vector<MdeRow> minimum_detectable_effects(const reports::RunResult& a, const reports::RunResult& b,
                                               const PowerSettings& settings);

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
                 std::size_t prompts_per_round, const PowerSettings& settings);

nlohmann::json to_json(const MdeRow& row);
nlohmann::json to_json(const Plan& plan);
void print_mde(std::ostream& out, const std::vector<MdeRow>& rows, const PowerSettings& settings);
void print_plan(std::ostream& out, const Plan& plan);

}  // namespace encbench::scenario
