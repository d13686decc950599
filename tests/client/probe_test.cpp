// --probe-request-rate (vLLM's probe_loop) against the scripted server: the probes are sent one at
// a time, 1/rate s after the previous one finished, bypass --max-concurrency, and are reported
// apart from the measured requests (vLLM's probe_* keys and "Probe Requests" section).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "harness/client/bench.hpp"
#include "harness/core/stats.hpp"
#include "tests/support/test_server.hpp"

namespace {

using encbench::Nanos;
using encbench::client::BenchConfig;
using encbench::client::BenchResult;
using encbench::testing::Script;
using encbench::testing::ServerConfig;
using encbench::testing::TestServer;

// Script 0 holds a response for 600 ms; the others answer at once. The measured request (id
// suffix 0) and the warm-up (the server's first request without an id) get script 0; the probes,
// which carry no id, get the following ones.
ServerConfig slow_first_fast_rest() {
  ServerConfig sc;
  Script slow;
  slow.ttft_ms = 600;
  slow.tokens = 2;
  Script fast;
  fast.tokens = 1;
  sc.scripts.assign(200, fast);
  sc.scripts[0] = slow;
  return sc;
}

BenchConfig one_slow_request(const TestServer& server, double probe_rate) {
  BenchConfig cfg;
  cfg.backend = encbench::client::Backend::openai_chat;
  cfg.base_url = server.base_url();
  cfg.endpoint = "/v1/chat/completions";
  cfg.model = "test-model";
  cfg.dataset.name = "random";
  cfg.dataset.num_prompts = 1;
  cfg.dataset.random.input_len = 4;
  cfg.dataset.random.output_len = 2;
  cfg.max_concurrency = 1;
  cfg.num_warmups = 1;  // takes script 0, so every probe gets a fast script
  cfg.timeout_s = 60;
  cfg.probe_request_rate = probe_rate;
  return cfg;
}

TEST(ProbeRequests, SentAtTheRateOutsideMaxConcurrencyAndReportedApart) {
  TestServer server(slow_first_fast_rest());
  server.start();
  const double rate = 50;  // one probe 20 ms after the previous one finished
  const Nanos interval_ns = 20'000'000;
  const BenchConfig cfg = one_slow_request(server, rate);
  const BenchResult result = encbench::client::run_benchmark(cfg);
  server.stop();

  // The measured run is its one request; the probes are not in it.
  ASSERT_EQ(result.run.records.size(), 1u);
  const auto& main = result.run.records.front();
  ASSERT_TRUE(main.success) << main.error;
  EXPECT_EQ(result.metrics.completed, 1);
  const auto& probes = result.probe_records;
  ASSERT_GE(probes.size(), 3u);
  // Rate: each probe leaves no sooner than 1/rate after the previous one ended (vLLM's sleep
  // after the await), and not much later (generous: a loaded machine under ASan).
  for (std::size_t k = 0; k < probes.size(); ++k) {
    ASSERT_TRUE(probes[k].success) << k << ": " << probes[k].error;
    if (k == 0) continue;
    const Nanos gap = probes[k].dispatch_ns - probes[k - 1].end_ns;
    EXPECT_GE(gap, interval_ns) << k;
    EXPECT_LT(gap, interval_ns + 500'000'000) << k;
  }
  // One at a time: never two probes in flight.
  for (std::size_t k = 1; k < probes.size(); ++k) EXPECT_GE(probes[k].dispatch_ns, probes[k - 1].end_ns);
  // Outside --max-concurrency 1: probes were sent and answered while the one slot was taken.
  std::size_t inside = 0;
  for (const auto& p : probes) inside += p.dispatch_ns > main.dispatch_ns && p.end_ns < main.end_ns ? 1 : 0;
  EXPECT_GE(inside, 2u);
  EXPECT_GE(server.max_concurrent_responses(), 2u);
  // No more probes than the loop could send in the time it ran (first probe .. main end).
  const double span_s = static_cast<double>(main.end_ns - probes.front().dispatch_ns) / 1e9;
  EXPECT_LE(static_cast<double>(probes.size()), span_s * rate + 2);

  // What the server got: "Hi", one token, no image, no x-request-id.
  std::size_t probe_bodies = 0;
  for (const auto& sr : server.served()) {
    if (sr.method != "POST" || !sr.request_id.empty()) continue;
    const auto body = nlohmann::json::parse(sr.body);
    if (body["messages"][0]["content"][0]["text"] != "Hi") continue;  // the warm-up
    ++probe_bodies;
    EXPECT_EQ(body["max_completion_tokens"], 1);
    EXPECT_EQ(body["messages"][0]["content"].size(), 1u);
    EXPECT_EQ(body["model"], "test-model");
  }
  EXPECT_EQ(probe_bodies, probes.size());

  // Reported apart, as vLLM: keys after rtfx, the section after the throughput lines.
  std::vector<double> lat_ms;
  for (const auto& p : probes) lat_ms.push_back(static_cast<double>(p.last_choices_ns - p.dispatch_ns) / 1e6);
  const auto j = encbench::client::to_vllm_json(cfg, result);
  EXPECT_EQ(j["probe_completed"], static_cast<std::int64_t>(probes.size()));
  EXPECT_EQ(j["probe_failed"], 0);
  EXPECT_DOUBLE_EQ(j["probe_median_e2el_ms"].get<double>(), encbench::stats::median(lat_ms));
  EXPECT_DOUBLE_EQ(j["probe_p99_e2el_ms"].get<double>(), encbench::stats::percentile(lat_ms, 99));
  EXPECT_DOUBLE_EQ(j["probe_max_e2el_ms"].get<double>(), *std::max_element(lat_ms.begin(), lat_ms.end()));
  // The probes' latency is not the main request's (600 ms): it was answered at once.
  EXPECT_LT(j["probe_median_e2el_ms"].get<double>(), 300.0);
  EXPECT_GT(j["mean_ttft_ms"].get<double>(), 550.0);
  std::ostringstream block;
  encbench::client::print_vllm_block(block, cfg, result);
  const std::string text = block.str();
  const auto section = text.find("\n------------------Probe Requests------------------\n");
  ASSERT_NE(section, std::string::npos) << text;
  EXPECT_LT(text.find("Total token throughput (tok/s):"), section);
  EXPECT_NE(text.find("Probe requests completed:                " + std::to_string(probes.size())), std::string::npos) << text;
  EXPECT_NE(text.find("Probe requests failed:                   0 "), std::string::npos);
  EXPECT_NE(text.find("P99 probe E2EL (ms):"), std::string::npos);
}

TEST(ProbeRequests, NoneWithoutTheFlag) {
  TestServer server(slow_first_fast_rest());
  server.start();
  const BenchConfig cfg = one_slow_request(server, 0);
  const BenchResult result = encbench::client::run_benchmark(cfg);
  server.stop();
  EXPECT_TRUE(result.probe_records.empty());
  EXPECT_EQ(server.served_count(), 2u);  // warm-up + the request
  const auto j = encbench::client::to_vllm_json(cfg, result);
  EXPECT_FALSE(j.contains("probe_completed"));
  std::ostringstream block;
  encbench::client::print_vllm_block(block, cfg, result);
  EXPECT_EQ(block.str().find("Probe Requests"), std::string::npos);
}

}  // namespace
