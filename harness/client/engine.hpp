#pragma once
// The event loop: one thread, one epoll set holding curl's sockets (curl multi socket API), a
// timerfd for curl's timeouts, a timerfd for the precomputed arrival schedule (absolute
// CLOCK_MONOTONIC deadlines, ns resolution) and an optional stop fd (SIGINT via signalfd, or an
// eventfd from a test). Request bytes are final before the loop starts; the loop only hands
// prepared requests to curl at their intended times and timestamps what comes back.
//
// No hidden queue: curl's per-host / total connection limits stay unlimited, so the only wait
// between "due" and "handed to curl" is the explicit --max-concurrency queue, recorded per
// request (arrival_ns -> dispatch_ns).
#include <string>
#include <vector>

#include "harness/client/records.hpp"

namespace encbench::client {

struct EngineConfig {
  std::string url;                       // full API URL (base + endpoint)
  Backend backend = Backend::openai_chat;
  RequestMode mode = RequestMode::stream;
  int max_concurrency = 0;               // 0 = unlimited
  double timeout_s = 0;                  // per request, from dispatch; 0 = none
  int stop_fd = -1;                      // readable => stop sending, drain, then abort
  double drain_timeout_s = 10;           // bounded wait for in-flight requests after a stop
  bool progress = false;                 // progress bar on stderr
  bool strict_success = false;
  bool insecure = false;                 // --insecure: skip TLS certificate and host checks
  // Schedule origin (absolute now_ns()); 0 = when the loop starts. Sharded runs pass the common
  // start so every rank's offsets mean the same instant; the loop sleeps until then (after setup).
  Nanos start_at_ns = 0;
  // Connections kept between run phases (ready check, warm-ups, the measured run), as vLLM's one
  // aiohttp ClientSession keeps them: a ConnectionShare outlives the phases; null = per phase.
  class ConnectionShare* connections = nullptr;
};

// A libcurl share of the connection cache (and DNS) for sequential phases on one thread, so the
// measured run reuses the connections the warm-ups opened instead of paying new connects.
class ConnectionShare {
 public:
  ConnectionShare();
  ~ConnectionShare();
  ConnectionShare(const ConnectionShare&) = delete;
  ConnectionShare& operator=(const ConnectionShare&) = delete;
  void* handle() const { return share_; }  // CURLSH*

 private:
  void* share_ = nullptr;
};

struct LoopStats {
  std::vector<double> arrival_wake_lag_ms;  // arrival timer handled - programmed deadline
  std::vector<double> iteration_busy_ms;    // time spent between two epoll_wait calls
  std::size_t peak_in_flight = 0;
  std::size_t peak_client_queue = 0;
  std::int64_t iterations = 0;
};

struct EngineResult {
  std::vector<RequestRecord> records;    // one per prepared request, same order
  Nanos start_ns = 0;                    // schedule origin (just before the first arrival)
  Nanos end_ns = 0;                      // last request finished
  bool interrupted = false;              // the stop fd fired
  double cpu_user_s = 0, cpu_system_s = 0;  // the loop thread's CPU time during the run
  LoopStats loop;
};

// Sends requests[i] at start + offsets_ns[i] (offsets non-decreasing). Never throws for anything
// a server does: failures are recorded per request. Throws InvalidInput for bad arguments.
EngineResult run_requests(const EngineConfig& config, const std::vector<PreparedRequest>& requests,
                          const std::vector<Nanos>& offsets_ns);

// Process-wide curl initialisation; call once from main before threads start (safe to repeat).
void global_curl_init();

}  // namespace encbench::client
