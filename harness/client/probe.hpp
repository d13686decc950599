#pragma once
// vLLM's --probe-request-rate (vllm/benchmarks/serve.py, probe_loop): beside the measured run, one
// text-only request ("Hi", one output token, no images, no request id) at a time, outside
// --max-concurrency; after each finishes the loop waits 1/rate s and sends the next. Their
// latencies are reported apart (probe_* keys, "Probe Requests" section): what the main workload
// costs an unrelated user. The loop runs on its own thread with its own event loop and
// connections, so a probe never waits for a concurrency slot or the main loop's turn.
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "harness/client/send_loop.hpp"
#include "harness/client/records.hpp"
#include "harness/client/request_builder.hpp"

namespace encbench::client {

// vLLM's probe_input: the test input with prompt "Hi", prompt_len 1, output_len 1, no images and
// no chat messages; sent without x-request-id (vLLM's test input has none).
PreparedRequest make_probe_request(const RequestOptions& options);

class ProbeLoop {
 public:
  // Starts sending at once. `engine` is the measured run's configuration: its concurrency cap,
  // stop fd, progress bar and connection share are not used (the probe has its own).
  ProbeLoop(SendLoopConfig engine, PreparedRequest probe, double rate_per_s);
  ~ProbeLoop();
  ProbeLoop(const ProbeLoop&) = delete;
  ProbeLoop& operator=(const ProbeLoop&) = delete;
  // Stops the loop and returns every probe's record, in send order. As vLLM, a probe in flight is
  // awaited; with `abort` (the run was interrupted) it is stopped like the run's own requests.
  std::vector<RequestRecord> finish(bool abort);

 private:
  void loop();

  SendLoopConfig engine_;
  PreparedRequest probe_;
  std::chrono::nanoseconds interval_;
  int abort_fd_ = -1;  // eventfd: the probe's stop fd (only written on abort)
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::vector<RequestRecord> records_;  // written by the loop thread until it is joined
  std::thread thread_;
};

// vLLM's probe_stats: present only when at least one probe succeeded (as vLLM).
struct ProbeStats {
  std::int64_t completed = 0, failed = 0;
  double median_e2el_ms = 0, p99_e2el_ms = 0, max_e2el_ms = 0;
};
std::optional<ProbeStats> probe_stats(const std::vector<RequestRecord>& records, RequestMode mode);

}  // namespace encbench::client
