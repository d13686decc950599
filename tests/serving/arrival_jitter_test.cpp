// The arrival jitter of one run (serving/virtual_loop.hpp). A request reaches the
// API server (bodies in transit when it was sent, itself included) x per_request x exp(sigma z)
// after its send, drawn per run. Exact where sigma is 0; bounded on both sides by the sample's own
// statistics where it is not. Times are virtual: nothing depends on the machine.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "harness/core/error.hpp"
#include "harness/serving/serving_model.hpp"
#include "harness/serving/virtual_loop.hpp"
#include "tests/serving/text_only_loop.hpp"

namespace encbench::serving {
namespace {

constexpr Nanos kMs = 1'000'000;

using text_only::no_encoder;
using text_only::ten_ms_steps;

std::vector<VirtualRequest> requests_at(const std::vector<Nanos>& arrivals) {
  std::vector<VirtualRequest> out(arrivals.size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i].arrival_ns = arrivals[i];
    out[i].client_prompt_tokens = 20;
    out[i].request.prompt_tokens = 32;
    out[i].request.output_tokens = 3;
  }
  return out;
}

ApiServerModel one_process(double request_ms) {
  ApiServerModel m;
  m.name = "test";
  m.request_ms = {request_ms, "test"};
  set_api_server_count(m, 1, "test");
  return m;
}

VirtualArmResult run(const std::vector<VirtualRequest>& requests, double per_request_ms, double sigma,
                     std::uint64_t seed, const ApiServerModel& api_server = {}) {
  VirtualArmOptions options;
  options.keep_steps = true;
  options.api_server = api_server;
  options.jitter_seed = seed;
  options.arrival_jitter_per_request_ns = static_cast<Nanos>(per_request_ms * 1e6);
  options.arrival_jitter_sigma = sigma;
  return run_virtual_arm(requests, SchedulerConfig{}, ten_ms_steps(), no_encoder(), options);
}

// Request ids in the order they began their API-server processing.
std::vector<std::size_t> processing_order(const VirtualArmResult& r) {
  std::vector<std::size_t> ids(r.traces.size());
  std::iota(ids.begin(), ids.end(), 0);
  std::stable_sort(ids.begin(), ids.end(), [&](std::size_t a, std::size_t b) {
    return r.traces[a].api_server_start_ns < r.traces[b].api_server_start_ns;
  });
  return ids;
}

TEST(ArrivalJitter, OffLeavesTheRunAsItWas) {
  const std::vector<VirtualRequest> reqs = requests_at({0, 0, 0, 3 * kMs, 40 * kMs});
  const VirtualArmResult plain = run(reqs, 0, 0, 7, one_process(4));
  const VirtualArmResult off = run(reqs, 0, 1.1, 7, one_process(4));  // sigma alone does nothing
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    EXPECT_EQ(plain.records[i].first_choices_ns, off.records[i].first_choices_ns) << i;
    EXPECT_EQ(plain.records[i].end_ns, off.records[i].end_ns) << i;
    EXPECT_EQ(plain.traces[i].api_server_start_ns, off.traces[i].api_server_start_ns) << i;
  }
}

TEST(ArrivalJitter, TheKthOfABurstArrivesKBodiesLateAndALoneRequestOne) {
  // sigma 0: the delay is exactly (bodies in transit + 1) x 2 ms. No API-server stage, so a
  // request reaches the scheduler when it reaches the server.
  const VirtualArmResult burst = run(requests_at({0, 0, 0, 0}), 2, 0, 1);
  for (std::size_t k = 0; k < 4; ++k)
    EXPECT_EQ(burst.traces[k].engine_arrival_ns - burst.records[k].sent_ns, static_cast<Nanos>(k + 1) * 2 * kMs) << k;
  // Sent 100 ms apart, each finds the previous one arrived: one body's time each.
  const VirtualArmResult spaced = run(requests_at({0, 100 * kMs, 200 * kMs}), 2, 0, 1);
  for (std::size_t k = 0; k < 3; ++k) {
    EXPECT_EQ(spaced.traces[k].engine_arrival_ns - spaced.records[k].sent_ns, 2 * kMs) << k;
    // TTFT still counts from the send: the delay, then one 10 ms step.
    EXPECT_EQ(spaced.records[k].first_choices_ns - spaced.records[k].sent_ns, 12 * kMs) << k;
  }
  // Sent 1 ms apart: the second finds the first (due at 2 ms) still in transit.
  const VirtualArmResult close = run(requests_at({0, 1 * kMs}), 2, 0, 1);
  EXPECT_EQ(close.traces[1].engine_arrival_ns - close.records[1].sent_ns, 4 * kMs);
}

TEST(ArrivalJitter, ABurstsOrderAtTheServerChangesFromRunToRunAndRepeatsForASeed) {
  const std::vector<VirtualRequest> reqs = requests_at(std::vector<Nanos>(40, 0));
  const VirtualArmResult a = run(reqs, 1.5, 1.1, 11, one_process(5));
  const VirtualArmResult again = run(reqs, 1.5, 1.1, 11, one_process(5));
  const VirtualArmResult b = run(reqs, 1.5, 1.1, 12, one_process(5));
  const std::vector<std::size_t> oa = processing_order(a), ob = processing_order(b);
  EXPECT_EQ(oa, processing_order(again));
  EXPECT_NE(oa, ob);
  std::vector<std::size_t> sorted = oa;
  std::sort(sorted.begin(), sorted.end());
  for (std::size_t i = 0; i < sorted.size(); ++i) ASSERT_EQ(sorted[i], i) << "each request processed once";
  // The order moves, the work does not: 40 requests of 5 ms each on the serial stage.
  EXPECT_EQ(a.engine.api_server_ns, 40 * 5 * kMs);
  EXPECT_EQ(b.engine.api_server_ns, 40 * 5 * kMs);
  for (std::size_t i = 0; i < reqs.size(); ++i) EXPECT_GT(a.traces[i].api_server_start_ns, a.records[i].sent_ns);
}

TEST(ArrivalJitter, DelayOverRankHasTheDeclaredMedianAndSigma) {
  // 3000 requests sent at once: the k-th's delay / k is per_request x exp(sigma z).
  constexpr std::size_t kN = 3000;
  const VirtualArmResult r = run(requests_at(std::vector<Nanos>(kN, 0)), 1.5, 1.1, 5);
  std::vector<double> logs;
  for (std::size_t k = 0; k < kN; ++k) {
    const double delay = static_cast<double>(r.traces[k].engine_arrival_ns - r.records[k].sent_ns);
    logs.push_back(std::log(delay / static_cast<double>(k + 1) / 1.5e6));
  }
  std::vector<double> sorted = logs;
  std::nth_element(sorted.begin(), sorted.begin() + kN / 2, sorted.end());
  const double mean = std::accumulate(logs.begin(), logs.end(), 0.0) / kN;
  double var = 0;
  for (double l : logs) var += (l - mean) * (l - mean);
  const double sd = std::sqrt(var / (kN - 1));
  // Standard errors at n = 3000: median ~0.025, sd ~0.014; bounds of ~4 of them.
  EXPECT_NEAR(sorted[kN / 2], 0.0, 0.1);
  EXPECT_NEAR(mean, 0.0, 0.1);
  EXPECT_NEAR(sd, 1.1, 0.06);
}

TEST(ArrivalJitter, TheReadersExtremesStayOnTheClock) {
  // 1 s a body and sigma 4 (the reader's upper ends): the tail is capped at an hour, so no delay
  // overflows and every request still arrives, after its send.
  const VirtualArmResult r = run(requests_at(std::vector<Nanos>(2000, 0)), 1000, 4, 3);
  Nanos longest = 0;
  for (std::size_t k = 0; k < r.records.size(); ++k) {
    const Nanos delay = r.traces[k].engine_arrival_ns - r.records[k].sent_ns;
    EXPECT_GT(delay, 0) << k;
    longest = std::max(longest, delay);
    EXPECT_GT(r.records[k].end_ns, r.records[k].sent_ns) << k;
  }
  EXPECT_EQ(longest, 3600 * 1000 * kMs);  // the cap is reached at these extremes
}

TEST(ArrivalJitter, ClearRunNoiseZeroesEveryNoiseAndNothingElse) {
  ServingModel m = parse_serving_model({{"step_time_cv", {{"value", 0.05}, {"source", "s"}}},
                                        {"arrival_jitter_ms_per_request", {{"value", 1.5}, {"source", "s"}}},
                                        {"arrival_jitter_sigma", {{"value", 1.1}, {"source", "s"}}},
                                        {"output_length_cv", {{"value", 0.08}, {"source", "s"}}},
                                        {"output_length_redraw_share", {{"value", 0.5}, {"source", "s"}}},
                                        {"lm_fixed_ms", {{"value", 5}, {"source", "s"}}}},
                                       "m.json");
  clear_run_noise(m);
  EXPECT_EQ(m.step_time_cv.value, 0);
  EXPECT_EQ(m.arrival_jitter_ms_per_request.value, 0);  // sigma alone draws nothing (OffLeavesTheRunAsItWas)
  EXPECT_EQ(m.output_length_cv.value, 0);
  EXPECT_EQ(m.output_length_redraw_share.value, 0);
  EXPECT_EQ(m.lm_fixed_ms.value, 5);  // the model itself is untouched
}

TEST(ArrivalJitter, ServingModelReadsItsParametersAndRefusesBadOnes) {
  const ServingModel ok = parse_serving_model({{"arrival_jitter_ms_per_request", {{"value", 1.5}, {"source", "s"}}},
                                               {"arrival_jitter_sigma", {{"value", 1.1}, {"source", "s"}}}},
                                              "m.json");
  EXPECT_DOUBLE_EQ(ok.arrival_jitter_ms_per_request.value, 1.5);
  EXPECT_DOUBLE_EQ(ok.arrival_jitter_sigma.value, 1.1);
  auto error_of = [](const nlohmann::json& doc) {
    try {
      (void)parse_serving_model(doc, "m.json");
    } catch (const InvalidInput& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  for (const auto& [key, bad] : {std::pair{"arrival_jitter_ms_per_request", -1.0}, std::pair{"arrival_jitter_sigma", 5.0}}) {
    const std::string e = error_of({{key, {{"value", bad}, {"source", "s"}}}});
    EXPECT_NE(e.find(std::string("m.json: ") + key), std::string::npos) << e;
    EXPECT_NE(e.find("outside [0"), std::string::npos) << e;
  }
  EXPECT_NE(error_of({{"arrival_jitter_sigma", {{"value", 1.0}}}}).find("arrival_jitter_sigma"), std::string::npos);
}

}  // namespace
}  // namespace encbench::serving
