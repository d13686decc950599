#pragma once
// `encbench serve`: an OpenAI-compatible HTTP/1.1 server (Boost.Beast/Asio) in front of the
// continuous-batching engine-core thread (engine_core_thread.hpp).
//
// Threads: one io_context thread owns every socket (thousands of keep-alive connections and SSE
// streams, no thread per connection); one text-lane thread parses requests without images, and
// `decode_threads` parse and decode requests with images (so text never waits behind a decode);
// the engine runs on its own thread and hands tokens back with asio::post.
//
// In-process use (tests, preset A/B scenarios):
//   Server server(config);
//   server.start();                 // binds; port 0 picks a free port
//   ... http://127.0.0.1:<server.port()> ...
//   server.stop();                  // closes every connection, joins every thread
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "harness/core/clock.hpp"
#include "harness/server/api_server_stage.hpp"
#include "harness/server/engine_core_thread.hpp"
#include "harness/server/openai_request.hpp"

namespace encbench::device {
class MeasuredOpTimes;  // device/measured_op_times.hpp
}

namespace encbench::server {

// POST /start_profile and /stop_profile (vLLM's protocol). Unset -> 404, as on a vLLM started
// without a profiler (`encbench serve` sets it only with --enable-profiling). Called on a decode thread; `status` and `body` (JSON) are sent back.
enum class ProfileAction { start, stop };
struct ProfileReply {
  int status = 200;
  std::string body;
};
using ProfileHandler = std::function<ProfileReply(ProfileAction)>;

struct FaultConfig {
  double fail_rate = 0;        // share of generation requests answered 500 at once
  double disconnect_rate = 0;  // share of generation requests whose connection is dropped mid-stream
  std::int64_t stall_ms = 0;   // pause after the first token of every stream (0 = none)
  std::uint64_t seed = 0;      // which requests are chosen is deterministic in (seed, request #)
};

// Largest --max-model-len accepted (16M tokens): bounds every per-request buffer.
inline constexpr std::int64_t kMaxModelLen = std::int64_t{1} << 24;

struct ServerConfig {
  std::string host = "127.0.0.1";
  std::uint16_t port = 8000;               // 0 = any free port (read it back with port())
  RequestParseOptions request;                  // served model name, geometry, image limits
  std::string device;                      // what the encoder runs on, as --device; said in /v1/models
  EngineCoreConfig engine;
  std::int64_t eos_mean_tokens = 128;      // natural stop length spread (see plan_output)
  std::uint64_t seed = 0;                  // output lengths and words
  std::size_t max_body_bytes = 32u << 20;  // 413 above this
  // Server-wide: request body bytes held at once, counted as they arrive (a declared but unsent
  // body holds nothing) until that request is parsed (images decoded). A request is refused with
  // 503 + Retry-After when its declared length would not fit what has arrived so far, or when
  // its arriving bytes pass the limit. Many concurrent large bodies are otherwise bounded only
  // one by one (--max-body-bytes).
  std::size_t max_inflight_bytes = 512u << 20;
  // Per connection: response bytes formatted but not yet taken by the socket. A stream stops
  // formatting (the tokens it owes are kept as a count) until the client reads below it; a
  // client that reads nothing for write_timeout_ns is dropped.
  std::size_t max_unsent_bytes = 256u << 10;
  // Image requests queued or decoding at once (503 decode_queue_full beyond), and how long one
  // may take from entering that queue before its next image is refused (503 decode_timeout).
  int max_decode_queue = 64;
  Nanos decode_timeout_ns = 30'000'000'000;
  std::size_t max_header_bytes = 16u << 10;
  Nanos header_timeout_ns = 10'000'000'000;  // whole header, also the keep-alive idle limit
  Nanos body_timeout_ns = 60'000'000'000;
  Nanos write_timeout_ns = 60'000'000'000;   // a client that stops reading is dropped
  int decode_threads = 1;
  FaultConfig faults;
  ProfileHandler profile;
  // trace: devices: the encoder's measured op times, whose lookup counts /metrics and the
  // shutdown report show (null otherwise).
  std::shared_ptr<const device::MeasuredOpTimes> measured_op_times;
  // vLLM's API-server stage (api_server_stage.hpp): each generation request is held, after its
  // parse, until its modelled processing ends. The default (no processes) holds nothing.
  serving::ApiServerModel api_server;
  // Requests in that stage at once; more are refused with 503 api_server_queue_full.
  std::int64_t max_api_server_queue = 8192;
};

// Counters of the HTTP layer (the engine keeps its own, see EngineCoreStats).
struct HttpStats {
  std::map<std::string, std::map<int, std::int64_t>> requests;  // route -> status -> count
  std::int64_t connections_open = 0;
  std::int64_t connections_total = 0;
  std::int64_t streams_active = 0;
  std::int64_t header_timeouts = 0;
  std::int64_t body_timeouts = 0;
  std::int64_t write_timeouts = 0;
  std::int64_t client_disconnects = 0;    // gone while a generation was in flight
  std::int64_t malformed_requests = 0;    // HTTP-level parse errors
  std::int64_t inflight_rejections = 0;   // 503: over --max-inflight-bytes
  std::int64_t decode_queue_rejections = 0;  // 503: --max-decode-queue image requests already queued
  std::int64_t stream_backpressure_waits = 0;  // times a stream paused at --max-unsent-bytes
  std::int64_t streams_backpressured = 0;      // streams paused now (gauge)
  std::int64_t decode_queue = 0;               // image requests queued or decoding now (gauge)
  std::int64_t inflight_bytes = 0;        // request bytes held now (gauge)
  std::int64_t completion_tokens_sent = 0;
  std::int64_t prompt_tokens_served = 0;  // usage.prompt_tokens of completed generations
  std::int64_t faults_failed = 0;
  std::int64_t faults_disconnected = 0;
  std::int64_t faults_stalled = 0;
  std::int64_t requests_of(const std::string& route, int status) const;
};

class Server {
 public:
  explicit Server(ServerConfig config);  // validates; throws InvalidInput
  ~Server();                              // stop()
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  void start();  // binds and listens (throws InvalidInput naming the address on failure)
  void stop();   // idempotent
  std::uint16_t port() const;
  std::string base_url() const;  // http://host:port

  HttpStats http_stats() const;
  EngineCoreStats engine_stats() const;
  ApiServerStats api_server_stats() const;
  std::string metrics_text() const;  // what GET /metrics returns
  const ServerConfig& config() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace encbench::server
