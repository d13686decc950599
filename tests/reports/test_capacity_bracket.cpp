// Capacity at an SLO bracketed or bounded: the bracketing of load points worked out by hand (all
// pass, all fail, a bracket, a pass above a fail, one point), the seeds' brackets merged, the words
// every report prints, the JSON round trip, and the sweep page's headline.
#include <gtest/gtest.h>

#include <limits>

#include "reports/capacity_bracket.hpp"
#include "reports/sweep_html.hpp"

namespace encbench::reports {
namespace {

CapacityBracket bracket(std::vector<SloOutcome> outcomes) { return bracket_capacity(std::move(outcomes)); }

TEST(CapacityBracket, EveryPointPassingIsALowerBound) {
  const CapacityBracket b = bracket({{5, true}, {10, true}, {20, true}, {40, true}});
  EXPECT_EQ(b.kind, BracketKind::at_least);
  EXPECT_EQ(b.low, 40.0);
  EXPECT_FALSE(b.high);
  EXPECT_EQ(describe_bracket(b, "req/s"), ">= 40 req/s: no point failed; extend --sweep");
}

TEST(CapacityBracket, EveryPointFailingIsAnUpperBound) {
  const CapacityBracket b = bracket({{10, false}, {5, false}, {20, false}});
  EXPECT_EQ(b.kind, BracketKind::below_lowest);
  EXPECT_FALSE(b.low);
  EXPECT_EQ(b.high, 5.0);
  EXPECT_EQ(describe_bracket(b, "req/s"), "< 5 req/s: every point failed");
}

TEST(CapacityBracket, APassThenAFailBracketsIt) {
  // Given out of order, as a live sweep's points and its bisection's probes come.
  const CapacityBracket b = bracket({{40, false}, {5, true}, {30, false}, {10, true}, {25, true}, {20, true}});
  EXPECT_EQ(b.kind, BracketKind::bracketed);
  EXPECT_EQ(b.low, 25.0);
  EXPECT_EQ(b.high, 30.0);
  EXPECT_TRUE(b.passes_above.empty());
  EXPECT_EQ(describe_bracket(b, "req/s"), "between 25 and 30 req/s");
  EXPECT_EQ(describe_bracket(bracket({{8, true}, {16, false}}), load_unit("max-concurrency")),
            "between 8 and 16 concurrent requests");
}

TEST(CapacityBracket, APassAboveAFailIsSaidPlainly) {
  const CapacityBracket b = bracket({{5, true}, {10, true}, {20, false}, {40, true}, {80, false}, {160, true}});
  EXPECT_EQ(b.kind, BracketKind::not_monotone);
  EXPECT_EQ(b.low, 10.0);
  EXPECT_EQ(b.high, 20.0);
  EXPECT_EQ(b.passes_above, (std::vector<double>{40, 160}));
  EXPECT_EQ(describe_bracket(b, "req/s"),
            "not monotone: 40, 160 req/s met the SLO above a failure at 20 req/s; below that failure: between 10 "
            "and 20 req/s");
  // The lowest point failing and a higher one passing: no bracket below the failure.
  const CapacityBracket first = bracket({{5, false}, {10, true}});
  EXPECT_EQ(first.kind, BracketKind::not_monotone);
  EXPECT_FALSE(first.low);
  EXPECT_NE(describe_bracket(first, "req/s").find("below that failure: < 5 req/s"), std::string::npos);
}

TEST(CapacityBracket, OnePointIsABoundEitherWay) {
  EXPECT_EQ(bracket({{7, true}}).kind, BracketKind::at_least);
  EXPECT_EQ(bracket({{7, true}}).low, 7.0);
  EXPECT_EQ(bracket({{7, false}}).kind, BracketKind::below_lowest);
  EXPECT_EQ(bracket({{7, false}}).high, 7.0);
  EXPECT_EQ(bracket({}).kind, BracketKind::none);
  // One load measured twice: a failure at it counts.
  EXPECT_EQ(bracket({{7, true}, {7, false}}).kind, BracketKind::below_lowest);
}

TEST(CapacityBracket, SeedsMergeIntoOneRangeOrABound) {
  const CapacityBracket a = bracket({{4, true}, {6, true}, {8, false}});
  const CapacityBracket b = bracket({{4, true}, {7, true}, {9, false}});
  const CapacityBracket both = merge_brackets({a, b});
  EXPECT_EQ(both.kind, BracketKind::bracketed);
  EXPECT_EQ(both.low, 6.0);
  EXPECT_EQ(both.high, 9.0);
  const CapacityBracket ceiling = bracket({{512, true}, {1024, true}});
  const CapacityBracket bound = merge_brackets({a, ceiling});
  EXPECT_EQ(bound.kind, BracketKind::at_least);
  EXPECT_EQ(bound.low, 6.0);
  EXPECT_FALSE(bound.high);  // one seed never failed
  EXPECT_EQ(merge_brackets({a, bracket({{0.25, false}})}).kind, BracketKind::below_lowest);
}

TEST(CapacityBracket, JsonRoundTripKeepsAnInfiniteLoad) {
  const double inf = std::numeric_limits<double>::infinity();
  const CapacityBracket b = bracket({{10, true}, {inf, true}});
  const nlohmann::json j = to_json(b);
  EXPECT_EQ(j["kind"], "at_least");
  EXPECT_EQ(j["low"], "inf");
  EXPECT_TRUE(j["high"].is_null());
  const CapacityBracket back = bracket_from_json(j);
  EXPECT_EQ(back.kind, BracketKind::at_least);
  EXPECT_EQ(back.low, inf);
  const CapacityBracket odd = bracket_from_json(to_json(bracket({{5, true}, {10, false}, {20, true}})));
  EXPECT_EQ(odd.kind, BracketKind::not_monotone);
  EXPECT_EQ(odd.passes_above, std::vector<double>{20});
}

// A live sweep's document with its capacity bracket as `bench sweep` writes it.
nlohmann::json live_sweep(const nlohmann::json& bracket_json) {
  nlohmann::json arm = {{"meets_slo", true}};
  for (const char* key : {"request_throughput", "mean_ttft_ms", "p99_ttft_ms", "mean_tpot_ms", "p99_tpot_ms",
                          "output_throughput"})
    arm[key] = {{"mean", 1.0}};
  return {{"schema", "encbench-sweep"},
          {"presets", {"server"}},
          {"clock", "real"},
          {"model", {{"description", "live server"}}},
          {"slo", "ttft p99 <= 2000 ms"},
          {"points", {{{"variable", "request-rate"}, {"value", 5}, {"arms", {arm}}, {"verdicts", nlohmann::json::object()}}}},
          {"capacity", {{"slo", "ttft p99 <= 2000 ms"}, {"highest_passing", 40}, {"lowest_failing", nullptr},
                        {"capacity_bracket", bracket_json}}}};
}

TEST(CapacityBracket, TheSweepPageHeadlineSaysBracketedOrBound) {
  const std::string bound = render_sweep_html(live_sweep(to_json(bracket({{5, true}, {40, true}}))));
  EXPECT_NE(bound.find("<h1 id=\"sweep-verdict\" class=\"invalid\">server: capacity at ttft p99 &lt;= 2000 ms: &gt;= 40 req/s: no point "
                       "failed; extend --sweep</h1>"),
            std::string::npos)
      << bound;
  const std::string bracketed = render_sweep_html(live_sweep(to_json(bracket({{20, true}, {40, false}}))));
  EXPECT_NE(bracketed.find("<h1 id=\"sweep-verdict\" class=\"pass\">server: capacity at ttft p99 &lt;= 2000 ms: between 20 and 40 req/s</h1>"),
            std::string::npos)
      << bracketed;
  const std::string failed = render_sweep_html(live_sweep(to_json(bracket({{5, false}}))));
  EXPECT_NE(failed.find("<h1 id=\"sweep-verdict\" class=\"fail\">"), std::string::npos) << failed;
  EXPECT_NE(failed.find("&lt; 5 req/s: every point failed"), std::string::npos) << failed;
  // A result from before brackets: its highest passing load, said to be unbracketed.
  nlohmann::json old = live_sweep(nullptr);
  old["capacity"].erase("capacity_bracket");
  EXPECT_NE(render_sweep_html(old).find("not bracketed"), std::string::npos);
}

}  // namespace
}  // namespace encbench::reports
