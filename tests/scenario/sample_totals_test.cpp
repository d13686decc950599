// A published run is one sample of its dataset, and its own table says how much text it
// sent and how much it generated ("Total input tokens", "Total generated tokens"). The workload's
// draws are conditioned on those totals: text scaled to meet its total, output lengths the nearest
// of the candidate draws. Checked against the free draw (what stays), exact sums, the bounds that
// make a total impossible, and end to end: a virtual run's own totals are the published ones.
#include <gtest/gtest.h>

#include "tests/scenario/scenario_test_paths.hpp"
#include "tests/support/virtual_options.hpp"

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/core/error.hpp"
#include "harness/scenario/preset_ab.hpp"
#include "harness/scenario/workload.hpp"

namespace encbench {
namespace {

using testpaths::source_dir;

scenario::WorkloadModel vision_arena() {
  return scenario::load_workload(source_dir() / "scenarios/workloads/vision-arena-bench-v0.1.json");
}

std::int64_t text_total(const std::vector<scenario::WorkloadRequest>& rs) {
  std::int64_t t = 0;
  for (const auto& r : rs) t += r.text_tokens;
  return t;
}

std::int64_t output_total(const std::vector<scenario::WorkloadRequest>& rs) {
  std::int64_t t = 0;
  for (const auto& r : rs) t += r.output_tokens;
  return t;
}

TEST(SampleTotals, TextMeetsItsTotalByOneFactorAndNothingElseMoves) {
  const scenario::WorkloadModel m = vision_arena();
  for (std::uint64_t seed = 0; seed < 5; ++seed) {
    const auto free = scenario::sample_workload(m, 10, seed);
    // #5810's ten prompts: 7,191 text tokens, about ten times what ten draws give.
    const auto held = scenario::sample_workload(m, 10, seed, {.requests = 10, .text_tokens = 7191});
    ASSERT_EQ(held.size(), 10u);
    EXPECT_EQ(text_total(held), 7191) << seed;
    const double factor = 7191.0 / static_cast<double>(text_total(free));
    for (std::size_t i = 0; i < held.size(); ++i) {
      // One factor for every row, up to the rounding that meets the total.
      EXPECT_NEAR(static_cast<double>(held[i].text_tokens), static_cast<double>(free[i].text_tokens) * factor, 1.0);
      EXPECT_EQ(held[i].image_width, free[i].image_width);
      EXPECT_EQ(held[i].image_height, free[i].image_height);
      EXPECT_EQ(held[i].output_tokens, free[i].output_tokens);  // no output total: the free draw
      EXPECT_EQ(held[i].content_hash, free[i].content_hash);
    }
  }
  // Down as well as up, and each prompt keeps at least one token.
  const auto small = scenario::sample_workload(m, 50, 3, {.requests = 50, .text_tokens = 60});
  EXPECT_EQ(text_total(small), 60);
  for (const auto& r : small) EXPECT_GE(r.text_tokens, 1);
}

TEST(SampleTotals, DuplicatesRepeatTheirRowsScaledTextAndTheTotalCountsThem) {
  scenario::WorkloadModel m = vision_arena();
  m.dataset_rows = 40;  // 100 requests: 40 rows, then 60 duplicates as vLLM's client appends them
  const auto held = scenario::sample_workload(m, 100, 1, {.requests = 100, .text_tokens = 9000});
  int largest_multiplicity = 1;
  std::vector<int> sent(40, 0);
  for (const auto& r : held) largest_multiplicity = std::max(largest_multiplicity, ++sent[static_cast<std::size_t>(r.row)]);
  for (std::size_t i = 40; i < held.size(); ++i)
    EXPECT_EQ(held[i].text_tokens, held[static_cast<std::size_t>(held[i].row)].text_tokens) << i;
  // Exact unless the rows that could take the last tokens are all sent more often than that.
  EXPECT_LE(text_total(held), 9000);
  EXPECT_GT(text_total(held), 9000 - largest_multiplicity);
}

TEST(SampleTotals, OutputLengthsAreTheNearestDrawAndTheFreeOneWhenItIsNearEnough) {
  const scenario::WorkloadModel m = vision_arena();
  const auto free = scenario::sample_workload(m, 10, 0);
  // #5810 generated 1,004 tokens in ten requests capped at 128: more early stops than p = 0.08
  // gives, found among the candidates.
  const auto held = scenario::sample_workload(m, 10, 0, {.requests = 10, .output_tokens = 1004});
  EXPECT_NEAR(static_cast<double>(output_total(held)), 1004.0, 10.0);
  int early = 0;
  for (std::size_t i = 0; i < held.size(); ++i) {
    ASSERT_GE(held[i].output_tokens, 1);
    ASSERT_LE(held[i].output_tokens, 128);
    early += held[i].output_tokens < 128;
    EXPECT_EQ(held[i].text_tokens, free[i].text_tokens);  // the prompts stay the free draw's
  }
  EXPECT_GE(early, 3);  // 276 tokens short of 1,280 take at least three early stops (each < 128)
  // A total the free draw already meets within 0.1 % keeps the free draw.
  const auto big = scenario::sample_workload(m, 1000, 2);
  const auto same = scenario::sample_workload(m, 1000, 2, {.requests = 1000, .output_tokens = output_total(big) + 3});
  for (std::size_t i = 0; i < big.size(); ++i) ASSERT_EQ(same[i].output_tokens, big[i].output_tokens) << i;
}

TEST(SampleTotals, ATotalNoDrawComesNearIsMetByMoreEarlyStopsOrMoreCappedRequests) {
  const scenario::WorkloadModel m = vision_arena();
  // 200 requests average 122.9 tokens (s.d. of the sum ~280): 21,894 (vllm-ascend #776's 200 rows,
  // 109.5 a request) lies ~9 s.d. below, 25,500 ~3 s.d. above the mean and near the cap of 25,600.
  for (const std::int64_t target : {std::int64_t{21894}, std::int64_t{25500}, std::int64_t{200}, std::int64_t{25600}}) {
    const auto held = scenario::sample_workload(m, 200, 3, {.requests = 200, .output_tokens = target});
    EXPECT_EQ(output_total(held), target);
    int early = 0;
    for (const auto& r : held) {
      ASSERT_GE(r.output_tokens, 1);
      ASSERT_LE(r.output_tokens, 128);
      early += r.output_tokens < 128;
    }
    if (target == 21894) {
      // At least 6,106 tokens short of the cap: at least 48 early stops (each < 128), and the new
      // ones at the workload's uniform lengths, so about twice that.
      EXPECT_GE(early, 48);
      EXPECT_LE(early, 160);
    }
    if (target == 25600) EXPECT_EQ(early, 0);
  }
}

TEST(SampleTotals, TotalsOfAnotherRequestCountOrImpossibleOnesAreRefused) {
  const scenario::WorkloadModel m = vision_arena();
  const auto free = scenario::sample_workload(m, 12, 4);
  // Totals of a 10-request run say nothing of a 12-request sample: the draws stand.
  const auto other = scenario::sample_workload(m, 12, 4, {.requests = 10, .text_tokens = 7191, .output_tokens = 1004});
  for (std::size_t i = 0; i < free.size(); ++i) {
    EXPECT_EQ(other[i].text_tokens, free[i].text_tokens);
    EXPECT_EQ(other[i].output_tokens, free[i].output_tokens);
  }
  EXPECT_THROW(scenario::sample_workload(m, 10, 0, {.requests = 10, .text_tokens = 9}), InvalidInput);
  EXPECT_THROW(scenario::sample_workload(m, 10, 0, {.requests = 10, .output_tokens = 9}), InvalidInput);
  EXPECT_THROW(scenario::sample_workload(m, 10, 0, {.requests = 10, .output_tokens = 1281}), InvalidInput);
  EXPECT_NO_THROW(scenario::sample_workload(m, 10, 0, {.requests = 10, .output_tokens = 1280}));
}

std::string error_of(const nlohmann::json& doc) {
  try {
    (void)scenario::apply_scenario_json(doc, "s.json");
  } catch (const InvalidInput& e) {
    return e.what();
  }
  return "";
}

TEST(SampleTotals, TheScenarioKeyNeedsItsRequestCountAndSource) {
  const nlohmann::json good = {{"sample_totals", {{"requests", 10}, {"text_tokens", 7191}, {"source", "#5810"}}}};
  const scenario::PresetAbOptions o = scenario::apply_scenario_json(good, "s.json");
  EXPECT_EQ(o.sample_totals.requests, 10);
  EXPECT_EQ(o.sample_totals.text_tokens, 7191);
  EXPECT_EQ(o.sample_totals.output_tokens, 0);
  EXPECT_EQ(o.sample_totals_source, "#5810");
  // The result's scenario writes them in the key's own form: they read back.
  const scenario::PresetAbOptions again =
      scenario::apply_scenario_json({{"sample_totals", scenario::to_json(o)["sample_totals"]}}, "again.json");
  EXPECT_EQ(again.sample_totals.requests, 10);
  EXPECT_EQ(again.sample_totals.text_tokens, 7191);
  EXPECT_EQ(again.sample_totals_source, "#5810");
  EXPECT_FALSE(scenario::to_json(scenario::PresetAbOptions{}).contains("sample_totals"));  // none known
  EXPECT_NE(error_of({{"sample_totals", {{"requests", 10}, {"text_tokens", 7191}}}}).find("s.json: sample_totals: source is missing"),
            std::string::npos);
  EXPECT_NE(error_of({{"sample_totals", {{"text_tokens", 7191}, {"source", "x"}}}}).find("requests is missing"),
            std::string::npos);
  EXPECT_NE(error_of({{"sample_totals", {{"requests", 10}, {"text_tokens", -1}, {"source", "x"}}}}).find("must not be negative"),
            std::string::npos);
  EXPECT_NE(error_of({{"sample_totals", {{"requests", 10}, {"input_tokens", 5}, {"source", "x"}}}}).find("unknown key \"input_tokens\""),
            std::string::npos);
  EXPECT_NE(error_of({{"sample_totals", 7191}}).find("must be an object"), std::string::npos);
  // Totals condition a workload's draws; without one there is nothing to condition.
  scenario::PresetAbOptions bare = o;
  bare.clock = scenario::RunClock::virtual_time;
  bare.device = "sim:ascend-910b";
  bare.presets = {"baseline", "optimized"};
  EXPECT_THROW(scenario::validate(bare), InvalidInput);
  bare.workload = "w.json";
  EXPECT_NO_THROW(scenario::validate(bare));
}

TEST(SampleTotals, AVirtualRunReportsThePublishedTotalsItWasGiven) {
  const auto dir = testpaths::temp_dir("sample-totals", "run");
  scenario::PresetAbOptions o = testing::small_virtual_run(dir, "sample-totals-test", 10, 2);
  o.presets = {"baseline", "baseline"};
  o.workload = source_dir() / "scenarios/workloads/vision-arena-bench-v0.1.json";
  o.serving_model = dir / "serving.json";
  // No run-to-run noise, so each run generates exactly the conditioned lengths.
  std::ofstream(o.serving_model) << R"({"schema": "encbench-serving-model", "name": "test",
    "lm_fixed_ms": {"value": 20, "source": "test"}, "step_time_cv": {"value": 0, "source": "test"}})";
  o.sample_totals = {.requests = 10, .text_tokens = 7191, .output_tokens = 1004};
  o.sample_totals_source = "test";
  o.published = {{"source", "test"},
                 {"role", "prediction"},
                 {"before", {{"total_input_tokens", 7191}, {"mean_ttft_ms", 100}}},
                 {"after", {{"total_input_tokens", 7191}, {"mean_ttft_ms", 100}}}};
  std::ostringstream out, progress;
  const nlohmann::json r = scenario::run_preset_ab(o, {"test"}, out, progress).result;
  // The totals it was drawn to meet are its input, marked so; the rest are predictions.
  for (const nlohmann::json& row : r["published_comparison"]["rows"])
    EXPECT_EQ(row.value("conditioned", false), row["metric"] == "total_input_tokens") << row.dump();
  EXPECT_NE(out.str().find("Total input tokens (input)"), std::string::npos);
  EXPECT_EQ(out.str().find("TTFT (ms) (input)"), std::string::npos);
  for (int arm = 0; arm < 2; ++arm)
    for (int seed = 0; seed < 2; ++seed) {
      const nlohmann::json& s = r["arms"][arm]["seeds"][seed]["serving"];
      EXPECT_EQ(s["total_input_tokens"].get<std::int64_t>(), 7191);
      EXPECT_NEAR(s["total_output_tokens"].get<double>(), 1004.0, 10.0);
    }
  EXPECT_EQ(r["scenario"]["sample_totals"]["text_tokens"], 7191);
}

}  // namespace
}  // namespace encbench
