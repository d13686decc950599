// Deterministic metrics (instruction counts, virtual-clock times): parsed from encbench-instr's
// counters-only Google Benchmark JSON and from encode/ab results on the virtual clock, and judged
// by threshold alone (no U test), with the samples' own range as the floor.
#include <gtest/gtest.h>

#include "harness/core/error.hpp"
#include "reports/compare.hpp"
#include "reports/result.hpp"
#include "reports/tables.hpp"

namespace encbench::reports {
namespace {

using nlohmann::json;

// An encbench-instr result: one counters-only iteration row per case.
json instr_doc(double kernel_instructions, double layer3_instructions) {
  json rows = json::array();
  rows.push_back({{"name", "instr/kernels/attention/fused_varlen/d80/1x256"},
                  {"run_name", "instr/kernels/attention/fused_varlen/d80/1x256"},
                  {"run_type", "iteration"}, {"repetitions", 1}, {"repetition_index", 0},
                  {"iterations", 1}, {"instructions", kernel_instructions}});
  rows.push_back({{"name", "instr/encoder/forward/tiny/sim/optimized"},
                  {"run_name", "instr/encoder/forward/tiny/sim/optimized"},
                  {"run_type", "iteration"}, {"repetitions", 1}, {"repetition_index", 0},
                  {"iterations", 3}, {"host_instructions_per_forward", 200000.0},
                  {"host_instructions_layer_3", layer3_instructions}, {"syncs_per_forward", 0.0}});
  return {{"context", {{"executable", "encbench-instr"}}}, {"benchmarks", rows}};
}

RunResult instr(double kernel, double layer3 = 9000) { return parse_result(instr_doc(kernel, layer3), "instr.json"); }

const MetricComparison& row(const Comparison& c, const std::string& name) {
  for (const auto& r : c.rows)
    if (r.name == name) return r;
  throw std::runtime_error("no row " + name);
}

const std::string kKernel = "instr/kernels/attention/fused_varlen/d80/1x256/instructions";
const std::string kLayer3 = "instr/encoder/forward/tiny/sim/optimized/host_instructions_layer_3";

TEST(DeterministicParsing, CountersOnlyRowsBecomeGatedCosts) {
  const RunResult r = instr(13227729);
  const Metric* m = r.find(kKernel);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->group, MetricGroup::latency);
  EXPECT_EQ(m->better, Better::lower);
  EXPECT_EQ(m->unit, "instructions");
  EXPECT_DOUBLE_EQ(m->value, 13227729);
  // No times in these rows: no real_time / cpu_time metrics invented.
  EXPECT_EQ(r.find("instr/kernels/attention/fused_varlen/d80/1x256/real_time"), nullptr);
  // Not an instruction count: informational (the gate file checks it exactly).
  const Metric* syncs = r.find("instr/encoder/forward/tiny/sim/optimized/syncs_per_forward");
  ASSERT_NE(syncs, nullptr);
  EXPECT_EQ(syncs->better, Better::none);
  EXPECT_TRUE(deterministic_by_name(kKernel));
  EXPECT_TRUE(deterministic_by_name("a.virtual_forward_ms.median"));
  EXPECT_FALSE(deterministic_by_name("forward_ms.median"));
}

TEST(DeterministicCompare, IdenticalCountsAreSameWithoutWarnings) {
  const Comparison c = compare_runs(instr(13227729), instr(13227729), default_gate());
  const auto& k = row(c, kKernel);
  EXPECT_EQ(k.method, "deterministic");
  EXPECT_TRUE(k.deterministic);
  EXPECT_TRUE(k.rule.gated);
  EXPECT_DOUBLE_EQ(k.rule.relative, 0.01);
  EXPECT_EQ(k.verdict, Verdict::same);
  EXPECT_FALSE(k.p_value.has_value());
  EXPECT_TRUE(c.warnings.empty()) << c.warnings.front();
  EXPECT_EQ(c.exit_code(), 0);
  const json j = to_json(c);
  bool found = false;
  for (const auto& r : j["metrics"])
    if (r["metric"] == kKernel) {
      found = true;
      EXPECT_EQ(r["method"], "deterministic");
      EXPECT_EQ(r["deterministic"], true);
      EXPECT_DOUBLE_EQ(r["sample_range_relative"].get<double>(), 0.0);
    }
  EXPECT_TRUE(found);
}

TEST(DeterministicCompare, OnePercentThresholdFromASingleRun) {
  // +1.5 %: a regression from one run per side (no samples, no noise floor).
  Comparison c = compare_runs(instr(1000000), instr(1015000), default_gate());
  EXPECT_EQ(row(c, kKernel).verdict, Verdict::slower);
  EXPECT_TRUE(row(c, kKernel).regression);
  EXPECT_EQ(c.exit_code(), 1);
  // +0.5 %: below the threshold.
  c = compare_runs(instr(1000000), instr(1005000), default_gate());
  EXPECT_EQ(row(c, kKernel).verdict, Verdict::same);
  EXPECT_EQ(c.exit_code(), 0);
  // -3 %: an improvement never fails.
  c = compare_runs(instr(1000000), instr(970000), default_gate());
  EXPECT_EQ(row(c, kKernel).verdict, Verdict::faster);
  EXPECT_EQ(c.exit_code(), 0);
  // +3 % in one layer only is caught in that layer's counter.
  c = compare_runs(instr(1000000, 9000), instr(1000000, 9270), default_gate());
  EXPECT_EQ(row(c, kLayer3).verdict, Verdict::slower);
  EXPECT_EQ(row(c, kKernel).verdict, Verdict::same);
}

TEST(DeterministicCompare, JunitAndMarkdownNameTheKind) {
  const Comparison c = compare_runs(instr(1000000), instr(1015000), default_gate());
  const std::string junit = render_junit(c);
  EXPECT_NE(junit.find("[deterministic] instr/kernels/attention/fused_varlen/d80/1x256 instructions"), std::string::npos)
      << junit;
  EXPECT_NE(junit.find("failures=\"1\""), std::string::npos);
  const std::string md = render_markdown(c);
  EXPECT_NE(md.find("SLOWER (deterministic) **REGRESSION** | deterministic"), std::string::npos) << md;
}

TEST(DeterministicCompare, ScatteredRunsOfADeterministicNameGetTheWallClockRule) {
  // Merged runs of a "deterministic" metric that did scatter by 3 %: the premise of the
  // deterministic rule does not hold, so compare says so and judges it like wall-clock data
  // (3 vs 3 runs: the t test on the runs' log values): a 2 % change stays SAME, a 15 % change is
  // still caught.
  auto runs = [](std::vector<double> values) {
    std::vector<RunResult> rs;
    for (double v : values) rs.push_back(instr(v));
    return merge_runs(rs);
  };
  const RunResult base = runs({1000000, 1030000, 1015000});
  Comparison c = compare_runs(base, runs({1035000, 1036000, 1034000}), default_gate());
  EXPECT_EQ(row(c, kKernel).verdict, Verdict::same) << row(c, kKernel).reason;
  EXPECT_FALSE(row(c, kKernel).deterministic);
  EXPECT_NE(row(c, kKernel).method, "deterministic");
  EXPECT_NE(row(c, kKernel).reason.find("samples within one run differ (BASE range 2.956%"), std::string::npos)
      << row(c, kKernel).reason;
  EXPECT_EQ(row(c, kKernel).method, "t on log round values");
  c = compare_runs(base, runs({1160000, 1161000, 1159000}), default_gate());
  EXPECT_EQ(row(c, kKernel).verdict, Verdict::slower) << row(c, kKernel).reason;
  // Identical runs keep the deterministic rule.
  c = compare_runs(runs({1000000, 1000000}), runs({1000000, 1000000}), default_gate());
  EXPECT_TRUE(row(c, kKernel).deterministic);
  EXPECT_EQ(row(c, kKernel).method, "deterministic");
}

TEST(DeterministicCompare, GateFileSetsTheThreshold) {
  json g = {{"schema", "encbench-gate"}, {"schema_version", 1},
            {"deterministic", {{"relative", 0.05}}}};
  Gate gate = parse_gate_file(g, "gate.json");
  EXPECT_EQ(compare_runs(instr(1000000), instr(1030000), gate).exit_code(), 0);
  EXPECT_EQ(compare_runs(instr(1000000), instr(1060000), gate).exit_code(), 1);
  // A pattern still overrides, e.g. not gating one case.
  g["metrics"] = json::array({{{"match", "instr/kernels/*"}, {"gate", false}}});
  gate = parse_gate_file(g, "gate.json");
  const Comparison c = compare_runs(instr(1000000), instr(1060000), gate);
  EXPECT_FALSE(row(c, kKernel).rule.gated);
  EXPECT_EQ(c.exit_code(), 0);
  // Typos are errors, not silently ignored thresholds.
  g["deterministic"] = {{"relativ", 0.05}};
  EXPECT_THROW(parse_gate_file(g, "gate.json"), InvalidInput);
  g["deterministic"] = 0.05;
  EXPECT_THROW(parse_gate_file(g, "gate.json"), InvalidInput);
}

// An encode result; `host_time` "model" repeats exactly (identical samples), "measured" (host
// CPU time) scatters like a measurement.
json encode_doc(const std::string& clock, double scale, const std::string& host_time = "model") {
  json samples = json::array();
  const std::vector<double> values = host_time == "measured" ? std::vector<double>{10.0, 10.01, 9.99, 10.0, 10.02}
                                                             : std::vector<double>(5, 10.0);
  for (double v : values) samples.push_back(v * scale);
  json doc = {{"schema", "encbench-encode"}, {"schema_version", 1}, {"model", "tiny"},
              {"device", {{"kind", "sim:ascend-910b"}, {"clock", clock}}}, {"clock", clock},
              {"preset", "optimized"}, {"inputs", {{"images", 1}}},
              {"samples", {{"forward_ms", samples}, {"device_busy_ms", samples}}},
              {"summary", {{"syncs_per_forward", 0}}}};
  if (clock == "virtual") doc["host_time"] = host_time;
  return doc;
}

TEST(DeterministicParsing, EncodeOnTheVirtualClockReportsVirtualTimes) {
  const RunResult v = parse_result(encode_doc("virtual", 1.0), "v.json");
  const Metric* m = v.find("virtual_forward_ms.median");
  ASSERT_NE(m, nullptr);
  EXPECT_DOUBLE_EQ(m->value, 10.0);
  EXPECT_NE(v.find("virtual_device_busy_ms.median"), nullptr);
  EXPECT_NE(v.find("forward_ms.median"), nullptr);  // the wall-clock-style rows stay
  EXPECT_EQ(parse_result(encode_doc("real", 1.0), "r.json").find("virtual_forward_ms.median"), nullptr);
  // +2 % on the virtual clock fails the default gate; forward_ms (5 %, U test) does not.
  const Comparison c = compare_runs(v, parse_result(encode_doc("virtual", 1.02), "v2.json"), default_gate());
  EXPECT_EQ(row(c, "virtual_forward_ms.median").verdict, Verdict::slower);
  EXPECT_TRUE(row(c, "virtual_forward_ms.median").regression);
  EXPECT_FALSE(row(c, "forward_ms.median").regression);
  // ab results: per arm.
  const json ab = {{"schema", "encbench-ab"}, {"schema_version", 1},
                   {"a", encode_doc("virtual", 1.0)}, {"b", encode_doc("virtual", 0.8)}};
  const RunResult r = parse_result(ab, "ab.json");
  ASSERT_NE(r.find("a.virtual_forward_ms.median"), nullptr);
  EXPECT_DOUBLE_EQ(r.find("b.virtual_forward_ms.median")->value, 8.0);
}

TEST(DeterministicParsing, MeasuredHostTimeIsNamedAndJudgedAsAMeasurement) {
  const RunResult v = parse_result(encode_doc("virtual", 1.0, "measured"), "v.json");
  EXPECT_EQ(v.find("virtual_forward_ms.median"), nullptr);
  const Metric* m = v.find("virtual_forward_ms_measured_host.median");
  ASSERT_NE(m, nullptr);
  EXPECT_NE(m->label.find("MEASURED"), std::string::npos) << m->label;
  EXPECT_FALSE(deterministic_by_name(m->name));
  // A result from before host models (virtual clock, no host_time): its host time was CPU time.
  json old = encode_doc("virtual", 1.0, "measured");
  old.erase("host_time");
  EXPECT_NE(parse_result(old, "old.json").find("virtual_forward_ms_measured_host.median"), nullptr);
  // +2 %: a measurement, judged by the default gate's wall-clock rule (5 samples each: threshold
  // and noise floor), not flagged at the deterministic 1 %.
  const Comparison c =
      compare_runs(v, parse_result(encode_doc("virtual", 1.02, "measured"), "v2.json"), default_gate());
  const MetricComparison& r = row(c, "virtual_forward_ms_measured_host.median");
  EXPECT_FALSE(r.deterministic);
  EXPECT_NE(r.method, "deterministic");
  EXPECT_FALSE(r.regression);
}

TEST(DeterministicCompare, ScatteredSamplesOfADeterministicNameGetTheWallClockRule) {
  // A metric named "virtual" whose own samples differ within one run breaks the premise of the
  // deterministic rule: compare says so and falls back to the wall-clock rule.
  json base = encode_doc("virtual", 1.0, "measured"), next = encode_doc("virtual", 1.02, "measured");
  base["host_time"] = "model";  // claims determinism although its samples scatter
  next["host_time"] = "model";
  const Comparison c = compare_runs(parse_result(base, "b.json"), parse_result(next, "n.json"), default_gate());
  const MetricComparison& r = row(c, "virtual_forward_ms.median");
  EXPECT_FALSE(r.deterministic);
  EXPECT_NE(r.method, "deterministic");
  EXPECT_NE(r.reason.find("samples within one run differ"), std::string::npos) << r.reason;
  EXPECT_FALSE(r.regression);  // +2 % is inside the wall-clock rule
  bool warned = false;
  for (const auto& w : c.warnings) warned = warned || w.find("virtual_forward_ms.median") != std::string::npos;
  EXPECT_TRUE(warned);
  // The same +2 % with identical samples on each side stays deterministic and fails at 1 %.
  const Comparison exact =
      compare_runs(parse_result(encode_doc("virtual", 1.0), "b.json"), parse_result(encode_doc("virtual", 1.02), "n.json"),
                   default_gate());
  EXPECT_TRUE(row(exact, "virtual_forward_ms.median").deterministic);
  EXPECT_TRUE(row(exact, "virtual_forward_ms.median").regression);
}

}  // namespace
}  // namespace encbench::reports
