// The client against servers that misbehave on purpose: endless 10 MB events, endless
// tiny tokens, millions of tokens when 8 were asked, endless headers, silence after the first
// event, and usage counts of 2^63-1. Each request must fail with its own failure kind, memory
// must stay within the configured per-request bound, and the run must end by the idle timeout
// instead of the total one. The servers here are raw sockets on a thread, written for these
// tests (the scripted TestServer only tells the truth about what it sends).
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <fstream>
#include <functional>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "harness/client/send_loop.hpp"
#include "harness/client/metrics.hpp"
#include "tests/client/client_test_util.hpp"

using namespace encbench::client;
using namespace encbench::client::test;
using encbench::Nanos;

namespace {

// Writes all of `data`; false once the client has gone (or the server is stopping).
bool send_all(int fd, std::string_view data, const std::atomic<bool>& stop) {
  while (!data.empty()) {
    if (stop.load()) return false;
    pollfd p{fd, POLLOUT, 0};
    if (poll(&p, 1, 100) <= 0) continue;  // a full socket buffer: look at `stop` again
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

// Reads one HTTP request (headers + Content-Length body); false when the client closed first.
bool read_request(int fd) {
  std::string in;
  std::size_t header_end = std::string::npos;
  char buf[65536];
  while (header_end == std::string::npos) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return false;
    in.append(buf, static_cast<std::size_t>(n));
    header_end = in.find("\r\n\r\n");
  }
  std::size_t length = 0;
  if (const auto pos = in.find("Content-Length: "); pos != std::string::npos) length = std::stoul(in.substr(pos + 16));
  while (in.size() < header_end + 4 + length) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return false;
    in.append(buf, static_cast<std::size_t>(n));
  }
  return true;
}

// Blocks until the client closes the connection (or the server stops), reading and dropping
// anything it sends.
void wait_for_close(int fd, const std::atomic<bool>& stop) {
  char buf[4096];
  while (!stop.load()) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    if (::recv(fd, buf, sizeof buf, MSG_DONTWAIT) == 0) return;
  }
}

// Loopback, port 0, one thread per connection. `respond(fd, stop)` writes whatever the test wants
// after the request was read, and returns when done or when the client went away.
class HostileServer {
 public:
  using Respond = std::function<void(int fd, const std::atomic<bool>& stop)>;
  explicit HostileServer(Respond respond) : respond_(std::move(respond)) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    socklen_t len = sizeof addr;
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    EXPECT_EQ(::listen(listen_fd_, 64), 0);
    acceptor_ = std::thread([this] { accept_loop(); });
  }
  ~HostileServer() {
    stop_ = true;
    acceptor_.join();
    for (auto& t : connections_) t.join();
    ::close(listen_fd_);
  }
  HostileServer(const HostileServer&) = delete;
  HostileServer& operator=(const HostileServer&) = delete;

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/v1/chat/completions"; }

 private:
  void accept_loop() {
    while (!stop_.load()) {
      pollfd p{listen_fd_, POLLIN, 0};
      if (poll(&p, 1, 50) <= 0) continue;
      const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      connections_.emplace_back([this, fd] {
        if (read_request(fd)) respond_(fd, stop_);
        ::close(fd);
      });
    }
  }

  Respond respond_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread acceptor_;
  std::vector<std::thread> connections_;
};

constexpr std::string_view kStreamHeaders =
    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n";

std::string content_event(std::string_view text) {
  return "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"" + std::string(text) + "\"}}]}\n\n";
}

// Writes `event` again and again after the stream headers until the client goes away.
HostileServer::Respond endless(std::string event) {
  return [event = std::move(event)](int fd, const std::atomic<bool>& stop) {
    if (!send_all(fd, kStreamHeaders, stop)) return;
    while (send_all(fd, event, stop)) {
    }
  };
}

// /proc/self/status field in bytes ("VmRSS:", "VmHWM:").
std::int64_t status_bytes(const std::string& field) {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind(field, 0) == 0) return std::stoll(line.substr(field.size())) * 1024;
  return -1;
}

// Resets the peak RSS (VmHWM) to the current RSS, so a test measures its own peak.
void reset_peak_rss() { std::ofstream("/proc/self/clear_refs") << "5"; }

SendLoopResult run_one(const std::string& url, const SendLoopConfig& base, int output_len = 8) {
  SendLoopConfig cfg = base;
  cfg.url = url;
  cfg.backend = Backend::openai_chat;
  return run_requests(cfg, text_requests(1, output_len), std::vector<Nanos>(1, 0));
}

double seconds(Nanos ns) { return static_cast<double>(ns) / 1e9; }

// The loop ended with its last request, not at a later timer: curl finishes a transfer the
// client stopped on a 0 ms timeout, and the loop once slept after it until --timeout (seen 4 in
// 10 runs of `bench serve` against endless 10 MB events).
::testing::AssertionResult run_ended_with_its_request(const SendLoopResult& r) {
  Nanos last = 0;
  for (const auto& rec : r.records) last = std::max(last, rec.end_ns);
  if (seconds(r.end_ns - last) < 10.0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "the loop ended " << seconds(r.end_ns - last) << " s after its last request";
}

}  // namespace

TEST(HostileServer, EndlessHugeEventsStopAtTheByteBoundWithBoundedMemory) {
  // The reproducer (endless 10 MB events: 5.3 GB RSS in 10 s; docs/client.md measures it
  // with the binary) with 2 MiB events, so that what the sanitizers keep of freed buffers stays
  // well inside the bound checked. Each is a valid choices event: without a bound every byte
  // would be kept as generated text.
  HostileServer server(endless(content_event(std::string(2u << 20, 'x'))));
  SendLoopConfig cfg;
  cfg.timeout_s = 120;  // far beyond what the bound needs: the bound must end it, not the timeout
  cfg.max_response_bytes = 16 << 20;
  reset_peak_rss();
  const std::int64_t rss_before = status_bytes("VmRSS:");
  const SendLoopResult r = run_one(server.url(), cfg);
  const std::int64_t growth = status_bytes("VmHWM:") - rss_before;
  std::cout << "RSS before " << (rss_before >> 20) << " MiB, peak growth " << (growth >> 20) << " MiB\n";
  ASSERT_EQ(r.records.size(), 1u);
  const RequestRecord& rec = r.records[0];
  EXPECT_FALSE(rec.success);
  EXPECT_EQ(rec.failure_kind, "response_too_large") << rec.error;
  EXPECT_NE(rec.error.find("--max-response-bytes"), std::string::npos) << rec.error;
  EXPECT_NE(rec.error.find(std::to_string(16 << 20)), std::string::npos) << rec.error;
  // Seven 2 MiB events fit within 16 MiB, an eighth does not; their text is dropped, not kept.
  EXPECT_EQ(rec.choices_ns.size(), 7u);
  EXPECT_NE(rec.error.find("(14680064 bytes of text dropped)"), std::string::npos) << rec.error;
  EXPECT_EQ(rec.generated_text, "");
  EXPECT_TRUE(run_ended_with_its_request(r));
  // The target: under 200 MB + the per-request bound (the server thread's 10 MB event and
  // the sanitizers' quarantine included).
  EXPECT_LT(growth, (std::int64_t{200} << 20) + cfg.max_response_bytes) << "peak RSS grew by " << (growth >> 20) << " MiB";
  EXPECT_LT(seconds(rec.end_ns - rec.dispatch_ns), cfg.timeout_s);
}

TEST(HostileServer, EndlessTinyTokensStopAtTheChunkBound) {
  HostileServer server(endless(content_event("a")));
  SendLoopConfig cfg;
  cfg.timeout_s = 120;
  cfg.max_output_chunks = 5000;
  const SendLoopResult r = run_one(server.url(), cfg);
  const RequestRecord& rec = r.records[0];
  EXPECT_FALSE(rec.success);
  EXPECT_EQ(rec.failure_kind, "too_many_chunks") << rec.error;
  EXPECT_NE(rec.error.find("--max-output-chunks"), std::string::npos) << rec.error;
  EXPECT_EQ(rec.choices_ns.size(), 5000u);  // kept up to the bound, not one more
  EXPECT_EQ(rec.content_chunks, 5000);
  EXPECT_NE(rec.error.find("(5000 bytes of text dropped)"), std::string::npos) << rec.error;
  EXPECT_TRUE(run_ended_with_its_request(r));
  const auto m = calculate_metrics(r.records, r.end_ns - r.start_ns, MetricsOptions{});
  EXPECT_EQ(m.failed, 1);
  EXPECT_EQ(m.failures_by_kind.at("too_many_chunks"), 1);
  EXPECT_EQ(m.total_output, 0);  // a failed request adds no tokens
}

TEST(HostileServer, TenMillionTokensWhenEightWereAskedFailWithANamedReason) {
  // 10 M one-token events (~60 bytes each: 600 MB) where max_tokens was 8: before the bounds this
  // was a success with 20,000,000 output tokens and ~1 GB of RSS. The defaults must stop it; the
  // byte bound is lowered here only to keep the test short under the sanitizers.
  const std::string event = content_event("t");
  HostileServer server([&event](int fd, const std::atomic<bool>& stop) {
    if (!send_all(fd, kStreamHeaders, stop)) return;
    std::string batch;
    for (int i = 0; i < 1000; ++i) batch += event;
    for (int i = 0; i < 10'000 && send_all(fd, batch, stop); ++i) {
    }
    send_all(fd, "data: [DONE]\n\n", stop);
  });
  SendLoopConfig cfg;
  cfg.timeout_s = 300;
  EXPECT_EQ(cfg.max_output_chunks, kDefaultMaxOutputChunks);
  cfg.max_response_bytes = 8 << 20;
  const SendLoopResult r = run_one(server.url(), cfg, 8);
  const RequestRecord& rec = r.records[0];
  EXPECT_FALSE(rec.success);
  EXPECT_EQ(rec.failure_kind, "response_too_large") << rec.error;
  EXPECT_LE(rec.choices_ns.size(), static_cast<std::size_t>(8 << 20) / event.size() + 1);
  EXPECT_GT(rec.choices_ns.size(), 100'000u);  // it did read up to the bound
  EXPECT_TRUE(run_ended_with_its_request(r));
}

TEST(HostileServer, EndlessHeadersCountAgainstTheByteBound) {
  HostileServer server([](int fd, const std::atomic<bool>& stop) {
    if (!send_all(fd, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n", stop)) return;
    const std::string header = "X-Pad: " + std::string(1000, 'p') + "\r\n";
    while (send_all(fd, header, stop)) {
    }
  });
  SendLoopConfig cfg;
  cfg.timeout_s = 120;
  cfg.max_response_bytes = 64 << 10;  // below any header limit curl itself may have
  const SendLoopResult r = run_one(server.url(), cfg);
  const RequestRecord& rec = r.records[0];
  EXPECT_FALSE(rec.success);
  EXPECT_EQ(rec.failure_kind, "response_too_large") << rec.error;
  EXPECT_TRUE(run_ended_with_its_request(r));
}

TEST(HostileServer, SilenceAfterTheFirstEventEndsAtTheIdleTimeoutNotTheTotalOne) {
  HostileServer server([](int fd, const std::atomic<bool>& stop) {
    if (send_all(fd, kStreamHeaders, stop) && send_all(fd, content_event("hi"), stop)) wait_for_close(fd, stop);
  });
  SendLoopConfig cfg;
  cfg.timeout_s = 300;
  cfg.idle_timeout_s = 0.5;
  const SendLoopResult r = run_one(server.url(), cfg);
  const RequestRecord& rec = r.records[0];
  EXPECT_FALSE(rec.success);
  EXPECT_EQ(rec.failure_kind, "idle_timeout") << rec.error;
  EXPECT_NE(rec.error.find("--idle-timeout"), std::string::npos) << rec.error;
  EXPECT_EQ(rec.generated_text, "hi");  // what came before is kept (a time bound, not a size one)
  EXPECT_TRUE(run_ended_with_its_request(r));
  std::cout << "ended " << seconds(rec.end_ns - rec.first_choices_ns) << " s after the last byte\n";
  // Ended by the idle bound: at least 0.5 s after the last byte, and long before --timeout.
  EXPECT_GE(seconds(rec.end_ns - rec.first_choices_ns), 0.5);
  EXPECT_LT(seconds(rec.end_ns - rec.dispatch_ns), 60.0);
}

TEST(HostileServer, NoHeadersAtAllEndsAtTheIdleTimeout) {
  HostileServer server([](int fd, const std::atomic<bool>& stop) { wait_for_close(fd, stop); });
  SendLoopConfig cfg;
  cfg.timeout_s = 300;
  cfg.idle_timeout_s = 0.3;
  const SendLoopResult r = run_one(server.url(), cfg);
  const RequestRecord& rec = r.records[0];
  EXPECT_EQ(rec.failure_kind, "idle_timeout") << rec.error;
  EXPECT_EQ(rec.http_status, 0);
  EXPECT_GE(seconds(rec.end_ns - rec.sent_ns), 0.3);
  EXPECT_LT(seconds(rec.end_ns - rec.dispatch_ns), 60.0);
}

TEST(HostileServer, ASlowButSteadyStreamIsNotIdle) {
  // 12 events 100 ms apart (1.1 s in all) with an idle bound of 0.6 s: the gaps never reach it,
  // so the request succeeds although the whole answer takes longer than the idle bound.
  HostileServer server([](int fd, const std::atomic<bool>& stop) {
    if (!send_all(fd, kStreamHeaders, stop)) return;
    for (int i = 0; i < 12; ++i) {
      if (i > 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the server's pacing, not a sync
      if (!send_all(fd, content_event("w"), stop)) return;
    }
    send_all(fd, "data: [DONE]\n\n", stop);
  });
  SendLoopConfig cfg;
  cfg.timeout_s = 300;
  cfg.idle_timeout_s = 0.6;
  const SendLoopResult r = run_one(server.url(), cfg);
  const RequestRecord& rec = r.records[0];
  EXPECT_TRUE(rec.success) << rec.error;
  EXPECT_EQ(rec.generated_text, std::string(12, 'w'));
  EXPECT_GE(seconds(rec.end_ns - rec.dispatch_ns), 1.0);
}

TEST(HostileServer, UsageOfInt64MaxTwiceGivesSaturatedTotalsNotNegativeOnes) {
  // Two streams each claiming 2^63-1 prompt and completion tokens: the sums saturate.
  const std::string body = std::string(kStreamHeaders) + content_event("x") +
                           "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":9223372036854775807,"
                           "\"completion_tokens\":9223372036854775807}}\n\ndata: [DONE]\n\n";
  HostileServer server([&body](int fd, const std::atomic<bool>& stop) { send_all(fd, body, stop); });
  SendLoopConfig cfg;
  cfg.url = server.url();
  cfg.timeout_s = 60;
  const SendLoopResult r = run_requests(cfg, text_requests(2, 8), std::vector<Nanos>(2, 0));
  ASSERT_EQ(failed_count(r), 0u) << r.records[0].error;
  EXPECT_EQ(r.records[0].usage_completion_tokens, INT64_MAX);
  const auto m = calculate_metrics(r.records, r.end_ns - r.start_ns, MetricsOptions{});
  EXPECT_EQ(m.total_input, INT64_MAX);
  EXPECT_EQ(m.total_output, INT64_MAX);
  EXPECT_GT(m.output_throughput, 0.0);
  EXPECT_GT(m.total_token_throughput, m.output_throughput);
  EXPECT_GT(m.tokens_per_chunk_overall, 0.0);
}

TEST(HostileServer, SaturatingAddClampsBothWays) {
  EXPECT_EQ(saturating_add(INT64_MAX, INT64_MAX), INT64_MAX);
  EXPECT_EQ(saturating_add(INT64_MAX - 1, 1), INT64_MAX);
  EXPECT_EQ(saturating_add(INT64_MIN, -1), INT64_MIN);
  EXPECT_EQ(saturating_add(40, 2), 42);
  EXPECT_EQ(saturating_add(-40, 2), -38);
}
