#include "harness/client/probe.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>

#include "harness/core/error.hpp"
#include "harness/core/stats.hpp"

namespace encbench::client {

PreparedRequest make_probe_request(const RequestOptions& options) {
  SampleRequest hi;
  hi.prompt = "Hi";
  hi.prompt_len = 1;
  hi.text_tokens = 1;
  hi.vision_tokens = 0;
  hi.output_len = 1;
  RequestOptions o = options;
  o.model_per_request.clear();  // LoRA: vLLM's probe keeps the test input's model
  PreparedRequest probe = prepare_requests({hi}, o).front();
  std::erase_if(probe.headers, [](const std::string& h) { return h.rfind("x-request-id:", 0) == 0; });
  probe.request_id.clear();
  return probe;
}

ProbeLoop::ProbeLoop(SendLoopConfig engine, PreparedRequest probe, double rate_per_s)
    : engine_(std::move(engine)),
      probe_(std::move(probe)),
      interval_(std::chrono::nanoseconds(static_cast<std::int64_t>(1e9 / rate_per_s))) {
  require(rate_per_s > 0, "--probe-request-rate must be > 0 to send probes");
  abort_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  require(abort_fd_ >= 0, "probe requests: eventfd failed");
  // The probe is not the measured run: no cap, no bar, no shared connections (the share is the
  // main thread's), and only our own abort ends it early (the run's stop fd is the main loop's).
  engine_.max_concurrency = 0;
  engine_.progress = false;
  engine_.start_at_ns = 0;
  engine_.stop_fd = abort_fd_;
  thread_ = std::thread([this] { loop(); });
}

ProbeLoop::~ProbeLoop() {
  if (thread_.joinable()) finish(true);
  if (abort_fd_ >= 0) ::close(abort_fd_);
}

void ProbeLoop::loop() {
  // Probes reuse their connection between sends, as vLLM's one aiohttp session does.
  ConnectionShare connections;
  engine_.connections = &connections;
  std::size_t sent = 0;
  for (;;) {
    {
      std::lock_guard lock(mutex_);
      if (stop_) return;
    }
    RequestRecord record;
    bool interrupted = false;
    try {
      SendLoopResult one = run_requests(engine_, {probe_}, {0});
      record = std::move(one.records.front());
      interrupted = one.interrupted;
    } catch (const std::exception& e) {
      // Never let a probe end the process from its thread: record it as a failed probe and stop.
      record.error = std::string("probe not sent: ") + e.what();
      record.failure_kind = "client_internal";
      interrupted = true;
    }
    record.index = sent++;
    std::unique_lock lock(mutex_);
    records_.push_back(std::move(record));
    if (interrupted) return;
    // vLLM: await asyncio.sleep(1 / rate) after each probe; a stop ends the wait at once.
    wake_.wait_for(lock, interval_, [this] { return stop_; });
  }
}

std::vector<RequestRecord> ProbeLoop::finish(bool abort) {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (abort) {
    const std::uint64_t one = 1;
    [[maybe_unused]] const auto n = ::write(abort_fd_, &one, sizeof one);
  }
  if (thread_.joinable()) thread_.join();
  return std::move(records_);
}

std::optional<ProbeStats> probe_stats(const std::vector<RequestRecord>& records, RequestMode mode) {
  std::vector<double> lat_ms;
  for (const auto& r : records) {
    if (!r.success) continue;
    // vLLM's latency: the last choices event minus the send start (the body's end without a stream).
    const Nanos end = mode == RequestMode::non_stream ? r.end_ns : r.last_choices_ns;
    lat_ms.push_back(static_cast<double>(end - r.dispatch_ns) / 1e6);
  }
  if (lat_ms.empty()) return std::nullopt;
  ProbeStats s;
  s.completed = static_cast<std::int64_t>(lat_ms.size());
  s.failed = static_cast<std::int64_t>(records.size()) - s.completed;
  s.median_e2el_ms = stats::median(lat_ms);
  s.p99_e2el_ms = stats::percentile(lat_ms, 99);
  s.max_e2el_ms = *std::max_element(lat_ms.begin(), lat_ms.end());
  return s;
}

}  // namespace encbench::client
