// Intended changes (compare --accept GLOB=REASON, ci-gate's "Gate-Accept:" lines): a matching
// regression or violated exact check is shown ACCEPTED and does not fail; everything else is
// judged as before.
#include <gtest/gtest.h>

#include "harness/core/error.hpp"
#include "reports/compare.hpp"
#include "reports/result.hpp"
#include "reports/tables.hpp"

namespace encbench::reports {
namespace {

using nlohmann::json;

// Two counters-only rows as encbench-instr writes them.
RunResult instr(double kernel_instructions, double layer_instructions, double syncs) {
  json rows = json::array();
  rows.push_back({{"name", "instr/kernels/k"}, {"run_name", "instr/kernels/k"}, {"run_type", "iteration"},
                  {"repetitions", 1}, {"repetition_index", 0}, {"iterations", 1},
                  {"instructions", kernel_instructions}});
  rows.push_back({{"name", "instr/encoder/e"}, {"run_name", "instr/encoder/e"}, {"run_type", "iteration"},
                  {"repetitions", 1}, {"repetition_index", 0}, {"iterations", 1},
                  {"host_instructions_per_forward", layer_instructions}, {"syncs_per_forward", syncs}});
  return parse_result(json{{"context", {{"executable", "encbench-instr"}}}, {"benchmarks", rows}}, "instr.json");
}

Gate gate_with_sync_check() {
  Gate gate = default_gate();
  gate.exact.push_back({"instr/encoder/e/syncs_per_forward", std::nullopt, {}});
  return gate;
}

const MetricComparison& row(const Comparison& c, const std::string& name) {
  for (const auto& r : c.rows)
    if (r.name == name) return r;
  throw std::runtime_error("no row " + name);
}

const std::string kKernel = "instr/kernels/k/instructions";
const std::string kLayer = "instr/encoder/e/host_instructions_per_forward";

TEST(AcceptedChanges, OnlyTheMatchingRegressionIsAccepted) {
  // Both deterministic metrics 5 % worse (beyond the 1 % rule): two regressions.
  Comparison c = compare_runs(instr(1000000, 20000, 0), instr(1050000, 21000, 0), default_gate());
  ASSERT_EQ(c.regression_count(), 2u);
  const std::size_t n = apply_accepted_changes(c, {{"instr/kernels/*", "packing for the new microkernel"}});
  EXPECT_EQ(n, 1u);
  EXPECT_EQ(c.regression_count(), 1u);  // the unmatched one still fails
  EXPECT_EQ(c.exit_code(), 1);
  EXPECT_FALSE(row(c, kKernel).regression);
  EXPECT_EQ(row(c, kKernel).accepted, "packing for the new microkernel");
  EXPECT_EQ(row(c, kKernel).verdict, Verdict::slower);  // the verdict itself is not rewritten
  EXPECT_TRUE(row(c, kLayer).regression);
  EXPECT_TRUE(row(c, kLayer).accepted.empty());
  const json j = to_json(c);
  int accepted_rows = 0;
  for (const auto& r : j["metrics"])
    if (r.contains("accepted")) {
      ++accepted_rows;
      EXPECT_EQ(r["metric"], kKernel);
      EXPECT_EQ(r["regression"], false);
    }
  EXPECT_EQ(accepted_rows, 1);
  EXPECT_EQ(j["regressions"], 1);
}

TEST(AcceptedChanges, AllAcceptedPassesAndTheTableSaysSo) {
  Comparison c = compare_runs(instr(1000000, 20000, 0), instr(1050000, 21000, 0), default_gate());
  apply_accepted_changes(c, {{"instr/*", "host time modelled"}});
  EXPECT_EQ(c.regression_count(), 0u);
  EXPECT_EQ(c.exit_code(), 0);
  const std::string table = render_terminal(c);
  EXPECT_NE(table.find("ACCEPTED: host time modelled"), std::string::npos) << table;
  EXPECT_NE(table.find("PASS (2 intended changes accepted)"), std::string::npos) << table;
  EXPECT_NE(render_markdown(c).find("**ACCEPTED**"), std::string::npos);
}

TEST(AcceptedChanges, ImprovementsAndUnchangedMetricsAreNotMarked) {
  Comparison c = compare_runs(instr(1000000, 20000, 0), instr(900000, 20000, 0), default_gate());
  EXPECT_EQ(apply_accepted_changes(c, {{"*", "anything"}}), 0u);
  for (const auto& r : c.rows) EXPECT_TRUE(r.accepted.empty()) << r.name;
}

TEST(AcceptedChanges, ViolatedExactCheckCanBeAccepted) {
  Comparison c = compare_runs(instr(1000000, 20000, 0), instr(1000000, 20000, 1), gate_with_sync_check());
  ASSERT_EQ(c.regression_count(), 1u);
  EXPECT_EQ(apply_accepted_changes(c, {{"*syncs_per_forward", "the fused kernel needs one host sync"}}), 1u);
  EXPECT_EQ(c.regression_count(), 0u);
  int accepted_checks = 0;
  for (const auto& e : c.exact) {
    if (e.metric != "instr/encoder/e/syncs_per_forward") {
      EXPECT_TRUE(e.accepted.empty()) << e.metric;  // the default gate's other (inapplicable) checks
      continue;
    }
    ++accepted_checks;
    EXPECT_EQ(e.accepted, "the fused kernel needs one host sync");
    EXPECT_TRUE(e.passed);
  }
  EXPECT_EQ(accepted_checks, 1);
  int accepted_json = 0;
  const json doc = to_json(c);  // kept: a range-for over a temporary's member would dangle
  for (const auto& e : doc["exact_checks"])
    if (e.contains("accepted")) ++accepted_json;
  EXPECT_EQ(accepted_json, 1);
}

TEST(AcceptedChanges, SpecNeedsGlobAndReason) {
  const AcceptedChange a = parse_accepted_change("*virtual*=modelled host time = data", "--accept");
  EXPECT_EQ(a.match, "*virtual*");
  EXPECT_EQ(a.reason, "modelled host time = data");  // only the first '=' splits
  EXPECT_THROW(parse_accepted_change("*virtual*", "--accept"), InvalidInput);
  EXPECT_THROW(parse_accepted_change("=reason", "--accept"), InvalidInput);
  EXPECT_THROW(parse_accepted_change("glob=", "--accept"), InvalidInput);
}

}  // namespace
}  // namespace encbench::reports
