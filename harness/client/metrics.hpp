#pragma once
// Serving metrics from request records, with vllm bench serve's exact definitions
// (vllm/benchmarks/serve.py calculate_metrics; see docs/client.md), plus the schedule-aware
// numbers vllm does not have (TTFT/E2EL from the intended send time, dispatch lag, tokens per
// chunk). Pure function of plain data: no clocks, no I/O.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "harness/client/records.hpp"

namespace encbench::client {

struct MetricSummary {
  std::size_t count = 0;
  double mean_ms = 0, median_ms = 0, std_ms = 0, max_ms = 0;
  std::vector<std::pair<double, double>> percentiles_ms;  // (p, value)
};

struct MetricsOptions {
  std::vector<double> percentiles{99};              // --metric-percentiles
  std::map<std::string, double> goodput_slo_ms;     // --goodput ttft|tpot|e2el -> ms
  bool finite_rate = false;                         // E2EL incl. client queue only then
  RequestMode mode = RequestMode::stream;
};

// a + b clamped to [INT64_MIN, INT64_MAX]: token totals sum what servers claim (usage).
inline std::int64_t saturating_add(std::int64_t a, std::int64_t b) {
  std::int64_t sum = 0;
  if (!__builtin_add_overflow(a, b, &sum)) return sum;
  return b > 0 ? INT64_MAX : INT64_MIN;
}

// Names accepted by --percentile-metrics, in vllm's print order.
const std::vector<std::string>& known_percentile_metrics();

// When the client itself could not keep the schedule: from the first request of the final stretch
// in which at least 90 % of requests waited > 1 ms in the client (client lag: sent - intended -
// concurrency-cap wait) up to the last send, what send rate it sustained against what was
// offered. `saturated` needs that stretch to hold >= 1 % of the sent requests (and >= 10).
struct ClientSaturation {
  bool saturated = false;
  double onset_s = 0;                 // intended time of the stretch's first request, from the start
  std::size_t onset_request = 0;      // its position among the sent requests (intended order)
  std::size_t requests = 0;           // sent requests in the stretch
  double sustained_send_rate = 0;     // requests / (last send - first send) in the stretch
  double offered_rate = 0;            // requests / (last intended - first intended) in the stretch
  double max_client_lag_ms = 0;
};
ClientSaturation analyse_saturation(const std::vector<RequestRecord>& records, Nanos start_ns);

struct ServingMetrics {
  // ---- vllm's fields
  std::int64_t completed = 0, failed = 0;
  double duration_s = 0;
  std::int64_t total_input = 0, total_output = 0;
  double request_throughput = 0, output_throughput = 0, total_token_throughput = 0;
  std::optional<double> request_goodput;          // only with --goodput
  double max_output_tokens_per_s = 0;             // 1-s buckets of choices events
  double max_concurrent_requests = 0;             // sweep line over [start, start+latency)
  // ttft, tpot, itl, e2el, client_queue_time, e2el_including_client_queue
  std::map<std::string, MetricSummary> latency;
  // Per-request lists in request order (dispatched requests, failed ones included), seconds.
  std::vector<std::int64_t> input_lens, output_lens;
  std::vector<double> ttfts_s, latencies_s, start_times_s, queue_times_s;
  std::vector<std::vector<double>> itls_s;
  std::vector<std::string> generated_texts, errors;

  // ---- beyond vllm (own JSON keys)
  std::int64_t not_sent = 0;                      // never handed to curl (interrupted run)
  std::int64_t incomplete_streams = 0;            // 200 streams with choices but no data: [DONE]
  std::int64_t error_events = 0;                  // requests whose 200 stream carried an error event
  MetricSummary ttft_from_intended, e2el_from_intended;  // successful requests
  MetricSummary dispatch_lag;                     // sent - intended, every sent request
  MetricSummary client_lag;                       // dispatch lag minus client-queue wait
  MetricSummary client_queue;                     // admitted - arrival (concurrency slot wait)
  MetricSummary send_wait;                        // dispatch - admitted (connection slot / loop turn)
  double tokens_per_chunk_mean = 0;               // mean over successful requests
  double tokens_per_chunk_overall = 0;            // total output tokens / total content chunks
  std::int64_t output_len_from_chunks = 0;        // requests without usage (chunk count used)
  std::int64_t reads_with_several_events = 0;     // requests where one read completed >1 event
  bool client_bottleneck_warning = false;         // client lag p99 > 1 ms
  std::map<std::string, std::int64_t> failures_by_kind;  // RequestRecord::failure_kind -> count
  ClientSaturation saturation;
};

ServingMetrics calculate_metrics(const std::vector<RequestRecord>& records, Nanos duration_ns,
                                 const MetricsOptions& options, Nanos start_ns = 0);

// Summary of millisecond values with numpy semantics (empty -> zeros, like vllm's `x or 0`).
MetricSummary summarize_ms(const std::vector<double>& values_ms, const std::vector<double>& percentiles);

// "99" for 99.0, "99.9" for 99.9: vllm's label (str(int(p)) if integral else str(p)).
std::string percentile_label(double p);

// vllm's two peaks, exposed for tests.
double peak_concurrency_sweep(const std::vector<std::pair<Nanos, Nanos>>& intervals);
double peak_tokens_per_second(const std::vector<std::vector<Nanos>>& token_times, Nanos min_start);

}  // namespace encbench::client
