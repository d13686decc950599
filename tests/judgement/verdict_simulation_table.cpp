// Prints the simulation table of docs/reports.md ("What the verdict's claims rest on"):
//   build/tests/judgement/encbench-verdict-simulation [SIMULATIONS]   (default 1000)
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "tests/judgement/verdict_simulation.hpp"

int main(int argc, char** argv) {
  using namespace encbench::judgement;
  const std::size_t n = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 1000;
  const Settings settings;
  const double aa_bound = settings.alpha + 2 * std::sqrt(settings.alpha * (1 - settings.alpha) / static_cast<double>(n));
  std::printf("%zu simulations per cell, %s; A/A bound %.3f, power band 0.75-0.85\n\n", n, describe(settings).c_str(), aa_bound);
  std::printf("| path | statistic | A/A non-SAME | median MDE | detected at MDE |\n|---|---|---|---|---|\n");
  std::uint64_t seed = 1;
  for (const auto& path : simulation::command_paths())
    for (const auto& stat : simulation::statistic_cases()) {
      const auto r = simulation::simulate(path, stat, settings, n, seed++);
      if (r.not_testable == r.simulations) {
        std::printf("| %s | %s | not testable (NOISY) | - | - |\n", path.name.c_str(), stat.name.c_str());
        continue;
      }
      std::printf("| %s | %s | %.3f | %.1f %% | %.3f |\n", path.name.c_str(), stat.name.c_str(), r.aa_non_same,
                  100 * r.median_mde, r.detected_at_mde);
    }
  return 0;
}
