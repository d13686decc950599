#include "tests/judgement/verdict_simulation.hpp"

#include <algorithm>
#include <cmath>

#include "harness/core/mix64.hpp"
#include "harness/core/stats.hpp"

namespace encbench::judgement::simulation {
namespace {

struct Stream {
  std::uint64_t state;
  double uniform() { return (static_cast<double>(splitmix64_next(state) >> 11) + 0.5) * 0x1.0p-53; }
  double normal() {  // Box-Muller
    const double u = uniform(), v = uniform();
    return std::sqrt(-2 * std::log(u)) * std::cos(6.283185307179586 * v);
  }
};

// One round's TTFT-like latencies (ms): lognormal around 100 ms, 3 % of requests 5-10x slower.
std::vector<double> round_requests(Stream& rng, std::size_t n, double log_shift) {
  std::vector<double> xs(n);
  for (double& x : xs) {
    x = 100.0 * std::exp(0.6 * rng.normal() + log_shift);
    if (rng.uniform() < 0.03) x *= 5 + 5 * rng.uniform();
  }
  return xs;
}

// An arm's evidence: its rounds, each at its place in the ABBA order (arm 0 rounds at 0,3,4,7..).
Evidence arm_evidence(Stream& rng, const PathShape& path, const StatisticCase& stat, int arm, double change,
                      const std::vector<double>& seed_levels) {
  Evidence e;
  std::vector<double> pooled;
  for (std::size_t r = 0; r < path.rounds; ++r) {
    const bool first = (r % 2 == 0) == (arm == 0);  // ABBA: A first in even rounds
    const double position = 2.0 * static_cast<double>(r) + (first ? 0 : 1);
    const double shift = std::log1p(change) + path.round_sd * rng.normal() + path.trend_per_round * position +
                         seed_levels[r];
    if (stat.statistic.kind == StatisticKind::Kind::value) {
      // A rate (requests/s): its round-to-round noise is that of the round's duration; a slower
      // server (change > 0) serves fewer requests a second.
      e.rounds.push_back(10.0 * std::exp(-shift + 0.02 * rng.normal()));
      continue;
    }
    auto xs = round_requests(rng, path.requests, shift);
    e.requests_per_round = path.requests;
    e.rounds.push_back(compute(stat.statistic, xs));
    pooled.insert(pooled.end(), xs.begin(), xs.end());
  }
  if (stat.statistic.kind == StatisticKind::Kind::value) {
    e.value = stats::median(e.rounds);
  } else {
    e.value = compute(stat.statistic, pooled);
    if (path.rounds == 1) e.requests = std::move(pooled);
  }
  if (path.rounds == 1) e.rounds.clear();
  return e;
}

Judgement one(Stream& rng, const PathShape& path, const StatisticCase& stat, const Settings& settings, double change) {
  std::vector<double> seed_levels(path.rounds);
  for (double& level : seed_levels) level = path.seed_sd * rng.normal();
  const Evidence a = arm_evidence(rng, path, stat, 0, 0, seed_levels);
  const Evidence b = arm_evidence(rng, path, stat, 1, change, seed_levels);
  return judge(a, b, stat.statistic, stat.statistic.kind == StatisticKind::Kind::value, settings,
               path.paired ? RoundDesign::paired : RoundDesign::independent);
}

}  // namespace

std::vector<PathShape> command_paths() {
  return {{"live rounds (bench ab, run --clock real)", 3, 100, 0.03, 0.005},
          {"virtual seeds (run)", 10, 500, 0.0, 0.0, true, 0.3},
          {"single results (compare --save-detailed)", 1, 600, 0.0, 0.0}};
}

std::vector<StatisticCase> statistic_cases() {
  using K = StatisticKind::Kind;
  return {{"mean", {K::mean, 0}}, {"median", {K::median, 50}}, {"P90", {K::percentile, 90}},
          {"P99", {K::percentile, 99}}, {"throughput", {K::value, 0}}};
}

Rates simulate(const PathShape& path, const StatisticCase& stat, const Settings& settings, std::size_t simulations,
               std::uint64_t seed) {
  Rates rates;
  rates.simulations = simulations;
  Stream rng{mix64(seed)};
  std::vector<double> mdes;
  std::size_t non_same = 0;
  for (std::size_t i = 0; i < simulations; ++i) {
    const Judgement j = one(rng, path, stat, settings, 0);
    if (j.verdict != Verdict::same) ++non_same;
    if (j.verdict == Verdict::noisy) ++rates.not_testable;
    if (j.mde) mdes.push_back(*j.mde);
  }
  rates.aa_non_same = static_cast<double>(non_same) / static_cast<double>(simulations);
  if (mdes.empty()) return rates;
  rates.median_mde = stats::median(mdes);
  std::size_t detected = 0;
  for (std::size_t i = 0; i < simulations; ++i)
    if (one(rng, path, stat, settings, rates.median_mde).verdict == Verdict::slower) ++detected;
  rates.detected_at_mde = static_cast<double>(detected) / static_cast<double>(simulations);
  return rates;
}

}  // namespace encbench::judgement::simulation
