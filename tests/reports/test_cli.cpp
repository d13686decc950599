// The encbench binary's exit codes and files: 0 pass, 1 regression, 2 invalid/mismatched input.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "harness/core/result_json.hpp"
#include "test_support.hpp"

namespace encbench::reports {
namespace {

struct CliRun {
  int code = -1;
  std::string output;
};

CliRun encbench(const std::string& args, const std::filesystem::path& dir) {
  const auto out = dir / "cli-output.txt";
  const std::string cmd = std::string(ENCBENCH_BINARY) + " " + args + " > " + out.string() + " 2>&1";
  const int status = std::system(cmd.c_str());
  CliRun r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream f(out);
  std::stringstream s;
  s << f.rdbuf();
  r.output = s.str();
  return r;
}

// Shell-quoted path (a stream, not operator+: GCC 12 warns falsely about -Wrestrict there).
std::string q(const std::filesystem::path& p) {
  std::ostringstream s;
  s << '\'' << p.string() << '\'';
  return s.str();
}

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = test::temp_dir("cli");
    test::write_json(dir / "base.json", test::crafted_serving(1, 300, 1.0));
    test::write_json(dir / "slow.json", test::crafted_serving(2, 300, 1.10));
    test::write_json(dir / "fast.json", test::crafted_serving(2, 300, 0.90));
    test::write_json(dir / "same.json", test::crafted_serving(3, 300, 1.0));
  }
  std::filesystem::path dir;
};

TEST_F(Cli, RegressionExitsOneAndWritesReports) {
  const CliRun r = encbench("compare " + q(dir / "base.json") + " " + q(dir / "slow.json") + " --junit " +
                             q(dir / "junit.xml") + " --markdown " + q(dir / "table.md") + " --json " +
                             q(dir / "cmp.json"),
                         dir);
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("Mean TTFT (ms)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("REGRESSION"), std::string::npos);
  EXPECT_TRUE(std::filesystem::exists(dir / "junit.xml"));
  EXPECT_TRUE(std::filesystem::exists(dir / "table.md"));
  const auto doc = read_json_file(dir / "cmp.json");
  EXPECT_EQ(doc["schema"], "encbench-compare");
  EXPECT_EQ(doc["exit_code"], 1);
  EXPECT_FALSE(doc["passed"].get<bool>());
}

TEST_F(Cli, ImprovementAndNoiseExitZero) {
  EXPECT_EQ(encbench("compare " + q(dir / "base.json") + " " + q(dir / "fast.json"), dir).code, 0);
  const CliRun same = encbench("compare " + q(dir / "base.json") + " " + q(dir / "same.json"), dir);
  EXPECT_EQ(same.code, 0) << same.output;
}

TEST_F(Cli, MismatchAndBadInputExitTwo) {
  auto other = test::crafted_serving(2, 300, 1.0);
  other["model_id"] = "other/model";
  test::write_json(dir / "other.json", other);
  const CliRun r = encbench("compare " + q(dir / "base.json") + " " + q(dir / "other.json"), dir);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output.find("different models"), std::string::npos) << r.output;
  const CliRun kinds = encbench("compare " + q(dir / "base.json") + " " + q(test::fixture("encode_base.json")), dir);
  EXPECT_EQ(kinds.code, 2);
  EXPECT_NE(kinds.output.find("different kinds"), std::string::npos) << kinds.output;
  std::ofstream(dir / "broken.json") << "{\"completed\": ";
  EXPECT_EQ(encbench("compare " + q(dir / "base.json") + " " + q(dir / "broken.json"), dir).code, 2);
  EXPECT_EQ(encbench("compare " + q(dir / "base.json") + " " + q(dir / "missing.json"), dir).code, 2);
}

TEST_F(Cli, ReportOfAMalformedResultExitsTwo) {
  auto doc = read_json_file(test::fixture("encode_base.json"));
  doc["ops"] = {{{"name", "x"}, {"stream", 0}, {"start_us", "soon"}, {"end_us", 2.0}}};
  test::write_json(dir / "bad_ops.json", doc);
  const CliRun r = encbench("report " + q(dir / "bad_ops.json") + " --html " + q(dir / "r.html"), dir);
  EXPECT_EQ(r.code, 2) << r.output;
  const CliRun ok = encbench("report " + q(test::fixture("ab.json")) + " --html " + q(dir / "ok.html"), dir);
  EXPECT_EQ(ok.code, 0) << ok.output;
  EXPECT_NE(ok.output.find("ab-bars-1"), std::string::npos) << ok.output;
}

TEST_F(Cli, GateFilesFromTheRepositoryParse) {
  const std::filesystem::path gates = test::source_root() / "scenarios" / "gates";
  ASSERT_TRUE(std::filesystem::exists(gates / "ci.json"));
  for (const auto& entry : std::filesystem::directory_iterator(gates)) {
    const CliRun r = encbench("compare " + q(dir / "base.json") + " " + q(dir / "same.json") + " -q --gate " +
                               q(entry.path()),
                           dir);
    EXPECT_EQ(r.code, 0) << entry.path() << "\n" << r.output;
  }
}

// compare --gate EXPR: the one gate language (docs/gates.md) beside or instead of a gate file.
TEST_F(Cli, GateExpressionsDecideAndBadOnesExitTwo) {
  const std::string same = q(dir / "base.json") + " " + q(dir / "same.json");
  const CliRun pass = encbench("compare " + same + " --gate 'mean_ttft_ms<+5%' --json " + q(dir / "c.json"), dir);
  EXPECT_EQ(pass.code, 0) << pass.output;
  EXPECT_NE(pass.output.find("Gate (built-in default + mean_ttft_ms<+5%): PASS"), std::string::npos) << pass.output;
  EXPECT_EQ(read_json_file(dir / "c.json")["exact_checks"].back()["condition"], "mean_ttft_ms<+5%");
  // One value per --gate: BASE and NEW may follow it.
  const CliRun before = encbench("compare --gate 'mean_ttft_ms<+5%' " + same, dir);
  EXPECT_EQ(before.code, 0) << before.output;
  // Same distribution: the change is near 0, never below -5 %.
  const CliRun fail = encbench("compare " + same + " --gate 'mean_ttft_ms < -5%'", dir);
  EXPECT_EQ(fail.code, 1) << fail.output;
  EXPECT_NE(fail.output.find("condition mean_ttft_ms < -5%: NEW vs BASE is"), std::string::npos) << fail.output;
  // A gate file's conditions and an expression beside it.
  test::write_json(dir / "cond.json", {{"schema", "encbench-gate"}, {"conditions", {"completed>=300"}}});
  const CliRun both = encbench("compare " + same + " --gate " + q(dir / "cond.json") + " --gate 'completed>=301'", dir);
  EXPECT_EQ(both.code, 1) << both.output;  // 300 requests completed: the second condition fails
  // The file's condition passes, the argument's fails: one regression, named with what was seen.
  EXPECT_NE(both.output.find("+ completed>=301): FAIL, 1 regression:\n  - Successful requests: condition "
                             "completed>=301: NEW is 300, violated"),
            std::string::npos)
      << both.output;

  const CliRun syntax = encbench("compare " + same + " --gate 'mean_ttft_ms<5%'", dir);
  EXPECT_EQ(syntax.code, 2) << syntax.output;
  EXPECT_NE(syntax.output.find("--gate 'mean_ttft_ms<5%': a percentage is a change"), std::string::npos)
      << syntax.output;
  EXPECT_NE(syntax.output.find("at column 15"), std::string::npos) << syntax.output;
  EXPECT_NE(syntax.output.find("accepted: METRIC OP VALUE"), std::string::npos) << syntax.output;
  const CliRun range = encbench("compare " + same + " --gate 'mean_ttft_ms<-150%'", dir);
  EXPECT_EQ(range.code, 2) << range.output;
  EXPECT_NE(range.output.find("--gate 'mean_ttft_ms<-150%': the threshold -150 % is out of range (a change in "
                              "percent is >= -100 %)"),
            std::string::npos)
      << range.output;
  const CliRun unknown = encbench("compare " + same + " --gate 'mean_tfft_ms<+5%'", dir);
  EXPECT_EQ(unknown.code, 2) << unknown.output;
  EXPECT_NE(unknown.output.find("unknown metric 'mean_tfft_ms' at column 1; valid metrics: "), std::string::npos)
      << unknown.output;
  EXPECT_NE(unknown.output.find("p99_ttft_ms"), std::string::npos) << unknown.output;
  const CliRun missing = encbench("compare " + same + " --gate " + q(dir / "nowhere.json"), dir);
  EXPECT_EQ(missing.code, 2) << missing.output;  // ends in .json: a missing file, not an expression
  EXPECT_EQ(missing.output.find("accepted: METRIC OP VALUE"), std::string::npos) << missing.output;
}

TEST_F(Cli, VllmFixtureAgainstItselfPasses) {
  const CliRun r = encbench("compare " + q(test::fixture("vllm_serve_detailed.json")) + " " +
                             q(test::fixture("vllm_serve_detailed.json")),
                         dir);
  EXPECT_EQ(r.code, 0) << r.output;
}

TEST_F(Cli, HistoryRoundTrip) {
  const auto db = dir / "h.sqlite";
  for (const char* name : {"base.json", "same.json", "base.json"}) {
    const CliRun rec = encbench("history record " + q(dir / name) + " --history " + q(db) + " --git-sha deadbeef", dir);
    ASSERT_EQ(rec.code, 0) << rec.output;
  }
  const CliRun list = encbench("history list --history " + q(db), dir);
  EXPECT_EQ(list.code, 0) << list.output;
  EXPECT_NE(list.output.find("deadbeef"), std::string::npos) << list.output;
  const CliRun trend = encbench("history trend mean_ttft_ms --history " + q(db), dir);
  EXPECT_EQ(trend.code, 0) << trend.output;
  const CliRun cmp = encbench("compare --baseline history:3 " + q(dir / "same.json") + " --history " + q(db), dir);
  EXPECT_EQ(cmp.code, 0) << cmp.output;
  EXPECT_NE(cmp.output.find("history (3 runs)"), std::string::npos) << cmp.output;
  const CliRun reset = encbench("history --reset-baseline --reason accepted --history " + q(db), dir);
  EXPECT_EQ(reset.code, 0) << reset.output;
  // Only the run compare just recorded is left after the reset... none: it was recorded before.
  const CliRun after = encbench("compare --baseline history:3 " + q(dir / "same.json") + " --history " + q(db), dir);
  EXPECT_EQ(after.code, 2) << after.output;
  EXPECT_EQ(encbench("history frobnicate --history " + q(db), dir).code, 2);
}

// A real `bench ab` result (ab.json, schema encbench-live-ab): two `encbench serve --null` arms,
// two rounds of 20 requests each at 50 req/s. "" when bench ab wrote none (the test says why).
std::filesystem::path bench_ab_result(const std::filesystem::path& dir) {
  const std::string serve = std::string(ENCBENCH_BINARY) + " serve --null --port {port}";
  const CliRun r = encbench("bench ab --arm 'base=" + serve + "' --arm 'opt=" + serve + "' --rounds 2 " +
                                "--backend openai-chat --dataset-name random --random-input-len 8 " +
                                "--random-output-len 4 --num-prompts 20 --request-rate 50 --ab-dir " + q(dir / "ab"),
                            dir);
  // On a loaded machine a round may miss its schedule: NO VERDICT (exit 1), ab.json written anyway.
  const bool written = std::filesystem::exists(dir / "ab" / "ab.json");
  EXPECT_TRUE(written && (r.code == 0 || r.code == 1)) << r.code << "\n" << r.output;
  return written ? dir / "ab" / "ab.json" : std::filesystem::path();
}

// report and compare read bench ab's own ab.json, its arms pooled over their rounds as
// `run --clock real`'s result is (they refused it: "schema 'encbench-live-ab' cannot be compared").
TEST_F(Cli, ReportAndCompareReadBenchAbsResult) {
  const std::filesystem::path ab = bench_ab_result(dir);
  ASSERT_FALSE(ab.empty());
  EXPECT_EQ(read_json_file(ab)["schema"], "encbench-live-ab");
  const CliRun report = encbench("report " + q(ab) + " --html " + q(dir / "ab-report.html"), dir);
  EXPECT_EQ(report.code, 0) << report.output;
  EXPECT_TRUE(std::filesystem::exists(dir / "ab-report.html"));
  const CliRun same = encbench("compare " + q(ab) + " " + q(ab) + " --json " + q(dir / "cmp.json"), dir);
  EXPECT_EQ(same.code, 0) << same.output;  // a result against itself: no regression
  EXPECT_EQ(same.output.find("cannot be compared"), std::string::npos) << same.output;
  // Both arms' serving metrics, named by position and labelled with the arm names.
  EXPECT_NE(same.output.find("A (base)"), std::string::npos) << same.output;
  EXPECT_NE(same.output.find("B (opt)"), std::string::npos) << same.output;
  const auto cmp = read_json_file(dir / "cmp.json");
  EXPECT_NE(cmp.dump().find("a.mean_ttft_ms"), std::string::npos);
  // A bench ab result against a single serving run is a mismatch (exit 2), not a crash.
  EXPECT_EQ(encbench("compare " + q(ab) + " " + q(dir / "base.json"), dir).code, 2);
}

// history list: the run's own created_utc (not when `history record` ran), its device, and a kind
// column as wide as its widest value ("preset-ab" ran into the next column at width 9).
TEST_F(Cli, HistoryListShowsTheRunsOwnTimeAndDevice) {
  nlohmann::json old_run = test::crafted_serving(1, 50, 1.0);
  old_run["created_utc"] = "2025-06-01T12:00:00Z";
  // bench serve's result: the client machine has no device, the server said it ran sim:ascend-910b.
  old_run["machine"] = {{"device_kind", "none"}};
  old_run["server_device"] = "sim:ascend-910b";
  test::write_json(dir / "old.json", old_run);
  const auto db = dir / "h.sqlite";
  ASSERT_EQ(encbench("history record " + q(dir / "old.json") + " --history " + q(db), dir).code, 0);
  const std::filesystem::path ab = bench_ab_result(dir);
  ASSERT_FALSE(ab.empty());
  ASSERT_EQ(encbench("history record " + q(ab) + " --history " + q(db), dir).code, 0);
  const CliRun list = encbench("history list --history " + q(db) + " --json " + q(dir / "list.json"), dir);
  ASSERT_EQ(list.code, 0) << list.output;
  EXPECT_NE(list.output.find("2025-06-01T12:00:00Z"), std::string::npos) << list.output;
  EXPECT_NE(list.output.find("sim:ascend-910b"), std::string::npos) << list.output;
  // Every kind is followed by at least two spaces before the device column.
  EXPECT_NE(list.output.find("preset-ab  "), std::string::npos) << list.output;
  EXPECT_EQ(list.output.find("preset-absim"), std::string::npos) << list.output;
  const auto doc = read_json_file(dir / "list.json");
  bool found = false;
  for (const auto& row : doc["runs"])
    if (row["created_utc"] == "2025-06-01T12:00:00Z") {
      found = true;
      EXPECT_EQ(row["device"], "sim:ascend-910b");
      EXPECT_NE(row["recorded_utc"], row["created_utc"]);
    }
  EXPECT_TRUE(found) << doc.dump(1);
}

}  // namespace
}  // namespace encbench::reports

namespace encbench::reports {
namespace {

class CliJudgement : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = test::temp_dir("cli-judgement");
    test::write_json(dir / "base.json", test::crafted_serving(1, 300, 1.0));
    test::write_json(dir / "slow.json", test::crafted_serving(2, 300, 1.10));
  }
  std::filesystem::path dir;
};

TEST_F(CliJudgement, SettingsOutOfRangeExitTwoNamingTheFlagAndRange) {
  const std::string files = q(dir / "base.json") + " " + q(dir / "slow.json");
  const CliRun alpha = encbench("compare " + files + " --alpha 0.7", dir);
  EXPECT_EQ(alpha.code, 2);
  EXPECT_NE(alpha.output.find("--alpha must be in (0, 0.5)"), std::string::npos) << alpha.output;
  const CliRun threshold = encbench("compare " + files + " --threshold 150%", dir);
  EXPECT_EQ(threshold.code, 2);
  EXPECT_NE(threshold.output.find("--threshold expects a percentage in [0, 100)"), std::string::npos) << threshold.output;
  const CliRun power = encbench("compare " + files + " --power 0.3", dir);
  EXPECT_EQ(power.code, 2);
  EXPECT_NE(power.output.find("--power must be in (0.5, 1)"), std::string::npos) << power.output;
}

TEST_F(CliJudgement, TheRuleIsPrintedAndTheFlagsMoveIt) {
  const std::string files = q(dir / "base.json") + " " + q(dir / "slow.json");
  const CliRun by_default = encbench("compare " + files, dir);
  EXPECT_NE(by_default.output.find("Judged at threshold 5 %, alpha 0.05, power 0.80"), std::string::npos)
      << by_default.output;
  EXPECT_EQ(by_default.code, 1) << by_default.output;  // +10 % TTFT over 300 requests a side
  // A 20 % threshold turns the +10 % into SAME: the gate passes, and the rule printed says why.
  const CliRun wide = encbench("compare " + files + " --threshold 20%", dir);
  EXPECT_EQ(wide.code, 0) << wide.output;
  EXPECT_NE(wide.output.find("Judged at threshold 20 %"), std::string::npos) << wide.output;
}

}  // namespace
}  // namespace encbench::reports
