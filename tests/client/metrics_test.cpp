// calculate_metrics against hand-computed cases (vllm's definitions).
#include <gtest/gtest.h>

#include "harness/client/metrics.hpp"

#include <functional>

using namespace encbench::client;
using encbench::Nanos;

namespace {
constexpr Nanos kMs = 1'000'000;
constexpr Nanos kS = 1'000'000'000;

// A successful streamed request: dispatched at `start`, choices events at the given offsets (ms).
RequestRecord ok_request(Nanos start, std::vector<double> choice_offsets_ms, std::int64_t completion, std::int64_t prompt = 10) {
  RequestRecord r;
  r.dispatched = true;
  r.success = true;
  r.intended_ns = start;
  r.arrival_ns = start;
  r.dispatch_ns = start;
  r.sent_ns = start;
  for (double ms : choice_offsets_ms) r.choices_ns.push_back(start + static_cast<Nanos>(ms * kMs));
  r.first_choices_ns = r.choices_ns.front();
  r.last_choices_ns = r.choices_ns.back();
  r.end_ns = r.last_choices_ns;
  r.usage_completion_tokens = completion;
  r.usage_prompt_tokens = prompt;
  r.content_chunks = static_cast<std::int64_t>(choice_offsets_ms.size());
  return r;
}
}  // namespace

TEST(Metrics, HandComputedThreeRequests) {
  std::vector<RequestRecord> records;
  records.push_back(ok_request(0, {100, 110, 130}, 3, 10));   // ttft 100, e2el 130, tpot 15, itl 10,20
  records.push_back(ok_request(50 * kMs, {200}, 1, 20));      // ttft 200, e2el 200, output 1: no tpot
  RequestRecord failed;
  failed.dispatched = true;
  failed.dispatch_ns = failed.arrival_ns = failed.intended_ns = 60 * kMs;
  failed.error = "HTTP 500: x";
  records.push_back(failed);
  MetricsOptions opts;
  opts.percentiles = {50, 99};
  const auto m = calculate_metrics(records, 2 * kS, opts);
  EXPECT_EQ(m.completed, 2);
  EXPECT_EQ(m.failed, 1);
  EXPECT_EQ(m.total_input, 30);   // failed requests contribute nothing
  EXPECT_EQ(m.total_output, 4);
  EXPECT_DOUBLE_EQ(m.request_throughput, 1.0);
  EXPECT_DOUBLE_EQ(m.output_throughput, 2.0);
  EXPECT_DOUBLE_EQ(m.total_token_throughput, 17.0);
  EXPECT_DOUBLE_EQ(m.latency.at("ttft").mean_ms, 150.0);
  EXPECT_DOUBLE_EQ(m.latency.at("ttft").std_ms, 50.0);
  EXPECT_NEAR(m.latency.at("ttft").percentiles_ms[1].second, 100 + 0.99 * 100, 1e-9);  // numpy linear
  EXPECT_EQ(m.latency.at("tpot").count, 1u);  // output_len <= 1 is skipped
  EXPECT_DOUBLE_EQ(m.latency.at("tpot").mean_ms, 15.0);
  EXPECT_EQ(m.latency.at("itl").count, 2u);
  EXPECT_DOUBLE_EQ(m.latency.at("itl").mean_ms, 15.0);
  EXPECT_DOUBLE_EQ(m.latency.at("e2el").median_ms, 165.0);
  // Per-request lists cover the failed one too, in order, with zeros.
  ASSERT_EQ(m.latencies_s.size(), 3u);
  EXPECT_DOUBLE_EQ(m.latencies_s[2], 0.0);
  EXPECT_EQ(m.errors[2], "HTTP 500: x");
  EXPECT_EQ(m.output_lens[2], 0);
  // Both requests overlap in [50, 130) ms.
  EXPECT_DOUBLE_EQ(m.max_concurrent_requests, 2.0);
  // All 4 choices events fall in the first second.
  EXPECT_DOUBLE_EQ(m.max_output_tokens_per_s, 4.0);
}

TEST(Metrics, SweepLineDeparturesBeforeArrivals) {
  EXPECT_DOUBLE_EQ(peak_concurrency_sweep({{0, kS}, {kS, 2 * kS}, {2 * kS, 3 * kS}}), 1.0);
  EXPECT_DOUBLE_EQ(peak_concurrency_sweep({{0, 2 * kS}, {kS, 3 * kS}, {kS, kS + 1}}), 3.0);
  // Sub-second sequential requests straddling a second boundary: still 1 (the old buckets said 2).
  EXPECT_DOUBLE_EQ(peak_concurrency_sweep({{900 * kMs, 950 * kMs}, {950 * kMs, 1100 * kMs}}), 1.0);
  EXPECT_DOUBLE_EQ(peak_concurrency_sweep({}), 0.0);
}

TEST(Metrics, PeakTokensInOneSecondBuckets) {
  // Bucket = int(t - min_start): 0.1, 0.5, 0.999 -> 0; 1.0, 1.2 -> 1; 2.5 -> 2.
  const std::vector<std::vector<Nanos>> times{{100 * kMs, 500 * kMs, 999 * kMs}, {kS, 1200 * kMs}, {2500 * kMs}};
  EXPECT_DOUBLE_EQ(peak_tokens_per_second(times, 0), 3.0);
}

TEST(Metrics, PeakTokensShiftedOrigin) {
  // With min_start = 0.5 s: offsets 0.0, 0.499, 0.5, 0.7 -> bucket 0 (4 events); 2.0 -> bucket 2.
  const std::vector<std::vector<Nanos>> times{{500 * kMs, 999 * kMs}, {kS, 1200 * kMs}, {2500 * kMs}};
  EXPECT_DOUBLE_EQ(peak_tokens_per_second(times, 500 * kMs), 4.0);
}

TEST(Metrics, PercentilesLikeNumpy) {
  // numpy.percentile([1, 2, 3, 4], [50, 99, 99.9, 0, 100]) = 2.5, 3.97, 3.997, 1, 4
  const auto s = summarize_ms({4, 1, 3, 2}, {50, 99, 99.9, 0, 100});
  EXPECT_DOUBLE_EQ(s.median_ms, 2.5);
  EXPECT_NEAR(s.percentiles_ms[1].second, 3.97, 1e-12);
  EXPECT_NEAR(s.percentiles_ms[2].second, 3.997, 1e-12);
  EXPECT_DOUBLE_EQ(s.percentiles_ms[3].second, 1.0);
  EXPECT_DOUBLE_EQ(s.percentiles_ms[4].second, 4.0);
  EXPECT_NEAR(s.std_ms, 1.118033988749895, 1e-12);  // population std
  const auto empty = summarize_ms({}, {99});        // vllm: `x or 0`
  EXPECT_DOUBLE_EQ(empty.mean_ms, 0.0);
  EXPECT_DOUBLE_EQ(empty.percentiles_ms[0].second, 0.0);
  EXPECT_EQ(percentile_label(99), "99");
  EXPECT_EQ(percentile_label(99.9), "99.9");
  EXPECT_EQ(percentile_label(50.0), "50");
}

TEST(Metrics, GoodputUsesAllTpotsAndEveryGivenSlo) {
  std::vector<RequestRecord> records;
  records.push_back(ok_request(0, {100, 110, 130}, 3));  // ttft 100, tpot 15, e2el 130
  records.push_back(ok_request(0, {300}, 1));            // ttft 300, tpot 0 (all_tpots), e2el 300
  records.push_back(ok_request(0, {50, 250}, 2));        // ttft 50, tpot 200, e2el 250
  MetricsOptions opts;
  opts.goodput_slo_ms = {{"ttft", 200}};
  auto m = calculate_metrics(records, kS, opts);
  ASSERT_TRUE(m.request_goodput.has_value());
  EXPECT_DOUBLE_EQ(*m.request_goodput, 2.0);
  opts.goodput_slo_ms = {{"ttft", 400}, {"tpot", 15}};
  m = calculate_metrics(records, kS, opts);
  EXPECT_DOUBLE_EQ(*m.request_goodput, 2.0);  // the 1-token request has tpot 0 <= 15
  opts.goodput_slo_ms = {{"e2el", 100}};
  m = calculate_metrics(records, kS, opts);
  EXPECT_DOUBLE_EQ(*m.request_goodput, 0.0);
}

TEST(Metrics, ScheduleAwareExtras) {
  std::vector<RequestRecord> records;
  auto r = ok_request(10 * kMs, {40, 60}, 8);
  r.intended_ns = 0;              // scheduled at 0, dispatched 10 ms late (queue of 6 ms)
  r.arrival_ns = 4 * kMs;
  r.sent_ns = 11 * kMs;
  r.content_chunks = 2;
  records.push_back(r);
  MetricsOptions opts;
  opts.finite_rate = true;
  const auto m = calculate_metrics(records, kS, opts);
  EXPECT_DOUBLE_EQ(m.ttft_from_intended.mean_ms, 50.0);
  EXPECT_DOUBLE_EQ(m.e2el_from_intended.mean_ms, 70.0);
  EXPECT_DOUBLE_EQ(m.dispatch_lag.max_ms, 11.0);
  EXPECT_DOUBLE_EQ(m.client_queue.max_ms, 6.0);
  EXPECT_DOUBLE_EQ(m.client_lag.max_ms, 5.0);
  EXPECT_TRUE(m.client_bottleneck_warning);
  EXPECT_DOUBLE_EQ(m.tokens_per_chunk_mean, 4.0);
  EXPECT_DOUBLE_EQ(m.latency.at("client_queue_time").mean_ms, 6.0);
  EXPECT_DOUBLE_EQ(m.latency.at("e2el_including_client_queue").mean_ms, 66.0);
}

TEST(Metrics, OutputLengthFallsBackToChunksWithoutUsage) {
  auto r = ok_request(0, {10, 20, 30}, -1);
  r.usage_prompt_tokens = -1;
  r.prompt_len_client = 7;
  const auto m = calculate_metrics({r}, kS, MetricsOptions{});
  EXPECT_EQ(m.total_output, 3);
  EXPECT_EQ(m.total_input, 7);
  EXPECT_EQ(m.output_len_from_chunks, 1);
}

namespace {
// Sent requests every `gap` from 0; lag_of(i) is request i's client lag.
std::vector<RequestRecord> sent_with_lags(std::size_t n, Nanos gap, const std::function<Nanos(std::size_t)>& lag_of) {
  std::vector<RequestRecord> records;
  for (std::size_t i = 0; i < n; ++i) {
    RequestRecord r = ok_request(static_cast<Nanos>(i) * gap, {1.0}, 1);
    r.admitted_ns = r.arrival_ns;
    r.dispatch_ns = r.sent_ns = r.intended_ns + lag_of(i);
    records.push_back(r);
  }
  return records;
}
}  // namespace

TEST(Saturation, OnsetAndSustainedRateOfAClientThatFellBehind) {
  // 1000 requests offered every 100 us (10,000 req/s). The first 400 go out 50 us late; from
  // request 400 on the client sends one every 125 us (8,000 req/s), falling further behind.
  const Nanos gap = 100'000;
  auto records = sent_with_lags(1000, gap, [&](std::size_t i) -> Nanos {
    if (i < 400) return 50'000;
    const Nanos sent = 400 * gap + 2'000'000 + static_cast<Nanos>(i - 400) * 125'000;
    return sent - static_cast<Nanos>(i) * gap;
  });
  const ClientSaturation s = analyse_saturation(records, 0);
  ASSERT_TRUE(s.saturated);
  EXPECT_EQ(s.onset_request, 400u);
  EXPECT_NEAR(s.onset_s, 0.04, 1e-12);
  EXPECT_EQ(s.requests, 600u);
  EXPECT_NEAR(s.sustained_send_rate, 8000.0, 1e-6);
  EXPECT_NEAR(s.offered_rate, 10000.0, 1e-6);
  EXPECT_NEAR(s.max_client_lag_ms, 2.0 + 599 * 0.025, 1e-9);
  // The same through calculate_metrics, and the concurrency-cap wait is not client lag.
  for (auto& r : records) r.arrival_ns = r.admitted_ns = r.intended_ns;
  EXPECT_TRUE(calculate_metrics(records, kS, MetricsOptions{}, 0).saturation.saturated);
  for (auto& r : records) r.admitted_ns = r.dispatch_ns;  // every wait was the semaphore's
  EXPECT_FALSE(calculate_metrics(records, kS, MetricsOptions{}, 0).saturation.saturated);
}

TEST(Saturation, ScatteredLateRequestsAreNotSaturation) {
  // Every 20th request 5 ms late (a hiccup pattern), the rest on time: no stretch is 90 % behind.
  const auto records = sent_with_lags(2000, 100'000, [](std::size_t i) -> Nanos { return i % 20 == 0 ? 5'000'000 : 20'000; });
  EXPECT_FALSE(analyse_saturation(records, 0).saturated);
  // A late tail under 1 % of the run (and under 10 requests) is not called saturation either.
  const auto tail = sent_with_lags(2000, 100'000, [](std::size_t i) -> Nanos { return i >= 1995 ? 3'000'000 : 0; });
  EXPECT_FALSE(analyse_saturation(tail, 0).saturated);
  EXPECT_FALSE(analyse_saturation({}, 0).saturated);
}

TEST(Metrics, FailuresAreCountedByKindAndSendWaitIsApart) {
  std::vector<RequestRecord> records;
  for (const char* kind : {"connection_refused", "timeout", "connection_refused", ""}) {
    RequestRecord r;
    r.dispatched = true;
    r.intended_ns = r.arrival_ns = r.admitted_ns = 10 * kMs;
    r.dispatch_ns = 13 * kMs;  // 3 ms waiting for a connection slot
    r.error = "x";
    r.failure_kind = kind;
    records.push_back(r);
  }
  const auto m = calculate_metrics(records, kS, MetricsOptions{});
  EXPECT_EQ(m.failed, 4);
  const std::map<std::string, std::int64_t> want{{"connection_refused", 2}, {"timeout", 1}, {"unclassified", 1}};
  EXPECT_EQ(m.failures_by_kind, want);
  EXPECT_DOUBLE_EQ(m.send_wait.max_ms, 3.0);
  EXPECT_DOUBLE_EQ(m.client_queue.max_ms, 0.0);  // not vLLM's queue time
  EXPECT_DOUBLE_EQ(m.queue_times_s[0], 0.0);
}
