// A real server's run-to-run noise as declared data (step_time_cv), each published
// change beside the model's 90 % interval for one run, and the serving model naming the
// encoder's host model.
#include <gtest/gtest.h>

#include "tests/scenario/scenario_test_paths.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/core/error.hpp"
#include "harness/scenario/preset_ab.hpp"
#include "harness/scenario/published_table.hpp"
#include "harness/serving/serving_model.hpp"

namespace encbench {
namespace {

std::filesystem::path write_serving_model(const std::filesystem::path& dir, double step_time_cv) {
  const auto path = dir / "serving.json";
  std::ofstream(path) << R"({"schema": "encbench-serving-model", "name": "test",
    "lm_fixed_ms": {"value": 20, "source": "test"},
    "step_time_cv": {"value": )" << step_time_cv << R"(, "source": "test"},
    "encoder_host_model": {"name": "torch-npu-eager", "source": "test"}})";
  return path;
}

// An A/A: the same preset on both arms, so any difference between them is the modelled noise.
nlohmann::json run_aa(double step_time_cv, const std::string& name) {
  const auto dir = testpaths::temp_dir("noise", name);
  scenario::PresetAbOptions o;
  o.name = "noise-test";
  o.model = "qwen3-vl-8b";
  o.device = "sim:ascend-910b";
  o.profiles_dir = testpaths::source_dir() / "scenarios/devices";
  o.presets = {"pr7104", "pr7104"};
  o.num_prompts = 24;
  o.request_rate = 4;
  o.output_len = 12;
  o.image_width = 448;
  o.image_height = 448;
  o.rounds = 1;
  o.profile = false;
  o.clock = scenario::RunClock::virtual_time;
  o.seeds = 2;
  o.outputs.result_dir = dir;
  o.outputs.result_file = dir / "r.json";
  o.serving_model = write_serving_model(dir, step_time_cv);
  std::ostringstream out, progress;
  return scenario::run_preset_ab(o, {"test"}, out, progress).result;
}

double ttft(const nlohmann::json& r, int arm, int seed) {
  return r["arms"][arm]["seeds"][seed]["serving"]["mean_ttft_ms"].get<double>();
}

}  // namespace

TEST(RunNoise, StepJitterMakesTheTwoRunsOfAnAADifferReproducibly) {
  const nlohmann::json quiet = run_aa(0, "quiet");
  const nlohmann::json noisy = run_aa(0.05, "noisy");
  const nlohmann::json again = run_aa(0.05, "again");
  for (int seed = 0; seed < 2; ++seed) {
    EXPECT_EQ(ttft(quiet, 0, seed), ttft(quiet, 1, seed));  // no noise: an A/A is exact
    EXPECT_NE(ttft(noisy, 0, seed), ttft(noisy, 1, seed));  // each arm is its own run
    EXPECT_EQ(ttft(noisy, 1, seed), ttft(again, 1, seed));  // drawn from seeds: reproducible
    // Mean-1 factors of 5 %: the levels move by a few per cent, not more.
    EXPECT_NEAR(ttft(noisy, 0, seed), ttft(quiet, 0, seed), 0.1 * ttft(quiet, 0, seed));
  }
}

TEST(RunNoise, EachPublishedChangeHasTheOneRunIntervalAndWhetherItIsInside) {
  const nlohmann::json published = {
      {"source", "test"},
      {"before", {{"mean_ttft_ms", 100.0}, {"request_throughput", 10.0}}},
      {"after", {{"mean_ttft_ms", 97.0}, {"request_throughput", 10.5}}}};
  // Five seeds; After / Before - 1 of mean TTFT per seed: -10, -5, 0, +5, +10 %.
  std::vector<std::vector<nlohmann::json>> per_seed(2);
  const double changes[] = {-0.10, -0.05, 0.0, 0.05, 0.10};
  for (double c : changes) {
    per_seed[0].push_back({{"mean_ttft_ms", 100.0}, {"request_throughput", 10.0}});
    per_seed[1].push_back({{"mean_ttft_ms", 100.0 * (1 + c)}, {"request_throughput", 10.0}});
  }
  std::ostringstream out;
  const scenario::PublishedComparison comparison = scenario::compare_published(published, per_seed);
  scenario::print_published_comparison(out, comparison, {"A", "B"});
  const nlohmann::json j = scenario::to_json(comparison);
  ASSERT_EQ(j["rows"].size(), 2u);
  for (const auto& row : j["rows"]) {
    const auto& c = row["change"];
    EXPECT_EQ(c["interval_seeds"], 5);
    if (row["metric"] == "mean_ttft_ms") {
      // The t prediction interval for one further run on the log ratios, from numpy and the t
      // table (t(0.95, 4) = 2.131846786): x = log1p([-.1, -.05, 0, .05, .1]),
      // 100 * expm1(x.mean() -+ 2.131846786 * x.std(ddof=1) * sqrt(1 + 1/5)) = -17.1171, +20.0479.
      // Wider than the seeds' own 5th..95th percentiles (-9, +9), which a sixth run falls outside
      // of far more often than one time in ten.
      EXPECT_NEAR(c["one_run_p05_pct"].get<double>(), -17.1171218, 1e-4);
      EXPECT_NEAR(c["one_run_p95_pct"].get<double>(), 20.0478580, 1e-4);
      EXPECT_TRUE(c["published_inside"].get<bool>());  // -3 %
    } else {
      EXPECT_NEAR(c["one_run_p05_pct"].get<double>(), 0.0, 1e-9);
      EXPECT_FALSE(c["published_inside"].get<bool>());  // +5 % outside [0, 0]
    }
  }
  EXPECT_NE(out.str().find("one run, 90 %"), std::string::npos);
  EXPECT_NE(j["interval_method"].get<std::string>().find("prediction interval"), std::string::npos);
}

TEST(RunNoise, ServingModelNamesTheEncoderHostModelWithASource) {
  const auto ok = serving::parse_serving_model(
      {{"encoder_host_model", {{"name", "torch-npu-eager"}, {"source", "s"}}},
       {"step_time_cv", {{"value", 0.05}, {"source", "s"}}}},
      "m.json");
  EXPECT_EQ(ok.encoder_host_model, "torch-npu-eager");
  EXPECT_DOUBLE_EQ(ok.step_time_cv.value, 0.05);
  const auto back = serving::parse_serving_model(serving::to_json(ok), "back");
  EXPECT_EQ(back.encoder_host_model, "torch-npu-eager");
  EXPECT_EQ(serving::parse_serving_model(nlohmann::json::object(), "m.json").encoder_host_model, "dispatch-only");
  auto error_of = [](const nlohmann::json& doc) {
    try {
      (void)serving::parse_serving_model(doc, "m.json");
    } catch (const InvalidInput& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  const std::string no_source = error_of({{"encoder_host_model", {{"name", "x"}}}});
  EXPECT_NE(no_source.find("m.json: encoder_host_model"), std::string::npos) << no_source;
  EXPECT_NE(error_of({{"encoder_host_model", "torch-npu-eager"}}).find("encoder_host_model"), std::string::npos);
  const std::string cv = error_of({{"step_time_cv", {{"value", 0.9}, {"source", "s"}}}});
  EXPECT_NE(cv.find("step_time_cv"), std::string::npos) << cv;
  EXPECT_NE(cv.find("outside [0"), std::string::npos) << cv;
}

}  // namespace encbench
