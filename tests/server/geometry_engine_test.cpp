// Vision geometry against values computed with transformers' smart_resize (Python, reproduced in
// docs/server.md), and the engine's scheduler invariants.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "harness/core/base64.hpp"
#include "harness/core/error.hpp"
#include "harness/server/engine_core_thread.hpp"
#include "harness/server/image_input.hpp"
#include "harness/server/api_error.hpp"
#include "harness/server/openai_request.hpp"
#include "harness/server/serve_command.hpp"
#include "harness/server/server.hpp"
#include "harness/vision/smart_resize.hpp"
#include "harness/vision/vision_geometry.hpp"
#include "tests/server/test_images.hpp"

namespace encbench::server {
namespace {

TEST(SmartResize, MatchesTransformersReference) {
  // (height, width) -> expected, from Python transformers' formula with factor 28,
  // min_pixels 3136, max_pixels 1003520.
  struct Case { std::int64_t h, w, eh, ew; };
  const Case cases[] = {{768, 1024, 756, 1036}, {3000, 4000, 840, 1148}, {10, 10, 56, 56},
                        {42, 70, 56, 56},       {480, 640, 476, 644},    {1, 150, 28, 700},
                        {14, 2800, 28, 812},    {2048, 2048, 980, 980},  {98, 126, 112, 112}};
  for (const Case& c : cases) {
    const vision::ResizedSize r = vision::smart_resize(c.h, c.w, 28, 3136, 1003520);
    EXPECT_EQ(r.height, c.eh) << c.h << "x" << c.w;
    EXPECT_EQ(r.width, c.ew) << c.h << "x" << c.w;
  }
  // Qwen3-VL: factor 32, min 65536, max 16777216.
  EXPECT_EQ(vision::smart_resize(3000, 4000, 32, 65536, 16777216).height, 3008);
  EXPECT_EQ(vision::smart_resize(100, 100, 32, 65536, 16777216).width, 256);
}

TEST(SmartResize, RejectsExtremeAspectAndEmpty) {
  EXPECT_THROW(vision::smart_resize(1, 201, 28, 3136, 1003520), InvalidInput);
  EXPECT_THROW(vision::smart_resize(0, 10, 28, 3136, 1003520), InvalidInput);
  EXPECT_THROW(vision::vision_geometry_for("llava"), InvalidInput);
}

TEST(ImageGrid, TokensArePatchesOverMergeSquared) {
  const vision::VisionGeometry g = vision::vision_geometry_for("qwen2.5-vl-7b");
  const vision::GridTHW grid = vision::image_grid(g, 480, 640);  // resized 476 x 644
  EXPECT_EQ(grid, (vision::GridTHW{1, 34, 46}));
  EXPECT_EQ(vision::image_token_count(g, grid), 34 * 46 / 4);
}

TEST(ImageInput, DecodesPngAndJpegDataUrls) {
  const ImagePolicy policy;
  for (const bool jpeg : {false, true}) {
    const DecodedImage image = load_image_from_url(testing::data_url(40, 30, jpeg), policy);
    EXPECT_EQ(image.width, 40);
    EXPECT_EQ(image.height, 30);
  }
  std::string decoded;
  EXPECT_TRUE(base64_decode("aGVsbG8=", Base64Form::strict, decoded));
  EXPECT_EQ(decoded, "hello");
  EXPECT_FALSE(base64_decode("a$==", Base64Form::strict, decoded));
  EXPECT_FALSE(base64_decode("aGVsb", Base64Form::strict, decoded));    // 4k+1 characters: no whole byte
  EXPECT_FALSE(base64_decode("aGVs bG8=", Base64Form::strict, decoded));  // whitespace refused in a request
  EXPECT_TRUE(base64_decode("aGVs bG8=", Base64Form::lenient, decoded));  // and skipped in a dataset
  EXPECT_EQ(decoded, "hello");
  EXPECT_TRUE(base64_decode("_-8", Base64Form::lenient, decoded));  // URL-safe: 0xff 0xef
  EXPECT_EQ(decoded, std::string("\xff\xef"));
  EXPECT_FALSE(base64_decode("_-8", Base64Form::strict, decoded));
}

TEST(TextTokens, DocumentedApproximation) {
  EXPECT_EQ(approx_text_tokens(""), 0);
  EXPECT_EQ(approx_text_tokens("abcd"), 1);
  EXPECT_EQ(approx_text_tokens("abcde"), 2);
  RequestParseOptions options;
  options.served_model_name = "m";
  options.geometry = vision::vision_geometry_for("qwen2.5-vl-7b");
  const GenerationRequest r = parse_generation_request(
      Endpoint::chat_completions,
      R"({"model":"m","messages":[{"role":"system","content":"abcdefgh"},{"role":"user","content":"abc"}]})",
      options);
  EXPECT_EQ(r.prompt_tokens(), (4 + 2) + (4 + 1) + 3);
  EXPECT_EQ(r.max_tokens, options.max_model_len - r.prompt_tokens());
}

TEST(OutputPlan, IgnoreEosUsesMaxElseSeededStop) {
  EXPECT_EQ(plan_output(1, 17, true, 4).tokens, 17);
  EXPECT_EQ(plan_output(1, 17, true, 4).finish, FinishReason::length);
  bool saw_stop = false;
  for (std::uint64_t seed = 0; seed < 200; ++seed) {
    const OutputPlan plan = plan_output(seed, 10, false, 4);  // natural length in [1, 7]
    EXPECT_GE(plan.tokens, 1);
    EXPECT_LE(plan.tokens, 7);
    EXPECT_EQ(plan.finish, FinishReason::stop);
    EXPECT_EQ(plan.tokens, plan_output(seed, 10, false, 4).tokens);  // deterministic
    saw_stop = true;
  }
  EXPECT_TRUE(saw_stop);
  EXPECT_EQ(plan_output(3, 1, false, 100).finish, FinishReason::length);  // capped by max
}

struct Collected {
  std::mutex mutex;
  std::condition_variable done;
  int finished = 0;
  std::vector<std::vector<EngineEvent>> events;
};

TEST(Engine, RespectsSeatAndTokenBudgets) {
  std::vector<vision::GridTHW> encoded;
  std::mutex encoded_mutex;
  EngineCoreConfig config;
  config.max_num_seqs = 3;
  config.max_num_batched_tokens = 150;
  config.lm = serving::StepCostModel{0.05, 0.0, 0.0};
  config.encoder = [&](const std::vector<vision::GridTHW>& grids) {
    std::lock_guard lock(encoded_mutex);
    encoded.insert(encoded.end(), grids.begin(), grids.end());
    serving::EncoderStepResult r;
    r.forwards = static_cast<int>(grids.size());
    r.device_busy_ns = 1000;
    r.device_idle_ns = 250;
    return r;
  };
  EngineCoreThread engine(config);
  engine.start();
  constexpr int kRequests = 10;
  Collected c;
  c.events.resize(kRequests);
  for (int i = 0; i < kRequests; ++i) {
    EngineRequest r;
    r.prompt_tokens = 100 + i;  // two steps of prefill each when budget is shared
    r.images = {serving::SchedImage{.grid = vision::GridTHW{1, 2, static_cast<int>(i + 1)}}};
    r.plan = OutputPlan{4 + i % 3, FinishReason::length};
    engine.submit(r, [&c, i](EngineEvent e) {
      std::lock_guard lock(c.mutex);
      const bool finished = e.finished;
      c.events[static_cast<std::size_t>(i)].push_back(std::move(e));
      if (finished && ++c.finished == kRequests) c.done.notify_all();
    });
  }
  {
    std::unique_lock lock(c.mutex);
    ASSERT_TRUE(c.done.wait_for(lock, std::chrono::seconds(30), [&] { return c.finished == kRequests; }));
  }
  const EngineCoreStats stats = engine.stats();
  engine.stop();
  EXPECT_LE(stats.scheduler.max_running, 3);
  EXPECT_GE(stats.scheduler.max_running, 2);
  EXPECT_LE(stats.scheduler.max_step_tokens, 150);
  EXPECT_EQ(stats.requests_finished, kRequests);
  EXPECT_EQ(stats.images, kRequests);
  EXPECT_EQ(stats.encoder_forwards, kRequests);
  EXPECT_EQ(stats.encoder_device_idle_ns, stats.encoder_calls * 250);
  EXPECT_EQ(encoded.size(), static_cast<std::size_t>(kRequests));
  std::int64_t expected_prompt = 0, expected_tokens = 0;
  for (int i = 0; i < kRequests; ++i) {
    expected_prompt += 100 + i;
    expected_tokens += 4 + i % 3;
    const auto& events = c.events[static_cast<std::size_t>(i)];
    ASSERT_EQ(events.size(), static_cast<std::size_t>(4 + i % 3));
    for (std::size_t k = 0; k < events.size(); ++k) {
      EXPECT_EQ(events[k].first_token, static_cast<std::int64_t>(k));
      EXPECT_EQ(events[k].finished, k + 1 == events.size());
    }
  }
  EXPECT_EQ(stats.prompt_tokens, expected_prompt);
  EXPECT_EQ(stats.generation_tokens, expected_tokens);
}

TEST(Engine, EncoderFailureFailsOnlyRequestsWithImages) {
  EngineCoreConfig config;
  config.lm = serving::StepCostModel{0.01, 0, 0};
  config.encoder = [](const std::vector<vision::GridTHW>&) -> serving::EncoderStepResult { throw std::runtime_error("device lost"); };
  EngineCoreThread engine(config);
  engine.start();
  Collected c;
  c.events.resize(2);
  for (int i = 0; i < 2; ++i) {
    EngineRequest r;
    r.prompt_tokens = 10;
    if (i == 0) r.images = {serving::SchedImage{.grid = vision::GridTHW{1, 4, 4}}};
    r.plan = OutputPlan{3, FinishReason::length};
    engine.submit(r, [&c, i](EngineEvent e) {
      std::lock_guard lock(c.mutex);
      const bool finished = e.finished;
      c.events[static_cast<std::size_t>(i)].push_back(std::move(e));
      if (finished && ++c.finished == 2) c.done.notify_all();
    });
  }
  std::unique_lock lock(c.mutex);
  ASSERT_TRUE(c.done.wait_for(lock, std::chrono::seconds(10), [&] { return c.finished == 2; }));
  ASSERT_EQ(c.events[0].size(), 1u);
  EXPECT_EQ(c.events[0][0].finish, FinishReason::error);
  EXPECT_NE(c.events[0][0].error.find("device lost"), std::string::npos);
  EXPECT_EQ(c.events[1].size(), 3u);
  EXPECT_EQ(c.events[1].back().finish, FinishReason::length);
}

TEST(Engine, CancelledRequestsLeaveTheBatch) {
  EngineCoreConfig config;
  config.max_num_seqs = 1;
  config.lm = serving::StepCostModel{1.0, 0, 0};
  config.encoder = [](const std::vector<vision::GridTHW>&) { return serving::EncoderStepResult{}; };
  EngineCoreThread engine(config);
  engine.start();
  std::atomic<int> events{0};
  EngineRequest r;
  r.prompt_tokens = 5;
  r.plan = OutputPlan{1000000, FinishReason::length};
  auto handle = engine.submit(r, [&](EngineEvent) { ++events; });
  while (events.load() < 3) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  handle->cancel();
  // A second request gets the only seat once the first one has gone.
  std::atomic<bool> second_done{false};
  r.plan = OutputPlan{2, FinishReason::length};
  engine.submit(r, [&](EngineEvent e) { if (e.finished) second_done = true; });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!second_done && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_TRUE(second_done);
  EXPECT_EQ(engine.stats().requests_aborted, 1);
}

// ----------------------------------------------------------------- limits

RequestParseOptions qwen3_options() {
  RequestParseOptions o;
  o.served_model_name = "qwen3-vl-8b";
  o.geometry = vision::vision_geometry_for("qwen3-vl-8b");
  o.max_model_len = 32768;
  o.max_num_encoder_input_tokens = 8192;
  return o;
}

ApiError parse_error(const std::string& body, const RequestParseOptions& options) {
  try {
    (void)parse_generation_request(Endpoint::chat_completions, body, options);
  } catch (const ApiException& e) {
    return e.error();
  }
  ADD_FAILURE() << "accepted: " << body.substr(0, 200);
  return {};
}

std::string chat_with(const std::string& extra, const std::string& content = "\"hi\"") {
  return R"({"messages":[{"role":"user","content":)" + content + "}]" + extra + "}";
}

TEST(RequestLimits, HugeMaxTokensIsA400WithVllmWording) {
  const RequestParseOptions o = qwen3_options();
  for (const char* value : {"9223372036854775807", "9223372036854775806", "32768", "32761"}) {
    const ApiError e = parse_error(chat_with(std::string(",\"max_tokens\":") + value), o);
    EXPECT_EQ(e.status, 400);
    EXPECT_EQ(e.code, "context_length_exceeded");
    EXPECT_NE(e.message.find("'max_tokens' or 'max_completion_tokens' is too large: " + std::string(value)),
              std::string::npos) << e.message;
    EXPECT_NE(e.message.find("(" + std::string(value) + " > 32768 - 8)"), std::string::npos) << e.message;
  }
  // Out of int64 range, or a float that no integer type holds: a 400, never a wrapped value.
  for (const char* value : {"18446744073709551615", "1e300", "-1e300", "9.3e18"}) {
    const ApiError e = parse_error(chat_with(std::string(",\"max_completion_tokens\":") + value), o);
    EXPECT_EQ(e.status, 400) << value;
    EXPECT_EQ(e.param, "max_completion_tokens") << value;
  }
  // The largest that fits is accepted: 32768 - 8 prompt tokens ("hi" = 1 + 4 + 3).
  const GenerationRequest ok = parse_generation_request(Endpoint::chat_completions,
                                                        chat_with(",\"max_tokens\":32760", "\"hi\""), o);
  EXPECT_EQ(ok.prompt_tokens(), 8);
  EXPECT_EQ(ok.max_tokens, 32760);
}

TEST(RequestLimits, LongPromptIsA400WithVllmWording) {
  RequestParseOptions o = qwen3_options();
  o.max_model_len = 100;
  const ApiError e = parse_error(chat_with("", "\"" + std::string(400, 'a') + "\""), o);
  EXPECT_EQ(e.status, 400);
  EXPECT_NE(e.message.find("The decoder prompt (length 107) is longer than the maximum model length of 100"),
            std::string::npos) << e.message;
}

std::string image_content(const std::vector<std::string>& urls) {
  std::string parts = "[";
  for (const auto& url : urls) {
    if (parts.size() > 1) parts += ",";
    parts += R"({"type":"image_url","image_url":{"url":")" + url + "\"}}";
  }
  return parts + "]";
}

TEST(RequestLimits, AnImageOverTheEncoderBudgetIsA400ImagesTogetherAreNot) {
  RequestParseOptions o = qwen3_options();
  // 448x448 on qwen3-vl-8b (factor 32, min_pixels 65536): 448x448 -> 28x28 patches -> 196 tokens.
  const std::string url = testing::data_url(448, 448, false);
  o.max_num_encoder_input_tokens = 196;
  const GenerationRequest ok =
      parse_generation_request(Endpoint::chat_completions, chat_with("", image_content({url})), o);
  EXPECT_EQ(ok.image_tokens, 196);
  o.max_num_encoder_input_tokens = 195;
  ApiError e = parse_error(chat_with("", image_content({url})), o);
  EXPECT_EQ(e.status, 400);
  EXPECT_EQ(e.code, "mm_item_too_large");
  EXPECT_NE(e.message.find("image item with length 196, which exceeds the pre-allocated encoder cache size 195"),
            std::string::npos) << e.message;
  // Two images, each within the budget, not together: accepted, as vLLM accepts them (its scheduler
  // encodes them one by one over steps; tests/serving/scheduler_test.cpp).
  o.max_num_encoder_input_tokens = 300;
  const GenerationRequest two =
      parse_generation_request(Endpoint::chat_completions, chat_with("", image_content({url, url})), o);
  EXPECT_EQ(two.image_tokens, 392);
  ASSERT_EQ(two.images.size(), 2u);
  EXPECT_EQ(two.images[0].tokens, 196);
}

// Found by tests/fuzz/fuzz_openai_request: nlohmann throws out_of_range (not parse_error) for a
// number beyond double, which escaped as a 500.
TEST(RequestLimits, NumberBeyondDoubleIsA400NotA500) {
  const RequestParseOptions o = qwen3_options();
  for (const char* number : {"1e400", "-1e+309223372036854775808"}) {
    const ApiError e = parse_error(std::string(R"({"model": "qwen3-vl-8b", "prompt": "a", "max_tokens": )") + number + "}", o);
    EXPECT_EQ(e.status, 400) << number;
    EXPECT_EQ(e.code, "invalid_json") << number;
  }
}

TEST(RequestLimits, ExtremeAspectRatioIsA400) {
  const RequestParseOptions o = qwen3_options();
  const ApiError e = parse_error(chat_with("", image_content({testing::data_url(4096, 1, false)})), o);
  EXPECT_EQ(e.status, 400);
  EXPECT_EQ(e.code, "invalid_image");
  EXPECT_NE(e.message.find("aspect ratio must be smaller than 200"), std::string::npos) << e.message;
}

TEST(RequestLimits, MmProcessorKwargsOverrideThePixelLimits) {
  vision::VisionGeometry g = vision::vision_geometry_for("qwen3-vl-8b");
  apply_mm_processor_kwargs(R"({"max_pixels": 262144, "min_pixels": 4096})", g);
  EXPECT_EQ(g.max_pixels, 262144);
  EXPECT_EQ(g.min_pixels, 4096);
  // 4096x4096 now resizes to 512x512 -> 32x32 patches -> 256 tokens (16384 with the preset's cap).
  const vision::GridTHW grid = vision::image_grid(g, 4096, 4096);
  EXPECT_EQ(grid, (vision::GridTHW{1, 32, 32}));
  EXPECT_EQ(vision::image_token_count(g, grid), 256);
  EXPECT_EQ(vision::image_token_count(vision::vision_geometry_for("qwen3-vl-8b"), vision::image_grid(vision::vision_geometry_for("qwen3-vl-8b"), 4096, 4096)),
            16384);
  for (const char* bad : {"{", "[1]", R"({"max_pixels": -1})", R"({"max_pixels": "big"})",
                          R"({"do_resize": false})", R"({"min_pixels": 20000000})",
                          R"({"max_pixels": 99999999999999})"}) {
    vision::VisionGeometry copy = vision::vision_geometry_for("qwen3-vl-8b");
    EXPECT_THROW(apply_mm_processor_kwargs(bad, copy), InvalidInput) << bad;
  }
}

TEST(ServeConfig, EncoderBudgetDefaultsClampAndLimits) {
  ServeOptions o;
  o.encoder = "cost-model";  // no device needed
  o.model = "qwen3-vl-8b";
  ServerConfig c = build_server_config(o);
  EXPECT_EQ(c.engine.max_num_encoder_input_tokens, 8192);  // vLLM's default: --max-num-batched-tokens
  EXPECT_EQ(c.request.max_num_encoder_input_tokens, 8192);
  o.max_num_batched_tokens = 10000000;  // clamped to 262144 patches per forward (merge 2: 65536 tokens)
  c = build_server_config(o);
  EXPECT_EQ(c.engine.max_num_encoder_input_tokens, 65536);
  o.max_num_encoder_input_tokens = 65537;
  EXPECT_THROW(build_server_config(o), InvalidInput);
  o.max_num_encoder_input_tokens = 20000;
  o.mm_processor_kwargs = R"({"max_pixels": 1003520})";
  c = build_server_config(o);
  EXPECT_EQ(c.engine.max_num_encoder_input_tokens, 20000);
  EXPECT_EQ(c.request.geometry.max_pixels, 1003520);
  o.max_waiting = 0;
  EXPECT_THROW(build_server_config(o), InvalidInput);
  o.max_waiting = 10;
  o.max_model_len = kMaxModelLen + 1;
  EXPECT_THROW(Server{build_server_config(o)}, InvalidInput);
  o.max_model_len = kMaxModelLen;
  o.encoder_host_post_forward_share = 1.5;  // a share of the step's encoder host work: at most 1
  EXPECT_THROW(build_server_config(o), InvalidInput);
  o.encoder_host_post_forward_share = 1.0;
  EXPECT_NO_THROW(build_server_config(o));
}

// An engine with an encoder budget whose encoder records each call's multimodal tokens (patches
// / 4), the requests all submitted before it starts (only the budget limits what a step encodes).
struct BudgetRun {
  std::vector<std::int64_t> step_tokens;
  EngineCoreStats stats;
};

BudgetRun run_with_encoder_budget(std::int64_t budget, const std::vector<EngineRequest>& requests) {
  std::mutex mutex;
  BudgetRun out;
  EngineCoreConfig config;
  config.max_num_seqs = 64;
  config.max_num_batched_tokens = 100000;
  config.max_num_encoder_input_tokens = budget;
  config.lm = serving::StepCostModel{0.05, 0.0, 0.0};
  config.encoder = [&](const std::vector<vision::GridTHW>& grids) {
    std::lock_guard lock(mutex);
    std::int64_t tokens = 0;
    for (const vision::GridTHW& g : grids) tokens += g.patches() / 4;
    out.step_tokens.push_back(tokens);
    return serving::EncoderStepResult{};
  };
  EngineCoreThread engine(config);
  const int n = static_cast<int>(requests.size());
  Collected c;
  for (const EngineRequest& r : requests)
    EXPECT_NE(engine.submit(r, [&c, n](EngineEvent e) {
      std::lock_guard lock(c.mutex);
      if (e.finished && ++c.finished == n) c.done.notify_all();
    }), nullptr);
  engine.start();
  {
    std::unique_lock lock(c.mutex);
    EXPECT_TRUE(c.done.wait_for(lock, std::chrono::seconds(30), [&] { return c.finished == n; }));
  }
  out.stats = engine.stats();
  engine.stop();
  return out;
}

TEST(Engine, EncoderBudgetBoundsEveryStep) {
  constexpr int kRequests = 12;
  EngineRequest r;
  r.prompt_tokens = 320;
  r.images = {serving::SchedImage{300, vision::GridTHW{1, 40, 30}}};  // 1200 patches = 300 tokens
  r.plan = OutputPlan{2, FinishReason::length};
  const BudgetRun run = run_with_encoder_budget(1000, std::vector<EngineRequest>(kRequests, r));
  // 3 requests (900 tokens) per step, never 4 (1200): 4 encoder calls of 900, 900, 900, 900.
  ASSERT_EQ(run.step_tokens.size(), 4u);
  for (const std::int64_t t : run.step_tokens) EXPECT_EQ(t, 900);
  EXPECT_EQ(run.stats.scheduler.max_step_encoder_tokens, 900);
  EXPECT_EQ(run.stats.images, kRequests);
}

TEST(Engine, ARequestsImagesBeyondOneStepsBudgetAreEncodedOverSeveralSteps) {
  // Budget 300; one request of three 200-token images (vLLM accepts it: each fits, all do not):
  // the engine encodes one image a step and the request completes.
  EngineRequest r;
  r.prompt_tokens = 620;
  const vision::GridTHW grid{1, 20, 40};  // 800 patches = 200 tokens
  r.images = {serving::SchedImage{200, grid, 1}, serving::SchedImage{200, grid, 2}, serving::SchedImage{200, grid, 3}};
  r.plan = OutputPlan{2, FinishReason::length};
  const BudgetRun run = run_with_encoder_budget(300, {r});
  EXPECT_EQ(run.step_tokens, (std::vector<std::int64_t>{200, 200, 200}));
  EXPECT_EQ(run.stats.scheduler.max_step_encoder_tokens, 200);
  EXPECT_EQ(run.stats.images, 3);
}

TEST(Engine, WaitingQueueIsBoundedAndIdleHookRuns) {
  EngineCoreConfig config;
  config.max_waiting = 3;
  config.lm = serving::StepCostModel{0.01, 0, 0};
  std::atomic<int> idle_calls{0};
  config.on_idle = [&] { ++idle_calls; };
  config.encoder = [](const std::vector<vision::GridTHW>&) { return serving::EncoderStepResult{}; };
  EngineCoreThread engine(config);
  std::atomic<int> finished{0};
  EngineRequest r;
  r.prompt_tokens = 5;
  r.plan = OutputPlan{2, FinishReason::length};
  const auto sink = [&](EngineEvent e) { if (e.finished) ++finished; };
  for (int i = 0; i < 3; ++i) EXPECT_NE(engine.submit(r, sink), nullptr);
  EXPECT_EQ(engine.submit(r, sink), nullptr);  // the 4th waits for nothing: refused
  EXPECT_EQ(engine.stats().requests_rejected, 1);
  EXPECT_EQ(idle_calls.load(), 0);
  engine.start();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while ((finished.load() < 3 || idle_calls.load() < 1) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(finished.load(), 3);
  EXPECT_EQ(idle_calls.load(), 1);  // once per busy -> idle transition, not per wake-up
  EXPECT_NE(engine.submit(r, sink), nullptr);  // room again
  engine.stop();
}

TEST(Engine, OutOfMemoryIsMarkedOnTheFailedRequestsOnly) {
  EngineCoreConfig config;
  config.lm = serving::StepCostModel{0.01, 0, 0};
  std::atomic<int> calls{0};
  config.encoder = [&](const std::vector<vision::GridTHW>&) {
    serving::EncoderStepResult r;
    if (calls++ == 0) {
      r.ok = false;
      r.out_of_memory = true;
      r.error = "out of device memory";
    }
    return r;
  };
  EngineCoreThread engine(config);
  Collected c;
  c.events.resize(2);
  EngineRequest r;
  r.prompt_tokens = 10;
  r.images = {serving::SchedImage{4, vision::GridTHW{1, 4, 4}}};
  r.plan = OutputPlan{2, FinishReason::length};
  for (int i = 0; i < 2; ++i) {
    engine.submit(r, [&c, i](EngineEvent e) {
      std::lock_guard lock(c.mutex);
      const bool finished = e.finished;
      c.events[static_cast<std::size_t>(i)].push_back(std::move(e));
      if (finished && ++c.finished == 2) c.done.notify_all();
    });
    if (i == 0) {
      engine.start();
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (engine.stats().requests_failed < 1 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  std::unique_lock lock(c.mutex);
  ASSERT_TRUE(c.done.wait_for(lock, std::chrono::seconds(10), [&] { return c.finished == 2; }));
  ASSERT_EQ(c.events[0].size(), 1u);
  EXPECT_EQ(c.events[0][0].finish, FinishReason::error);
  EXPECT_TRUE(c.events[0][0].out_of_memory);
  EXPECT_EQ(c.events[1].back().finish, FinishReason::length);  // the next step works again
  EXPECT_FALSE(c.events[1].back().out_of_memory);
  EXPECT_EQ(engine.stats().encoder_oom, 1);
}

}  // namespace
}  // namespace encbench::server
