// Drift cannot pose as a difference: three identical configurations of a scripted server on a
// machine that slows by 1 % per minute (time compressed 2400 times: 40 % per second of the test,
// every restarted server reading the same wall-clock start). Run one configuration after another
// (vLLM's order), the first looks faster and the judgement names it the winner, every other one
// SLOWER; in the balanced interleaved order the same servers give no winner.
#include <gtest/gtest.h>

#include <chrono>
#include <sstream>

#include "harness/scenario/config_sweep.hpp"
#include "harness/scenario/config_sweep_report.hpp"
#include "tests/scenario/scenario_test_paths.hpp"

namespace encbench::scenario {
namespace {

constexpr double kSlowdownPerMinute = 0.01;  // the machine: 1 % slower each minute
constexpr double kTimeCompression = 2400;    // one second of the test stands for 40 minutes

std::int64_t unix_ms_now() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

ConfigSweepOptions identical_configurations(const std::string& name, bool sequential) {
  std::ostringstream cmd;
  cmd << "exec '" << ENCBENCH_TEST_SERVER_BIN << "' --port {port} --ttft-ms 30 --itl-ms 2 --slowdown-per-s "
      << kSlowdownPerMinute / 60 * kTimeCompression << " --slowdown-since-unix-ms " << unix_ms_now();
  ConfigSweepOptions o;
  for (const char* c : {"a", "b", "c"}) o.configurations.push_back({c, {{"name", c}}, cmd.str()});
  client::BenchConfig load;
  load.backend = client::Backend::openai;
  load.endpoint = "/v1/completions";
  load.base_url = "http://127.0.0.1:1";
  load.dataset.name = "random";
  load.dataset.num_prompts = 10;
  load.dataset.random.input_len = 8;
  load.dataset.random.output_len = 4;
  load.ignore_eos = true;
  load.request_rate = 40;
  load.num_warmups = 1;
  load.timeout_s = 30;
  load.percentile_metrics = {"ttft", "tpot", "itl", "e2el"};
  o.loads = {{"rate-40", {{"request_rate", 40}}, load, 40}};
  o.rounds = 4;
  o.order_seed = 3;
  o.sequential = sequential;
  o.ready_timeout_s = 30;
  o.stop_grace_s = 5;
  o.out_dir = testpaths::temp_dir("config-sweep-drift", name) / "exp";
  return o;
}

nlohmann::json sweep(const ConfigSweepOptions& o) {
  std::ostringstream progress;
  const auto record = run_config_sweep(o, progress);
  for (const auto& cell : record.outcomes) EXPECT_TRUE(cell.failure.empty()) << cell.failure;
  EXPECT_EQ(record.outcomes.size(), 12u) << progress.str();
  ConfigSweepJudging judging;
  judging.rank_metric = "median_ttft_ms";  // each round's median: a busy machine's late requests aside
  return analyse_config_sweep(o, record, judging, {"test"});
}

TEST(ConfigSweepDrift, SequentialOrderNamesAWinnerAmongIdenticalServersInterleavedOrderDoesNot) {
  const auto sequential = sweep(identical_configurations("sequential", true));
  const auto& seq_load = sequential["loads"][0];
  // One after another: a ran first on the fastest machine and is named; b and c judged SLOWER.
  EXPECT_EQ(seq_load["winner"], "a") << seq_load.dump(1);
  for (const auto& v : seq_load["verdicts"]) EXPECT_EQ(v["verdict"], "SLOWER") << v.dump();

  const auto balanced = sweep(identical_configurations("balanced", false));
  const auto& load = balanced["loads"][0];
  EXPECT_TRUE(load["winner"].is_null()) << load.dump(1);
  for (const auto& v : load["verdicts"]) EXPECT_EQ(v["verdict"], "SAME") << v.dump();
  // The medians agree within about a tenth though the machine slowed by well over half during the
  // run; one after another, drift alone puts the last configuration far behind the first.
  std::vector<double> medians, seq_medians;
  for (const auto& c : balanced["configurations"]) medians.push_back(c["points"][0]["median_ttft_ms"].get<double>());
  for (const auto& c : sequential["configurations"]) seq_medians.push_back(c["points"][0]["median_ttft_ms"].get<double>());
  const auto [lo, hi] = std::minmax_element(medians.begin(), medians.end());
  EXPECT_LT(*hi / *lo, 1.12);
  EXPECT_GT(seq_medians[2] / seq_medians[0], 1.3);
}

}  // namespace
}  // namespace encbench::scenario
