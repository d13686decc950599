// The client past its own limits: sockets are bounded by --max-connections and by the
// open-file limit, waits for a slot are the client's (dispatch lag, not vLLM's queue time), the
// loop's work per iteration is bounded, and failures are counted by kind, never self-inflicted.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <string>

#include "harness/client/send_loop.hpp"
#include "harness/client/metrics.hpp"
#include "harness/core/error.hpp"
#include "tests/client/client_test_util.hpp"

using namespace encbench::client;
using namespace encbench::client::test;
using encbench::Nanos;
using encbench::testing::ServerConfig;
using encbench::testing::TestServer;

TEST(LoadLimits, ConnectionLimitQueuesInTheClientAndIsTheClientsLag) {
  // Every response takes >= 20 ms, so 40 requests due at once would need 40 sockets.
  const auto owned_server = started_server_with_ttft(20);
  TestServer& server = *owned_server;
  auto cfg = engine_for(server);
  cfg.max_connections = 8;
  const SendLoopResult run = run_requests(cfg, text_requests(40, 2), std::vector<Nanos>(40, 0));
  server.stop();
  EXPECT_EQ(failed_count(run), 0u);
  EXPECT_EQ(run.loop.connection_limit, 8u);
  EXPECT_EQ(run.loop.peak_in_flight, 8u);  // reached, never passed
  EXPECT_LE(server.connections_accepted(), 8u);
  EXPECT_LE(server.max_concurrent_responses(), 8u);
  EXPECT_EQ(run.loop.peak_send_queue, 40u);  // all admitted at once, before the first send
  EXPECT_GT(run.loop.iterations_at_connection_limit, 0);
  EXPECT_EQ(run.loop.peak_client_queue, 0u);  // no --max-concurrency: nothing waits for the cap
  // The last wave waited >= 4 rounds of >= 20 ms for a slot: client lag, not vLLM's queue time.
  const auto m = calculate_metrics(run.records, run.end_ns - run.start_ns, MetricsOptions{});
  EXPECT_GE(m.send_wait.max_ms, 4 * 20.0);
  EXPECT_LT(m.send_wait.max_ms, 10'000.0);
  EXPECT_DOUBLE_EQ(m.client_queue.max_ms, 0.0);
  EXPECT_GE(m.client_lag.max_ms, 4 * 20.0);
  for (const auto& r : run.records) {
    EXPECT_EQ(r.admitted_ns, r.arrival_ns);
    EXPECT_GE(r.dispatch_ns, r.admitted_ns);
  }
}

TEST(LoadLimits, ConcurrencyCapAndConnectionLimitTogether) {
  // --max-concurrency 6 with 3 connections: the cap admits 6 (vLLM's semaphore), the 3 slots
  // send them; both waits are recorded apart.
  const auto owned_server = started_server_with_ttft(10);
  TestServer& server = *owned_server;
  auto cfg = engine_for(server);
  cfg.max_concurrency = 6;
  cfg.max_connections = 3;
  const SendLoopResult run = run_requests(cfg, text_requests(18, 2), std::vector<Nanos>(18, 0));
  server.stop();
  EXPECT_EQ(failed_count(run), 0u);
  EXPECT_EQ(run.loop.peak_in_flight, 3u);
  EXPECT_EQ(run.loop.peak_client_queue, 12u);
  EXPECT_EQ(run.loop.peak_send_queue, 6u);  // the cap admits 6 at once; 3 of them find a slot
  EXPECT_LE(server.connections_accepted(), 3u);
  for (const auto& r : run.records) {
    EXPECT_GE(r.admitted_ns, r.arrival_ns);
    EXPECT_GE(r.dispatch_ns, r.admitted_ns);
  }
}

TEST(LoadLimits, SendsPerIterationAreBoundedWhenEverythingIsDue) {
  // 600 requests due at t=0 (vLLM's --request-rate inf): the loop hands at most
  // kMaxSendsPerIteration to curl per turn and reads the sockets in between.
  ServerConfig sc;
  sc.no_delay = true;
  TestServer server(sc);
  server.start();
  const SendLoopResult run = run_requests(engine_for(server), text_requests(600, 2), std::vector<Nanos>(600, 0));
  server.stop();
  EXPECT_EQ(failed_count(run), 0u);
  EXPECT_EQ(run.loop.profile.dispatches, 600);
  EXPECT_EQ(run.loop.profile.completions, 600);
  EXPECT_GE(run.loop.iterations_at_send_quota, 1);
  EXPECT_GE(run.loop.iterations, static_cast<std::int64_t>(600 / kMaxSendsPerIteration));
  EXPECT_EQ(run.loop.peak_send_queue, 600u);  // all due at once, before the first send
  EXPECT_LE(run.loop.profile.max_events_in_iteration, kMaxEventsPerIteration);
  // Every phase of the loop was timed, and the parts add up to no more than the whole.
  const LoopProfile& p = run.loop.profile;
  EXPECT_GT(p.dispatch_s, 0);
  EXPECT_GT(p.parse_s, 0);
  EXPECT_LE(p.parse_s, p.curl_socket_s + p.curl_timer_s);
  EXPECT_LE(p.curl_socket_s + p.curl_timer_s + p.dispatch_s, static_cast<double>(run.end_ns - run.start_ns) / 1e9);
}

TEST(LoadLimits, DefaultConnectionLimitKeepsAnFdStarvedClientFromFailingItself) {
  // A child process with RLIMIT_NOFILE 96 (soft = hard, so it cannot be raised) sends 200
  // requests at once to a server that holds each for 50 ms. Unbounded, 200 sockets would hit
  // EMFILE; bounded by the open-file budget, all succeed and the sockets never pass the budget.
  // The child is forked before the server starts its threads: a fork of a multithreaded process
  // may copy a lock another thread holds (the sanitizers' allocator has no fork handler in
  // g++ 12), and the child then hung until its alarm under ASan on a loaded CI runner.
  int url_pipe[2], report_pipe[2];
  ASSERT_EQ(pipe(url_pipe), 0);
  ASSERT_EQ(pipe(report_pipe), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(url_pipe[1]);
    close(report_pipe[0]);
    alarm(60);  // never hang the test
    std::string url;
    char c;
    while (read(url_pipe[0], &c, 1) == 1 && c != '\n') url.push_back(c);
    close(url_pipe[0]);
    rlimit tight{96, 96};
    int code = setrlimit(RLIMIT_NOFILE, &tight) == 0 ? 0 : 3;
    std::string report = "setrlimit failed";
    if (code == 0) {
      try {
        const ConnectionBudget budget = connection_budget();
        SendLoopConfig cfg;
        cfg.url = url;
        cfg.timeout_s = 20;
        const SendLoopResult run = run_requests(cfg, text_requests(200, 2), std::vector<Nanos>(200, 0));
        std::size_t failed = 0;
        std::string first_error;
        for (const auto& r : run.records) {
          if (!r.success && failed++ == 0) first_error = r.failure_kind + ": " + r.error;
        }
        report = std::to_string(failed) + " " + std::to_string(run.loop.peak_in_flight) + " " +
                 std::to_string(run.loop.connection_limit) + " " + std::to_string(budget.max_connections) + " " +
                 std::to_string(run.loop.open_file_limit) + " " + first_error;
      } catch (const std::exception& e) {
        report = std::string("exception ") + e.what();
        code = 4;
      }
    }
    [[maybe_unused]] auto w = write(report_pipe[1], report.data(), report.size());
    close(report_pipe[1]);
    _exit(code);
  }
  close(url_pipe[0]);
  close(report_pipe[1]);
  const auto owned_server = started_server_with_ttft(50);
  TestServer& server = *owned_server;
  const std::string url = engine_for(server).url + "\n";
  [[maybe_unused]] auto sent = write(url_pipe[1], url.data(), url.size());
  close(url_pipe[1]);
  std::string report;
  char buf[512];
  for (ssize_t got; (got = read(report_pipe[0], buf, sizeof buf)) > 0;) report.append(buf, static_cast<std::size_t>(got));
  close(report_pipe[0]);
  int status = 0;
  waitpid(child, &status, 0);
  server.stop();
  ASSERT_TRUE(WIFEXITED(status)) << "child died (signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0)
                                 << "): " << report;
  ASSERT_EQ(WEXITSTATUS(status), 0) << report;
  std::size_t failed = 0, peak = 0, limit = 0, budget = 0, nofile = 0;
  ASSERT_EQ(std::sscanf(report.c_str(), "%zu %zu %zu %zu %zu", &failed, &peak, &limit, &budget, &nofile), 5) << report;
  EXPECT_EQ(failed, 0u) << report;
  EXPECT_EQ(nofile, 96u);
  EXPECT_EQ(limit, budget);
  EXPECT_GE(limit, 40u);   // 96 minus what the test process holds open, minus the 16-fd margin
  EXPECT_LE(limit, 80u);
  EXPECT_EQ(peak, limit);  // the budget was used, never exceeded
  EXPECT_LE(server.connections_accepted(), limit);
}

TEST(LoadLimits, ConnectionBudgetArithmetic) {
  const ConnectionBudget b = connection_budget_for(20000, 20000, 40);
  EXPECT_EQ(b.margin, (20000u - 40u) / 20u);
  EXPECT_EQ(b.max_connections, 20000u - 40u - 998u);
  const ConnectionBudget small = connection_budget_for(64, 64, 20);
  EXPECT_EQ(small.margin, 16u);
  EXPECT_EQ(small.max_connections, 28u);
  EXPECT_EQ(connection_budget_for(30, 30, 29).max_connections, 1u);  // never 0: one socket always
  EXPECT_EQ(connection_budget_for(30, 30, 40).max_connections, 1u);
}

TEST(LoadLimits, MoreConnectionsThanTheFileLimitAllowsIsRefused) {
  SendLoopConfig cfg;
  cfg.url = "http://127.0.0.1:9/v1/chat/completions";
  cfg.max_connections = 1 << 30;
  try {
    run_requests(cfg, text_requests(1, 1), {0});
    FAIL() << "expected InvalidInput";
  } catch (const encbench::InvalidInput& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("--max-connections 1073741824"), std::string::npos) << what;
    EXPECT_NE(what.find("ulimit -n"), std::string::npos) << what;
  }
  cfg.max_connections = -1;
  EXPECT_THROW(run_requests(cfg, text_requests(1, 1), {0}), encbench::InvalidInput);
}

TEST(LoadLimits, TransportFailureKinds) {
  // The socket errno decides first (curl reports EMFILE and EADDRNOTAVAIL as CURLE_COULDNT_CONNECT).
  EXPECT_EQ(transport_failure_kind(7, EMFILE), "open_file_limit");
  EXPECT_EQ(transport_failure_kind(7, ENFILE), "open_file_limit");
  EXPECT_EQ(transport_failure_kind(7, EADDRNOTAVAIL), "ephemeral_ports_exhausted");
  EXPECT_EQ(transport_failure_kind(7, ECONNREFUSED), "connection_refused");
  EXPECT_EQ(transport_failure_kind(56, ECONNRESET), "connection_reset");
  EXPECT_EQ(transport_failure_kind(55, EPIPE), "connection_reset");
  EXPECT_EQ(transport_failure_kind(7, 0), "connect_failed");
  EXPECT_EQ(transport_failure_kind(28, 0), "timeout");
  EXPECT_EQ(transport_failure_kind(52, 0), "empty_reply");
  EXPECT_EQ(transport_failure_kind(18, 0), "truncated_response");
  EXPECT_EQ(transport_failure_kind(6, 0), "dns");
  EXPECT_EQ(transport_failure_kind(35, 0), "tls");
  EXPECT_EQ(transport_failure_kind(1, 0), "transport_other");
}

TEST(LoadLimits, ManyTransfersSpreadOverBoundedCurlMultisAndKeepTheirConnections) {
  // 300 requests due at once to a server that holds each for 150 ms: more transfers than one curl
  // multi takes (kTransfersPerCurlMulti), so they spread over shards, lowest first; a second phase
  // on the same ConnectionShare reuses those connections instead of opening new ones.
  const auto owned_server = started_server_with_ttft(150);
  TestServer& server = *owned_server;
  ConnectionShare connections;
  auto cfg = engine_for(server);
  cfg.connections = &connections;
  const SendLoopResult first = run_requests(cfg, text_requests(300, 1), std::vector<Nanos>(300, 0));
  EXPECT_EQ(failed_count(first), 0u);
  ASSERT_GT(first.loop.peak_in_flight, kTransfersPerCurlMulti);
  const std::size_t shards_needed = (first.loop.peak_in_flight + kTransfersPerCurlMulti - 1) / kTransfersPerCurlMulti;
  EXPECT_EQ(first.loop.curl_multis, shards_needed);
  EXPECT_EQ(connections.multis().size(), shards_needed);
  const std::size_t accepted = server.connections_accepted();
  EXPECT_LE(accepted, first.loop.peak_in_flight);
  const SendLoopResult second = run_requests(cfg, text_requests(100, 1), std::vector<Nanos>(100, 0));
  server.stop();
  EXPECT_EQ(failed_count(second), 0u);
  EXPECT_EQ(server.connections_accepted(), accepted);  // every request of phase 2 on a kept connection
}
