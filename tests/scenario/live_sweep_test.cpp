// `encbench bench sweep` against live servers: a scripted one with known timings (every point's
// TTFT is the script's, the SLO verdict follows), and an encbench server with one seat, which
// saturates: the sweep must stop there and say so.
#include <gtest/gtest.h>

#include "tests/scenario/scenario_test_paths.hpp"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "harness/client/bench.hpp"
#include "harness/core/error.hpp"
#include "harness/scenario/sweep.hpp"
#include "harness/server/serve_command.hpp"
#include "harness/server/server.hpp"
#include "tests/support/test_server.hpp"

namespace encbench {
namespace {


std::filesystem::path temp_dir(const std::string& name) { return testpaths::temp_dir("live-sweep", name); }
using testpaths::source_dir;

client::BenchConfig random_config(int port, const std::string& model, int prompts, int output_len) {
  client::BenchConfig c;
  c.backend = client::Backend::openai;
  c.endpoint = "/v1/completions";
  c.host = "127.0.0.1";
  c.port = port;
  c.model = model;
  c.label = "live";
  c.dataset.name = "random";
  c.dataset.num_prompts = static_cast<std::size_t>(prompts);
  c.dataset.random.input_len = 16;
  c.dataset.random.output_len = output_len;
  c.ignore_eos = true;
  c.burstiness = 1.0;
  c.metric_percentiles = {99};
  return c;
}

TEST(LiveSweep, ScriptedServerTimingsAndTheSloVerdictPerPoint) {
  testing::ServerConfig sc;
  testing::Script script;
  script.ttft_ms = 40;
  script.itl_ms = 5;
  script.tokens = 4;
  sc.scripts = {script};
  testing::TestServer server(sc);
  server.start();
  const auto dir = temp_dir("scripted");
  scenario::SweepOptions w;
  w.sweep = scenario::parse_sweep("request-rate=5,20");
  w.slo = scenario::parse_slo("ttft_p99<=1000");  // the script's 40 ms plus any scheduling delay
  std::ostringstream out, progress;
  const auto run = scenario::run_live_sweep(random_config(server.port(), "test-model", 20, 4), w, dir / "s.json", {"t"},
                                            out, progress);
  const auto& points = run.result["points"];
  ASSERT_EQ(points.size(), 2u);
  for (const auto& p : points) {
    const auto& arm = p["arms"][0];
    EXPECT_GE(arm["mean_ttft_ms"]["mean"].get<double>(), 40.0);  // the script's TTFT, plus the loopback
    EXPECT_LT(arm["mean_ttft_ms"]["mean"].get<double>(), 55.0);
    EXPECT_TRUE(arm["meets_slo"].get<bool>());
    EXPECT_NEAR(arm["goodput"]["mean"].get<double>() / arm["request_throughput"]["mean"].get<double>(), 1.0, 1e-9);
  }
  EXPECT_DOUBLE_EQ(run.result["capacity"]["highest_passing"].get<double>(), 20.0);
  // Every point met the SLO: the capacity is not bracketed, only bounded below.
  EXPECT_EQ(run.result["capacity"]["capacity_bracket"]["kind"], "at_least");
  EXPECT_EQ(run.result["capacity"]["capacity_bracket"]["low"], 20.0);
  EXPECT_TRUE(run.result["capacity"]["capacity_bracket"]["high"].is_null());
  EXPECT_NE(out.str().find("\nCapacity at ttft p99 <= 1000 ms: >= 20 req/s: no point failed; extend --sweep\n"),
            std::string::npos)
      << out.str();
  EXPECT_EQ(out.str().find("Highest request-rate meeting"), std::string::npos) << out.str();
  EXPECT_TRUE(std::filesystem::exists(dir / "s.html"));
  // Below the script's TTFT no load can meet the SLO.
  w.slo = scenario::parse_slo("ttft_median<=30");
  const auto never = scenario::run_live_sweep(random_config(server.port(), "test-model", 10, 4), w, dir / "n.json",
                                              {"t"}, out, progress);
  EXPECT_DOUBLE_EQ(never.result["capacity"]["highest_passing"].get<double>(), 0.0);
  EXPECT_EQ(never.result["capacity"]["capacity_bracket"]["kind"], "below_lowest");
  EXPECT_EQ(never.result["capacity"]["capacity_bracket"]["high"], 5.0);
  EXPECT_NE(out.str().find("\nCapacity at ttft median <= 30 ms: < 5 req/s: every point failed\n"), std::string::npos)
      << out.str();
  EXPECT_FALSE(never.result["points"][0]["arms"][0]["meets_slo"].get<bool>());
  EXPECT_FALSE(never.result["points"][0]["arms"][0].contains("detailed"));
  // --save-detailed: each point keeps its requests, and each TTFT is the script's 40 ms and more.
  w.save_detailed = true;
  const auto detailed = scenario::run_live_sweep(random_config(server.port(), "test-model", 10, 4), w,
                                                 dir / "d.json", {"t"}, out, progress);
  for (const auto& p : detailed.result["points"]) {
    const auto& ttfts = p["arms"][0]["detailed"][0]["ttfts"];
    ASSERT_EQ(ttfts.size(), 10u);
    for (const auto& t : ttfts) {
      EXPECT_GE(t.get<double>(), 0.040);
      EXPECT_LT(t.get<double>(), 1.0);
    }
  }
  server.stop();
}

TEST(LiveSweep, StopsAtTheFirstOverSaturatedPoint) {
  // One seat and 100 ms of service per request: about 10 req/s at most.
  server::ServeOptions so;
  so.port = 0;
  so.model = "tiny-qwen3-vl";
  so.device = "sim:ascend-910b";
  so.profiles_dir = source_dir() / "scenarios/devices";
  so.max_num_seqs = 1;
  so.lm_base_ms = 25;
  so.lm_per_seq_ms = 0;
  so.lm_per_prefill_token_ms = 0;
  so.lm_per_context_token_ms = 0;
  so.profile_dir = temp_dir("saturate-profile");
  so.enable_profiling = true;
  server::Server srv(server::build_server_config(so));
  srv.start();
  const auto dir = temp_dir("saturate");
  scenario::SweepOptions w;
  w.sweep = scenario::parse_sweep("request-rate=2,60,200");
  std::ostringstream out, progress;
  const auto run = scenario::run_live_sweep(random_config(srv.port(), "tiny-qwen3-vl", 24, 4), w, dir / "s.json",
                                            {"t"}, out, progress);
  srv.stop();
  ASSERT_EQ(run.result["points"].size(), 2u) << out.str();  // 200 req/s never ran
  EXPECT_FALSE(run.result["points"][0].contains("over_saturated"));
  EXPECT_TRUE(run.result["points"][1].contains("over_saturated"));
  EXPECT_NE(run.result.value("stopped_early", std::string()).find("over-saturated at request-rate 60"), std::string::npos);
}

TEST(LiveSweep, AServerThatDoesNotAnswerIsAnErrorBeforeAnyLoad) {
  scenario::SweepOptions w;
  w.sweep = scenario::parse_sweep("request-rate=5");
  std::ostringstream out, progress;
  EXPECT_ANY_THROW(client::check_reachable("http://127.0.0.1:1", 2));
}

}  // namespace
}  // namespace encbench
