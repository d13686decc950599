// Every fault the issue lists yields the expected failed count and error text; nothing crashes or
// hangs; SIGINT-style stops keep what was measured.
#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <cerrno>
#include <sys/socket.h>
#include <netinet/in.h>
#include <unistd.h>

#include <thread>

#include "harness/client/bench.hpp"
#include "harness/client/metrics.hpp"
#include "harness/core/error.hpp"
#include "tests/client/client_test_util.hpp"

using namespace encbench::client;
using namespace encbench::client::test;
using encbench::Nanos;
using encbench::testing::Fault;
using encbench::testing::Script;
using encbench::testing::ServerConfig;
using encbench::testing::TestServer;

namespace {
// Every second request uses `fault`, the others succeed.
SendLoopResult run_with_fault(Script faulty, std::size_t n = 6, double timeout_s = 20) {
  ServerConfig sc;
  sc.scripts = {Script{}, faulty};
  TestServer server(sc);
  server.start();
  auto cfg = engine_for(server);
  cfg.timeout_s = timeout_s;
  SendLoopResult r = run_requests(cfg, text_requests(n, 4), std::vector<Nanos>(n, 0));
  server.stop();
  return r;
}

// Every second request failed with `text` in its error and the failure kind `kind`; the others
// succeeded with no kind.
void expect_half_failed_with(const SendLoopResult& r, const std::string& text, const std::string& kind) {
  ASSERT_EQ(failed_count(r), r.records.size() / 2);
  for (std::size_t i = 0; i < r.records.size(); ++i) {
    if (i % 2 == 0) {
      EXPECT_TRUE(r.records[i].success) << r.records[i].error;
      EXPECT_EQ(r.records[i].failure_kind, "");
    } else {
      EXPECT_FALSE(r.records[i].success);
      EXPECT_NE(r.records[i].error.find(text), std::string::npos) << "error was: " << r.records[i].error;
      EXPECT_EQ(r.records[i].failure_kind, kind) << "error was: " << r.records[i].error;
    }
  }
  const auto m = calculate_metrics(r.records, r.end_ns - r.start_ns, MetricsOptions{});
  ASSERT_EQ(m.failures_by_kind.size(), 1u);
  EXPECT_EQ(m.failures_by_kind.begin()->first, kind);
  EXPECT_EQ(m.failures_by_kind.begin()->second, static_cast<std::int64_t>(r.records.size() / 2));
}

int closed_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);  // nothing listens there now
  return ntohs(addr.sin_port);
}
}  // namespace

TEST(Faults, HttpErrorStatusAndBodyStart) {
  Script s;
  s.fault = Fault::http_error;
  s.http_status = 503;
  expect_half_failed_with(run_with_fault(s), "HTTP 503: {\"error\":{\"message\":\"scripted failure\"", "http_5xx");
}

TEST(Faults, MalformedJsonInStream) {
  Script s;
  s.fault = Fault::malformed_json;
  expect_half_failed_with(run_with_fault(s), "malformed JSON in SSE event: {\"choices\": [ this is not json", "protocol");
}

TEST(Faults, ErrorEventInsideA200Stream) {
  Script s;
  // vllm's json.loads fails on a typed `event: error` message, so that one still fails.
  s.fault = Fault::error_event_typed;
  expect_half_failed_with(run_with_fault(s), "error event in stream: {\"message\":\"scripted typed error\"}", "protocol");
}

TEST(Faults, VllmSuccessRulesUnderFaults) {
  // 20 requests: every 4th stream ends without [DONE], every 5th carries a mid-stream error event
  // (request 19 both). vllm counts all 20 as successes; --strict-success fails the 8 affected.
  ServerConfig sc;
  sc.scripts.resize(20);
  for (std::size_t k = 0; k < 20; ++k) {
    if (k % 4 == 3) sc.scripts[k].omit_done = true;
    if (k % 5 == 4) sc.scripts[k].fault = Fault::error_event;
  }
  for (bool strict : {false, true}) {
    TestServer server(sc);
    server.start();
    auto cfg = engine_for(server);
    cfg.strict_success = strict;
    const SendLoopResult r = run_requests(cfg, text_requests(20, 4), std::vector<Nanos>(20, 0));
    server.stop();
    MetricsOptions mo;
    const ServingMetrics m = calculate_metrics(r.records, r.end_ns - r.start_ns, mo);
    EXPECT_EQ(m.completed, strict ? 12 : 20) << "strict " << strict;
    EXPECT_EQ(m.failed, strict ? 8 : 0);
    EXPECT_EQ(m.incomplete_streams, 5);
    EXPECT_EQ(m.error_events, 4);
    for (std::size_t i = 0; i < 20; ++i) {
      const auto& rec = r.records[i];
      EXPECT_EQ(rec.incomplete_stream, i % 4 == 3) << i;
      EXPECT_EQ(rec.error_events, i % 5 == 4 ? 1 : 0) << i;
      EXPECT_EQ(rec.success, !strict || (i % 4 != 3 && i % 5 != 4)) << i << " " << rec.error;
      if (rec.success) {
        EXPECT_EQ(rec.usage_completion_tokens, 4) << i;  // usage after the error event is read
      }
    }
  }
}

TEST(Faults, DisconnectMidStream) {
  Script s;
  s.fault = Fault::disconnect;
  s.fault_after_chunks = 2;
  expect_half_failed_with(run_with_fault(s), "curl error 18", "truncated_response");
}

TEST(Faults, PerRequestTimeout) {
  Script s;
  s.fault = Fault::stall;
  const auto r = run_with_fault(s, 4, 0.3);
  expect_half_failed_with(r, "timeout: no complete response within", "timeout");
}

TEST(Faults, NonStreamMalformedBody) {
  Script s;
  s.fault = Fault::malformed_json;
  ServerConfig sc;
  sc.scripts = {s};
  TestServer server(sc);
  server.start();
  auto cfg = engine_for(server);
  cfg.mode = RequestMode::non_stream;
  const auto r = run_requests(cfg, text_requests(2, 3, Backend::openai_chat, RequestMode::non_stream), {0, 0});
  server.stop();
  EXPECT_EQ(failed_count(r), 2u);
  EXPECT_NE(r.records[0].error.find("malformed JSON body"), std::string::npos);
}

TEST(Faults, UnreachableServerFailsFastWithUrlAndCurlError) {
  const std::string base = "http://127.0.0.1:" + std::to_string(closed_port());
  try {
    check_reachable(base + "/v1/chat/completions", 2);
    FAIL() << "expected ServerUnreachable";
  } catch (const ServerUnreachable& e) {
    EXPECT_NE(std::string(e.what()).find(base + "/v1/chat/completions"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("Couldn't connect to server"), std::string::npos);
  }
  EXPECT_THROW(first_model_from_server(base, 2), ServerUnreachable);
  BenchConfig cfg;
  cfg.base_url = base;
  cfg.backend = Backend::openai_chat;
  cfg.dataset.num_prompts = 2;
  cfg.dataset.random.input_len = 4;
  EXPECT_THROW(run_benchmark(cfg), ServerUnreachable);
  // Requests to a dead server (e.g. it died mid-run) are failures with the curl error, not a crash.
  SendLoopConfig ec;
  ec.url = base + "/v1/chat/completions";
  const auto r = run_requests(ec, text_requests(3, 2), {0, 0, 0});
  EXPECT_EQ(failed_count(r), 3u);
  EXPECT_NE(r.records[0].error.find("curl error 7"), std::string::npos);
  for (const auto& rec : r.records) {
    EXPECT_EQ(rec.failure_kind, "connection_refused") << rec.error;
    EXPECT_EQ(rec.os_errno, ECONNREFUSED);
    EXPECT_NE(rec.error.find("Connection refused"), std::string::npos) << rec.error;  // the errno, spelled out
  }
}

TEST(Faults, BadConfigurationIsInvalidInput) {
  BenchConfig cfg;
  cfg.request_rate = -1;
  EXPECT_THROW(validate(cfg), encbench::InvalidInput);
  cfg.request_rate = 10;
  cfg.burstiness = 0;
  EXPECT_THROW(validate(cfg), encbench::InvalidInput);
  cfg.burstiness = 1;
  cfg.goodput_slo_ms = {{"latency", 5}};
  EXPECT_THROW(validate(cfg), encbench::InvalidInput);
  cfg.goodput_slo_ms = {};
  cfg.percentile_metrics = {"ttft", "bogus"};
  EXPECT_THROW(validate(cfg), encbench::InvalidInput);
  cfg.percentile_metrics = {"ttft"};
  cfg.backend = Backend::openai_chat;
  cfg.endpoint = "/v1/completions";
  cfg.endpoint_given = true;
  EXPECT_THROW(validate(cfg), encbench::InvalidInput);
}

TEST(Faults, StopSendsNoMoreDrainsThenAbortsInFlight) {
  Script slow;
  slow.ttft_ms = 5;
  slow.itl_ms = 400;  // in-flight requests outlive the drain timeout
  ServerConfig sc;
  sc.scripts = {slow};
  TestServer server(sc);
  server.start();
  const int stop = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  auto cfg = engine_for(server);
  cfg.stop_fd = stop;
  cfg.drain_timeout_s = 0.2;
  std::vector<Nanos> offsets;
  for (int i = 0; i < 20; ++i) offsets.push_back(i * 100'000'000LL);  // one every 100 ms
  std::thread stopper([stop] {
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    const std::uint64_t one = 1;
    [[maybe_unused]] auto w = write(stop, &one, sizeof one);
  });
  const SendLoopResult r = run_requests(cfg, text_requests(20, 4), offsets);
  stopper.join();
  server.stop();
  close(stop);
  EXPECT_TRUE(r.interrupted);
  std::size_t sent = 0, aborted = 0;
  for (const auto& rec : r.records) {
    if (!rec.dispatched) continue;
    ++sent;
    if (rec.error.find("interrupted: still in flight") != std::string::npos) ++aborted;
    EXPECT_EQ(rec.failure_kind, "interrupted");
  }
  EXPECT_GE(sent, 1u);
  EXPECT_LT(sent, 20u);  // stopped sending
  EXPECT_EQ(aborted, sent);  // 4 chunks x 400 ms never finish inside the 0.2 s drain
  EXPECT_LT(static_cast<double>(r.end_ns - r.start_ns) / 1e9, 5.0);  // bounded wait, no hang
  const auto m = calculate_metrics(r.records, r.end_ns - r.start_ns, MetricsOptions{});
  EXPECT_EQ(m.not_sent, static_cast<std::int64_t>(20 - sent));
}
