// `encbench run --grid`: configurations in virtual time. Each cell is the very run `encbench run
// --clock virtual` makes of that preset at that seed (checked against a plain two-arm experiment),
// the figures do not depend on the worker processes, combinations the toggles forbid are skipped
// with the reason, and a configuration with one batch seat loses at a load it cannot carry.
#include <gtest/gtest.h>

#include <sstream>

#include "harness/core/error.hpp"
#include "harness/scenario/config_sweep_report.hpp"
#include "harness/scenario/virtual_experiment.hpp"
#include "harness/scenario/virtual_grid.hpp"
#include "tests/scenario/scenario_test_paths.hpp"
#include "tests/support/virtual_options.hpp"

namespace encbench::scenario {
namespace {

PresetAbOptions small(const std::string& name) {
  auto o = testing::small_virtual_run(testpaths::temp_dir("virtual-grid", name), name, 24, 2);
  o.request_rate = 6;
  return o;
}

double cell_value(const VirtualGridRun& run, std::size_t c, std::size_t l, int round, const std::string& key) {
  for (const auto& cell : run.record.outcomes)
    if (cell.cell.configuration == c && cell.cell.load == l && cell.cell.round == round) return cell.serving.at(key).get<double>();
  ADD_FAILURE() << "no cell " << c << "," << l << "," << round;
  return 0;
}

TEST(VirtualGrid, EachCellIsTheRunOfThePlainVirtualExperimentAndWorkerProcessesChangeNothing) {
  const auto o = small("plain");
  std::ostringstream progress;
  const auto axes = parse_grid("preset=baseline,optimized; out-buffer=alloc-per-call,reuse");
  const auto loads = parse_sweep("request-rate=3,6");
  const auto one = run_virtual_grid(o, axes, loads, {"test"}, 1, progress);
  const auto two = run_virtual_grid(o, axes, loads, {"test"}, 2, progress);
  ASSERT_EQ(one.options.configurations.size(), 4u);
  EXPECT_EQ(one.options.configurations[1].name, "preset=baseline out-buffer=reuse");
  ASSERT_EQ(one.record.outcomes.size(), 4u * 2u * 2u);
  for (std::size_t i = 0; i < one.record.outcomes.size(); ++i)
    EXPECT_EQ(one.record.outcomes[i].serving["mean_ttft_ms"], two.record.outcomes[i].serving["mean_ttft_ms"]) << i;
  // The plain experiment of `encbench run --clock virtual` with these four presets as arms.
  PresetAbOptions plain = o;
  plain.presets = {"baseline+out-buffer=alloc-per-call", "baseline+out-buffer=reuse",
                   "optimized+out-buffer=alloc-per-call", "optimized+out-buffer=reuse"};
  VirtualExperiment experiment(plain, {"test"});
  PresetAbOptions at = plain;
  at.request_rate = 6;
  for (std::size_t arm = 0; arm < 4; ++arm) {
    const auto direct = serving_json(experiment.run(arm, at, o.seed + 1));
    EXPECT_DOUBLE_EQ(cell_value(one, arm, 1, 2, "mean_ttft_ms"), direct["mean_ttft_ms"].get<double>()) << arm;
    EXPECT_DOUBLE_EQ(cell_value(one, arm, 1, 2, "output_throughput"), direct["output_throughput"].get<double>()) << arm;
  }
}

TEST(VirtualGrid, CombinationsTheTogglesForbidAreSkippedWithTheReason) {
  std::ostringstream progress;
  // pr7104 pads with three pads, so flash-unpad is allowed; device-cumulative needs fused-varlen.
  const auto run = run_virtual_grid(small("skip"), parse_grid("preset=pr7104;seq-lens=device-cumulative,host-precomputed;kernel=flash-unpad,fused-varlen"),
                                    parse_sweep("request-rate=4"), {"test"}, 2, progress);
  EXPECT_EQ(run.options.configurations.size(), 3u);
  ASSERT_EQ(run.skipped.size(), 1u);
  EXPECT_NE(run.skipped[0].find("preset=pr7104 seq-lens=device-cumulative kernel=flash-unpad: conflicting toggles"),
            std::string::npos)
      << run.skipped[0];
}

TEST(VirtualGrid, BadAxesAreRefusedNamingThem) {
  auto message = [](const std::string& text) {
    try {
      parse_grid(text);
    } catch (const InvalidInput& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  EXPECT_NE(message("colour=red").find("unknown axis 'colour'"), std::string::npos);
  EXPECT_NE(message("scale=init;scale=per-call").find("axis 'scale' given twice"), std::string::npos);
  EXPECT_NE(message("scale=").find("axis 'scale' has no values"), std::string::npos);
  PresetAbOptions o = small("bad");
  std::ostringstream progress;
  EXPECT_THROW(run_virtual_grid(o, parse_grid("max-num-seqs=0"), {}, {"test"}, 1, progress), InvalidInput);
  o.clock = "real";
  EXPECT_THROW(run_virtual_grid(o, parse_grid("scale=init"), {}, {"test"}, 1, progress), InvalidInput);
}

TEST(VirtualGrid, OneBatchSeatLosesWhereTheLoadNeedsMore) {
  PresetAbOptions o = small("seats");
  o.seeds = 3;
  std::ostringstream progress;
  const auto run = run_virtual_grid(o, parse_grid("max-num-seqs=1,64"), parse_sweep("request-rate=8"), {"test"}, 2, progress);
  ConfigSweepJudging judging;
  judging.rank_metric = "mean_ttft_ms";
  judging.design = judgement::RoundDesign::paired;
  const auto a = analyse_config_sweep(run.options, run.record, judging, {"test"});
  const auto& load = a["loads"][0];
  EXPECT_EQ(load["winner"], "max-num-seqs=64") << load.dump(1);
  ASSERT_EQ(load["verdicts"].size(), 1u);
  EXPECT_EQ(load["verdicts"][0]["verdict"], "SLOWER");
  // One seat serves one request at a time: its requests queue behind each other's whole decode.
  const double one_seat = a["configurations"][0]["points"][0]["mean_ttft_ms"].get<double>();
  const double many = a["configurations"][1]["points"][0]["mean_ttft_ms"].get<double>();
  EXPECT_GT(one_seat, 2 * many);
}

}  // namespace
}  // namespace encbench::scenario
