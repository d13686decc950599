// The CI gate's premise, checked A/A: every metric it judges as deterministic is
// bit-identical between two runs of the same build. Runs the deterministic part of
// scripts/ci-gate.sh twice: encbench-micro's sim encoder cases of scenarios/ci-micro-filter.txt
// (when this build has encbench-micro; the sanitizer build has not), `encbench encode` of the same
// cases, and the preset A/B on the virtual clock (the main job's scenarios/seeds/pr7104.json,
// 2 seeds: the CI preset A/B itself is live, wall-clock data). Every
// metric deterministic_by_name must match to the bit, and `compare` with scenarios/gates/ci.json
// must judge each of them as deterministic (its premise held) and pass.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "reports/compare.hpp"
#include "reports/result.hpp"
#include "test_support.hpp"

namespace encbench::reports {
namespace {

namespace fs = std::filesystem;

std::string q(const fs::path& p) {
  std::ostringstream s;
  s << '\'' << p.string() << '\'';
  return s.str();
}

std::string slurp(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// Runs `command` with its output in `log`; the exit code.
int run(const std::string& command, const fs::path& log) {
  const std::string cmd = command + " > " + q(log) + " 2>&1";
  const int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// One A/A side: the result files of the deterministic part, written under `dir`.
std::vector<fs::path> run_side(const fs::path& dir) {
  fs::create_directories(dir);
  const fs::path root = test::source_root();
  const std::string bin = ENCBENCH_BINARY;
  std::vector<fs::path> results;
  for (const char* preset : {"baseline", "optimized"}) {
    const fs::path out = dir / (std::string("encode-") + preset + ".json");
    const fs::path log = dir / (std::string("encode-") + preset + ".log");
    EXPECT_EQ(run(bin + " encode --model tiny-qwen2.5-vl --image 448x448 --device sim:ascend-910b --mlp --forwards 5 "
                        "--warmup 1 --preset " + preset + " --json " + q(out),
                  log),
              0)
        << slurp(log);
    results.push_back(out);
  }
  {
    const fs::path out = dir / "preset-ab.json";
    const fs::path log = dir / "preset-ab.log";
    // The virtual preset A/B runs calibrated serving models only: the main job's scenario.
    EXPECT_EQ(run("cd " + q(root) + " && " + bin + " run --scenario scenarios/seeds/pr7104.json --seeds 2 --result " +
                      q(out) + " --result-dir " + q(dir / "preset-ab.d"),
                  log),
              0)
        << slurp(log);
    results.push_back(out);
  }
#ifdef ENCBENCH_MICRO_BINARY
  {
    const fs::path out = dir / "micro.json";
    const fs::path log = dir / "micro.log";
    EXPECT_EQ(run(std::string(ENCBENCH_MICRO_BINARY) +
                      " --benchmark_filter='encoder/forward/tiny-qwen2.5-vl/sim:ascend-910b/(baseline|optimized)/'"
                      " --benchmark_repetitions=3 --benchmark_min_time=0.05 --benchmark_out_format=json"
                      " --benchmark_out=" + q(out),
                  log),
              0)
        << slurp(log);
    results.push_back(out);
  }
#endif
  return results;
}

TEST(GateAA, EveryDeterministicMetricIsBitIdenticalAcrossTwoRuns) {
  const fs::path dir = test::temp_dir("gate-aa");
  const std::vector<fs::path> a = run_side(dir / "a");
  const std::vector<fs::path> b = run_side(dir / "b");
  ASSERT_EQ(a.size(), b.size());
  const Gate gate = load_gate((test::source_root() / "scenarios" / "gates" / "ci.json").string());
  std::size_t deterministic = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const RunResult ra = load_result(a[i]);
    const RunResult rb = load_result(b[i]);
    for (const Metric& m : ra.metrics) {
      if (m.text || !deterministic_by_name(m.name)) continue;
      const Metric* other = rb.find(m.name);
      ASSERT_NE(other, nullptr) << m.name << " only in run A of " << a[i];
      ++deterministic;
      EXPECT_EQ(m.value, other->value) << m.name << " in " << a[i].filename();  // bit for bit
      EXPECT_EQ(m.samples, other->samples) << m.name << " in " << a[i].filename();
    }
    const Comparison c = compare_runs(ra, rb, gate);
    for (const MetricComparison& row : c.rows)
      if (deterministic_by_name(row.name)) {
        EXPECT_TRUE(row.deterministic) << row.name << ": " << row.reason;  // its samples agreed
        EXPECT_EQ(row.before, row.after) << row.name;
      }
    EXPECT_EQ(c.exit_code(), 0) << a[i].filename();
  }
  // The check is not vacuous: the encoder's virtual times, its device memory and the closed
  // loop's virtual encoder figures are all in it.
  EXPECT_GE(deterministic, 10u);
}

}  // namespace
}  // namespace encbench::reports
