// The U test, the t quantile and the significance floor against values computed with
// scipy 1.10.1 (Debian 12 python3-scipy):
//   scipy.stats.mannwhitneyu(x, y, alternative="two-sided")   (method="auto")
//   scipy.stats.t.ppf(p, df)
#include <gtest/gtest.h>

#include "harness/judgement/distributions.hpp"

#include <vector>

#include "harness/core/stats.hpp"
#include "reports/compare.hpp"

namespace encbench::reports {
namespace {

struct UCase {
  const char* name;
  std::vector<double> x, y;
  double u1, p;
  bool exact;
};

std::vector<double> linspace_40() {
  std::vector<double> y;
  for (int i = 0; i < 40; ++i) y.push_back(0.5 + 0.75 * i);
  return y;
}

TEST(MannWhitneyReference, MatchesScipy) {
  const std::vector<UCase> cases = {
      {"3v3 disjoint, exact", {1, 2, 3}, {4, 5, 6}, 0.0, 0.1, true},
      {"scipy docs example, exact", {19, 22, 16, 29, 24}, {20, 11, 17, 12}, 17.0, 0.1111111111111111, true},
      // One small sample against a large one: scipy is exact (only BOTH > 8 is asymptotic).
      {"5v40, exact", {1.05, 3.05, 5.05, 7.05, 9.05}, linspace_40(), 33.0, 0.012806126249121143, true},
      {"ties, asymptotic", {1, 2, 2, 3, 3, 3, 4, 5, 6, 7}, {2, 3, 4, 4, 5, 6, 6, 7, 8, 9, 9}, 26.5,
       0.04682250687805345, false},
      {"12v15, asymptotic",
       {12.1, 13.5, 11.8, 14.2, 12.9, 13.1, 12.4, 15.0, 11.9, 12.7, 13.8, 14.6},
       {13.9, 14.8, 15.2, 13.3, 16.1, 14.4, 15.7, 14.9, 16.4, 13.6, 15.5, 14.1, 16.8, 15.9, 14.7}, 20.0,
       0.0006957390617381193, false},
  };
  for (const auto& c : cases) {
    const auto r = stats::mann_whitney_u(c.x, c.y);
    EXPECT_DOUBLE_EQ(r.u1, c.u1) << c.name;
    EXPECT_NEAR(r.p_value, c.p, 1e-12 + 1e-9 * c.p) << c.name;
    EXPECT_EQ(r.exact, c.exact) << c.name;
  }
}

TEST(MannWhitneyReference, SymmetricInItsArguments) {
  const std::vector<double> x = {12.1, 13.5, 11.8, 14.2, 12.9, 13.1, 12.4, 15.0, 11.9};
  const std::vector<double> y = {13.9, 14.8, 15.2, 13.3, 16.1, 14.4, 15.7};
  const auto a = stats::mann_whitney_u(x, y), b = stats::mann_whitney_u(y, x);
  EXPECT_NEAR(a.p_value, b.p_value, 1e-15);
  EXPECT_DOUBLE_EQ(a.u1 + b.u1, static_cast<double>(x.size() * y.size()));
}

TEST(MannWhitneyReference, LargeExactStaysCheap) {
  // 8 against 20000 is exact in scipy; the q-binomial construction keeps it O(m^2 n).
  std::vector<double> small = {1, 2, 3, 4, 5, 6, 7, 8}, large;
  for (int i = 0; i < 20000; ++i) large.push_back(8.5 + i);
  const auto r = stats::mann_whitney_u(small, large);
  EXPECT_TRUE(r.exact);
  // All of x below all of y: p = 2 / C(20008, 8), far below any alpha.
  EXPECT_GT(r.p_value, 0.0);
  EXPECT_LT(r.p_value, 1e-25);
}

TEST(StudentT, QuantilesMatchScipy) {
  EXPECT_NEAR(judgement::student_t_quantile(0.995, 4), 4.604094871415897, 1e-9);
  EXPECT_NEAR(judgement::student_t_quantile(0.975, 9), 2.2621571627409915, 1e-9);
  EXPECT_NEAR(judgement::student_t_quantile(0.975, 29), 2.045229642132703, 1e-9);
  EXPECT_NEAR(judgement::student_t_quantile(0.95, 2), 2.919985580355516, 1e-9);
  EXPECT_NEAR(judgement::student_t_quantile(0.025, 9), -2.2621571627409915, 1e-9);
}

}  // namespace
}  // namespace encbench::reports
