#pragma once
// The event loop: one thread, one epoll set holding curl's sockets (curl multi socket API), a
// timerfd for curl's timeouts, a timerfd for the precomputed arrival schedule (absolute
// CLOCK_MONOTONIC deadlines, ns resolution) and an optional stop fd (SIGINT via signalfd, or an
// eventfd from a test). Request bytes are final before the loop starts; the loop only hands
// prepared requests to curl at their intended times and timestamps what comes back.
//
// Two explicit queues, both recorded per request, and no hidden one (curl's own connection limits
// stay off): the --max-concurrency queue (vLLM's semaphore: arrival_ns -> admitted_ns) and the
// send queue (admitted_ns -> dispatch_ns), where a due request waits for a free connection slot
// (--max-connections, bounded by the open-file limit) or for the loop's next turn. The loop hands
// at most kMaxSendsPerIteration requests to curl per iteration and reads at most
// kMaxEventsPerIteration socket events, so when the client itself is the bottleneck the excess
// waits in the send queue (as dispatch lag, said plainly) instead of piling up as open
// connections whose responses nobody reads; every iteration then costs the same however many
// requests are due or in flight.
#include <cstdint>
#include <string>
#include <vector>

#include "harness/client/records.hpp"

namespace encbench::client {

// Defaults of the per-request bounds: far above what a real server sends (32 k tokens of
// ~300-byte chunks are ~10 MB and 32 k chunks), low enough that a server that never stops is cut
// off before it exhausts the client. --idle-timeout allows long queue waits of an overloaded
// server (no byte comes before the first token).
inline constexpr double kDefaultIdleTimeoutS = 1800;
inline constexpr std::int64_t kDefaultMaxResponseBytes = std::int64_t{256} << 20;
inline constexpr std::int64_t kDefaultMaxOutputChunks = 1'000'000;

struct SendLoopConfig {
  std::string url;                       // full API URL (base + endpoint)
  Backend backend = Backend::openai_chat;
  RequestMode mode = RequestMode::stream;
  int max_concurrency = 0;               // 0 = unlimited
  // Connection slots (one socket per request in flight, HTTP/1.1). 0 = derived from the open-file
  // limit: the soft limit is raised to the hard one, minus the descriptors already open, minus a
  // margin (connection_budget()). An explicit value above that budget is refused (InvalidInput).
  int max_connections = 0;
  double timeout_s = 0;                  // per request, from dispatch; 0 = none
  // Bounds against a misbehaving server, each failing the request with its own
  // failure kind: the longest time with no byte moving either way (idle_timeout; 0 = none), the
  // bytes received (headers + body: response_too_large) and the choices events kept
  // (too_many_chunks). Everything a request keeps grows with one of these, so a server streaming
  // without end costs at most about the byte bound per request in flight.
  double idle_timeout_s = kDefaultIdleTimeoutS;
  std::int64_t max_response_bytes = kDefaultMaxResponseBytes;
  std::int64_t max_output_chunks = kDefaultMaxOutputChunks;
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

// The connections kept between sequential phases on one thread (ready check, warm-ups, the
// measured run), so the measured run reuses the connections the warm-ups opened instead of paying
// new connects: the curl multi handles ("shards", each with its own connection cache) and a DNS
// share. The event loop adds shards as it needs them.
class ConnectionShare {
 public:
  ConnectionShare();
  ~ConnectionShare();
  ConnectionShare(const ConnectionShare&) = delete;
  ConnectionShare& operator=(const ConnectionShare&) = delete;
  void* dns_share() const { return share_; }     // CURLSH*
  std::vector<void*>& multis() { return multis_; }  // CURLM*, owned

 private:
  void* share_ = nullptr;
  std::vector<void*> multis_;
};

// Where the loop thread's time went (CLOCK_MONOTONIC, seconds), to see which part of an
// iteration grows with load. Parsing runs inside curl's callbacks, so parse_s is part of
// curl_socket_s / curl_timer_s, not beside them.
struct LoopProfile {
  double curl_socket_s = 0;     // curl_multi_socket_action on socket events
  double curl_timer_s = 0;      // curl_multi_socket_action on timeouts and after dispatching
  double parse_s = 0;           // response bytes -> SSE events -> JSON -> record (write callback)
  double dispatch_s = 0;        // per-request easy-handle options + curl_multi_add_handle
  double finish_s = 0;          // curl_multi_remove_handle + result bookkeeping
  double easy_create_s = 0;     // new easy handles (part of dispatch_s)
  std::int64_t easy_handles_created = 0;
  std::int64_t socket_events = 0;
  std::int64_t dispatches = 0;
  std::int64_t completions = 0;
  std::int64_t max_events_in_iteration = 0;
};

// The longest loop iteration and what it did, to tell the loop's own work (curl, parsing,
// dispatching) from time the thread spent off the CPU (unaccounted_ms: preemption, page faults).
struct SlowestIteration {
  double busy_ms = 0;
  double at_s = 0;                 // from the schedule origin
  std::int64_t socket_events = 0, dispatches = 0, completions = 0;
  std::size_t in_flight_before = 0, waiting_before = 0;
  double curl_ms = 0, parse_ms = 0, dispatch_ms = 0, finish_ms = 0;
  double unaccounted_ms = 0;       // busy - curl - dispatch - finish (parse is inside curl)
};

struct LoopStats {
  std::vector<double> arrival_wake_lag_ms;  // arrival timer handled - programmed deadline
  std::vector<double> iteration_busy_ms;    // time spent between two epoll_wait calls
  std::size_t peak_in_flight = 0;
  std::size_t peak_client_queue = 0;        // --max-concurrency queue (vLLM's semaphore wait)
  std::size_t peak_send_queue = 0;          // due and admitted, waiting for a connection slot / turn
  std::int64_t iterations = 0;
  std::int64_t iterations_at_connection_limit = 0;  // ended with requests waiting for a slot
  std::int64_t iterations_at_send_quota = 0;        // ended with sendable requests held back
  std::size_t connection_limit = 0;         // the --max-connections in force
  std::size_t open_file_limit = 0;          // RLIMIT_NOFILE soft limit during the run
  std::size_t curl_multis = 0;              // connection shards used (kTransfersPerCurlMulti each)
  LoopProfile profile;
  SlowestIteration slowest;
};

struct SendLoopResult {
  std::vector<RequestRecord> records;    // one per prepared request, same order
  Nanos start_ns = 0;                    // schedule origin (just before the first arrival)
  Nanos end_ns = 0;                      // last request finished
  bool interrupted = false;              // the stop fd fired
  double cpu_user_s = 0, cpu_system_s = 0;  // the loop thread's CPU time during the run
  LoopStats loop;
};

// Sends requests[i] at start + offsets_ns[i] (offsets non-decreasing). Never throws for anything
// a server does: failures are recorded per request. Throws InvalidInput for bad arguments.
SendLoopResult run_requests(const SendLoopConfig& config, const std::vector<PreparedRequest>& requests,
                          const std::vector<Nanos>& offsets_ns);

// Bound of the loop's work per iteration (see the header comment).
inline constexpr int kMaxEventsPerIteration = 256;
inline constexpr std::size_t kMaxSendsPerIteration = 64;
// Transfers per curl multi handle. curl (7.88) looks for a reusable connection by walking every
// connection its multi holds to the host, so one multi with thousands of open connections made
// each new transfer cost ~20 ns per open connection; shards of this size keep that walk short.
inline constexpr std::size_t kTransfersPerCurlMulti = 128;

// How many sockets a run may open: RLIMIT_NOFILE's soft limit (raised to the hard limit where
// allowed; raise_open_file_limit() does it once), minus the descriptors open now, minus a margin
// for everything else the process opens (result files, MPI, curl internals).
struct ConnectionBudget {
  std::size_t soft_limit = 0, hard_limit = 0, open_now = 0, margin = 0;
  std::size_t max_connections = 0;
};
ConnectionBudget connection_budget();
void raise_open_file_limit();
// The pure part, for tests: margin = max(16, free / 20); at least 1 connection.
ConnectionBudget connection_budget_for(std::size_t soft_limit, std::size_t hard_limit, std::size_t open_now);

// The connection limit a run uses: `max_connections`, or the open-file budget when it is 0 (the
// soft limit raised first). Throws InvalidInput, naming the limit, when it exceeds the budget.
std::size_t resolve_connection_limit(int max_connections, ConnectionBudget* budget_out = nullptr);

// The failure kind of a transport error (curl result + the socket errno curl saw): counted per
// kind in the results so that refused, reset, timed-out and exhausted connections are told apart.
std::string transport_failure_kind(int curl_code, int os_errno);

// Process-wide curl initialisation; call once from main before threads start (safe to repeat).
void global_curl_init();

}  // namespace encbench::client
