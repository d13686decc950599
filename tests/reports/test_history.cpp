// SQLite history: record, list, trend, baseline reset, and compare --baseline history:N.
#include <gtest/gtest.h>

#include "harness/core/error.hpp"
#include "reports/compare.hpp"
#include "reports/history.hpp"
#include "test_support.hpp"

namespace encbench::reports {
namespace {

// A summary-only serving run whose throughput and mean TTFT are given.
RunResult run_with(double throughput, double mean_ttft) {
  auto doc = test::crafted_serving(1, 20, 1.0);
  for (const char* k : {"ttfts", "itls", "latencies", "start_times", "errors", "output_lens"}) doc.erase(k);
  doc["request_throughput"] = throughput;
  doc["mean_ttft_ms"] = mean_ttft;
  return parse_result(doc, "run.json");
}

TEST(History, RecordListTrendAndReset) {
  const auto dir = test::temp_dir("history");
  History h(dir / "h.sqlite");
  const double tputs[] = {10.0, 10.2, 9.9, 10.1, 10.0};
  for (double t : tputs) h.record(run_with(t, 600), "abc123");
  const auto runs = h.list();
  ASSERT_EQ(runs.size(), 5u);
  EXPECT_EQ(runs.front().git_sha, "abc123");
  EXPECT_EQ(runs.front().run.kind, ResultKind::serving);
  EXPECT_NE(runs.front().run.find("request_throughput"), nullptr);
  const auto trend = h.trend("request_throughput");
  ASSERT_EQ(trend.size(), 5u);
  EXPECT_DOUBLE_EQ(trend[1].value, 10.2);

  const RunResult probe = run_with(10, 600);
  EXPECT_EQ(h.baseline_for(probe, 3).size(), 3u);
  EXPECT_EQ(h.baseline_for(probe, 50).size(), 5u);
  EXPECT_EQ(h.reset_baseline("*", "accepted faster kernel"), 1u);
  EXPECT_THROW(h.baseline_for(probe, 3), InvalidInput);  // nothing since the reset
  h.record(run_with(12.0, 500));
  EXPECT_EQ(h.baseline_for(probe, 3).size(), 1u);
  EXPECT_TRUE(h.list().back().before_reset);
  EXPECT_FALSE(h.list().front().before_reset);
}

TEST(History, PredictionIntervalJudgesASingleRun) {
  const auto dir = test::temp_dir("history-pi");
  History h(dir / "h.sqlite");
  const double tputs[] = {10.0, 10.3, 9.8, 10.1, 9.9, 10.2, 10.0, 9.7, 10.1, 10.0};
  const double ttfts[] = {600, 612, 590, 605, 598, 610, 601, 595, 603, 599};
  for (int i = 0; i < 10; ++i) h.record(run_with(tputs[i], ttfts[i]));
  const Gate gate = default_gate();
  // Within the spread of history: passes.
  const Comparison ok = compare_with_history(h.baseline_for(run_with(0, 0), 10), run_with(9.75, 611), gate);
  EXPECT_EQ(ok.exit_code(), 0);
  for (const auto& r : ok.rows)
    if (r.name == "request_throughput") {
      EXPECT_EQ(r.method, "t prediction interval");
      ASSERT_TRUE(r.interval_low.has_value());
      EXPECT_LT(*r.interval_low, 9.75);
    }
  // A 10% throughput drop leaves the interval and the threshold: a regression.
  const Comparison bad = compare_with_history(h.baseline_for(run_with(0, 0), 10), run_with(9.0, 600), gate);
  EXPECT_EQ(bad.exit_code(), 1);
  // A 10% TTFT rise as well.
  const Comparison slow = compare_with_history(h.baseline_for(run_with(0, 0), 10), run_with(10.0, 665), gate);
  EXPECT_EQ(slow.exit_code(), 1);
}

TEST(History, RunsThatFailedTheirGateStayOutOfTheBaseline) {
  const auto dir = test::temp_dir("history-fail");
  History h(dir / "h.sqlite");
  h.record(run_with(10.0, 600), "", "pass");
  h.record(run_with(5.0, 900), "", "fail");
  h.record(run_with(10.1, 602));
  const auto baseline = h.baseline_for(run_with(0, 0), 10);
  ASSERT_EQ(baseline.size(), 2u);
  for (const auto& r : baseline) EXPECT_GT(r.find("request_throughput")->value, 9.0);
  EXPECT_EQ(h.list().size(), 3u);  // still listed
}

TEST(History, RejectsAFileThatIsNotADatabase) {
  const auto dir = test::temp_dir("history-bad");
  test::write_json(dir / "not.sqlite", {{"x", 1}});
  EXPECT_THROW(History(dir / "not.sqlite"), InvalidInput);
}

}  // namespace
}  // namespace encbench::reports
