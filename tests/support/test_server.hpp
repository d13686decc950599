#pragma once
// A scripted OpenAI-compatible test server for the client tests and the capacity benchmark.
//
// Loopback only, port 0 by default, one epoll thread. For every POST it streams vLLM-shaped SSE
// chunks (role chunk, content chunks, usage chunk, data: [DONE]) at scripted absolute delays from
// the moment the request was read, and records when it actually wrote each event, so tests can
// compare what the client measured with what the server really did. Scripts choose faults (HTTP
// errors, malformed JSON, error events, missing [DONE], disconnects, stalls) and framing quirks
// (\r\n line endings, comments, events split across writes, multi-line data).
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "harness/core/clock.hpp"

namespace encbench::testing {

enum class Fault {
  none,
  http_error,        // status + body instead of a stream
  malformed_json,    // a data: line that is not JSON after `fault_after_chunks` chunks
  error_event,       // data: {"error": {...}} inside the 200 stream
  error_event_typed, // event: error + data: {...}
  no_done,           // stream ends cleanly but without data: [DONE]
  disconnect,        // connection closed mid-stream (no terminating chunk)
  stall,             // headers, then nothing (the client's --timeout must end it)
};
const char* to_string(Fault fault);
Fault parse_fault(const std::string& name);  // throws std::invalid_argument

struct Script {
  double ttft_ms = 0;            // first chunk this long after the request was read
  double itl_ms = 0;             // then one content chunk every itl_ms (absolute schedule)
  int tokens = -1;               // -1: max_completion_tokens / max_tokens from the body
  int tokens_per_chunk = 1;      // tokens bundled in one content chunk
  bool role_chunk = true;        // vLLM's role-only first chunk (sent together with chunk 1)
  bool usage = true;             // the final usage chunk
  int prompt_tokens = 100;
  Fault fault = Fault::none;
  int fault_after_chunks = 1;    // content chunks sent before the fault
  bool omit_done = false;        // end cleanly without data: [DONE] (combinable with a fault)
  int http_status = 500;
  std::string error_body = R"({"error":{"message":"scripted failure","type":"InternalServerError","code":500}})";
  bool crlf = false;             // \r\n line endings
  bool comments = false;         // ": ping" comment lines between events
  bool multiline_data = false;   // each JSON split over two data: lines
  std::size_t split_bytes = 0;   // write each event in pieces of this size, 200 us apart
};

struct ServerConfig {
  std::vector<Script> scripts{Script{}};  // request with id suffix k uses scripts[k % size]
  bool no_delay = false;                  // ignore the delays: write the whole response at once
  bool record = true;                     // keep a ServedRequest per request
  std::string model = "test-model";
  std::string model_root;                 // GET /v1/models data[0].root ("" = no root field)
  int port = 0;
  int backlog = 4096;
  // Drift: every delay scaled by 1 + slowdown_per_s x (seconds since slowdown_since_unix_ms, wall
  // clock), so servers restarted one after another see one machine slowing down.
  double slowdown_per_s = 0;
  std::int64_t slowdown_since_unix_ms = 0;
};

struct ServedRequest {
  std::string method, path, request_id;
  std::size_t script_index = 0;
  std::size_t body_bytes = 0;
  bool had_expect_100 = false;
  bool stream = true;
  int tokens = 0;
  Nanos received_ns = 0;              // full request read
  std::vector<Nanos> choices_sent_ns; // when each event with non-empty choices was written
  Nanos done_sent_ns = 0;             // when the response end was written
  std::string body;                   // the request body (only when it is < 64 KB)
};

class TestServer {
 public:
  explicit TestServer(ServerConfig config);
  ~TestServer();
  TestServer(const TestServer&) = delete;
  TestServer& operator=(const TestServer&) = delete;

  // Binds 127.0.0.1:config.port (0 = any free port); port() is valid afterwards.
  void bind();
  // Binds (if not yet) and serves on a background thread.
  void start();
  // Binds and serves on the calling thread until stop_fd (if >= 0) becomes readable.
  void serve_here(int stop_fd);
  void stop();
  int port() const { return port_; }
  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::vector<ServedRequest> served() const;
  std::size_t served_count() const;
  std::size_t connections_accepted() const;
  std::size_t max_concurrent_responses() const;  // responses in progress at once, peak

 private:
  void loop(int external_stop_fd);

  ServerConfig config_;
  int listen_fd_ = -1;
  int stop_event_fd_ = -1;
  int port_ = 0;
  std::thread thread_;
  mutable std::mutex mutex_;
  std::vector<ServedRequest> served_;
  std::size_t served_count_ = 0;
  std::size_t connections_ = 0;
  std::size_t max_busy_ = 0;
};

}  // namespace encbench::testing
