// The judgement rule against independent references (mpmath's incomplete beta at 30 digits, and
// hand computations): the t test on round
// values, the bootstrap on requests, not-testable single values, deterministic thresholds and the
// history prediction interval; and the guarantee that a change beyond the printed MDE is
// significant (the contradiction `bench ab` once printed: -22 % NOISY under a 3 % MDE).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "harness/core/error.hpp"
#include "harness/core/stats.hpp"
#include "harness/judgement/distributions.hpp"
#include "harness/judgement/judgement.hpp"

namespace encbench::judgement {
namespace {

const StatisticKind kMean{StatisticKind::Kind::mean, 0};
const StatisticKind kValue{StatisticKind::Kind::value, 0};
const StatisticKind kP99{StatisticKind::Kind::percentile, 99};

Evidence rounds(std::vector<double> values) {
  Evidence e;
  e.rounds = values;
  e.value = stats::median(values);
  return e;
}

TEST(Distributions, MatchAnIndependentComputation) {
  // mpmath: findroot of 1 - betainc(df/2, 1/2, 0, df/(df+t^2), regularized)/2 = p
  EXPECT_NEAR(student_t_quantile(0.975, 4), 2.776445105197793, 1e-9);
  EXPECT_NEAR(student_t_quantile(0.8, 4), 0.9409645772351814, 1e-9);
  EXPECT_NEAR(student_t_quantile(0.995, 4), 4.604094871415897, 1e-9);
  EXPECT_NEAR(student_t_quantile(0.025, 9), -2.2621571627409915, 1e-9);
  EXPECT_NEAR(normal_quantile(0.975), 1.959963984540054, 1e-9);
  EXPECT_NEAR(student_t_cdf(2.0, 5), 0.9490302605850709, 1e-9);
  EXPECT_THROW(student_t_quantile(1.0, 3), InvalidInput);
}

TEST(Judgement, RoundsTestIsTheTwoSampleTOnLogs) {
  // Student's pooled two-sample t on log(b) - log(a), a = [100, 104, 98], b = [90, 93, 91]
  // (Python + mpmath): t = -4.87214, p = 0.00820699 (df 4); change exp(mean log b - mean log a) - 1
  // = -9.2523 %.
  const Judgement j = judge(rounds({100, 104, 98}), rounds({90, 93, 91}), kMean, false, {});
  EXPECT_EQ(j.test, "t on log round values");
  ASSERT_TRUE(j.p_value && j.change && j.ci_low && j.ci_high && j.mde);
  EXPECT_NEAR(*j.p_value, 0.00820699, 1e-7);
  EXPECT_NEAR(*j.change, -0.0925226, 1e-6);
  EXPECT_LT(*j.ci_low, *j.change);
  EXPECT_GT(*j.ci_high, *j.change);
  EXPECT_LT(*j.ci_high, 0);  // significant: the interval excludes 0
  EXPECT_EQ(j.verdict, Verdict::faster);
  EXPECT_EQ(j.rounds_a, 3u);
  EXPECT_EQ(j.rounds_b, 3u);
  // The same rounds with higher-is-better (a throughput) are SLOWER.
  EXPECT_EQ(judge(rounds({100, 104, 98}), rounds({90, 93, 91}), kValue, true, {}).verdict, Verdict::slower);
}

TEST(Judgement, PairedRoundsCancelWhatTheSeedsShare) {
  // Seeds whose levels differ twofold, each B 5 % faster than its own A (Python + mpmath):
  // paired t on the log ratios t = -17.9367, p = 0.000377926 (df 3), change -5.1679 %; the same
  // rounds unpaired: p = 0.8111 (the seeds' spread swamps the change).
  const Evidence a = rounds({100, 200, 150, 120}), b = rounds({95, 191, 142, 113});
  const Judgement paired = judge(a, b, kMean, false, {}, RoundDesign::paired);
  EXPECT_EQ(paired.test, "paired t on log round ratios");
  ASSERT_TRUE(paired.p_value && paired.change && paired.mde);
  EXPECT_NEAR(*paired.p_value, 0.000377926, 1e-8);
  EXPECT_NEAR(*paired.change, -0.0516791, 1e-6);
  EXPECT_EQ(paired.verdict, Verdict::faster);
  const Judgement unpaired = judge(a, b, kMean, false, {});
  ASSERT_TRUE(unpaired.p_value);
  EXPECT_NEAR(*unpaired.p_value, 0.811106, 1e-5);
  EXPECT_EQ(unpaired.verdict, Verdict::same);
  // Unequal round counts cannot pair: the independent test is used.
  EXPECT_EQ(judge(a, rounds({95, 191, 142}), kMean, false, {}, RoundDesign::paired).test, "t on log round values");
}

TEST(Judgement, SignificantButWithinTheThresholdIsSame) {
  const Judgement j = judge(rounds({100, 100.1, 99.9, 100}), rounds({102, 102.1, 101.9, 102}), kMean, false, {});
  ASSERT_TRUE(j.p_value);
  EXPECT_LT(*j.p_value, 1e-6);
  EXPECT_EQ(j.verdict, Verdict::same);
  EXPECT_NE(j.reason.find("within the 5 % threshold"), std::string::npos) << j.reason;
}

TEST(Judgement, AChangeBeyondTheMdeIsAlwaysSignificant) {
  // Many random round sets: whenever |change| >= MDE, the verdict is FASTER/SLOWER.
  std::uint64_t state = 12345;
  int beyond = 0;
  for (int i = 0; i < 2000; ++i) {
    std::vector<double> a, b;
    for (int r = 0; r < 3; ++r) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      a.push_back(100 + static_cast<double>(state >> 40) / (1 << 24) * 30);
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      b.push_back(70 + static_cast<double>(state >> 40) / (1 << 24) * 60);
    }
    const Judgement j = judge(rounds(a), rounds(b), kMean, false, {});
    ASSERT_TRUE(j.change && j.mde);
    if (std::fabs(*j.change) < *j.mde) continue;
    ++beyond;
    EXPECT_TRUE(j.verdict == Verdict::faster || j.verdict == Verdict::slower) << *j.change << " vs MDE " << *j.mde;
  }
  EXPECT_GT(beyond, 50);
}

TEST(Judgement, OneValueASideIsNotTestable) {
  Evidence a, b;
  a.value = 100;
  b.value = 60;  // -40 %: still no noise estimate
  const Judgement j = judge(a, b, kValue, true, {});
  EXPECT_EQ(j.verdict, Verdict::noisy);
  EXPECT_EQ(j.test, "not testable");
  EXPECT_FALSE(j.mde.has_value());
  EXPECT_NE(j.settle.find("rounds"), std::string::npos) << j.settle;
  // A latency statistic of one value a side also points at --save-detailed.
  EXPECT_NE(judge(a, b, kMean, false, {}).settle.find("--save-detailed"), std::string::npos);
}

TEST(Judgement, TooFewRequestsForAPercentileIsNotTestable) {
  Evidence a, b;
  for (int i = 0; i < 100; ++i) a.requests.push_back(100 + i), b.requests.push_back(300 + i);
  a.value = compute(kP99, a.requests);
  b.value = compute(kP99, b.requests);
  const Judgement j = judge(a, b, kP99, false, {});
  EXPECT_EQ(j.verdict, Verdict::noisy);
  EXPECT_NE(j.settle.find("500 requests"), std::string::npos) << j.settle;
  // The mean of the same requests is testable, and 3x slower is SLOWER.
  a.value = compute(kMean, a.requests);
  b.value = compute(kMean, b.requests);
  EXPECT_EQ(judge(a, b, kMean, false, {}).verdict, Verdict::slower);
}

TEST(Judgement, MeansOfOneRunASideUseTheDeltaMethod) {
  // Requests 1..200 against the same scaled by 1.02: the interval of the log ratio is
  // +- t * sqrt(var_a / (n mean_a^2) + var_b / (n mean_b^2)), the same relative spread both sides.
  Evidence a, b;
  for (int i = 1; i <= 200; ++i) a.requests.push_back(i), b.requests.push_back(1.02 * i);
  a.value = compute(kMean, a.requests);
  b.value = compute(kMean, b.requests);
  const Judgement j = judge(a, b, kMean, false, {});
  EXPECT_EQ(j.test, "t on the log ratio of means");
  ASSERT_TRUE(j.change && j.ci_low && j.ci_high);
  EXPECT_NEAR(*j.change, 0.02, 1e-9);
  const double se = std::sqrt(2.0) * stats::stdev_sample(a.requests) / a.value / std::sqrt(200.0);
  const double half_width = std::log1p(*j.ci_high) - std::log(1.02);
  EXPECT_NEAR(half_width, student_t_quantile(0.975, 398) * se, 1e-9);
  EXPECT_EQ(j.verdict, Verdict::same);  // 2 % is within the 5 % threshold and far from significant
  EXPECT_NE(j.caveat.find("blind to drift"), std::string::npos);
}

TEST(Judgement, BootstrapOfTheMedianMatchesItsOrderStatisticInterval) {
  // 400 exponential-like requests a side, B's median 30 % higher: the bootstrap's interval of the
  // log ratio has the width the distribution-free order-statistic interval of each median gives.
  Evidence a, b;
  for (int i = 1; i <= 400; ++i) {
    const double q = (i - 0.5) / 400.0;
    a.requests.push_back(-100 * std::log(1 - q));
    b.requests.push_back(-130 * std::log(1 - q));
  }
  const StatisticKind median{StatisticKind::Kind::median, 50};
  a.value = compute(median, a.requests);
  b.value = compute(median, b.requests);
  const Judgement j = judge(a, b, median, false, {});
  EXPECT_EQ(j.test, "bootstrap of the statistic");
  ASSERT_TRUE(j.change && j.ci_low && j.ci_high);
  EXPECT_NEAR(*j.change, 0.30, 0.01);
  // Order-statistic 95 % interval of a median of 400: ranks 200 +- 1.96 * 10, i.e. quantiles
  // 0.451..0.549: log half-width of each median ~ (log(1-0.451) - log(1-0.549)) / 2 / log 2
  // relative; both sides add in quadrature.
  const double one = (std::log(1 - 0.451) - std::log(1 - 0.549)) / 2 / std::log(2.0);
  const double half_width = (std::log1p(*j.ci_high) - std::log1p(*j.ci_low)) / 2;
  EXPECT_NEAR(half_width, std::sqrt(2.0) * one, 0.25 * std::sqrt(2.0) * one);
  EXPECT_EQ(j.verdict, Verdict::slower);
}

TEST(Judgement, DeterministicIsJudgedByTheThresholdAlone) {
  Evidence a, b;
  a.value = 1000;
  b.value = 1011;
  a.deterministic = b.deterministic = true;
  Settings s;
  s.threshold = 0.01;
  EXPECT_EQ(judge(a, b, kValue, false, s).verdict, Verdict::slower);
  b.value = 1009;
  EXPECT_EQ(judge(a, b, kValue, false, s).verdict, Verdict::same);
}

TEST(Judgement, HistoryPredictionInterval) {
  // History 100, 102, 98, 101, 99 (logs): a new 120 lies far outside; 101 inside.
  const std::vector<double> h = {100, 102, 98, 101, 99};
  EXPECT_EQ(judge_against_history(h, 120, false, {}).verdict, Verdict::slower);
  EXPECT_EQ(judge_against_history(h, 101, false, {}).verdict, Verdict::same);
  EXPECT_EQ(judge_against_history(std::vector<double>{100}, 120, false, {}).verdict, Verdict::noisy);
}

TEST(Judgement, SettingsOutOfRangeNameTheFlag) {
  Settings s;
  s.alpha = 0.7;
  try {
    validate(s);
    FAIL();
  } catch (const InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find("--alpha must be in (0, 0.5)"), std::string::npos) << e.what();
  }
  s = {};
  s.threshold = 1.5;
  EXPECT_THROW(validate(s), InvalidInput);
  s = {};
  s.power = 0.4;
  EXPECT_THROW(validate(s), InvalidInput);
}

}  // namespace
}  // namespace encbench::judgement
