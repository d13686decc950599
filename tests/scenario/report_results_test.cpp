// `encbench report` on what `encbench run` writes: a virtual A/B result and a sweep, produced here
// by the runners themselves (not hand-written fixtures). References: the result's own numbers,
// recomputed independently from its per-seed records (sums and means over seeds), and the
// comparison it carries (its regression count decides PASS / REGRESSION).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "harness/core/error.hpp"
#include "harness/core/result_json.hpp"
#include "harness/scenario/preset_ab.hpp"
#include "harness/scenario/sweep.hpp"
#include "reports/actions.hpp"
#include "reports/tables.hpp"
#include "tests/scenario/scenario_test_paths.hpp"
#include "tests/support/process.hpp"
#include "tests/support/virtual_options.hpp"

namespace encbench {
namespace {

using nlohmann::json;
using testpaths::source_dir;

scenario::PresetAbOptions small(const std::filesystem::path& dir) {
  scenario::PresetAbOptions o = testing::small_virtual_options(dir, "report-test");
  o.num_prompts = 30;
  o.output_len = 8;
  o.clock = scenario::RunClock::virtual_time;
  o.seeds = 3;
  return o;
}

struct Report {
  std::string terminal, html;
  json doc;
};

Report report_of(const std::vector<std::string>& inputs, const std::filesystem::path& dir) {
  reports::ReportOptions r;
  r.inputs = inputs;
  r.html_file = (dir / "report.html").string();
  r.json_file = (dir / "report.json").string();
  std::ostringstream out;
  EXPECT_EQ(reports::run_report(r, out), 0);
  return {out.str(), testing::read_text_file(r.html_file), read_json_file(r.json_file)};
}

bool has_chart(const json& doc, const std::string& id) {
  for (const auto& c : doc["charts"])
    if (c == id) return true;
  return false;
}

double seeds_sum(const json& arm, const char* key) {
  double sum = 0;
  for (const auto& s : arm["seeds"]) sum += s["engine"][key].get<double>();
  return sum;
}

// The virtual A/B's verdict is the comparison it carries; its encoder chart draws the modelled
// device time of the seeds; the published numbers sit beside the model's, and the seeds' spread
// is drawn per arm.
TEST(ReportResults, VirtualAbResultHasItsVerdictPublishedNumbersAndSeedSpread) {
  const auto dir = testpaths::temp_dir("report", "virtual");
  scenario::PresetAbOptions o = small(dir);
  const json seed_file = read_json_file(source_dir() / "scenarios/seeds/pr7104.json");
  o.published = seed_file["published"];
  std::ostringstream out, progress;
  const auto run = scenario::run_virtual_preset_ab(o, {"test"}, out, progress);
  const json& result = run.result;
  ASSERT_TRUE(result.contains("comparison"));

  const Report rep = report_of({run.result_path.string()}, dir);
  // An A/B's own comparison asks no gate: the page leads with mean TTFT's verdict, not PASS.
  EXPECT_FALSE(result["comparison"]["gate_requested"].get<bool>());
  std::string ttft_verdict;
  for (const auto& m : result["comparison"]["metrics"])
    if (m["metric"] == "mean_ttft_ms") ttft_verdict = m["verdict"].get<std::string>();
  ASSERT_FALSE(ttft_verdict.empty());
  EXPECT_EQ(rep.doc["verdict"], ttft_verdict) << rep.terminal;
  EXPECT_NE(rep.html.find("B vs A: Mean TTFT (ms)"), std::string::npos);
  EXPECT_NE(rep.html.find("threshold 5 %, alpha 0.05, power 0.80"), std::string::npos);
  EXPECT_EQ(rep.html.find("NO VERDICT"), std::string::npos);
  EXPECT_NE(rep.html.find("report-test B vs A"), std::string::npos);  // the gate row names the scenario

  // Encoder device time per arm: the seeds' modelled busy time, summed (it was empty before).
  bool encoder_chart = false;
  for (int k = 1; k <= 20; ++k) encoder_chart = encoder_chart || has_chart(rep.doc, "server-encoder-" + std::to_string(k));
  ASSERT_TRUE(encoder_chart) << rep.doc["charts"].dump();
  for (const auto& arm : result["arms"]) {
    const double busy = seeds_sum(arm, "encoder_device_busy_ms");
    EXPECT_GT(busy, 0);
    const std::string title = arm["preset"].get<std::string>() + " busy: " + reports::format_number(busy) + " ms";
    EXPECT_NE(rep.html.find(title), std::string::npos) << title;
  }

  // Published vs model: the model column is the mean over the seeds of the arm's own value.
  EXPECT_TRUE(has_chart(rep.doc, "published-1"));
  double mean_ttft = 0;
  for (const auto& s : result["arms"][0]["seeds"]) mean_ttft += s["serving"]["mean_ttft_ms"].get<double>();
  mean_ttft /= 3;
  const std::string published = reports::format_number(o.published["before"]["mean_ttft_ms"].get<double>());
  const std::string row = "<td>Mean TTFT (ms)</td><td class=\"n\">" + published + "</td><td class=\"n\">" +
                          reports::format_number(mean_ttft) + "</td>";
  EXPECT_NE(rep.html.find(row), std::string::npos) << row;
  EXPECT_NE(rep.html.find("(After vs Before)"), std::string::npos);  // each PR's change
  // ... and how its one-run interval was built, as the result names it.
  const std::string method = result["published_comparison"]["interval_method"].get<std::string>();
  EXPECT_NE(method.find("prediction interval"), std::string::npos);
  EXPECT_NE(rep.html.find("one run, 90 %: Student"), std::string::npos);
  EXPECT_NE(rep.html.find("t prediction interval for one further run on log(After/Before)"), std::string::npos);

  // Spread over seeds: one line per arm, a point per seed.
  EXPECT_TRUE(has_chart(rep.doc, "seeds-1-ttft"));
  EXPECT_TRUE(has_chart(rep.doc, "seeds-1-throughput"));
}

// A run whose A/B has no verdict says why, not PASS; a result without an A/B says so.
TEST(ReportResults, NoVerdictAndNoAbAreSaidInWords) {
  const auto dir = testpaths::temp_dir("report", "noverdict");
  scenario::PresetAbOptions o = small(dir);
  o.seeds = 1;
  std::ostringstream out, progress;
  const auto run = scenario::run_virtual_preset_ab(o, {"test"}, out, progress);
  json invalid = run.result;
  invalid["verdict_valid"] = false;
  invalid["invalid_reasons"] = json::array({"the client could not keep its schedule"});
  invalid.erase("comparison");
  write_json_file(dir / "invalid.json", invalid);
  const Report rep = report_of({(dir / "invalid.json").string()}, dir);
  EXPECT_EQ(rep.doc["verdict"], "NO VERDICT");
  EXPECT_NE(rep.doc["reason"].get<std::string>().find("could not keep its schedule"), std::string::npos);

  // One arm's seed as a plain serving result: no A/B in it.
  json serving = run.result["arms"][0]["seeds"][0]["serving"];
  write_json_file(dir / "serving.json", serving);
  const Report single = report_of({(dir / "serving.json").string()}, dir);
  EXPECT_EQ(single.doc["verdict"], "NO A/B");
  EXPECT_NE(single.doc["reason"].get<std::string>().find("no A/B in these results"), std::string::npos);
}

// A sweep is drawn as its curves with the points' numbers; a sweep missing what they read is
// refused naming the file.
TEST(ReportResults, SweepResultIsDrawnAsCurves) {
  const auto dir = testpaths::temp_dir("report", "sweep");
  scenario::PresetAbOptions o = small(dir);
  o.seeds = 1;
  scenario::SweepOptions w;
  w.sweep = scenario::parse_sweep("request-rate=1,4");
  std::ostringstream out, progress;
  const auto run = scenario::run_virtual_sweep(o, w, {"test"}, out, progress);
  const Report rep = report_of({run.result_path.string()}, dir);
  EXPECT_EQ(rep.doc["verdict"], "NO A/B");
  EXPECT_NE(rep.doc["reason"].get<std::string>().find("sweep"), std::string::npos);
  for (const char* id : {"sweep-1-ttft", "sweep-1-tpot", "sweep-1-throughput", "sweep-1-pareto"})
    EXPECT_TRUE(has_chart(rep.doc, id)) << id;
  const double b_ttft = run.result["points"][1]["arms"][1]["mean_ttft_ms"]["mean"].get<double>();
  char expected[32];
  std::snprintf(expected, sizeof expected, "%.1f", b_ttft);
  EXPECT_NE(rep.html.find(std::string("<td class=\"n\">") + expected + "</td>"), std::string::npos) << expected;

  json broken = run.result;
  broken["points"][0]["arms"][0].erase("p99_ttft_ms");
  write_json_file(dir / "broken.json", broken);
  reports::ReportOptions r;
  r.inputs = {(dir / "broken.json").string()};
  r.html_file = (dir / "broken.html").string();
  std::ostringstream sink;
  try {
    reports::run_report(r, sink);
    FAIL() << "a sweep without p99_ttft_ms was drawn";
  } catch (const InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find("broken.json: points[0]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("p99_ttft_ms"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace encbench
