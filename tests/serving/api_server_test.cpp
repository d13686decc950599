// vLLM's API-server stage (serving/api_server_model.hpp) on the virtual clock: the FIFO queue of
// its processes, the file reader's refusals, and what the stage does to a request's TTFT in the
// virtual loop (virtual_loop.hpp). Times are virtual: every expectation is exact or bounded on both
// sides by the step time, never by the machine.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/core/error.hpp"
#include "harness/serving/api_server_model.hpp"
#include "harness/serving/api_server_pipeline.hpp"
#include "harness/serving/virtual_loop.hpp"
#include "tests/serving/text_only_loop.hpp"

namespace encbench::serving {
namespace {

namespace fs = std::filesystem;

constexpr Nanos kMs = 1'000'000;

fs::path scenarios_dir() {
  const char* dir = std::getenv("ENCBENCH_SOURCE_DIR");
  return (dir ? fs::path(dir) : fs::current_path()) / "scenarios";
}

fs::path temp_dir() {
  const fs::path dir = fs::temp_directory_path() / ("encbench-api-server-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir;
}

// A model whose only cost is `request_ms` a request, with `processes` processes.
ApiServerModel fixed_cost(double request_ms, int processes) {
  ApiServerModel m;
  m.name = "test";
  m.request_ms = {request_ms, "test"};
  set_api_server_count(m, processes, "test");
  return m;
}

using text_only::no_encoder;
using text_only::ten_ms_steps;

std::vector<VirtualRequest> burst(int n, Nanos at = 0) {
  std::vector<VirtualRequest> out(static_cast<std::size_t>(n));
  for (VirtualRequest& r : out) {
    r.arrival_ns = at;
    r.client_prompt_tokens = 20;
    r.request.prompt_tokens = 32;
    r.request.output_tokens = 3;
  }
  return out;
}

VirtualArmResult run(const std::vector<VirtualRequest>& requests, const ApiServerModel& api_server) {
  VirtualArmOptions options;
  options.keep_steps = true;
  options.api_server = api_server;
  return run_virtual_arm(requests, SchedulerConfig{}, ten_ms_steps(), no_encoder(), options);
}

Nanos ttft(const client::RequestRecord& r) { return r.first_choices_ns - r.sent_ns; }

TEST(ApiServerQueue, OneProcessServesABurstInTurnAndTwoHalveTheWait) {
  ApiServerQueue one(1), two(2);
  for (int k = 0; k < 6; ++k) {
    EXPECT_EQ(one.admit(0, 7 * kMs), (k + 1) * 7 * kMs) << k;      // waits k costs, then its own
    EXPECT_EQ(two.admit(0, 7 * kMs), (k / 2 + 1) * 7 * kMs) << k;  // waits k/2 costs
  }
  // An idle process starts a request when it arrives, not before.
  ApiServerQueue idle(1);
  EXPECT_EQ(idle.admit(100 * kMs, 5 * kMs), 105 * kMs);
  EXPECT_EQ(idle.admit(101 * kMs, 5 * kMs), 110 * kMs);  // the first still runs until 105
  EXPECT_EQ(idle.admit(200 * kMs, 5 * kMs), 205 * kMs);
}

TEST(ApiServerModel, ShippedModelCostsWhatItsCoefficientsSay) {
  const ApiServerModel m = load_api_server_model("vllm-qwen-vl", scenarios_dir());
  EXPECT_TRUE(m.enabled());
  EXPECT_EQ(m.processes(), 1);  // vLLM's default deployment
  for (const ApiServerCoefficient* c : {&m.request_ms, &m.decode_ns_per_pixel, &m.process_ns_per_pixel,
                                        &m.prompt_us_per_token, &m.hash_ns_per_pixel, &m.media_loading_threads,
                                        &m.processor_cache_gib, &m.processor_bytes_per_element})
    EXPECT_FALSE(c->source.empty());
  EXPECT_EQ(m.media_threads(), 8);                                     // VLLM_MEDIA_LOADING_THREAD_COUNT
  EXPECT_EQ(m.processor_cache_capacity_bytes(), std::int64_t{4} << 30);  // --mm-processor-cache-gb 4
  // The processor's cost is vLLM's per-image curve (issue 59), not a per-pixel rate.
  ASSERT_TRUE(m.process_ms_by_pixels.enabled());
  EXPECT_EQ(m.process_ns_per_pixel.value, 0);
  EXPECT_FALSE(m.process_ms_by_pixels.source.empty());
  EXPECT_FALSE(m.parse_ns_per_pixel.source.empty());
  // A hit skips exactly the HF processor's cost for that image; the decode is off the serial path.
  const Nanos missed = m.serial_cost_ns({.processed_pixels = 1'000'000, .prompt_tokens = 100});
  EXPECT_EQ(missed - m.serial_cost_ns({.cached_pixels = 1'000'000, .prompt_tokens = 100}), m.process_cost_ns(1'000'000));
  // 1 MP lies between the 512^2 and 1024^2 points: 5.145 + (5.85 - 5.145) x (1e6 - 262144) / 786432 ms.
  EXPECT_NEAR(static_cast<double>(m.process_cost_ns(1'000'000)) / 1e6, 5.145 + 0.705 * 737856.0 / 786432.0, 1e-6);
  // Two images, one cached: the second pays the hash and the body's parse only.
  EXPECT_NEAR(static_cast<double>(
                  m.serial_cost_ns({.cached_pixels = 1'000'000, .processed_pixels = 1'000'000, .prompt_tokens = 100}) -
                  missed),
              1e6 * (m.hash_ns_per_pixel.value + m.parse_ns_per_pixel.value), 1.0);
  EXPECT_EQ(m.request_cost_ns(1'000'000, 100), m.decode_cost_ns(1'000'000) + missed);
  EXPECT_EQ(m.request_cost_ns(0, 0), static_cast<Nanos>(m.request_ms.value * 1e6));
  // A 1024x768 image: the processor inside vLLM's own measurements at 512^2-1024^2 (4.95 ms, PR
  // #50390, to 12.2 ms, PR #50411); the whole serial stage far under the 110 ms the per-pixel fit gave.
  EXPECT_GT(m.process_cost_ns(1024 * 768), static_cast<Nanos>(4.95e6));
  EXPECT_LT(m.process_cost_ns(1024 * 768), static_cast<Nanos>(12.2e6));
  const Nanos image = m.request_cost_ns(1024 * 768, 0) - m.request_cost_ns(0, 0);
  EXPECT_LT(image, 1024 * 768 * 25);
  EXPECT_NEAR(static_cast<double>(m.request_cost_ns(0, 1000) - m.request_cost_ns(0, 0)),
              1000 * m.prompt_us_per_token.value * 1e3, 1.0);
  EXPECT_FALSE(load_api_server_model("none", scenarios_dir()).enabled());
  // A scenarios folder of its own without api-server/ (a fit's per-evaluation copy) falls back.
  const fs::path own = temp_dir() / "own-scenarios";
  fs::create_directories(own);
  EXPECT_EQ(load_api_server_model("vllm-qwen-vl", own, scenarios_dir()).processes(), 1);
  EXPECT_THROW((void)load_api_server_model("vllm-qwen-vl", own), InvalidInput);
}

TEST(ApiServerModel, BadFilesNameTheFileKeyAndRange) {
  const fs::path file = temp_dir() / "api.json";
  const auto message = [&](const std::string& text) {
    std::ofstream(file) << text;
    try {
      (void)load_api_server_model(file.string(), scenarios_dir());
    } catch (const InvalidInput& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  const std::string head = R"({"schema": "encbench-api-server", "schema_version": 1, )";
  std::string m = message(head + R"("request_ms": {"value": -1, "source": "s"}})");
  EXPECT_NE(m.find(file.string()), std::string::npos) << m;
  EXPECT_NE(m.find("request_ms"), std::string::npos) << m;
  EXPECT_NE(m.find("[0, 10000] ms"), std::string::npos) << m;
  m = message(head + R"("process_ns_per_pixel": {"value": 100}})");
  EXPECT_NE(m.find("process_ns_per_pixel needs a \"source\""), std::string::npos) << m;
  m = message(head + R"("decode_ns_per_pixl": {"value": 1, "source": "s"}})");
  EXPECT_NE(m.find("unknown API-server key \"decode_ns_per_pixl\""), std::string::npos) << m;
  m = message(head + R"("api_server_count": {"value": 1.5, "source": "s"}})");
  EXPECT_NE(m.find("api_server_count must be an integer"), std::string::npos) << m;
  m = message(head + R"("api_server_count": {"value": 2000, "source": "s"}})");
  EXPECT_NE(m.find("[0, 1024]"), std::string::npos) << m;
  m = message(head + R"("request_ms": {"value": 1, "source": "s", "unit": "ms"}})");
  EXPECT_NE(m.find("unknown key \"unit\""), std::string::npos) << m;
  EXPECT_EQ(message(head + R"("request_ms": {"value": 2, "source": "s"}})"), "accepted");
  try {
    (void)load_api_server_model("vllm-qwen-vll", scenarios_dir());
    FAIL() << "an unknown name was accepted";
  } catch (const InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find("known: none, vllm-qwen-vl"), std::string::npos) << e.what();
  }
  m = message(head + R"("media_loading_threads": {"value": 2.5, "source": "s"}})");
  EXPECT_NE(m.find("media_loading_threads must be an integer"), std::string::npos) << m;
  m = message(head + R"("media_loading_threads": {"value": 4096, "source": "s"}})");
  EXPECT_NE(m.find("[0, 1024] threads"), std::string::npos) << m;
  m = message(head + R"("processor_cache_gib": {"value": -4, "source": "s"}})");
  EXPECT_NE(m.find("processor_cache_gib = -4 is outside [0, 1024] GiB"), std::string::npos) << m;
  m = message(head + R"("processor_bytes_per_element": {"value": 16, "source": "s"}})");
  EXPECT_NE(m.find("[0, 8] bytes"), std::string::npos) << m;
  m = message(head + R"("hash_ns_per_pixel": {"value": 0.1}})");
  EXPECT_NE(m.find("hash_ns_per_pixel needs a \"source\""), std::string::npos) << m;
  ApiServerModel model;
  EXPECT_THROW(set_api_server_count(model, -1, "--api-server-count"), InvalidInput);
  EXPECT_THROW(set_api_server_count(model, kMaxApiServers + 1, "--api-server-count"), InvalidInput);
}

// Issue 59: the HF processor's cost per image by size, from measured points.
ApiServerModel curve_model() {
  return parse_api_server_model(nlohmann::json::parse(R"({"schema": "encbench-api-server", "schema_version": 1,
    "hash_ns_per_pixel": {"value": 0.1, "source": "s"}, "parse_ns_per_pixel": {"value": 0.7, "source": "s"},
    "process_ms_by_pixels": {"points": [[65536, 5.145], [262144, 5.145], [1048576, 5.85], [2359296, 8.66],
                                        [4194304, 11.46]], "source": "s"}})"), "curve.json");
}

TEST(ApiServerModel, TheProcessorCurveInterpolatesItsPointsPerImage) {
  const ApiServerModel m = curve_model();
  const ProcessCurve& c = m.process_ms_by_pixels;
  EXPECT_DOUBLE_EQ(c.ms(65536), 5.145);    // at a point: the point
  EXPECT_DOUBLE_EQ(c.ms(2359296), 8.66);
  EXPECT_DOUBLE_EQ(c.ms(1000), 5.145);     // below the first: the per-call cost
  // Half-way between 1024^2 and 1536^2: (5.85 + 8.66) / 2.
  EXPECT_NEAR(c.ms((1048576.0 + 2359296.0) / 2), 7.255, 1e-12);
  // Beyond 2048^2 the last segment's slope: (11.46 - 8.66) / (4194304 - 2359296) ms a pixel.
  EXPECT_NEAR(c.ms(5000000), 11.46 + 2.8 * (5000000.0 - 4194304) / 1835008, 1e-12);
  // vision-arena's mean image (~0.63 MP) costs 5.5 ms: inside vLLM's 4.95-12.2 ms for 512^2-1024^2.
  EXPECT_GT(c.ms(630000), 4.95);
  EXPECT_LT(c.ms(630000), 12.2);
  // Two images missed pay the curve each (two per-call costs), not the curve of their sum.
  const Nanos two = m.serial_cost_ns({.processed_pixels = 2 * 65536, .prompt_tokens = 0, .processed_images = {65536, 65536}});
  const Nanos one = m.serial_cost_ns({.processed_pixels = 65536, .prompt_tokens = 0});
  EXPECT_NEAR(static_cast<double>(two - one), 5.145e6 + 65536 * 0.8, 2.0);
  // A hit pays the hash and the body's parse, not the processor.
  EXPECT_NEAR(static_cast<double>(m.serial_cost_ns({.cached_pixels = 65536})), 65536 * 0.8, 1.0);
  EXPECT_EQ(m.process_cost_ns(0), 0);
  // The curve reads back.
  const ApiServerModel back = parse_api_server_model(to_json(m), "round trip");
  EXPECT_EQ(back.process_ms_by_pixels.points, c.points);
}

TEST(ApiServerModel, ABadCurveNamesTheFileThePointAndTheAcceptedRange) {
  const auto message = [](const std::string& curve, const std::string& extra = "") {
    try {
      (void)parse_api_server_model(nlohmann::json::parse(R"({"schema": "encbench-api-server", "schema_version": 1, )" +
                                                         extra + R"("process_ms_by_pixels": )" + curve + "}"),
                                   "api.json");
    } catch (const InvalidInput& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  std::string m = message(R"({"points": [[65536, 5.34], [262144, 4.95]], "source": "s"})");
  EXPECT_NE(m.find("api.json: process_ms_by_pixels.points[1]: ms = 4.95 is below the previous point's"),
            std::string::npos) << m;
  EXPECT_NE(m.find("accepted: [5.34"), std::string::npos) << m;
  m = message(R"({"points": [[262144, 5], [65536, 6]], "source": "s"})");
  EXPECT_NE(m.find("points[1]: pixels = 65536 must be above the previous point's"), std::string::npos) << m;
  m = message(R"({"points": [[65536, -1], [262144, 6]], "source": "s"})");
  EXPECT_NE(m.find("points[0]: ms = -1 is outside [0, 1e4]"), std::string::npos) << m;
  m = message(R"({"points": [[0, 1], [262144, 6]], "source": "s"})");
  EXPECT_NE(m.find("points[0]: pixels = 0 is outside (0, 1e9]"), std::string::npos) << m;
  m = message(R"({"points": [[65536, 5]], "source": "s"})");
  EXPECT_NE(m.find("two or more points"), std::string::npos) << m;
  m = message(R"({"points": [[65536, 5], [262144, 6]]})");
  EXPECT_NE(m.find("process_ms_by_pixels needs a \"source\""), std::string::npos) << m;
  m = message(R"({"points": [[65536, 5], [262144, 6]], "source": "s"})",
              R"("process_ns_per_pixel": {"value": 140, "source": "s"}, )");
  EXPECT_NE(m.find("process_ns_per_pixel must be 0 when process_ms_by_pixels is given"), std::string::npos) << m;
  EXPECT_EQ(message(R"({"points": [[65536, 5], [262144, 5]], "source": "s"})"), "accepted");  // flat is allowed
}

TEST(VirtualApiServer, ALoneRequestsTtftRisesByExactlyTheModelledCost) {
  const std::vector<VirtualRequest> one = burst(1);
  const VirtualArmResult without = run(one, ApiServerModel{});
  ApiServerModel model = load_api_server_model("vllm-qwen-vl", scenarios_dir());
  std::vector<VirtualRequest> with_image = one;
  with_image[0].images_sent = {{1024 * 768}};  // the stage's work; the engine still sees text only
  const VirtualArmResult with = run(with_image, model);
  const Nanos cost = model.request_cost_ns(1024 * 768, 32);
  EXPECT_EQ(ttft(without.records[0]), 10 * kMs);  // one 10 ms step
  EXPECT_EQ(ttft(with.records[0]) - ttft(without.records[0]), cost);
  EXPECT_EQ(with.records[0].sent_ns, without.records[0].sent_ns);  // TTFT still counts from the send
  EXPECT_EQ(with.traces[0].engine_arrival_ns - with.records[0].sent_ns, cost);
  EXPECT_EQ(with.engine.api_server_ns, cost);
  EXPECT_EQ(with.engine.api_server_queue_ns, 0);
  // The rest of the request (decode steps) is untouched.
  EXPECT_EQ(with.records[0].end_ns - with.records[0].first_choices_ns,
            without.records[0].end_ns - without.records[0].first_choices_ns);
}

TEST(VirtualApiServer, ABurstQueuesBehindOneProcessAndHalfAsLongBehindTwo) {
  constexpr int kBurst = 6;
  constexpr Nanos kCost = 25 * kMs;  // not a multiple of the 10 ms step
  const std::vector<VirtualRequest> requests = burst(kBurst, 3 * kMs);
  const VirtualArmResult one = run(requests, fixed_cost(25, 1));
  const VirtualArmResult two = run(requests, fixed_cost(25, 2));
  for (int k = 0; k < kBurst; ++k) {
    const auto i = static_cast<std::size_t>(k);
    // The k-th of the burst waits k costs behind one process, k/2 behind two, then its own.
    EXPECT_EQ(one.traces[i].api_server_start_ns - one.records[i].sent_ns, k * kCost) << k;
    EXPECT_EQ(one.traces[i].engine_arrival_ns - one.records[i].sent_ns, (k + 1) * kCost) << k;
    EXPECT_EQ(two.traces[i].engine_arrival_ns - two.records[i].sent_ns, (k / 2 + 1) * kCost) << k;
    // Its first token: the engine step after it arrives (at most one 10 ms step to wait for the
    // running one to end, then its own 10 ms step).
    for (const VirtualArmResult* r : {&one, &two}) {
      const Nanos ready = r->traces[i].engine_arrival_ns - r->records[i].sent_ns;
      EXPECT_GE(ttft(r->records[i]), ready + 10 * kMs) << k;
      EXPECT_LE(ttft(r->records[i]), ready + 20 * kMs) << k;
    }
  }
  EXPECT_EQ(one.engine.api_server_queue_ns, kCost * (0 + 1 + 2 + 3 + 4 + 5));
  EXPECT_EQ(two.engine.api_server_queue_ns, kCost * (0 + 0 + 1 + 1 + 2 + 2));
  EXPECT_EQ(one.engine.api_server_ns, kBurst * kCost);
}

TEST(VirtualApiServer, NoStageLeavesTheLoopAsItWas) {
  std::vector<VirtualRequest> requests = burst(5);
  for (std::size_t i = 0; i < requests.size(); ++i) requests[i].arrival_ns = static_cast<Nanos>(i) * 4 * kMs;
  const VirtualArmResult none = run(requests, ApiServerModel{});
  const VirtualArmResult off = run(requests, fixed_cost(25, 0));  // a model with 0 processes
  ASSERT_EQ(none.records.size(), off.records.size());
  for (std::size_t i = 0; i < none.records.size(); ++i) {
    EXPECT_EQ(none.records[i].first_choices_ns, off.records[i].first_choices_ns);
    EXPECT_EQ(none.records[i].end_ns, off.records[i].end_ns);
    EXPECT_EQ(none.traces[i].engine_arrival_ns, none.records[i].sent_ns);
  }
  EXPECT_EQ(off.engine.api_server_ns, 0);
}

TEST(ProcessorCacheLru, HitsRefreshAndMissesEvictTheLeastRecentlyUsedByBytes) {
  ProcessorCacheLru cache(250);  // two 100-byte items fit, not three
  EXPECT_FALSE(cache.lookup_and_insert(1, 100));
  EXPECT_FALSE(cache.lookup_and_insert(2, 100));
  EXPECT_TRUE(cache.lookup_and_insert(1, 100));  // 1 is now the most recent
  EXPECT_EQ(cache.used_bytes(), 200);
  EXPECT_FALSE(cache.lookup_and_insert(3, 100));  // evicts 2, the least recently used
  EXPECT_EQ(cache.evictions(), 1);
  EXPECT_FALSE(cache.contains(2));
  EXPECT_TRUE(cache.contains(1));
  EXPECT_TRUE(cache.contains(3));
  EXPECT_EQ(cache.used_bytes(), 200);
  // A 240-byte item evicts both (1 then 3) to fit; one larger than the cache is not stored.
  EXPECT_FALSE(cache.lookup_and_insert(4, 240));
  EXPECT_EQ(cache.evictions(), 3);
  EXPECT_EQ(cache.items(), 1u);
  EXPECT_EQ(cache.used_bytes(), 240);
  EXPECT_FALSE(cache.lookup_and_insert(5, 251));
  EXPECT_FALSE(cache.contains(5));
  EXPECT_TRUE(cache.contains(4));
  // Key 0 is "content unknown": never a hit, never stored.
  EXPECT_FALSE(cache.lookup_and_insert(0, 10));
  EXPECT_FALSE(cache.lookup_and_insert(0, 10));
  EXPECT_EQ(cache.items(), 1u);
}

TEST(ProcessorCacheLru, ItemBytesArePixelValuesInTheModelDtypePlusTheGrid) {
  // Qwen3-VL (patch 16, temporal 2), bf16: 3 x 2 x 16 x 16 x 2 = 3,072 bytes a patch; a 1024x640
  // image is 64 x 40 patches; + image_grid_thw, 3 int64.
  EXPECT_EQ(processor_item_bytes(64 * 40, 16, 2, 2.0), 64 * 40 * 3072 + 24);
  // Qwen2.5-VL (patch 14), float32: 3 x 2 x 14 x 14 x 4 = 4,704 bytes a patch.
  EXPECT_EQ(processor_item_bytes(10, 14, 2, 4.0), 10 * 4704 + 24);
}

// `serial_ms` a request plus 10 ns a pixel of HF processing on a miss, no media pool, one process.
ApiServerModel processor_cost(double serial_ms, double cache_bytes) {
  ApiServerModel m = fixed_cost(serial_ms, 1);
  m.process_ns_per_pixel = {10, "test"};
  m.processor_cache_gib = {cache_bytes / 1073741824.0, "test"};
  return m;
}

TEST(VirtualApiServer, ADuplicateImageHitsTheProcessorCacheAndCostsOnlyTheRest) {
  // A burst of five 1 MP requests with images 1, 2, 1, 1, 2: misses cost 1 + 10 ms, hits 1 ms.
  std::vector<VirtualRequest> requests = burst(5);
  const std::uint64_t image[] = {1, 2, 1, 1, 2};
  for (std::size_t i = 0; i < requests.size(); ++i) {
    requests[i].images_sent = {{1'000'000, image[i], 100}};
  }
  const VirtualArmResult cached = run(requests, processor_cost(1, 1000));
  const Nanos ready[] = {11, 22, 23, 24, 25};
  for (std::size_t i = 0; i < requests.size(); ++i)
    EXPECT_EQ(cached.traces[i].engine_arrival_ns - cached.records[i].sent_ns, ready[i] * kMs) << i;
  EXPECT_EQ(cached.engine.api_server_cache_hits, 3);
  EXPECT_EQ(cached.engine.api_server_ns, (11 + 11 + 1 + 1 + 1) * kMs);
  // A cache that holds one item: 1, 2 (evicts 1), 1 (miss, evicts 2), 1 (hit), 2 (miss).
  const VirtualArmResult small = run(requests, processor_cost(1, 150));
  EXPECT_EQ(small.engine.api_server_cache_hits, 1);
  EXPECT_EQ(small.engine.api_server_cache_evictions, 3);
  EXPECT_EQ(small.traces[4].engine_arrival_ns - small.records[4].sent_ns, (11 * 4 + 1) * kMs);
  // Without a cache, or with unknown images, every request pays the processor.
  const VirtualArmResult none = run(requests, processor_cost(1, 0));
  EXPECT_EQ(none.engine.api_server_cache_hits, 0);
  EXPECT_EQ(none.traces[4].engine_arrival_ns - none.records[4].sent_ns, 5 * 11 * kMs);
  for (VirtualRequest& r : requests) r.images_sent[0].key = 0;
  EXPECT_EQ(run(requests, processor_cost(1, 1000)).engine.api_server_cache_hits, 0);
}

TEST(VirtualApiServer, EachImageOfARequestIsLookedUpOnItsOwn) {
  // vLLM's processor cache is per item: request 0 sends images A and B, request 1 (a second
  // later) B and C. Request 1 runs the HF processor on C only: 1 ms + 10 ns a pixel on a miss.
  std::vector<VirtualRequest> requests = burst(2);
  requests[1].arrival_ns = 1000 * kMs;
  requests[0].images_sent = {{1'000'000, 0xA, 100}, {1'000'000, 0xB, 100}};
  requests[1].images_sent = {{1'000'000, 0xB, 100}, {1'000'000, 0xC, 100}};
  const VirtualArmResult r = run(requests, processor_cost(1, 1000));
  EXPECT_EQ(r.traces[0].engine_arrival_ns - r.records[0].sent_ns, 21 * kMs);  // both processed
  EXPECT_EQ(r.traces[1].engine_arrival_ns - r.records[1].sent_ns, 11 * kMs);  // C only
  EXPECT_EQ(r.engine.api_server_cache_hits, 1);
  EXPECT_EQ(r.engine.api_server_ns, (21 + 11) * kMs);
}

TEST(VirtualApiServer, AHitCostsExactlyDecodeHashPromptUpdateAndTheFixedPart) {
  // Two requests with the same image, a second apart (no queueing): the first misses, the second
  // hits; each one's time in the stage, computed by hand from the coefficients.
  std::vector<VirtualRequest> requests = burst(2);
  requests[1].arrival_ns = 1000 * kMs;
  for (VirtualRequest& r : requests) {
    r.images_sent = {{2'000'000, 42, 1000}};
  }
  ApiServerModel m = processor_cost(0.5, 1e6);           // 0.5 ms + 10 ns a pixel on a miss
  m.decode_ns_per_pixel = {4, "test"};                   // 8 ms on a media thread
  m.hash_ns_per_pixel = {0.25, "test"};                  // 0.5 ms
  m.prompt_us_per_token = {50, "test"};                  // 32 tokens: 1.6 ms
  m.media_loading_threads = {8, "test"};
  const VirtualArmResult r = run(requests, m);
  const Nanos hit = 8 * kMs + kMs / 2 + kMs / 2 + 1'600'000;  // decode + hash + fixed + prompt
  EXPECT_EQ(r.traces[1].engine_arrival_ns - r.records[1].sent_ns, hit);
  EXPECT_EQ(r.traces[0].engine_arrival_ns - r.records[0].sent_ns, hit + 20 * kMs);  // + the processor
  EXPECT_EQ(r.engine.api_server_cache_hits, 1);
  EXPECT_EQ(r.engine.api_server_queue_ns, 0);
}

TEST(VirtualApiServer, EightMediaThreadsDecodeABurstAheadOfTheSerialStage) {
  // 20 requests at once, each decoding for 80 ms and processing for 5 ms. With 8 media threads
  // request i's decode ends at (i / 8 + 1) x 80 ms (thread i % 8, FIFO); its processing starts
  // when that decode and the request before it are done: batches of 8 decoded at 80, 160 and
  // 240 ms, each processed one after another in 5 ms turns.
  std::vector<VirtualRequest> requests = burst(20);
  for (VirtualRequest& r : requests) r.images_sent = {{1'000'000}};
  ApiServerModel pooled = fixed_cost(5, 1);
  pooled.decode_ns_per_pixel = {80, "test"};
  pooled.media_loading_threads = {8, "test"};
  const VirtualArmResult with_pool = run(requests, pooled);
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const Nanos expected = static_cast<Nanos>(i / 8 + 1) * 80 * kMs + static_cast<Nanos>(i % 8 + 1) * 5 * kMs;
    EXPECT_EQ(with_pool.traces[i].engine_arrival_ns - with_pool.records[i].sent_ns, expected) << i;
  }
  EXPECT_EQ(with_pool.engine.api_server_decode_ns, 20 * 80 * kMs);
  EXPECT_EQ(with_pool.engine.api_server_ns, 20 * 85 * kMs);
  // Decode on the serial path (no pool): the i-th waits for i whole requests, 85 ms each.
  ApiServerModel serial = pooled;
  serial.media_loading_threads = {0, "test"};
  const VirtualArmResult without_pool = run(requests, serial);
  for (std::size_t i = 0; i < requests.size(); ++i)
    EXPECT_EQ(without_pool.traces[i].engine_arrival_ns - without_pool.records[i].sent_ns,
              static_cast<Nanos>(i + 1) * 85 * kMs) << i;
  // One thread: decodes end every 80 ms and the 5 ms processing follows each: 85, 165, 245, ...
  ApiServerModel one_thread = pooled;
  one_thread.media_loading_threads = {1, "test"};
  const VirtualArmResult single = run(requests, one_thread);
  for (std::size_t i = 0; i < requests.size(); ++i)
    EXPECT_EQ(single.traces[i].engine_arrival_ns - single.records[i].sent_ns,
              static_cast<Nanos>(i + 1) * 80 * kMs + 5 * kMs) << i;
}

TEST(VirtualApiServer, AShortDecodeOvertakesALongOneIntoTheSerialStage) {
  // Two threads: request 0 decodes for 100 ms, 1 for 10 ms, 2 for 10 ms (after 1, on its thread):
  // the serial stage takes them as decodes end (1 at 10, 2 at 20, 0 at 100), 5 ms each.
  std::vector<VirtualRequest> requests = burst(3);
  requests[0].images_sent = {{100'000'000}};
  requests[1].images_sent = requests[2].images_sent = {{10'000'000}};
  ApiServerModel pooled = fixed_cost(5, 1);
  pooled.decode_ns_per_pixel = {1, "test"};
  pooled.media_loading_threads = {2, "test"};
  const VirtualArmResult r = run(requests, pooled);
  const Nanos ready[] = {105, 15, 25};
  for (std::size_t i = 0; i < requests.size(); ++i)
    EXPECT_EQ(r.traces[i].engine_arrival_ns - r.records[i].sent_ns, ready[i] * kMs) << i;
}

// Both clocks' image caches key on the image (vLLM's mm_hash), the prefix cache on the prompt.
// Four 300-token prompts, a second apart (each done before the next), image tokens [40, 240):
// (text 1, image 7), (text 2, image 7), (text 3, image 8), (text 1, image 7) again. The processor
// cache hits the second and the fourth; the encoder cache serves the second (another text: no
// prefix block, vLLM's block hashes chain from the first block's text tokens); the fourth hits 2
// whole blocks (256 tokens, at most prompt - 1), which hold its whole image, so it skips the
// encoder. The encoder runs for the first and the third only.
TEST(VirtualApiServer, TheSameImageUnderAnotherTextHitsBothImageCachesButNoPrefixBlock) {
  const std::uint64_t content[] = {1, 2, 3, 1}, image[] = {7, 7, 8, 7};
  std::vector<VirtualRequest> requests = burst(4);
  for (std::size_t i = 0; i < requests.size(); ++i) {
    VirtualRequest& r = requests[i];
    r.arrival_ns = static_cast<Nanos>(i) * 1000 * kMs;
    r.images_sent = {{1'000'000, image[i], 100}};
    r.request.prompt_tokens = 300;
    r.request.image_offset = 40;
    r.request.images = {{200, vision::GridTHW{1, 20, 40}, image[i]}};
    r.request.output_tokens = 2;
    r.request.content_hash = content[i];
  }
  int encoded_images = 0;
  const EncoderHook encoder = [&](const std::vector<vision::GridTHW>& grids) {
    encoded_images += static_cast<int>(grids.size());
    EncoderStepResult r;
    r.forwards = 1;
    r.virtual_forward_ns = 5 * kMs;
    return r;
  };
  VirtualArmOptions options;
  options.keep_steps = true;
  options.api_server = processor_cost(1, 1000);  // 1 ms, + 10 ms of HF processor on a miss
  const VirtualArmResult r = run_virtual_arm(
      requests, SchedulerConfig{.max_num_batched_tokens = 4096, .encoder_budget_tokens = 1000, .kv_block_tokens = 128},
      ten_ms_steps(), encoder, options);
  EXPECT_EQ(r.engine.api_server_cache_hits, 2);
  const Nanos in_stage[] = {11, 1, 11, 1};
  for (std::size_t i = 0; i < requests.size(); ++i)
    EXPECT_EQ(r.traces[i].engine_arrival_ns - r.records[i].sent_ns, in_stage[i] * kMs) << i;
  EXPECT_EQ(encoded_images, 2);
  EXPECT_EQ(r.engine.images, 2);
  EXPECT_EQ(r.traces[1].encoder_step, -1);
  EXPECT_EQ(r.traces[3].encoder_step, -1);
  const SchedulerCounters& c = r.engine.scheduler;
  EXPECT_EQ(c.encoder_cache_hits, 1);
  EXPECT_EQ(c.encoder_prefix_skips, 1);
  EXPECT_EQ(c.prefix_cache_hits, 256);
  EXPECT_EQ(c.prefix_cache_queries, 4 * 300);
}

}  // namespace
}  // namespace encbench::serving
