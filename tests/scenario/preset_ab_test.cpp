// The A/B of two encoder presets (`encbench run --clock real`) end to end on the sim device with
// a tiny model: servers in-process as arms of the live A/B's rounds, the serving client with --profile and --scrape-metrics, the server's profile summary and trace, and the
// profiling endpoints' faults. The references are the server's own counters (/metrics, engine
// stats) and the model's depth, never the numbers under test.
#include <gtest/gtest.h>

#include "tests/scenario/scenario_test_paths.hpp"
#include "tests/support/tiny_serving.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "harness/client/bench.hpp"
#include "harness/cli/preset_server.hpp"
#include "harness/client/dataset.hpp"
#include "harness/core/error.hpp"
#include "harness/core/result_json.hpp"
#include "harness/encoder/model_config.hpp"
#include "harness/scenario/preset_ab.hpp"
#include "harness/server/serve_command.hpp"
#include "harness/server/server.hpp"
#include "harness/timeline/chrome_trace.hpp"
#include "reports/result.hpp"

namespace encbench {
namespace {


std::filesystem::path temp_dir(const std::string& name) { return testpaths::temp_dir("scenario", name); }
using testpaths::source_dir;

using testing::kTinyModel;
using testing::tiny_server_options;

TEST(PresetAb, ProfileSummaryMatchesPresetAndServedImages) {
  const auto dir = temp_dir("loop");
  scenario::PresetAbOptions o;
  o.wiring.start_server = cli::start_preset_server;
  o.model = kTinyModel;
  o.device = "sim:ascend-910b";
  o.profiles_dir = source_dir() / "scenarios/devices";
  o.rounds = 2;
  o.num_prompts = 6;
  o.request_rate = 50;
  o.burstiness = 1;
  o.output_len = 3;
  o.image_width = 64;
  o.image_height = 48;
  o.outputs.result_dir = dir;
  o.outputs.result_file = dir / "nested" / "result.json";  // --result: parent directories are created
  std::ostringstream out, progress;
  const scenario::PresetAbRun run = scenario::run_preset_ab(o, {"test"}, out, progress);

  ASSERT_EQ(run.result_path, o.outputs.result_file);
  ASSERT_TRUE(std::filesystem::exists(run.result_path));
  const int depth = encoder::load_model(kTinyModel).depth;
  // What `encbench compare` and the CI gate read from it: both arms, named a. and b.
  const reports::RunResult parsed = reports::load_result(run.result_path);
  EXPECT_EQ(parsed.kind, reports::ResultKind::preset_ab);
  ASSERT_NE(parsed.find("a.syncs_per_forward"), nullptr);
  EXPECT_EQ(parsed.find("a.syncs_per_forward")->value, depth);
  EXPECT_EQ(parsed.find("b.syncs_per_forward")->value, 0.0);
  // Both rounds pooled: every request of every round is a sample; one run value per round.
  EXPECT_EQ(parsed.find("b.mean_ttft_ms")->samples.size(), static_cast<std::size_t>(o.rounds * o.num_prompts));
  EXPECT_EQ(parsed.find("b.mean_ttft_ms")->run_values.size(), static_cast<std::size_t>(o.rounds));
  // The guards judge this machine (client lag, sim lateness), so a loaded test machine may get no
  // verdict; either way the result must say which, consistently.
  EXPECT_EQ(run.verdict_valid, run.result["invalid_reasons"].empty()) << run.result["invalid_reasons"].dump();
  EXPECT_EQ(run.verdict_valid, run.result.contains("comparison"));
  EXPECT_EQ(run.verdict_valid, out.str().find("NO VERDICT") == std::string::npos);
  const nlohmann::json& arms = run.result["arms"];
  ASSERT_EQ(arms.size(), 2u);
  // ABBA: round 1 runs A first, round 2 runs B first.
  EXPECT_EQ(arms[0]["rounds"][0]["position"], 0);
  EXPECT_EQ(arms[1]["rounds"][0]["position"], 1);
  EXPECT_EQ(arms[0]["rounds"][1]["position"], 1);
  EXPECT_EQ(arms[1]["rounds"][1]["position"], 0);
  for (const auto& arm_total : arms)
    for (const auto& arm : arm_total["rounds"]) {
    SCOPED_TRACE(arm_total["preset"].get<std::string>() + " round " + arm["round"].dump());
    const nlohmann::json& serving = arm["serving"];
    ASSERT_EQ(serving["completed"].get<int>(), o.num_prompts);
    const nlohmann::json& profile = serving["server_profile"];
    ASSERT_TRUE(profile.is_object()) << serving.dump();
    // Every image served in the window was encoded in the window (one image per request), and the
    // forwards are the engine's own count for the same window.
    EXPECT_EQ(profile["images"].get<int>(), serving["completed"].get<int>());
    EXPECT_EQ(profile["forwards"].get<std::int64_t>(), arm["server_engine_delta"]["encoder_forwards"].get<std::int64_t>());
    EXPECT_EQ(profile["dropped"].get<int>(), 0);
    // The device's memory peak is carried by the profile summary (weights alone are > 1 MB).
    EXPECT_GT(profile["peak_device_memory_bytes"].get<double>(), 1e6);
    const double syncs_per_forward = profile["syncs_per_forward"].get<double>();
    if (arm_total["preset"] == "baseline")
      EXPECT_DOUBLE_EQ(syncs_per_forward, depth);  // one cu_seqlens D2H per layer
    else
      EXPECT_DOUBLE_EQ(syncs_per_forward, 0.0);
    // The trace exists, parses and holds every recorded forward's device ops.
    const std::string trace_path = profile["trace_path"].get<std::string>();
    std::ifstream in(trace_path);
    ASSERT_TRUE(in.good()) << trace_path;
    const timeline::Timeline t = timeline::read_encbench_chrome_trace(nlohmann::json::parse(in));
    EXPECT_FALSE(t.device_ops.empty());
    EXPECT_TRUE(t.modelled);
    // Client-side metrics scraped from /metrics agree with the client's own counts.
    const nlohmann::json& delta = serving["server_metrics_delta"];
    EXPECT_EQ(delta.value("encbench:request_success_total", 0.0), serving["completed"].get<double>());
    EXPECT_EQ(delta.value("encbench:generation_tokens_total", 0.0), serving["total_output_tokens"].get<double>());
    EXPECT_EQ(delta.value("encbench:encoder_images_total", 0.0), profile["images"].get<double>());
  }
  // The rounds ran through the live A/B (bench ab's code): its per-round values, MDE, JSON and
  // page, and each round's server trace through the idle-gap analysis and the trace diff.
  EXPECT_NE(out.str().find("Per-round values"), std::string::npos);
  EXPECT_NE(out.str().find("Minimum detectable effect"), std::string::npos);
  const auto ab = read_json_file(run.result["live_ab"]["json"].get<std::string>());
  EXPECT_EQ(ab["schema"], "encbench-live-ab");
  EXPECT_EQ(ab["arms"][0]["trace_summary"]["traces"], o.rounds);
  ASSERT_TRUE(ab.contains("trace_diff"));
  EXPECT_EQ(ab["trace_diff"]["rounds_diffed"], o.rounds);
  // The optimized preset drops the per-layer D2H: the traces say so as the counters do.
  EXPECT_EQ(ab["trace_diff"]["mean"]["d2h_per_forward"]["b"].get<double>(), 0.0);
  EXPECT_EQ(ab["trace_diff"]["mean"]["d2h_per_forward"]["a"].get<double>(), depth);
  EXPECT_TRUE(std::filesystem::exists(run.result["live_ab"]["html"].get<std::string>()));
  for (const auto& arm : ab["arms"])
    for (const auto& round : arm["rounds"]) EXPECT_TRUE(round["server"]["port_free_after_stop"].get<bool>());
  EXPECT_NE(out.str().find("Encoder device (server side)"), std::string::npos);
  EXPECT_NE(out.str().find("Syncs per forward"), std::string::npos);
  std::filesystem::remove_all(dir);
}

// Ctrl-C before the first round (the stop fd already readable): no server runs, the run says it
// was interrupted and writes the (empty) live A/B record.
TEST(PresetAb, InterruptBeforeAnyRoundIsReportedNotAResult) {
  const auto dir = temp_dir("interrupt");
  scenario::PresetAbOptions o;
  o.wiring.start_server = cli::start_preset_server;
  o.model = kTinyModel;
  o.profiles_dir = source_dir() / "scenarios/devices";
  o.rounds = 2;
  o.num_prompts = 2;
  o.image_width = 32;
  o.image_height = 32;
  o.outputs.result_dir = dir;
  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_NONBLOCK | O_CLOEXEC), 0);
  const char byte = 1;
  ASSERT_EQ(::write(fds[1], &byte, 1), 1);
  o.wiring.stop_fd = fds[0];
  std::ostringstream out, progress;
  const scenario::PresetAbRun run = scenario::run_preset_ab(o, {"test"}, out, progress);
  ::close(fds[0]);
  ::close(fds[1]);
  EXPECT_TRUE(run.interrupted);
  EXPECT_FALSE(run.verdict_valid);
  EXPECT_EQ(run.result["schema"], "encbench-live-ab");
  EXPECT_TRUE(run.result["interrupted"].get<bool>());
  EXPECT_TRUE(run.result["arms"][0]["rounds"].empty());
  EXPECT_TRUE(std::filesystem::exists(run.result_path));
  std::filesystem::remove_all(dir);
}

TEST(PresetAb, BenchServeTotalsAgreeWithServerMetrics) {
  const auto dir = temp_dir("metrics");
  client::GenerateConfig gen;
  gen.num = 5;
  gen.width = 40;
  gen.height = 30;
  gen.out = dir / "va.jsonl";
  client::generate_dataset(gen);
  server::Server srv(server::build_server_config(tiny_server_options(dir / "profile")));
  srv.start();
  client::BenchConfig bc;
  bc.backend = client::Backend::openai_chat;
  bc.endpoint = "/v1/chat/completions";
  bc.endpoint_given = true;
  bc.port = srv.port();
  bc.model = kTinyModel;
  bc.dataset.name = "hf";
  bc.dataset.path = gen.out.string();
  bc.dataset.num_prompts = 7;  // oversampled
  bc.dataset.output_len = 4;
  bc.scrape_metrics = true;
  const client::BenchResult r = client::run_benchmark(bc);
  const server::EngineCoreStats e = srv.engine_stats();
  const server::HttpStats h = srv.http_stats();
  srv.stop();
  ASSERT_EQ(r.metrics.completed, 7);
  // The server's own counters (read directly, not through /metrics) are the reference.
  EXPECT_EQ(r.metrics.completed, e.requests_finished);
  EXPECT_EQ(r.metrics.total_output, e.generation_tokens);
  EXPECT_EQ(r.metrics.total_input, h.prompt_tokens_served);
  EXPECT_EQ(r.metrics.completed, h.requests_of("/v1/chat/completions", 200));
  ASSERT_TRUE(r.server_metrics_delta.is_object());
  EXPECT_EQ(r.server_metrics_delta.value("encbench:request_success_total", 0.0), static_cast<double>(e.requests_finished));
  EXPECT_EQ(r.server_metrics_delta.value("encbench:usage_completion_tokens_total", 0.0),
            static_cast<double>(r.metrics.total_output));
  std::filesystem::remove_all(dir);
}

TEST(ServerProfile, StartStopFaultsAndUnwritableDir) {
  const auto dir = temp_dir("faults");
  // A regular file where the profile dir should be: the trace cannot be written.
  const auto blocker = dir / "not-a-dir";
  std::ofstream(blocker) << "x";
  server::Server srv(server::build_server_config(tiny_server_options(blocker / "sub")));
  srv.start();
  const std::string base = srv.base_url();
  auto [s1, b1] = client::post_empty(base + "/stop_profile");
  EXPECT_EQ(s1, 400);
  EXPECT_NE(b1.find("not running"), std::string::npos) << b1;
  auto [s2, b2] = client::post_empty(base + "/start_profile");
  EXPECT_EQ(s2, 200) << b2;
  auto [s3, b3] = client::post_empty(base + "/start_profile");
  EXPECT_EQ(s3, 409);
  EXPECT_NE(b3.find("already running"), std::string::npos) << b3;
  auto [s4, b4] = client::post_empty(base + "/stop_profile");
  EXPECT_EQ(s4, 200) << b4;
  const auto summary = nlohmann::json::parse(b4);
  EXPECT_TRUE(summary["trace_path"].is_null());
  EXPECT_NE(summary["error"].get<std::string>().find("cannot write"), std::string::npos);
  // The server keeps serving.
  EXPECT_EQ(client::first_model_from_server(base), kTinyModel);
  srv.stop();
  std::filesystem::remove_all(dir);
}

TEST(ServerProfile, ClientContinuesWhenServerHasNoProfiler) {
  const auto dir = temp_dir("noprof");
  server::ServeOptions so = tiny_server_options(dir);
  so.null_mode = true;  // no encoder: /start_profile answers 404, as vLLM without a profiler
  server::Server srv(server::build_server_config(so));
  srv.start();
  const client::BenchConfig bc = testing::tiny_random_bench(srv.port());
  const client::BenchResult r = client::run_benchmark(bc);
  srv.stop();
  EXPECT_EQ(r.metrics.completed, 3);
  EXPECT_TRUE(r.server_profile.is_null());
  EXPECT_NE(r.profile_message.find("server does not support profiling"), std::string::npos) << r.profile_message;
  std::filesystem::remove_all(dir);
}

TEST(PresetAb, ScenarioFileMatchesEmbeddedDefaults) {
  const scenario::PresetAbOptions defaults;
  const auto from_file = scenario::load_scenario(source_dir() / "scenarios/preset-ab.json");
  EXPECT_EQ(scenario::to_json(from_file), scenario::to_json(defaults));
  EXPECT_THROW(scenario::apply_scenario_json(nlohmann::json{{"num_prompts", "many"}}, "t"), InvalidInput);
  scenario::PresetAbOptions bad;
  bad.presets = {"baseline"};
  EXPECT_THROW(scenario::validate(bad), InvalidInput);
  // An unusable result path is refused before any serving, not after it.
  scenario::PresetAbOptions unwritable;
  unwritable.wiring.start_server = cli::start_preset_server;
  unwritable.outputs.result_dir = temp_dir("unwritable");
  unwritable.outputs.result_file = "/proc/encbench-no-such-dir/result.json";
  std::ostringstream out, progress;
  EXPECT_THROW(scenario::run_preset_ab(unwritable, {"test"}, out, progress), InvalidInput);
  EXPECT_EQ(progress.str().find("server on"), std::string::npos);
  // The CI gate's short scenario is a valid file too.
  const auto ci = scenario::load_scenario(source_dir() / "scenarios/preset-ab-ci.json");
  EXPECT_NO_THROW(scenario::validate(ci));
  EXPECT_EQ(ci.name, "preset-ab-ci");
}

}  // namespace
}  // namespace encbench
