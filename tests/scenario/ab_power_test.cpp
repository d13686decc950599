// The statistics of `encbench bench ab` on synthetic rounds whose truth is known: per-request TTFTs
// = arm mean x (1 + round drift) x (1 + request noise), both normal with known sd. The verdict
// (reports' pooled comparison, as bench ab runs it) must find a 5 % change where the minimum
// detectable effect says it can, call an A/A pair SAME, and detect an effect of the size the MDE
// names at about the power it promises.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "harness/judgement/distributions.hpp"
#include "harness/core/error.hpp"
#include "harness/core/stats.hpp"
#include "harness/scenario/ab_power.hpp"
#include "harness/scenario/pooled.hpp"
#include "reports/compare.hpp"

namespace encbench::scenario {
namespace {

struct Truth {
  double base_ms = 100;
  double round_sd = 0.02;    // relative drift of a round (shared by its requests)
  double request_sd = 0.20;  // relative spread of one request
  int prompts = 200;
  int rounds = 6;            // per arm
};

// One round of one arm in vLLM's result keys (what bench ab pools).
nlohmann::json synthetic_round(double mean_ms, const Truth& t, std::mt19937_64& rng) {
  std::normal_distribution<double> drift(0.0, t.round_sd), noise(0.0, t.request_sd);
  const double round_factor = 1.0 + drift(rng);
  std::vector<double> ttft_ms, ttft_s, latencies, output_lens;
  for (int i = 0; i < t.prompts; ++i) {
    const double v = std::max(1.0, mean_ms * round_factor * (1.0 + noise(rng)));
    ttft_ms.push_back(v);
    ttft_s.push_back(v / 1e3);
    latencies.push_back(v / 1e3 + 0.1);
    output_lens.push_back(10);
  }
  const double duration = 10.0 * round_factor;
  return {{"completed", t.prompts},
          {"failed", 0},
          {"duration", duration},
          {"request_throughput", t.prompts / duration},
          {"mean_ttft_ms", stats::mean(ttft_ms)},
          {"median_ttft_ms", stats::median(ttft_ms)},
          {"ttfts", ttft_s},
          {"latencies", latencies},
          {"output_lens", output_lens}};
}

struct Outcome {
  reports::Verdict verdict = reports::Verdict::none;
  std::optional<double> mde;
};

// Interleaved rounds of both arms, pooled and compared exactly as bench ab does.
Outcome run_ab(double base_ms, double after_ms, const Truth& t, std::uint64_t seed, const Settings& settings) {
  std::mt19937_64 rng(seed);
  std::vector<nlohmann::json> a, b;
  std::vector<std::string> na, nb;
  for (int r = 0; r < t.rounds; ++r) {
    a.push_back(synthetic_round(base_ms, t, rng));
    b.push_back(synthetic_round(after_ms, t, rng));
    na.push_back("a" + std::to_string(r));
    nb.push_back("b" + std::to_string(r));
  }
  const auto pa = pool_repeats(a, na), pb = pool_repeats(b, nb);
  const auto c = reports::compare_runs(pa, pb, reports::default_gate(settings));
  Outcome out;
  for (const auto& row : c.rows)
    if (row.name == "mean_ttft_ms") out.verdict = row.verdict;
  for (const auto& row : minimum_detectable_effects(pa, pb, c))
    if (row.metric == "mean_ttft_ms") out.mde = row.mde;
  return out;
}

// The declared defaults with a 2 % threshold (bench ab --threshold 2%): these tests look at what
// the spread, not the threshold, lets a run see.
Settings two_percent_threshold() {
  Settings s;
  s.threshold = 0.02;
  return s;
}

TEST(AbPowerTest, SevenPercentFasterIsFoundWhereTheMdeSaysItCanBe) {
  const Truth t;
  int detectable = 0, faster_when_detectable = 0;
  for (std::uint64_t seed = 1; seed <= 10; ++seed) {
    const Outcome o = run_ab(t.base_ms, 0.93 * t.base_ms, t, seed, two_percent_threshold());
    ASSERT_TRUE(o.mde.has_value());
    if (*o.mde > 0.07) continue;
    ++detectable;
    faster_when_detectable += o.verdict == reports::Verdict::faster ? 1 : 0;
  }
  RecordProperty("detectable", detectable);
  RecordProperty("faster_when_detectable", faster_when_detectable);
  EXPECT_GE(detectable, 8);  // round sd 2.4 %, 6 rounds a side: the MDE is about 5 %
  EXPECT_GE(faster_when_detectable, (8 * detectable + 9) / 10);
}

TEST(AbPowerTest, AnAAPairIsSame) {
  const Truth t;
  int same = 0, faster_or_slower = 0;
  for (std::uint64_t seed = 101; seed <= 110; ++seed) {
    const Outcome o = run_ab(t.base_ms, t.base_ms, t, seed, two_percent_threshold());
    same += o.verdict == reports::Verdict::same ? 1 : 0;
    faster_or_slower += o.verdict == reports::Verdict::faster || o.verdict == reports::Verdict::slower ? 1 : 0;
  }
  RecordProperty("same", same);
  EXPECT_GE(same, 9);
  EXPECT_LE(faster_or_slower, 1);
}

// The MDE's promise itself: an effect of the size it names (from the true spread) is found in
// about `power` of the runs; far smaller effects rarely are.
TEST(AbPowerTest, AnEffectOfTheMdeSizeIsFoundAtAboutThePromisedRate) {
  Truth t;
  t.rounds = 5;
  const Settings s = two_percent_threshold();
  // True per-round sd of the mean (drift and the requests' own spread), relative.
  const double round_sd = std::sqrt(t.round_sd * t.round_sd + t.request_sd * t.request_sd / t.prompts);
  const double df = 2.0 * t.rounds - 2.0;
  const double mde = (judgement::student_t_quantile(1 - s.alpha / 2, df) + judgement::student_t_quantile(s.power, df)) *
                     round_sd * std::sqrt(2.0 / t.rounds);
  ASSERT_GT(mde, s.threshold);  // the spread, not the threshold, decides here
  int found = 0, tiny_found = 0, mde_sum_count = 0;
  double mde_sum = 0;
  const int runs = 200;
  for (int seed = 0; seed < runs; ++seed) {
    const Outcome o = run_ab(t.base_ms, t.base_ms * (1.0 - mde), t, 1000 + static_cast<std::uint64_t>(seed), s);
    found += o.verdict == reports::Verdict::faster ? 1 : 0;
    if (o.mde) mde_sum += *o.mde, ++mde_sum_count;
    const Outcome tiny = run_ab(t.base_ms, t.base_ms * (1.0 - 0.25 * mde), t, 5000 + static_cast<std::uint64_t>(seed), s);
    tiny_found += tiny.verdict == reports::Verdict::faster ? 1 : 0;
  }
  const double rate = static_cast<double>(found) / runs;
  RecordProperty("mde_pct", std::to_string(100 * mde));
  RecordProperty("detection_rate", std::to_string(rate));
  RecordProperty("quarter_mde_detection_rate", std::to_string(static_cast<double>(tiny_found) / runs));
  EXPECT_GT(rate, 0.65) << "mde " << mde;
  EXPECT_LT(rate, 0.95) << "mde " << mde;
  EXPECT_LT(static_cast<double>(tiny_found) / runs, 0.25);
  // The runs' own MDE estimates centre on the true one (s_p is unbiased enough for 8 df).
  ASSERT_EQ(mde_sum_count, runs);
  EXPECT_NEAR(mde_sum / runs, mde, 0.15 * mde);
}

TEST(AbPowerTest, PlanGrowsWithSmallerChangesAndMorePromptsHelpOnlyTheWithinPart) {
  Truth t;
  t.rounds = 3;
  std::mt19937_64 rng(7);
  std::vector<nlohmann::json> a, b;
  std::vector<std::string> na, nb;
  for (int r = 0; r < t.rounds; ++r) {
    a.push_back(synthetic_round(t.base_ms, t, rng));
    b.push_back(synthetic_round(t.base_ms, t, rng));
    na.push_back("a" + std::to_string(r));
    nb.push_back("b" + std::to_string(r));
  }
  const auto pa = pool_repeats(a, na), pb = pool_repeats(b, nb);
  const auto s = two_percent_threshold();
  const Plan three = plan_rounds(pa, pb, 0.03, static_cast<std::size_t>(t.prompts), s);
  const Plan one = plan_rounds(pa, pb, 0.01, static_cast<std::size_t>(t.prompts), s);
  const PlanRow* r3 = nullptr;
  const PlanRow* r1 = nullptr;
  for (const auto& r : three.rows)
    if (r.metric == "mean_ttft_ms") r3 = &r;
  for (const auto& r : one.rows)
    if (r.metric == "mean_ttft_ms") r1 = &r;
  ASSERT_TRUE(r3 && r1);
  ASSERT_EQ(r3->rounds_by_prompts.size(), 3u);
  ASSERT_TRUE(r3->rounds_by_prompts[0].second.has_value());
  EXPECT_GE(*r3->rounds_by_prompts[0].second, 2);
  // A third of the change needs about nine times the rounds (or more than the cap).
  if (r1->rounds_by_prompts[0].second) {
    EXPECT_GE(*r1->rounds_by_prompts[0].second, 5 * *r3->rounds_by_prompts[0].second);
  }
  // More prompts per round never need more rounds; the within share is a fraction.
  for (std::size_t i = 1; i < r3->rounds_by_prompts.size(); ++i)
    EXPECT_LE(r3->rounds_by_prompts[i].second.value_or(1000), r3->rounds_by_prompts[i - 1].second.value_or(1000));
  EXPECT_GE(r3->within_share, 0.0);
  EXPECT_LE(r3->within_share, 1.0);
  EXPECT_NE(three.summary.find("rounds per arm of 200 prompts"), std::string::npos) << three.summary;
  // A one-round pilot cannot plan.
  const auto single_a = pool_repeats({a[0]}, {"a0"}), single_b = pool_repeats({b[0]}, {"b0"});
  EXPECT_THROW(plan_rounds(single_a, single_b, 0.03, 200, s), InvalidInput);
}

TEST(AbPowerTest, OneRoundPerArmFallsBackToTheRequestEstimate) {
  Truth t;
  t.rounds = 1;
  const Outcome o = run_ab(t.base_ms, t.base_ms, t, 3, two_percent_threshold());
  ASSERT_TRUE(o.mde.has_value());
  // One run a side: the bootstrap of the mean over requests; its standard error of the log ratio
  // is about sqrt(2) * 20 % / sqrt(200) = 2 %, so the MDE is exp((1.97 + 0.84) * 2 %) - 1 = 5.8 %.
  EXPECT_NEAR(*o.mde, std::expm1(2.815 * std::sqrt(2.0) * t.request_sd / std::sqrt(t.prompts)), 0.01);
}

}  // namespace
}  // namespace encbench::scenario
