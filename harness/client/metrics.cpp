#include "harness/client/metrics.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "harness/core/number_format.hpp"
#include "harness/core/stats.hpp"

namespace encbench::client {

const std::vector<std::string>& known_percentile_metrics() {
  static const std::vector<std::string> kNames{"ttft", "tpot", "itl", "e2el", "client_queue_time",
                                               "e2el_including_client_queue"};
  return kNames;
}

std::string percentile_label(double p) {
  if (std::floor(p) == p) return std::to_string(static_cast<long long>(p));
  // Python's str(float): shortest repr that round-trips.
  std::string text;
  for (int precision = 1; precision <= 17; ++precision) {
    text = numbers::significant(p, precision);
    if (std::strtod(text.c_str(), nullptr) == p) break;
  }
  return text;
}

MetricSummary summarize_ms(const std::vector<double>& values_ms, const std::vector<double>& percentiles) {
  MetricSummary s;
  s.count = values_ms.size();
  std::vector<double> sorted = values_ms;
  if (sorted.empty()) sorted.push_back(0.0);  // vllm: np.mean(x or 0)
  std::sort(sorted.begin(), sorted.end());
  s.mean_ms = stats::mean(sorted);
  s.median_ms = stats::percentile_sorted(sorted, 50);
  s.std_ms = stats::stdev_population(sorted);
  s.max_ms = sorted.back();
  for (double p : percentiles) s.percentiles_ms.emplace_back(p, stats::percentile_sorted(sorted, p));
  return s;
}

double peak_concurrency_sweep(const std::vector<std::pair<Nanos, Nanos>>& intervals) {
  // (time, delta): departures (-1) sort before arrivals (+1) at equal times: half-open intervals.
  std::vector<std::pair<Nanos, int>> events;
  events.reserve(intervals.size() * 2);
  for (auto [start, end] : intervals) {
    events.emplace_back(start, +1);
    events.emplace_back(end, -1);
  }
  std::sort(events.begin(), events.end());
  long current = 0, peak = 0;
  for (auto& e : events) {
    current += e.second;
    peak = std::max(peak, current);
  }
  return static_cast<double>(peak);
}

double peak_tokens_per_second(const std::vector<std::vector<Nanos>>& token_times, Nanos min_start) {
  std::vector<long> buckets;
  for (const auto& times : token_times) {
    for (Nanos t : times) {
      // vllm: int(t - min_start) on seconds (truncation toward zero).
      const double offset_s = static_cast<double>(t - min_start) / 1e9;
      const long bucket = static_cast<long>(offset_s);
      if (bucket < 0) continue;
      if (static_cast<std::size_t>(bucket) >= buckets.size()) buckets.resize(bucket + 1, 0);
      ++buckets[bucket];
    }
  }
  long peak = 0;
  for (long b : buckets) peak = std::max(peak, b);
  return static_cast<double>(peak);
}

namespace {
double ns_ms(Nanos ns) { return static_cast<double>(ns) / 1e6; }
double ns_s(Nanos ns) { return static_cast<double>(ns) / 1e9; }
}  // namespace

ClientSaturation analyse_saturation(const std::vector<RequestRecord>& records, Nanos start_ns) {
  struct Sent {
    Nanos intended, sent;
    bool behind;
  };
  constexpr Nanos kBehindNs = 1'000'000;
  std::vector<Sent> sent;
  for (const RequestRecord& r : records) {
    if (!r.dispatched || r.sent_ns == 0) continue;
    const Nanos cap_wait = r.admitted_ns > 0 ? r.admitted_ns - r.arrival_ns : 0;
    sent.push_back({r.intended_ns, r.sent_ns, r.sent_ns - r.intended_ns - cap_wait > kBehindNs});
  }
  std::stable_sort(sent.begin(), sent.end(), [](const Sent& a, const Sent& b) { return a.intended < b.intended; });
  ClientSaturation s;
  // Earliest k whose suffix is >= 90 % behind and starts with a behind request.
  std::size_t behind_in_suffix = 0, onset = sent.size();
  for (std::size_t k = sent.size(); k-- > 0;) {
    behind_in_suffix += sent[k].behind ? 1 : 0;
    if (sent[k].behind && 10 * behind_in_suffix >= 9 * (sent.size() - k)) onset = k;
  }
  const std::size_t stretch = sent.size() - onset;
  if (onset == sent.size() || stretch < 10 || 100 * stretch < sent.size()) return s;
  s.saturated = true;
  s.onset_request = onset;
  s.onset_s = static_cast<double>(sent[onset].intended - start_ns) / 1e9;
  s.requests = stretch;
  Nanos first_sent = sent[onset].sent, last_sent = sent[onset].sent;
  for (std::size_t k = onset; k < sent.size(); ++k) {
    first_sent = std::min(first_sent, sent[k].sent);
    last_sent = std::max(last_sent, sent[k].sent);
    s.max_client_lag_ms = std::max(s.max_client_lag_ms, static_cast<double>(sent[k].sent - sent[k].intended) / 1e6);
  }
  const auto rate = [&](Nanos span) { return span > 0 ? static_cast<double>(stretch - 1) / (static_cast<double>(span) / 1e9) : 0.0; };
  s.sustained_send_rate = rate(last_sent - first_sent);
  s.offered_rate = rate(sent.back().intended - sent[onset].intended);
  return s;
}

namespace {

// The samples calculate_metrics gathers over the records, before they are summarised.
struct MetricSamples {
  std::vector<double> ttfts_ms, tpots_ms, all_tpots_ms, itls_ms, e2els_ms, queue_ms, e2el_queue_ms;
  std::vector<double> ttft_intended_ms, e2el_intended_ms, lag_ms, client_lag_ms, client_queue_ms, send_wait_ms;
  std::vector<std::pair<Nanos, Nanos>> intervals;
  std::vector<std::vector<Nanos>> token_times;
  Nanos min_start = 0;
  bool any_success = false;
  std::int64_t total_chunks = 0;
  double tokens_per_chunk_sum = 0;
  std::int64_t tokens_per_chunk_n = 0;
};

// What a successful request adds: token totals and vllm's latency samples (vllm counts only these).
void add_success(const RequestRecord& r, std::int64_t prompt_len, std::int64_t output_len, Nanos st, Nanos ttft,
                 Nanos latency, Nanos queue, const std::vector<double>& itl_s, const MetricsOptions& options,
                 ServingMetrics& m, MetricSamples& x) {
  ++m.completed;
  x.queue_ms.push_back(ns_ms(queue));  // vllm: client queue time over successful requests only
  // Token counts come from the server (usage): saturating sums, so two streams claiming 2^63-1
  // tokens give INT64_MAX, never a negative total or throughput.
  m.total_input = saturating_add(m.total_input, prompt_len);
  m.total_output = saturating_add(m.total_output, output_len);
  x.ttfts_ms.push_back(ns_ms(ttft));
  x.e2els_ms.push_back(ns_ms(latency));
  if (options.finite_rate) x.e2el_queue_ms.push_back(ns_ms(latency + queue));
  for (double s : itl_s) x.itls_ms.push_back(s * 1e3);
  if (output_len > 1) {
    const double tpot = ns_ms(latency - ttft) / static_cast<double>(output_len - 1);
    x.tpots_ms.push_back(tpot);
    x.all_tpots_ms.push_back(tpot);
  } else {
    x.all_tpots_ms.push_back(0.0);
  }
  x.ttft_intended_ms.push_back(ns_ms((options.mode == RequestMode::non_stream ? r.end_ns : r.first_choices_ns) - r.intended_ns));
  x.e2el_intended_ms.push_back(ns_ms(st + latency - r.intended_ns));
  x.intervals.emplace_back(st, st + latency);
  if (options.mode == RequestMode::stream) {
    x.token_times.push_back(r.choices_ns);
  } else {
    x.token_times.push_back({st + latency});
  }
  if (!x.any_success || st < x.min_start) x.min_start = st;
  x.any_success = true;
  x.total_chunks = saturating_add(x.total_chunks, r.content_chunks);
  if (r.content_chunks > 0) {
    x.tokens_per_chunk_sum += static_cast<double>(output_len) / static_cast<double>(r.content_chunks);
    ++x.tokens_per_chunk_n;
  }
  if (r.max_events_per_read > 1) ++m.reads_with_several_events;
}

// One sent request: vllm's per-request arrays (failed ones too), our lag samples, then
// add_success for a successful one.
void add_record(const RequestRecord& r, const MetricsOptions& options, ServingMetrics& m, MetricSamples& x) {
  const bool ok = r.success;
  // Input length: usage.prompt_tokens first, else the client-side estimate.
  const std::int64_t prompt_len = r.usage_prompt_tokens >= 0 ? r.usage_prompt_tokens : r.prompt_len_client;
  // Output length: usage.completion_tokens when > 0, else (vllm re-tokenizes; we have no
  // tokenizer) the number of content chunks.
  std::int64_t output_len = 0;
  if (ok) {
    if (r.usage_completion_tokens > 0) {
      output_len = r.usage_completion_tokens;
    } else {
      output_len = r.content_chunks;
      ++m.output_len_from_chunks;
    }
  }
  const Nanos st = r.dispatch_ns;
  const Nanos ttft = r.first_choices_ns ? r.first_choices_ns - st : 0;
  Nanos latency = 0;
  if (ok) latency = (options.mode == RequestMode::non_stream ? r.end_ns : r.last_choices_ns) - st;
  std::vector<double> itl_s;
  if (options.mode == RequestMode::stream) {
    for (std::size_t k = 1; k < r.choices_ns.size(); ++k) itl_s.push_back(ns_s(r.choices_ns[k] - r.choices_ns[k - 1]));
  }
  // vLLM's client queue: the --max-concurrency (semaphore) wait. A wait for a connection slot
  // or the loop's turn (admitted -> dispatch) is the client's own lag, not queue time.
  const Nanos queue = (r.admitted_ns > 0 ? r.admitted_ns : r.dispatch_ns) - r.arrival_ns;

  // vllm: output.prompt_len for every request (the sample's length, replaced by usage when seen).
  m.input_lens.push_back(prompt_len);
  m.incomplete_streams += r.incomplete_stream ? 1 : 0;
  m.error_events += r.error_events > 0 ? 1 : 0;
  m.output_lens.push_back(output_len);
  m.ttfts_s.push_back(ok || r.first_choices_ns ? ns_s(ttft) : 0.0);
  m.latencies_s.push_back(ns_s(latency));
  m.start_times_s.push_back(ns_s(st));
  m.queue_times_s.push_back(ns_s(queue));
  m.itls_s.push_back(ok ? itl_s : std::vector<double>{});
  m.generated_texts.push_back(r.generated_text);
  m.errors.push_back(r.error);

  if (r.sent_ns) {
    x.lag_ms.push_back(ns_ms(r.sent_ns - r.intended_ns));
    x.client_lag_ms.push_back(ns_ms(r.sent_ns - r.intended_ns - queue));
  }
  x.client_queue_ms.push_back(ns_ms(queue));
  if (r.admitted_ns > 0) x.send_wait_ms.push_back(ns_ms(r.dispatch_ns - r.admitted_ns));

  if (!ok) {
    ++m.failed;
    ++m.failures_by_kind[r.failure_kind.empty() ? "unclassified" : r.failure_kind];
    return;
  }
  add_success(r, prompt_len, output_len, st, ttft, latency, queue, itl_s, options, m, x);
}

// vllm's request goodput: successful requests meeting every given SLO, per second.
double request_goodput(const MetricSamples& x, const MetricsOptions& options, double duration) {
  std::int64_t good = 0;
  for (std::size_t i = 0; i < x.ttfts_ms.size(); ++i) {
    bool is_good = true;
    for (const auto& [name, slo] : options.goodput_slo_ms) {
      const double value = name == "ttft" ? x.ttfts_ms[i] : name == "tpot" ? x.all_tpots_ms[i] : x.e2els_ms[i];
      if (!(slo >= value)) is_good = false;
    }
    if (is_good) ++good;
  }
  return static_cast<double>(good) / duration;
}

// Throughputs, peaks and every summary from the gathered samples.
void summarise(const MetricSamples& x, const MetricsOptions& options, ServingMetrics& m) {
  const double duration = m.duration_s > 0 ? m.duration_s : 1e-9;
  m.request_throughput = static_cast<double>(m.completed) / duration;
  m.output_throughput = static_cast<double>(m.total_output) / duration;
  m.total_token_throughput = (static_cast<double>(m.total_input) + static_cast<double>(m.total_output)) / duration;
  if (!options.goodput_slo_ms.empty()) m.request_goodput = request_goodput(x, options, duration);
  if (x.any_success) {
    m.max_output_tokens_per_s = peak_tokens_per_second(x.token_times, x.min_start);
    m.max_concurrent_requests = peak_concurrency_sweep(x.intervals);
  }
  const auto& p = options.percentiles;
  m.latency["ttft"] = summarize_ms(x.ttfts_ms, p);
  m.latency["tpot"] = summarize_ms(x.tpots_ms, p);
  m.latency["itl"] = summarize_ms(x.itls_ms, p);
  m.latency["e2el"] = summarize_ms(x.e2els_ms, p);
  m.latency["client_queue_time"] = summarize_ms(x.queue_ms, p);
  m.latency["e2el_including_client_queue"] = summarize_ms(x.e2el_queue_ms, p);

  const std::vector<double> lag_percentiles{50, 90, 99, 99.9};
  m.ttft_from_intended = summarize_ms(x.ttft_intended_ms, p);
  m.e2el_from_intended = summarize_ms(x.e2el_intended_ms, p);
  m.dispatch_lag = summarize_ms(x.lag_ms, lag_percentiles);
  m.client_lag = summarize_ms(x.client_lag_ms, lag_percentiles);
  m.client_queue = summarize_ms(x.client_queue_ms, lag_percentiles);
  m.send_wait = summarize_ms(x.send_wait_ms, lag_percentiles);
  m.tokens_per_chunk_mean = x.tokens_per_chunk_n ? x.tokens_per_chunk_sum / static_cast<double>(x.tokens_per_chunk_n) : 0;
  m.tokens_per_chunk_overall = x.total_chunks ? static_cast<double>(m.total_output) / static_cast<double>(x.total_chunks) : 0;
  m.client_bottleneck_warning = !x.client_lag_ms.empty() && m.client_lag.percentiles_ms[2].second > 1.0;
}

}  // namespace

ServingMetrics calculate_metrics(const std::vector<RequestRecord>& records, Nanos duration_ns,
                                 const MetricsOptions& options, Nanos start_ns) {
  ServingMetrics m;
  m.duration_s = ns_s(duration_ns);
  MetricSamples samples;
  for (const RequestRecord& r : records) {
    if (!r.dispatched) {
      ++m.not_sent;
      continue;
    }
    add_record(r, options, m, samples);
  }
  summarise(samples, options, m);
  m.saturation = analyse_saturation(records, start_ns);
  return m;
}

}  // namespace encbench::client
