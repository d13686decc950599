#pragma once
// Simulated comparisons that check the judgement's claims: on identical arms (A/A) the rate of a
// non-SAME verdict stays at alpha, and a true change equal to the MDE the rule prints is
// detected at the stated power. Per-request latencies are heavy-tailed (lognormal with a few
// requests 5-10x slower), rounds drift (a random effect per round and a trend over run order),
// and each command's path has its own shape: live rounds (bench ab, run --clock real), virtual
// seeds (run on the virtual clock) and single results (compare of two --save-detailed files).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "harness/judgement/judgement.hpp"

namespace encbench::judgement::simulation {

struct PathShape {
  std::string name;           // "live rounds", "virtual seeds", "single results"
  std::size_t rounds = 3;     // per arm
  std::size_t requests = 100; // per round
  double round_sd = 0.03;     // sd of the log round effect (machine/server state)
  double trend_per_round = 0.005;  // log drift per position in the ABBA run order
  // Paired rounds: round k of both arms ran the same seed, whose prompts set a level both share
  // (sd of that log level); judged with RoundDesign::paired.
  bool paired = false;
  double seed_sd = 0;
};
std::vector<PathShape> command_paths();

struct StatisticCase {
  std::string name;  // "mean", "median", "P90", "P99", "throughput"
  StatisticKind statistic;
};
std::vector<StatisticCase> statistic_cases();

struct Rates {
  std::size_t simulations = 0;
  double aa_non_same = 0;      // share of A/A comparisons not judged SAME
  double median_mde = 0;       // the MDE the rule printed, median over the A/A runs
  double detected_at_mde = 0;  // share of SLOWER verdicts with B truly slower by median_mde
  std::size_t not_testable = 0;  // A/A comparisons judged NOISY (not testable)
};
Rates simulate(const PathShape& path, const StatisticCase& statistic, const Settings& settings,
               std::size_t simulations, std::uint64_t seed);

}  // namespace encbench::judgement::simulation
