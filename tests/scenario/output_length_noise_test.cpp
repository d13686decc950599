// Run-to-run noise from vLLM's sampling. Each run (each arm of a seed) of the same
// prompts stops its requests at EOS in its own places (an early stop moves by a declared CV, or a
// declared share is redrawn from the workload's distribution); everything else it sends stays the
// seed's. Checked against the distribution the workload file declares (cap, early-stop
// probability), and end to end as an A/A.
#include <gtest/gtest.h>

#include "tests/scenario/scenario_test_paths.hpp"
#include "tests/support/virtual_options.hpp"

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/core/error.hpp"
#include "harness/scenario/preset_ab.hpp"
#include "harness/scenario/workload.hpp"
#include "harness/serving/serving_model.hpp"

namespace encbench {
namespace {

using testpaths::source_dir;

scenario::WorkloadModel vision_arena() {
  return scenario::load_workload(source_dir() / "scenarios/workloads/vision-arena-bench-v0.1.json");
}

double total_output(const std::vector<scenario::WorkloadRequest>& requests) {
  double total = 0;
  for (const auto& r : requests) total += static_cast<double>(r.output_tokens);
  return total;
}

TEST(OutputLengthNoise, ARedrawChangesOnlyOutputLengthsWithinTheCap) {
  const scenario::WorkloadModel m = vision_arena();
  const auto sent = scenario::sample_workload(m, 1000, 0);  // 500 rows and 500 duplicates
  auto run = sent;
  scenario::redraw_output_lengths(run, m, {.redraw_share = 1.0}, 42);
  ASSERT_EQ(run.size(), sent.size());
  std::size_t changed = 0;
  for (std::size_t i = 0; i < run.size(); ++i) {
    EXPECT_EQ(run[i].text_tokens, sent[i].text_tokens);
    EXPECT_EQ(run[i].image_width, sent[i].image_width);
    EXPECT_EQ(run[i].image_height, sent[i].image_height);
    EXPECT_EQ(run[i].row, sent[i].row);
    EXPECT_EQ(run[i].content_hash, sent[i].content_hash);
    ASSERT_GE(run[i].output_tokens, 1);
    ASSERT_LE(run[i].output_tokens, m.max_output_tokens);
    changed += run[i].output_tokens != sent[i].output_tokens ? 1 : 0;
  }
  // Two independent draws differ when either stops early and not both at one length:
  // 1 - (0.92^2 + ...) = 15.4 % of 1000, binomial s.d. 11.4: well inside [90, 230].
  EXPECT_GT(changed, 90u);
  EXPECT_LT(changed, 230u);
}

TEST(OutputLengthNoise, EachRunFollowsTheWorkloadsOutputDistributionOnBothSides) {
  scenario::WorkloadModel m = vision_arena();
  m.dataset_rows = 0;  // 20,000 distinct requests: the distribution itself
  const std::size_t n = 20000;
  const auto sent = scenario::sample_workload(m, n, 3);
  // From the file: the cap, or with probability p an EOS uniform in [1, cap).
  const double cap = static_cast<double>(m.max_output_tokens), p = m.early_stop_probability;
  const double mean = (1 - p) * cap + p * cap / 2;
  const double variance = (1 - p) * cap * cap + p * (cap - 1) * (2 * cap - 1) / 6 - mean * mean;
  ASSERT_GT(p, 0.0);  // the test needs early stops to draw
  std::vector<double> totals;
  for (std::uint64_t run_seed : {11u, 12u}) {
    auto run = sent;
    scenario::redraw_output_lengths(run, m, {.redraw_share = 1.0}, run_seed);
    std::size_t early = 0;
    for (const auto& r : run) early += r.output_tokens < m.max_output_tokens ? 1 : 0;
    totals.push_back(total_output(run));
    // The sample mean's standard error is sqrt(variance / n) (0.14 tokens): 7 of them each side.
    EXPECT_NEAR(totals.back() / static_cast<double>(n), mean, 7 * std::sqrt(variance / static_cast<double>(n)));
    EXPECT_NEAR(static_cast<double>(early) / static_cast<double>(n), p,
                7 * std::sqrt(p * (1 - p) / static_cast<double>(n)));
  }
  EXPECT_NE(totals[0], totals[1]);  // two runs, two totals
}

TEST(OutputLengthNoise, AShareRedrawsThatShareAndIsDeterministic) {
  scenario::WorkloadModel m = vision_arena();
  m.dataset_rows = 0;
  const std::size_t n = 20000;
  const auto sent = scenario::sample_workload(m, n, 3);
  auto a = sent, b = sent, zero = sent;
  scenario::redraw_output_lengths(a, m, {.redraw_share = 0.25}, 9);
  scenario::redraw_output_lengths(b, m, {.redraw_share = 0.25}, 9);
  scenario::redraw_output_lengths(zero, m, {}, 9);
  std::size_t changed = 0;
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_EQ(a[i].output_tokens, b[i].output_tokens);      // the same run seed: the same run
    ASSERT_EQ(zero[i].output_tokens, sent[i].output_tokens);  // share 0: the seed's lengths
    changed += a[i].output_tokens != sent[i].output_tokens ? 1 : 0;
  }
  // A redrawn request differs from its sent length with 1 - (1-p)^2 - p^2/(cap-1) (15.35 %);
  // a quarter are redrawn: 3.84 % of 20,000, s.e. 0.14 points.
  const double p = m.early_stop_probability, cap = static_cast<double>(m.max_output_tokens);
  const double expected = 0.25 * (1 - (1 - p) * (1 - p) - p * p / (cap - 1));
  EXPECT_NEAR(static_cast<double>(changed) / static_cast<double>(n), expected,
              7 * std::sqrt(expected * (1 - expected) / static_cast<double>(n)));
  // Another run seed is another run.
  auto c = sent;
  scenario::redraw_output_lengths(c, m, {.redraw_share = 0.25}, 10);
  std::size_t differ = 0;
  for (std::size_t i = 0; i < n; ++i) differ += c[i].output_tokens != a[i].output_tokens ? 1 : 0;
  EXPECT_GT(differ, 0u);
}

TEST(OutputLengthNoise, AnEarlyStopMovesByItsCvAndACapStaysTheCap) {
  const scenario::WorkloadModel m = vision_arena();
  const auto sent = scenario::sample_workload(m, 1000, 0);  // #6204's 1000 requests (500 rows)
  const double cv = 0.08;
  // The derivation in the serving model's source: Var(total_A - total_B) = 2 cv^2 sum(L^2) over
  // the early-stopped requests (a mean-1 lognormal factor of CV cv on each; rounding adds ~0.2).
  double early_squares = 0;
  for (const auto& r : sent)
    if (r.output_tokens < m.max_output_tokens) early_squares += static_cast<double>(r.output_tokens * r.output_tokens);
  ASSERT_GT(early_squares, 0.0);
  std::vector<double> differences;
  double ratio_sum = 0, ratio_squares = 0;
  std::size_t ratios = 0;
  for (std::uint64_t pair = 0; pair < 200; ++pair) {
    auto a = sent, b = sent;
    scenario::redraw_output_lengths(a, m, {.early_stop_cv = cv}, 2 * pair);
    scenario::redraw_output_lengths(b, m, {.early_stop_cv = cv}, 2 * pair + 1);
    for (std::size_t i = 0; i < sent.size(); ++i) {
      if (sent[i].output_tokens == m.max_output_tokens) {
        ASSERT_EQ(a[i].output_tokens, m.max_output_tokens);  // it reached the cap: the cap again
        continue;
      }
      ASSERT_GE(a[i].output_tokens, 1);
      ASSERT_LE(a[i].output_tokens, m.max_output_tokens);
      ASSERT_EQ(a[i].text_tokens, sent[i].text_tokens);
      if (sent[i].output_tokens < 32 || sent[i].output_tokens > 100) continue;  // rounding, the cap
      const double ratio = static_cast<double>(a[i].output_tokens) / static_cast<double>(sent[i].output_tokens);
      ratio_sum += ratio;
      ratio_squares += ratio * ratio;
      ++ratios;
    }
    differences.push_back(total_output(a) - total_output(b));
  }
  ASSERT_GT(ratios, 1000u);
  const double mean_ratio = ratio_sum / static_cast<double>(ratios);
  const double sd_ratio = std::sqrt(ratio_squares / static_cast<double>(ratios) - mean_ratio * mean_ratio);
  EXPECT_NEAR(mean_ratio, 1.0, 0.01);  // mean 1: the run's total moves, its expectation does not
  EXPECT_NEAR(sd_ratio, cv, 0.01);      // + rounding (0.29 / L <= 0.009 in quadrature)
  double squares = 0;
  for (double d : differences) squares += d * d;
  const double sd = std::sqrt(squares / static_cast<double>(differences.size()));
  // 200 pairs: the sample s.d. is within 5 % (one s.e.) of the formula's; 25 % each side.
  const double expected = std::sqrt(2 * cv * cv * early_squares);
  EXPECT_GT(sd, 0.75 * expected);
  EXPECT_LT(sd, 1.25 * expected);
}

// A small workload whose requests stop early half the time (so a redraw shows in every run).
std::filesystem::path write_small_workload(const std::filesystem::path& dir) {
  const auto path = dir / "w.json";
  std::ofstream(path) << R"({"text_tokens": {"distribution": "lognormal", "mean": 20, "sigma": 0.5},
    "image_pixels": {"distribution": "lognormal", "mean": 200000, "sigma": 0.5, "min": 65536, "max": 1000000},
    "output": {"max_tokens": 16, "early_stop_probability": 0.5}, "dataset_rows": {"value": 12, "source": "test"}})";
  return path;
}

// An A/A of pr7104 (24 prompts, 2 seeds) on `workload`, without step jitter.
nlohmann::json run_aa(const std::filesystem::path& workload, const scenario::RunOutputNoise& noise,
                      const std::string& name) {
  const auto dir = testpaths::temp_dir("outlen", name);
  scenario::PresetAbOptions o = testing::small_virtual_run(dir, "outlen-test", 24, 2);
  o.presets = {"pr7104", "pr7104"};
  o.workload = workload;
  o.serving_model = dir / "serving.json";
  std::ofstream(o.serving_model) << R"({"schema": "encbench-serving-model", "name": "test",
    "lm_fixed_ms": {"value": 20, "source": "test"}, "step_time_cv": {"value": 0, "source": "test"},
    "output_length_cv": {"value": )" << noise.early_stop_cv << R"(, "source": "test"},
    "output_length_redraw_share": {"value": )" << noise.redraw_share << R"(, "source": "test"}})";
  std::ostringstream out, progress;
  return scenario::run_preset_ab(o, {"test"}, out, progress).result;
}

nlohmann::json serving_of(const nlohmann::json& r, int arm, int seed) {
  nlohmann::json s = r["arms"][arm]["seeds"][seed]["serving"];
  s.erase("created_utc");  // the envelope's wall-clock stamp
  return s;
}

TEST(OutputLengthNoise, AnAaDiffersOnlyWhenEachRunSamplesItsOwnLengths) {
  const auto workload = write_small_workload(testpaths::temp_dir("outlen", "workload"));
  const scenario::WorkloadModel m = scenario::load_workload(workload);
  const nlohmann::json quiet = run_aa(workload, {}, "quiet");
  for (const scenario::RunOutputNoise noise : {scenario::RunOutputNoise{.early_stop_cv = 0.3},
                                                scenario::RunOutputNoise{.redraw_share = 1}}) {
    const nlohmann::json sampled = run_aa(workload, noise, "sampled");
    const nlohmann::json again = run_aa(workload, noise, "again");
    for (int seed = 0; seed < 2; ++seed) {
      EXPECT_EQ(serving_of(quiet, 0, seed), serving_of(quiet, 1, seed));  // no noise: an A/A is exact
      EXPECT_EQ(serving_of(sampled, 1, seed), serving_of(again, 1, seed));  // drawn from seeds: reproducible
      const nlohmann::json a = serving_of(sampled, 0, seed), b = serving_of(sampled, 1, seed);
      EXPECT_EQ(a["total_input_tokens"], b["total_input_tokens"]);  // the same prompts
      EXPECT_NE(a["total_output_tokens"], b["total_output_tokens"]);
      EXPECT_NE(a["mean_ttft_ms"], b["mean_ttft_ms"]);  // a non-zero paired spread
      // Each arm generates exactly what the workload's redraw with the arm's noise seed (the one
      // its step jitter uses: seed x 1000003 + arm) gives.
      for (int arm = 0; arm < 2; ++arm) {
        auto sent = scenario::sample_workload(m, 24, static_cast<std::uint64_t>(seed));
        scenario::redraw_output_lengths(sent, m, noise, static_cast<std::uint64_t>(seed) * 1000003ULL + arm);
        EXPECT_EQ(serving_of(sampled, arm, seed)["total_output_tokens"].get<double>(), total_output(sent));
      }
    }
  }
  // No noise runs the very lengths the workload draws for the seed (today's behaviour).
  EXPECT_EQ(serving_of(quiet, 0, 0)["total_output_tokens"].get<double>(),
            total_output(scenario::sample_workload(m, 24, 0)));
}

std::string error_of(const nlohmann::json& doc) {
  try {
    (void)serving::parse_serving_model(doc, "m.json");
  } catch (const InvalidInput& e) {
    return e.what();
  }
  return {};
}

TEST(OutputLengthNoise, TheServingModelDeclaresBothFormsWithASourceInTheirRange) {
  const auto ok = serving::parse_serving_model(
      {{"output_length_redraw_share", {{"value", 0.25}, {"source", "s"}}}}, "m.json");
  EXPECT_DOUBLE_EQ(ok.output_length_redraw_share.value, 0.25);
  EXPECT_EQ(serving::parse_serving_model(serving::to_json(ok), "back").output_length_redraw_share.value, 0.25);
  EXPECT_EQ(serving::parse_serving_model(nlohmann::json::object(), "m.json").output_length_redraw_share.value, 0.0);
  for (const char* key : {"output_length_redraw_share", "output_length_cv"})
    for (double bad : {1.5, -0.1}) {
      const std::string e = error_of({{key, {{"value", bad}, {"source", "s"}}}});
      EXPECT_NE(e.find(std::string("m.json: ") + key), std::string::npos) << e;
      EXPECT_NE(e.find("outside [0.000000, 1.000000]"), std::string::npos) << e;
    }
  const std::string no_source = error_of({{"output_length_redraw_share", {{"value", 0.5}}}});
  EXPECT_NE(no_source.find("needs a \"source\""), std::string::npos) << no_source;
  const std::string not_number = error_of({{"output_length_redraw_share", {{"value", "on"}, {"source", "s"}}}});
  EXPECT_NE(not_number.find("output_length_redraw_share must be {\"value\": number"), std::string::npos) << not_number;
  serving::ServingModel model;
  EXPECT_THROW(serving::apply_model_overrides(model, "output_length_redraw_share=2"), InvalidInput);
  serving::apply_model_overrides(model, "output_length_redraw_share=1");
  EXPECT_EQ(model.output_length_redraw_share.value, 1.0);
  EXPECT_THROW(serving::apply_model_overrides(model, "output_length_cv=-1"), InvalidInput);
  // The repository's serving model declares the CV, with its derivation.
  const auto shipped =
      serving::load_serving_model(source_dir() / "scenarios/serving/ascend-910b-qwen3-vl-8b.json");
  EXPECT_GT(shipped.output_length_cv.value, 0.0);
  EXPECT_NE(shipped.output_length_cv.source.find("#8531"), std::string::npos);
}

}  // namespace
}  // namespace encbench
