// `bench serve --profile --plot-timeline` against `encbench serve`: the
// server's engine timeline in its /stop_profile answer, joined to the client's records and drawn
// over vLLM's per-request timeline. References: the client's own records (dispatch, first token)
// and the server's step order, never the decomposition under test.
#include <gtest/gtest.h>

#include "tests/scenario/scenario_test_paths.hpp"
#include "tests/support/tiny_serving.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "harness/client/bench.hpp"
#include "harness/client/dataset.hpp"
#include "harness/client/server_timeline.hpp"
#include "harness/scenario/timeline_page.hpp"
#include "harness/server/engine_timeline.hpp"
#include "harness/server/serve_command.hpp"
#include "harness/server/server.hpp"

namespace encbench {
namespace {

using testpaths::source_dir;
using testing::kTinyModel;
// Components are differences of integer-ns times on one clock (client and server in one process:
// same boot id, offset 0), so they add up to the TTFT exactly but for the double rounding of ~10
// ms-sized terms (~1e-12 ms); 1 ns is far above that and far below any real inconsistency (a
// clamped negative leg would show as a whole leg's worth).
constexpr double kSumToleranceMs = 1e-6;

client::BenchConfig image_bench(std::uint16_t port, const std::filesystem::path& dir, int prompts) {
  client::GenerateConfig gen;
  // One row per prompt: a repeated row would hit the engine's encoder cache (its prompt's content
  // hash) and have no encoder step to decompose.
  gen.num = static_cast<std::size_t>(prompts);
  gen.width = 40;
  gen.height = 30;
  gen.out = dir / "va.jsonl";
  client::generate_dataset(gen);
  client::BenchConfig bc;
  bc.backend = client::Backend::openai_chat;
  bc.endpoint = "/v1/chat/completions";
  bc.endpoint_given = true;
  bc.port = port;
  bc.model = kTinyModel;
  bc.dataset.name = "hf";
  bc.dataset.path = gen.out.string();
  bc.dataset.num_prompts = prompts;
  bc.dataset.output_len = 3;
  bc.request_rate = 200;  // bursts: requests queue behind each other's encoder steps
  bc.profile = true;
  return bc;
}

std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void expect_steps_ordered(const client::ServerTimeline& t) {
  ASSERT_FALSE(t.steps.empty());
  for (std::size_t k = 0; k < t.steps.size(); ++k) {
    const client::ServerStep& s = t.steps[k];
    SCOPED_TRACE("step " + std::to_string(s.step));
    EXPECT_LE(s.start_ns, s.encoder_start_ns);
    EXPECT_LE(s.encoder_start_ns, s.encoder_end_ns);
    EXPECT_LE(s.encoder_end_ns, s.lm_start_ns);
    EXPECT_LE(s.lm_start_ns, s.lm_end_ns);
    EXPECT_EQ(s.lm_end_ns, s.end_ns);
    if (k == 0) continue;
    EXPECT_GT(s.step, t.steps[k - 1].step);
    EXPECT_LE(t.steps[k - 1].end_ns, s.start_ns);  // one engine thread: steps never overlap
  }
}

void expect_decomposition_adds_up(const scenario::TimelineArm& arm, std::size_t i) {
  SCOPED_TRACE("request " + std::to_string(i));
  const auto c = scenario::ttft_components(arm, i);
  ASSERT_TRUE(c.count("ttft") && c.count("to_server") && c.count("body_and_decode") && c.count("engine_queue") &&
              c.count("encoder_busy") && c.count("prefill_and_rest"));
  double legs = 0;
  for (const auto& [key, ms] : c) {
    EXPECT_GE(ms, 0.0) << key;
    if (key != "ttft" && key != "client_queue") legs += ms;
  }
  EXPECT_NEAR(legs, c.at("ttft"), kSumToleranceMs);
  EXPECT_GT(c.at("encoder_busy"), 0.0);  // every request has an image
}

TEST(LiveTimeline, ServerRecordsMatchClientAndDecomposeTtft) {
  const auto dir = testpaths::temp_dir("scenario", "live-timeline");
  server::Server srv(server::build_server_config(testing::tiny_server_options(dir / "profile")));
  srv.start();
  const client::BenchResult r = client::run_benchmark(image_bench(srv.port(), dir, 8));
  srv.stop();
  ASSERT_EQ(r.metrics.completed, 8);
  const client::ServerTimeline t = client::parse_server_timeline(r.server_profile, r.profile_clock);
  ASSERT_TRUE(t.available) << t.note;
  EXPECT_EQ(t.offset_ns, 0);  // same process, same boot
  expect_steps_ordered(t);
  EXPECT_EQ(t.requests.size(), 8u);
  const scenario::TimelineArm arm = scenario::live_timeline_arm("live", r);
  ASSERT_EQ(arm.traces.size(), arm.records.size());
  for (std::size_t i = 0; i < arm.records.size(); ++i) {
    ASSERT_TRUE(arm.traces[i].known) << "request " << i << " (" << arm.records[i].request_id << ") not matched";
    EXPECT_GE(arm.traces[i].encoder_step, 0);
    expect_decomposition_adds_up(arm, i);
  }
  const auto html = dir / "timeline.html";
  scenario::write_timeline_html(html, {arm}, scenario::TimelineOptions{});
  const std::string page = read_text(html);
  EXPECT_NE(page.find("engine-steps"), std::string::npos);
  EXPECT_NE(page.find("8 of 8 requests matched"), std::string::npos);
  EXPECT_NE(page.find("encoder_busy"), std::string::npos);
  EXPECT_EQ(page.find("unavailable"), std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(LiveTimeline, ServerWithoutRecordsStillDrawsThePage) {
  const auto dir = testpaths::temp_dir("scenario", "live-timeline-none");
  server::ServeOptions so = testing::tiny_server_options(dir / "profile");
  so.null_mode = true;  // no profiler: /start_profile answers 404, as vLLM without one
  server::Server srv(server::build_server_config(so));
  srv.start();
  const client::BenchConfig bc = testing::tiny_random_bench(srv.port());
  const client::BenchResult r = client::run_benchmark(bc);
  srv.stop();
  ASSERT_EQ(r.metrics.completed, 3);
  const auto html = dir / "timeline.html";
  scenario::write_timeline_html(html, {scenario::live_timeline_arm("vllm-like", r)}, scenario::TimelineOptions{});
  const std::string page = read_text(html);
  EXPECT_NE(page.find("Engine overlay unavailable"), std::string::npos);
  EXPECT_EQ(page.find("engine-steps"), std::string::npos);
  EXPECT_NE(page.find("<title>request 2:"), std::string::npos);  // vLLM's rows are still drawn
  std::filesystem::remove_all(dir);
}

TEST(LiveTimeline, AnswersWithoutOrWithBrokenTimelineAreNotes) {
  const ClockAnchor here = clock_anchor_now();
  // vLLM's /stop_profile answer has no engine timeline.
  EXPECT_NE(client::parse_server_timeline({{"status", "stopped"}}, here).note.find("no engine_timeline"),
            std::string::npos);
  for (const nlohmann::json& broken :
       {nlohmann::json{{"engine_timeline", 3}},
        nlohmann::json{{"engine_timeline", {{"version", 2}}}},
        nlohmann::json{{"engine_timeline", {{"version", 1}, {"clock", {{"boot_id", "x"}, {"steady_ns", INT64_MIN},
                                                                        {"system_ns", INT64_MAX}}}}}},
        nlohmann::json{{"engine_timeline",
                        {{"version", 1}, {"clock", {{"boot_id", here.boot_id}}}, {"steps", "many"}}}}}) {
    const client::ServerTimeline t = client::parse_server_timeline(broken, here);
    EXPECT_FALSE(t.available) << broken.dump();
    EXPECT_NE(t.note.find("malformed"), std::string::npos) << t.note << " for " << broken.dump();
  }
  // Well-formed but out of range: times whose differences would overflow, negative durations.
  server::EngineTimelineRecorder recorder(1, 1);
  recorder.start();
  recorder.record_step({});
  recorder.record_request({"id", "", 0, 0, 0, -1, 0});
  const nlohmann::json valid = recorder.stop_and_take_json();
  ASSERT_TRUE(client::parse_server_timeline({{"engine_timeline", valid}}, here).available);
  nlohmann::json far = valid, negative = valid;
  far["requests"][0]["arrival_ns"] = INT64_MAX;
  negative["steps"][0]["encoder_idle_ns_by_class"]["sync_stall"] = -5;
  for (const nlohmann::json& bad : {far, negative}) {
    const client::ServerTimeline t = client::parse_server_timeline({{"engine_timeline", bad}}, here);
    EXPECT_FALSE(t.available);
    EXPECT_NE(t.note.find("out of range"), std::string::npos) << t.note;
  }
}

TEST(LiveTimeline, RecordsDroppedOverTheServersCapsAreNoted) {
  server::EngineTimelineRecorder recorder(1, 1);
  recorder.start();
  for (int k = 1; k <= 3; ++k) {
    server::EngineStepRecord s;
    s.step = k;
    recorder.record_step(s);
    recorder.record_request({"id-" + std::to_string(k), "", 0, 0, 0, -1, 0});
  }
  const client::ServerTimeline t =
      client::parse_server_timeline({{"engine_timeline", recorder.stop_and_take_json()}}, clock_anchor_now());
  ASSERT_TRUE(t.available) << t.note;
  EXPECT_EQ(t.steps.size(), 1u);
  EXPECT_EQ(t.requests.size(), 1u);
  EXPECT_NE(t.note.find("dropped 2 steps and 2 requests"), std::string::npos) << t.note;
}

}  // namespace
}  // namespace encbench
