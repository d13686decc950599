// The HTTP server end to end on loopback, through raw sockets: SSE shape, usage counts, every bad
// input with a check that the server still answers afterwards, timeouts, disconnects, limits.
#include <gtest/gtest.h>
#include "tests/support/sanitized.hpp"
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <thread>

#include "harness/core/error.hpp"
#include "harness/server/serve_command.hpp"
#include "harness/server/server.hpp"
#include "harness/serving/api_server_pipeline.hpp"
#include "harness/serving/virtual_loop.hpp"
#include "harness/vision/vision_geometry.hpp"
#include "tests/server/raw_http.hpp"
#include "tests/server/test_images.hpp"

namespace encbench::server {
namespace {

using nlohmann::json;
using testing::RawConnection;
using namespace std::chrono_literals;

constexpr const char* kModel = "qwen2.5-vl-7b";

ServerConfig test_config() {
  ServerConfig config;
  config.port = 0;
  config.request.served_model_name = kModel;
  config.request.geometry = vision::vision_geometry_for(kModel);
  config.request.limit_images_per_prompt = 2;
  config.max_body_bytes = 512 * 1024;
  config.header_timeout_ns = 400'000'000;  // short, so the slowloris test is quick
  config.engine.max_num_seqs = 4;
  config.engine.max_num_batched_tokens = 2048;
  config.engine.lm = serving::StepCostModel{0.2, 0.0, 0.0};
  config.engine.encoder = make_cost_model_encoder(EncoderCostModel{0.1, 0.0, 0.0});
  return config;
}

class ServerTest : public ::testing::Test {
 protected:
  void start(ServerConfig config = test_config()) {
    server_ = std::make_unique<Server>(std::move(config));
    server_->start();
  }
  void TearDown() override {
    if (server_) server_->stop();
  }
  RawConnection::Response exchange(const std::string& raw) {
    RawConnection c(server_->port());
    c.send_all(raw);
    return c.read_response();
  }
  RawConnection::Response chat(const json& body) {
    return exchange(testing::post_request("/v1/chat/completions", body.dump()));
  }
  void expect_alive() {
    const auto r = exchange(testing::get_request("/health"));
    EXPECT_EQ(r.status, 200) << "server stopped answering";
  }
  void expect_error(const RawConnection::Response& r, int status, const std::string& needle) {
    EXPECT_TRUE(r.complete);
    EXPECT_EQ(r.status, status) << r.body;
    const json body = json::parse(r.body, nullptr, false);
    ASSERT_TRUE(body.is_object()) << r.body;
    ASSERT_TRUE(body.contains("error")) << r.body;
    for (const char* key : {"message", "type", "param", "code"}) EXPECT_TRUE(body["error"].contains(key)) << key;
    EXPECT_NE(body["error"]["message"].get<std::string>().find(needle), std::string::npos)
        << body["error"]["message"];
    expect_alive();
  }
  std::unique_ptr<Server> server_;
};

json user_text(const std::string& text, int max_tokens = 5) {
  return {{"model", kModel},
          {"messages", {{{"role", "user"}, {"content", text}}}},
          {"max_tokens", max_tokens},
          {"ignore_eos", true}};
}

TEST_F(ServerTest, StreamingChatHasVllmShape) {
  start();
  json body = user_text("describe this", 6);
  body["stream"] = true;
  body["stream_options"] = {{"include_usage", true}};
  const auto r = chat(body);
  ASSERT_TRUE(r.complete);
  EXPECT_EQ(r.status, 200);
  EXPECT_NE(r.headers.at("content-type").find("text/event-stream"), std::string::npos);
  const auto events = testing::sse_data_events(r.body);
  ASSERT_EQ(events.size(), 1u + 6u + 1u + 1u);  // role, 6 tokens, usage, [DONE]
  EXPECT_EQ(events.back(), "[DONE]");
  std::string id;
  for (std::size_t i = 0; i + 1 < events.size(); ++i) {
    const json chunk = json::parse(events[i]);
    EXPECT_EQ(chunk["object"], "chat.completion.chunk");
    EXPECT_EQ(chunk["model"], kModel);
    EXPECT_TRUE(chunk["created"].is_number_integer());
    if (i == 0) id = chunk["id"];
    EXPECT_EQ(chunk["id"], id);
    if (i == 0) {
      EXPECT_EQ(chunk["choices"][0]["delta"], json({{"role", "assistant"}, {"content", ""}}));
      EXPECT_TRUE(chunk["choices"][0]["finish_reason"].is_null());
    } else if (i <= 6) {
      const json& choice = chunk["choices"][0];
      EXPECT_EQ(choice["index"], 0);
      EXPECT_FALSE(choice["delta"]["content"].get<std::string>().empty());
      EXPECT_FALSE(choice["delta"].contains("role"));
      if (i < 6) EXPECT_TRUE(choice["finish_reason"].is_null());
      else EXPECT_EQ(choice["finish_reason"], "length");
      EXPECT_FALSE(chunk.contains("usage"));
    } else {
      EXPECT_TRUE(chunk["choices"].is_array());
      EXPECT_TRUE(chunk["choices"].empty());
      // "describe this" = 13 bytes -> 4 tokens; + 4 per message + 3 assistant prefix.
      EXPECT_EQ(chunk["usage"]["prompt_tokens"], 4 + 4 + 3);
      EXPECT_EQ(chunk["usage"]["completion_tokens"], 6);
      EXPECT_EQ(chunk["usage"]["total_tokens"], 11 + 6);
    }
  }
  // Without include_usage there is no usage chunk.
  body.erase("stream_options");
  const auto plain = testing::sse_data_events(chat(body).body);
  EXPECT_EQ(plain.size(), 1u + 6u + 1u);
}

TEST_F(ServerTest, NonStreamingChatAndCompletionsCarryUsage) {
  start();
  const auto r = chat(user_text("hi", 7));
  ASSERT_EQ(r.status, 200);
  const json body = json::parse(r.body);
  EXPECT_EQ(body["object"], "chat.completion");
  EXPECT_EQ(body["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(body["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(body["usage"]["completion_tokens"], 7);
  EXPECT_EQ(body["usage"]["prompt_tokens"], 1 + 4 + 3);
  // Seven pseudo-words, each with a leading space.
  const std::string text = body["choices"][0]["message"]["content"];
  EXPECT_EQ(std::count(text.begin(), text.end(), ' '), 7);

  const auto c = exchange(testing::post_request(
      "/v1/completions", R"({"model":"qwen2.5-vl-7b","prompt":"abcdefgh","max_tokens":3,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}})"));
  const auto events = testing::sse_data_events(c.body);
  ASSERT_EQ(events.size(), 3u + 1u + 1u);
  EXPECT_EQ(json::parse(events[0])["object"], "text_completion");
  EXPECT_TRUE(json::parse(events[0])["choices"][0].contains("text"));
  EXPECT_EQ(json::parse(events[3])["usage"]["prompt_tokens"], 2);
}

TEST_F(ServerTest, WithoutIgnoreEosStopsAtSeededLength) {
  ServerConfig config = test_config();
  config.eos_mean_tokens = 3;  // natural length in [1, 5]
  start(config);
  json body = user_text("same prompt", 50);
  body.erase("ignore_eos");
  const json first = json::parse(chat(body).body);
  const json second = json::parse(chat(body).body);
  EXPECT_EQ(first["choices"][0]["finish_reason"], "stop");
  EXPECT_LE(first["usage"]["completion_tokens"].get<int>(), 5);
  EXPECT_EQ(first["choices"][0]["message"], second["choices"][0]["message"]);  // deterministic
}

TEST_F(ServerTest, ImageTokensCountedInPromptTokens) {
  start();
  json body = user_text("what is this", 2);
  body["messages"][0]["content"] = {
      {{"type", "text"}, {"text", "what is this"}},
      {{"type", "image_url"}, {"image_url", {{"url", testing::data_url(640, 480, true)}}}}};
  const auto r = chat(body);
  ASSERT_EQ(r.status, 200) << r.body;
  // 640x480 -> 644x476 -> 46x34 patches -> 391 tokens; + 2 wrapper tokens; text 3 + 4 + 3.
  EXPECT_EQ(json::parse(r.body)["usage"]["prompt_tokens"], 391 + 2 + 3 + 4 + 3);
  EXPECT_EQ(server_->engine_stats().images, 1);
  EXPECT_EQ(server_->engine_stats().encoder_forwards, 1);
}

TEST_F(ServerTest, BadRequestsAreOpenAiErrorsAndServerSurvives) {
  start();
  const auto chat_raw = [&](const std::string& body) {
    return exchange(testing::post_request("/v1/chat/completions", body));
  };
  expect_error(chat_raw("{not json"), 400, "not valid JSON");
  expect_error(chat_raw(""), 400, "not valid JSON");
  expect_error(chat_raw("[1,2]"), 400, "JSON object");
  expect_error(chat_raw(std::string(200, '[') + std::string(200, ']')), 400, "nested");
  expect_error(chat_raw(R"({"model":"qwen2.5-vl-7b"})"), 400, "'messages' is required");
  expect_error(chat_raw(R"({"messages":"hi"})"), 400, "must be an array");
  expect_error(chat_raw(R"({"messages":[]})"), 400, "must not be empty");
  expect_error(chat_raw(R"({"messages":[{"role":"user"}]})"), 400, "needs 'content'");
  expect_error(chat_raw(R"({"messages":[{"role":"user","content":5}]})"), 400, "string or an array");
  expect_error(chat_raw(R"({"messages":[{"role":"user","content":[{"type":"audio"}]}]})"), 400, "unsupported");
  expect_error(chat_raw(R"({"messages":[{"role":"user","content":"x"}],"max_tokens":"5"})"), 400, "integer");
  expect_error(chat_raw(R"({"messages":[{"role":"user","content":"x"}],"max_tokens":0})"), 400, "at least 1");
  expect_error(chat_raw(R"({"messages":[{"role":"user","content":"x"}],"stream":"yes"})"), 400, "boolean");
  expect_error(chat_raw(R"({"messages":[{"role":"user","content":"x"}],"temperature":"hot"})"), 400, "number");
  expect_error(chat_raw(R"({"messages":[{"role":"user","content":"x"}],"stream_options":{"include_usage":true}})"), 400,
               "stream=True");
  expect_error(chat_raw(R"({"messages":[{"role":"user","content":"x"}],"n":2})"), 400, "n=1");
  expect_error(chat_raw(R"({"messages":[{"role":"user","content":"x"}],"max_tokens":40000})"), 400,
               "maximum context length");
  expect_error(chat_raw(R"({"model":"gpt-4","messages":[{"role":"user","content":"x"}]})"), 404, "does not exist");
  expect_error(exchange(testing::post_request("/v1/completions", R"({"prompt":["a","b"]})")), 400, "batched");
  expect_error(exchange(testing::get_request("/v1/nothing")), 404, "no route");
  expect_error(exchange(testing::get_request("/v1/chat/completions")), 405, "not allowed");
  expect_error(exchange(testing::post_request("/start_profile", "")), 404, "profiling");
}

TEST_F(ServerTest, BadImagesAreRejected) {
  const auto dir = std::filesystem::temp_directory_path() / ("encbench_server_media_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir / "inside");
  {
    std::ofstream(dir / "inside" / "a.png", std::ios::binary) << testing::encode_image(56, 56, false);
    std::ofstream(dir / "outside.png", std::ios::binary) << testing::encode_image(56, 56, false);
  }
  ServerConfig config = test_config();
  config.request.image_policy.allowed_local_media_path = std::filesystem::canonical(dir / "inside");
  start(config);
  const auto with_urls = [&](std::vector<std::string> urls) {
    json body = user_text("x", 1);
    json parts = json::array({{{"type", "text"}, {"text", "x"}}});
    for (const auto& url : urls) parts.push_back({{"type", "image_url"}, {"image_url", {{"url", url}}}});
    body["messages"][0]["content"] = parts;
    return chat(body);
  };
  const std::string small = testing::data_url(32, 32, false);
  expect_error(with_urls({small, small, small}), 400, "At most 2 image");
  expect_error(with_urls({"data:image/png;base64," + testing::base64("definitely not a png")}), 400, "could not decode");
  expect_error(with_urls({"data:image/png;base64,@@@@"}), 400, "invalid base64");
  expect_error(with_urls({"data:text/plain;base64,aGk="}), 400, "image/*");
  expect_error(with_urls({"http://example.com/cat.jpg"}), 400, "never accesses the network");
  expect_error(with_urls({"https://example.com/cat.jpg"}), 400, "data URL");
  expect_error(with_urls({"file://" + (dir / "outside.png").string()}), 400, "outside");
  expect_error(with_urls({"file://" + (dir / "inside" / ".." / "outside.png").string()}), 400, "outside");
  expect_error(with_urls({"ftp://x/y.png"}), 400, "data URL");
  // Truncated PNG: header fine, data cut.
  const std::string png = testing::encode_image(64, 64, false);
  expect_error(with_urls({"data:image/png;base64," + testing::base64(png.substr(0, png.size() / 2))}), 400, "decode");
  // Accepted: a file under the allowed directory.
  EXPECT_EQ(with_urls({"file://" + (dir / "inside" / "a.png").string()}).status, 200);
  std::filesystem::remove_all(dir);

  ServerConfig closed = test_config();
  server_->stop();
  start(closed);
  expect_error(with_urls({"file:///etc/passwd"}), 400, "--allowed-local-media-path");
}

TEST_F(ServerTest, OversizedBodiesGet413) {
  start();
  const std::string big = R"({"messages":[{"role":"user","content":")" + std::string(600 * 1024, 'a') + "\"}]}";
  expect_error(exchange(testing::post_request("/v1/chat/completions", big)), 413, "over the server's limit");
  // Chunked body with no declared length: the parser stops at the limit.
  std::string chunked = "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (int i = 0; i < 10; ++i) chunked += "10000\r\n" + std::string(0x10000, 'a') + "\r\n";
  chunked += "0\r\n\r\n";
  expect_error(exchange(chunked), 413, "limit");
  // Expect: 100-continue with a too-large length: answered 413 before the body is sent.
  RawConnection c(server_->port());
  c.send_all("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999\r\nExpect: 100-continue\r\n\r\n");
  EXPECT_EQ(c.read_response().status, 413);
}

TEST_F(ServerTest, ExpectContinueIsAnswered) {
  start();
  const std::string body = user_text("hello").dump();
  RawConnection c(server_->port());
  c.send_all("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(body.size()) +
             "\r\nExpect: 100-continue\r\n\r\n");
  const auto interim = c.read_some(2000ms);
  ASSERT_TRUE(interim.has_value());
  EXPECT_EQ(interim->rfind("HTTP/1.1 100 Continue", 0), 0u);
  c.send_all(body);
  EXPECT_EQ(c.read_response().status, 200);
}

TEST_F(ServerTest, MalformedHttpIsAnsweredOrClosed) {
  start();
  for (const std::string& garbage :
       {std::string("GARBAGE\r\n\r\n"), std::string("GET / HTTP/9.9\r\n\r\n"),
        std::string("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11),  // a TLS ClientHello
        std::string("POST /v1/chat/completions HTTP/1.1\r\nContent-Length: abc\r\n\r\n"),
        std::string("GET /health HTTP/1.1\r\nX: ") + std::string(40000, 'h') + "\r\n\r\n"}) {
    RawConnection c(server_->port());
    c.send_all(garbage);
    const auto r = c.read_response(3000ms);
    if (r.complete) {
      EXPECT_GE(r.status, 400);
    }
    EXPECT_TRUE(c.closed_by_peer_within(3000ms));
    expect_alive();
  }
  EXPECT_GE(server_->http_stats().malformed_requests, 4);
}

TEST_F(ServerTest, RandomGarbageAndMutatedBodiesNeverHurt) {
  start();
  std::mt19937 rng(12345);
  const auto random_bytes = [&](std::size_t n) {
    std::string out(n, '\0');
    for (char& c : out) c = static_cast<char>(rng() & 0xFF);
    return out;
  };
  // Raw garbage, and garbage after a valid request line.
  for (int i = 0; i < 20; ++i) {
    RawConnection c(server_->port());
    std::string bytes = (i % 2 ? "POST /v1/chat/completions HTTP/1.1\r\n" : "") + random_bytes(1 + rng() % 3000);
    c.send_all(bytes);
    const auto r = c.read_response(1500ms);
    if (r.complete) {
      EXPECT_GE(r.status, 400);
    }
  }
  // A valid body with an image, mutated byte by byte: every answer is a well-formed response.
  json valid = user_text("mutate me", 2);
  // Without ignore_eos: a mutation that breaks the "max_tokens" key leaves a valid request for
  // max_model_len tokens, which with ignore_eos would outlast the read timeout (it happened once
  // the PNG encoder changed and so did the bytes the fixed-seed mutations hit).
  valid.erase("ignore_eos");
  valid["messages"][0]["content"] = {{{"type", "text"}, {"text", "mutate me"}},
                                     {{"type", "image_url"}, {"image_url", {{"url", testing::data_url(60, 40, false)}}}}};
  const std::string body = valid.dump();
  const int rounds = encbench::testing::sanitized() ? 60 : 200;
  for (int i = 0; i < rounds; ++i) {
    std::string mutated = body;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) mutated[rng() % mutated.size()] = static_cast<char>(rng() & 0xFF);
    const auto r = exchange(testing::post_request("/v1/chat/completions", mutated));
    ASSERT_TRUE(r.complete) << "no complete response for mutation " << i;
    EXPECT_TRUE(r.status == 200 || r.status == 400 || r.status == 404) << r.status << " " << r.body;
  }
  expect_alive();
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < deadline && server_->http_stats().connections_open != 0)
    std::this_thread::sleep_for(10ms);
  EXPECT_EQ(server_->http_stats().connections_open, 0) << "leaked connections";
}

TEST_F(ServerTest, SlowlorisIsCutByHeaderTimeout) {
  start();
  RawConnection c(server_->port());
  c.send_all("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n");  // never finishes the header
  EXPECT_TRUE(c.closed_by_peer_within(5000ms));
  EXPECT_EQ(server_->http_stats().header_timeouts, 1);
  expect_alive();
}

TEST_F(ServerTest, KeepAliveServesSeveralRequestsOnOneConnection) {
  start();
  RawConnection c(server_->port());
  for (int i = 0; i < 3; ++i) {
    json body = user_text("again", 2);
    body["stream"] = (i % 2 == 1);
    c.send_all(testing::post_request("/v1/chat/completions", body.dump()));
    const auto r = c.read_response();
    ASSERT_TRUE(r.complete);
    EXPECT_EQ(r.status, 200);
  }
  c.send_all(testing::get_request("/v1/models"));
  EXPECT_EQ(json::parse(c.read_response().body)["data"][0]["id"], kModel);
  EXPECT_EQ(server_->http_stats().connections_total, 1);
}

TEST_F(ServerTest, ClientDisconnectMidStreamFreesEverything) {
  ServerConfig config = test_config();
  config.engine.lm = serving::StepCostModel{2.0, 0, 0};
  start(config);
  for (const bool abortive : {false, true}) {
    RawConnection c(server_->port());
    json body = user_text("long", 100000);
    body["max_tokens"] = 20000;
    body["stream"] = true;
    c.send_all(testing::post_request("/v1/chat/completions", body.dump()));
    const auto first = c.read_some(5000ms);
    ASSERT_TRUE(first && !first->empty());
    if (abortive) c.reset();
    else c.close();
  }
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < deadline &&
         (server_->engine_stats().requests_aborted < 2 || server_->http_stats().connections_open != 0))
    std::this_thread::sleep_for(10ms);
  EXPECT_EQ(server_->engine_stats().requests_aborted, 2);
  EXPECT_EQ(server_->engine_stats().running, 0);
  EXPECT_EQ(server_->http_stats().connections_open, 0);
  EXPECT_EQ(server_->http_stats().streams_active, 0);
  EXPECT_GE(server_->http_stats().client_disconnects, 2);
  expect_alive();
}

TEST_F(ServerTest, BatchLimitsHoldUnderConcurrencyAndMetricsAgree) {
  ServerConfig config = test_config();
  config.engine.max_num_seqs = 3;
  config.engine.max_num_batched_tokens = 64;
  start(config);
  constexpr int kClients = 10;
  std::vector<std::unique_ptr<RawConnection>> clients;
  for (int i = 0; i < kClients; ++i) {
    clients.push_back(std::make_unique<RawConnection>(server_->port()));
    json body = user_text(std::string(100 + i, 'x'), 5);
    body["stream"] = true;
    body["stream_options"] = {{"include_usage", true}};
    clients.back()->send_all(testing::post_request("/v1/chat/completions", body.dump()));
  }
  std::int64_t prompt = 0, completion = 0;
  for (auto& client : clients) {
    const auto r = client->read_response();
    ASSERT_TRUE(r.complete);
    const auto events = testing::sse_data_events(r.body);
    const json usage = json::parse(events[events.size() - 2])["usage"];
    prompt += usage["prompt_tokens"].get<std::int64_t>();
    completion += usage["completion_tokens"].get<std::int64_t>();
  }
  RawConnection m(server_->port());
  m.send_all(testing::get_request("/metrics"));
  const std::string metrics = m.read_response().body;
  const auto value = [&](const std::string& name) {
    const std::size_t at = metrics.find("\n" + name + " ");
    EXPECT_NE(at, std::string::npos) << name;
    return std::stod(metrics.substr(at + name.size() + 2));
  };
  EXPECT_LE(value("encbench:engine_max_running_seen"), 3);
  EXPECT_LE(value("encbench:engine_max_step_tokens_seen"), 64);
  EXPECT_EQ(value("encbench:prompt_tokens_total"), static_cast<double>(prompt));
  EXPECT_EQ(value("encbench:generation_tokens_total"), static_cast<double>(completion));
  EXPECT_EQ(value("encbench:usage_completion_tokens_total"), static_cast<double>(completion));
  EXPECT_NE(metrics.find("encbench:http_requests_total{route=\"/v1/chat/completions\",status=\"200\"} 10"),
            std::string::npos);
  EXPECT_EQ(value("encbench:num_requests_running"), 0);
}

TEST_F(ServerTest, FaultKnobs) {
  ServerConfig config = test_config();
  config.faults.fail_rate = 1.0;
  start(config);
  expect_error(chat(user_text("x")), 500, "injected");
  server_->stop();

  config.faults = FaultConfig{0.0, 1.0, 0, 0};
  start(config);
  json body = user_text("x", 10);
  body["stream"] = true;
  RawConnection c(server_->port());
  c.send_all(testing::post_request("/v1/chat/completions", body.dump()));
  const auto r = c.read_response();
  EXPECT_FALSE(r.complete);  // dropped before the last chunk
  EXPECT_EQ(r.body.find("[DONE]"), std::string::npos);
  EXPECT_EQ(server_->http_stats().faults_disconnected, 1);
  expect_alive();
  server_->stop();

  config.faults = FaultConfig{0.0, 0.0, 300, 0};
  start(config);
  RawConnection s(server_->port());
  const auto t0 = std::chrono::steady_clock::now();
  s.send_all(testing::post_request("/v1/chat/completions", body.dump()));
  const auto stalled = s.read_response();
  EXPECT_TRUE(stalled.complete);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 300ms);  // a lower bound, not a speed claim
  EXPECT_EQ(server_->http_stats().faults_stalled, 1);
}

TEST_F(ServerTest, NullModeServesManyConcurrentStreams) {
  ServerConfig config = test_config();
  config.engine.null_mode = true;
  start(config);
  const int clients_count = encbench::testing::sanitized() ? 50 : 200;
  std::vector<std::unique_ptr<RawConnection>> clients;
  json body = user_text("x", 20);
  body["stream"] = true;
  for (int i = 0; i < clients_count; ++i) {
    clients.push_back(std::make_unique<RawConnection>(server_->port()));
    clients.back()->send_all(testing::post_request("/v1/chat/completions", body.dump()));
  }
  for (auto& client : clients) {
    const auto r = client->read_response();
    ASSERT_TRUE(r.complete);
    EXPECT_EQ(testing::sse_data_events(r.body).size(), 1u + 20u + 1u);
  }
  EXPECT_EQ(server_->engine_stats().requests_finished, clients_count);
}

TEST_F(ServerTest, StopWithOpenStreamsDoesNotHang) {
  ServerConfig config = test_config();
  config.engine.lm = serving::StepCostModel{5.0, 0, 0};
  start(config);
  std::vector<std::unique_ptr<RawConnection>> clients;
  json body = user_text("x", 10000);
  body["stream"] = true;
  for (int i = 0; i < 5; ++i) {
    clients.push_back(std::make_unique<RawConnection>(server_->port()));
    clients.back()->send_all(testing::post_request("/v1/chat/completions", body.dump()));
  }
  clients.push_back(std::make_unique<RawConnection>(server_->port()));  // idle keep-alive
  std::this_thread::sleep_for(100ms);
  server_->stop();
  for (auto& client : clients) EXPECT_TRUE(client->closed_by_peer_within(5000ms));
}

TEST_F(ServerTest, OutOfDeviceMemoryIs503AndTheServerKeepsServing) {
  ServerConfig config = test_config();
  auto calls = std::make_shared<std::atomic<int>>(0);
  config.engine.encoder = [calls](const std::vector<vision::GridTHW>&) {
    serving::EncoderStepResult r;
    if ((*calls)++ == 0) {  // the first step's device allocation fails; later ones fit
      r.ok = false;
      r.out_of_memory = true;
      r.error = "out of device memory: needed 4096 MiB with 1024 MiB reserved, budget 2048 MiB";
    }
    return r;
  };
  start(config);
  json body = user_text("x", 3);
  body["messages"][0]["content"] = json::array({{{"type", "image_url"}, {"image_url", {{"url", testing::data_url(64, 64, false)}}}}});
  const auto first = chat(body);
  expect_error(first, 503, "out of device memory");
  EXPECT_EQ(json::parse(first.body)["error"]["code"], "out_of_device_memory");
  body["stream"] = true;  // nothing streamed yet: a 503 too, not a 200 stream with an error event
  const auto again = chat(body);
  EXPECT_EQ(again.status, 200) << again.body;  // the second step fits
  EXPECT_EQ(server_->engine_stats().encoder_oom, 1);
  EXPECT_NE(server_->metrics_text().find("encbench:encoder_out_of_memory_total 1"), std::string::npos);
}

TEST_F(ServerTest, FullWaitingQueueIs503) {
  ServerConfig config = test_config();
  config.engine.max_num_seqs = 1;
  config.engine.max_waiting = 1;
  config.engine.lm = serving::StepCostModel{5.0, 0.0, 0.0};
  start(config);
  // One running (1000 tokens of 5 ms), one waiting: the third is refused at once.
  RawConnection running(server_->port()), waiting(server_->port());
  ASSERT_TRUE(running.send_all(testing::post_request("/v1/chat/completions", user_text("a", 1000).dump())));
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (server_->engine_stats().running < 1 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(1ms);
  ASSERT_TRUE(waiting.send_all(testing::post_request("/v1/chat/completions", user_text("b", 1).dump())));
  while (server_->engine_stats().waiting < 1 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(1ms);
  const auto refused = chat(user_text("c", 1));
  expect_error(refused, 503, "--max-waiting");
  EXPECT_EQ(json::parse(refused.body)["error"]["code"], "queue_full");
  EXPECT_EQ(server_->engine_stats().requests_rejected, 1);
}

// vLLM's API-server stage on the real clock: each request is held until its modelled input
// processing ends (from its header's arrival), one at a time per modelled process. Lower bounds on
// the wall clock are what the hold guarantees; the stage's own figures are exact.
serving::ApiServerModel api_server_model(double request_ms, double process_ns_per_pixel, int processes) {
  serving::ApiServerModel m;
  m.name = "test";
  m.request_ms = {request_ms, "test"};
  m.process_ns_per_pixel = {process_ns_per_pixel, "test"};
  serving::set_api_server_count(m, processes, "test");
  return m;
}

TEST_F(ServerTest, ApiServerStageHoldsARequestForItsModelledCost) {
  ServerConfig config = test_config();
  config.api_server = api_server_model(100, 200, 1);
  start(config);
  json body = user_text("what is this", 2);
  body["messages"][0]["content"] = {
      {{"type", "text"}, {"text", "what is this"}},
      {{"type", "image_url"}, {"image_url", {{"url", testing::data_url(640, 480, true)}}}}};
  const auto sent = std::chrono::steady_clock::now();
  const auto r = chat(body);
  const auto took = std::chrono::steady_clock::now() - sent;
  ASSERT_EQ(r.status, 200) << r.body;
  const Nanos cost = 100'000'000 + 640 * 480 * 200;  // 161.44 ms
  EXPECT_GE(std::chrono::duration_cast<std::chrono::nanoseconds>(took).count(), cost);
  const ApiServerStats a = server_->api_server_stats();
  EXPECT_EQ(a.requests, 1);
  EXPECT_EQ(a.modelled_ns, cost);
  EXPECT_EQ(a.queue_ns, 0);
  EXPECT_EQ(a.overruns, 0);  // a 640x480 decode is far inside 161 ms
  EXPECT_GT(a.parse_ns, 0);
  // What the server added is the modelled cost less its own parse (and the body's transfer).
  EXPECT_GT(a.held_ns, 0);
  EXPECT_LE(a.held_ns + a.parse_ns, cost);
  const auto metrics = exchange(testing::get_request("/metrics"));
  EXPECT_NE(metrics.body.find("encbench:api_server_requests_total 1\n"), std::string::npos) << metrics.body;
  EXPECT_NE(metrics.body.find("encbench:api_server_overruns_total 0\n"), std::string::npos);
}

TEST_F(ServerTest, ApiServerStageServesABurstInTurnAndTwoProcessesHalveTheQueue) {
  for (const int processes : {1, 2}) {
    ServerConfig config = test_config();
    config.api_server = api_server_model(500, 0, processes);
    start(config);
    std::vector<std::unique_ptr<RawConnection>> burst;
    const auto first = std::chrono::steady_clock::now();
    for (int i = 0; i < 3; ++i) {
      burst.push_back(std::make_unique<RawConnection>(server_->port()));
      ASSERT_TRUE(burst.back()->send_all(testing::post_request("/v1/chat/completions", user_text("x", 1).dump())));
    }
    const Nanos spread = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - first).count();
    for (auto& c : burst) EXPECT_EQ(c->read_response().status, 200);
    const ApiServerStats a = server_->api_server_stats();
    EXPECT_EQ(a.requests, 3);
    EXPECT_EQ(a.modelled_ns, 1'500'000'000);
    // One process: the second waits for the first (500 ms), the third for both (1 s), less how
    // much later each arrived; two processes: only the third waits (500 ms). The server reads a
    // header after its send, up to 100 ms later allowed here (a loaded or sanitized build).
    const Nanos full_queue = processes == 1 ? 1'500'000'000 : 500'000'000;
    EXPECT_LE(a.queue_ns, full_queue) << processes;
    EXPECT_GE(a.queue_ns, full_queue - 2 * (spread + 100'000'000))
        << processes << " (sends spread over " << spread << " ns)";
    server_->stop();
    server_.reset();
  }
}

// The live API-server stage is bounded. With --max-api-server-queue 2 and a modelled
// cost of 60 s per request, two requests sit in the stage and every further one is refused at once
// with 503 api_server_queue_full + Retry-After (vLLM's asyncio front end would queue them all);
// the places come back when the held requests' clients go, and the next request is admitted.
TEST_F(ServerTest, ApiServerStageIsBoundedAndRefusesTheOverflowWith503) {
  ServerConfig config = test_config();
  config.api_server = api_server_model(60'000, 0, 1);
  config.max_api_server_queue = 2;
  start(config);
  const auto wait_for_in_stage = [&](std::int64_t n) {
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (server_->api_server_stats().in_stage != n && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(1ms);
    return server_->api_server_stats().in_stage;
  };
  std::vector<std::unique_ptr<RawConnection>> held;
  for (int i = 0; i < 2; ++i) {
    held.push_back(std::make_unique<RawConnection>(server_->port()));
    ASSERT_TRUE(held.back()->send_all(testing::post_request("/v1/chat/completions", user_text("held", 1).dump())));
  }
  ASSERT_EQ(wait_for_in_stage(2), 2);
  for (int i = 0; i < 20; ++i) {
    const auto refused = chat(user_text("overflow", 1));
    ASSERT_EQ(refused.status, 503) << refused.body;
    EXPECT_EQ(json::parse(refused.body)["error"]["code"], "api_server_queue_full");
    EXPECT_NE(json::parse(refused.body)["error"]["message"].get<std::string>().find("--max-api-server-queue"),
              std::string::npos);
    EXPECT_EQ(refused.headers.count("retry-after"), 1u);
  }
  ApiServerStats a = server_->api_server_stats();
  EXPECT_EQ(a.in_stage, 2);
  EXPECT_EQ(a.rejected, 20);
  EXPECT_EQ(a.requests, 2);  // the refused ones never took a modelled process
  const auto metrics = exchange(testing::get_request("/metrics"));
  EXPECT_NE(metrics.body.find("encbench:api_server_rejections_total 20\n"), std::string::npos) << metrics.body;
  EXPECT_NE(metrics.body.find("encbench:api_server_in_stage 2\n"), std::string::npos) << metrics.body;
  held.clear();  // their clients go: the held requests leave the stage
  EXPECT_EQ(wait_for_in_stage(0), 0);
  RawConnection next(server_->port());
  ASSERT_TRUE(next.send_all(testing::post_request("/v1/chat/completions", user_text("next", 1).dump())));
  EXPECT_EQ(wait_for_in_stage(1), 1);
  a = server_->api_server_stats();
  EXPECT_EQ(a.rejected, 20);
  EXPECT_EQ(a.requests, 3);
  expect_alive();
}

// The planned schedule end to end: three requests through HTTP, the API-server stage (200 ms each, two
// processes: the third waits for one) and the engine (5 ms steps, 40 tokens each, so they batch).
// The engine's recorded planned schedule, offset from the first header's arrival, is the virtual
// loop's for requests sent at the same offsets through the same stage model, to the nanosecond:
// the live stage hands each request to the engine due at its modelled end, so no timer or thread
// wake-up decides which step takes it. Only the header arrival times come from the real clock.
TEST_F(ServerTest, PlannedScheduleThroughHttpIsTheVirtualLoops) {
  ServerConfig config = test_config();
  config.engine.lm = serving::StepCostModel{5.0, 0, 0};
  config.api_server = api_server_model(200, 0, 2);
  config.engine.timeline = std::make_shared<EngineTimelineRecorder>(1000, 1000);
  config.engine.timeline->start();
  const auto timeline = config.engine.timeline;
  start(config);
  std::vector<std::unique_ptr<RawConnection>> clients;
  for (int i = 0; i < 3; ++i) {
    clients.push_back(std::make_unique<RawConnection>(server_->port()));
    ASSERT_TRUE(clients.back()->send_all(testing::post_request("/v1/chat/completions", user_text("same", 40).dump())));
  }
  std::int64_t prompt_tokens = 0;
  for (auto& c : clients) {
    const auto r = c->read_response(60000ms);
    ASSERT_EQ(r.status, 200) << r.body;
    prompt_tokens = json::parse(r.body)["usage"]["prompt_tokens"].get<std::int64_t>();
  }
  EXPECT_EQ(server_->engine_stats().late_submissions, 0);
  const json recorded = timeline->stop_and_take_json();
  std::vector<Nanos> arrivals;
  std::set<std::string> content_hashes;  // the same prompt thrice: one identity, as the scheduler got it
  for (const json& r : recorded["requests"]) {
    arrivals.push_back(r["arrival_ns"].get<Nanos>());
    content_hashes.insert(r["content_hash"].get<std::string>());
  }
  ASSERT_EQ(arrivals.size(), 3u);
  ASSERT_EQ(content_hashes.size(), 1u);
  EXPECT_NE(*content_hashes.begin(), "0000000000000000");
  std::sort(arrivals.begin(), arrivals.end());
  std::vector<serving::VirtualRequest> requests(3);
  for (std::size_t i = 0; i < 3; ++i) {
    requests[i].arrival_ns = arrivals[i] - arrivals[0];
    requests[i].request.prompt_tokens = prompt_tokens;
    requests[i].request.output_tokens = 40;
    requests[i].request.content_hash = std::stoull(*content_hashes.begin(), nullptr, 16);
  }
  serving::SchedulerConfig scheduler;
  scheduler.max_num_seqs = config.engine.max_num_seqs;
  scheduler.max_num_batched_tokens = config.engine.max_num_batched_tokens;
  serving::VirtualArmOptions options;
  options.keep_steps = true;
  options.api_server = config.api_server;
  const serving::VirtualArmResult virt =
      serving::run_virtual_arm(requests, scheduler, config.engine.lm, config.engine.encoder, options);
  const json& steps = recorded["steps"];
  ASSERT_EQ(steps.size(), virt.steps.size());
  std::int64_t batched = 0;
  for (std::size_t k = 0; k < virt.steps.size(); ++k) {
    SCOPED_TRACE("step " + std::to_string(k));
    EXPECT_EQ(steps[k]["planned_start_ns"].get<Nanos>() - arrivals[0], virt.steps[k].start_ns - virt.start_ns);
    EXPECT_EQ(steps[k]["planned_lm_ns"].get<Nanos>(), virt.steps[k].lm_ns);
    EXPECT_EQ(steps[k]["sequences"].get<std::int64_t>(), virt.steps[k].sequences);
    batched = std::max<std::int64_t>(batched, virt.steps[k].sequences);
  }
  EXPECT_EQ(batched, 2);  // the first two share steps; the third starts as they finish
}

// A chat request with one text part and one image (ignore_eos: exactly max_tokens tokens).
json image_chat(const std::string& text, const std::string& image_url, int max_tokens) {
  json body = user_text(text, max_tokens);
  body["messages"][0]["content"] = {{{"type", "text"}, {"text", text}},
                                    {{"type", "image_url"}, {"image_url", {{"url", image_url}}}}};
  return body;
}

// The engine timeline's requests, in arrival order.
std::vector<json> requests_by_arrival(const json& recorded) {
  std::vector<json> requests(recorded["requests"].begin(), recorded["requests"].end());
  std::sort(requests.begin(), requests.end(),
            [](const json& a, const json& b) { return a["arrival_ns"].get<Nanos>() < b["arrival_ns"].get<Nanos>(); });
  return requests;
}

// vLLM's processor cache in the live stage, keyed by the images' mm_hash (their encoded bytes as
// received): a request repeated, and another text about the same image, skip the HF processor;
// another image does not. The scheduler gets one content hash per prompt (text and images) and
// one image hash per request (the images' mm_hash, whatever the text).
TEST_F(ServerTest, DuplicateImageHitsTheProcessorCacheAndSharesItsContentHash) {
  ServerConfig config = test_config();
  config.api_server = api_server_model(5, 100, 1);
  config.api_server.processor_cache_gib = {1, "test"};
  config.engine.timeline = std::make_shared<EngineTimelineRecorder>(1000, 1000);
  config.engine.timeline->start();
  const auto timeline = config.engine.timeline;
  start(config);
  const std::string image = testing::data_url(64, 48, false), other_image = testing::data_url(64, 50, false);
  const json bodies[] = {image_chat("what is this", image, 3), image_chat("what is this", image, 3),
                         image_chat("and this?", image, 3), image_chat("what is this", other_image, 3)};
  for (const json& body : bodies) ASSERT_EQ(chat(body).status, 200);  // one after another: arrival order
  const ApiServerStats a = server_->api_server_stats();
  EXPECT_EQ(a.requests, 4);
  EXPECT_EQ(a.processor_cache_hits, 2);
  EXPECT_EQ(a.processor_cache_evictions, 0);
  // 5 ms each; the HF processor's 100 ns per pixel only for the two misses.
  EXPECT_EQ(a.modelled_ns, 4 * 5'000'000 + 64 * 48 * 100 + 64 * 50 * 100);
  const auto metrics = exchange(testing::get_request("/metrics"));
  EXPECT_NE(metrics.body.find("encbench:api_server_processor_cache_hits_total 2\n"), std::string::npos);
  const std::vector<json> requests = requests_by_arrival(timeline->stop_and_take_json());
  ASSERT_EQ(requests.size(), 4u);
  std::vector<std::string> hashes;
  for (const json& r : requests) hashes.push_back(r["content_hash"].get<std::string>());
  EXPECT_NE(hashes[0], "0000000000000000");
  EXPECT_EQ(hashes[1], hashes[0]);
  EXPECT_EQ(std::set<std::string>(hashes.begin(), hashes.end()).size(), 3u);  // other text, other image
  std::vector<std::string> images;
  for (const json& r : requests) images.push_back(r["image_hash"].get<std::string>());
  EXPECT_NE(images[0], "0000000000000000");
  EXPECT_NE(images[0], hashes[0]);
  EXPECT_EQ(images[1], images[0]);
  EXPECT_EQ(images[2], images[0]);  // another text, the same image
  EXPECT_NE(images[3], images[0]);
}

// A repeated prompt reaches the scheduler with its first instance's content hash, so the live
// engine's prefix caching and encoder cache (serving::Scheduler) hit as vLLM's would: the repeat,
// sent after the first finished, takes the first's full prompt blocks (whole 128-token blocks, at
// most prompt - 1 tokens) and its image's encoder output instead of encoding it again.
TEST_F(ServerTest, ARepeatedPromptHitsTheEnginesPrefixAndEncoderCaches) {
  ServerConfig config = test_config();
  start(config);
  const json body = image_chat(std::string(2000, 'q'), testing::data_url(64, 48, false), 3);
  std::int64_t prompt_tokens = 0;
  for (int i = 0; i < 2; ++i) {
    const auto r = chat(body);
    ASSERT_EQ(r.status, 200) << r.body;
    prompt_tokens = json::parse(r.body)["usage"]["prompt_tokens"].get<std::int64_t>();
  }
  ASSERT_GT(prompt_tokens, 500);  // 2000 bytes of text alone are 500 tokens
  const serving::SchedulerCounters c = server_->engine_stats().scheduler;
  const std::int64_t block = config.engine.kv_block_tokens;
  EXPECT_EQ(c.prefix_cache_queries, 2 * prompt_tokens);
  EXPECT_EQ(c.prefix_cache_hits, (prompt_tokens - 1) / block * block);
  EXPECT_EQ(c.encoder_cache_hits, 1);
  EXPECT_EQ(c.encoder_prefix_skips, 0);  // the image ends the prompt: never inside the hit prefix
  const auto metrics = exchange(testing::get_request("/metrics"));
  EXPECT_NE(metrics.body.find("encbench:engine_prefix_cache_hits_total " +
                              std::to_string((prompt_tokens - 1) / block * block) + "\n"),
            std::string::npos);
  EXPECT_NE(metrics.body.find("encbench:engine_encoder_cache_hits_total 1\n"), std::string::npos);
}

// The same image under another text (vLLM keys the processor and encoder caches on the image's
// mm_hash, which does not see the text; prefix caching on block hashes chained from the first
// block, the template's and the text's tokens): both image caches hit, no prefix block does.
TEST_F(ServerTest, TheSameImageUnderAnotherTextHitsTheImageCachesButNoPrefixBlock) {
  ServerConfig config = test_config();
  config.api_server = api_server_model(5, 100, 1);
  config.api_server.processor_cache_gib = {1, "test"};
  start(config);
  const std::string image = testing::data_url(64, 48, false);
  std::int64_t prompt_tokens = 0;
  for (const char letter : {'q', 'r'}) {
    const auto r = chat(image_chat(std::string(2000, letter), image, 3));
    ASSERT_EQ(r.status, 200) << r.body;
    prompt_tokens += json::parse(r.body)["usage"]["prompt_tokens"].get<std::int64_t>();
  }
  ASSERT_GT(prompt_tokens, 1000);  // two prompts of 500 text tokens and more: blocks to hit
  EXPECT_EQ(server_->api_server_stats().processor_cache_hits, 1);
  const serving::SchedulerCounters c = server_->engine_stats().scheduler;
  EXPECT_EQ(c.prefix_cache_queries, prompt_tokens);
  EXPECT_EQ(c.prefix_cache_hits, 0);
  EXPECT_EQ(c.encoder_cache_hits, 1);
  EXPECT_EQ(c.encoder_prefix_skips, 0);
  EXPECT_EQ(server_->engine_stats().images, 1);  // encoded once
}

// The planned-schedule agreement with a duplicate: three image requests (the second repeats the
// first) pass the live stage (100 ms + 20 us per pixel of HF processor, one process, a processor
// cache) and the engine; the second's images hit the cache, so it costs 61.44 ms less. The
// engine's planned steps and the stage's modelled work and queueing are the virtual loop's for the
// same send offsets, to the nanosecond.
TEST_F(ServerTest, PlannedScheduleWithADuplicateIsTheVirtualLoops) {
  ServerConfig config = test_config();
  config.engine.lm = serving::StepCostModel{5.0, 0, 0};
  config.engine.encoder_time = EngineCoreConfig::EncoderTime::modelled;
  config.api_server = api_server_model(100, 20'000, 1);
  config.api_server.processor_cache_gib = {1, "test"};
  config.engine.timeline = std::make_shared<EngineTimelineRecorder>(1000, 1000);
  config.engine.timeline->start();
  const auto timeline = config.engine.timeline;
  start(config);
  const int heights[] = {48, 48, 50};
  std::vector<std::unique_ptr<RawConnection>> clients;
  for (int i = 0; i < 3; ++i) {
    clients.push_back(std::make_unique<RawConnection>(server_->port()));
    const json body = image_chat("what is this", testing::data_url(64, heights[i], false), 20);
    ASSERT_TRUE(clients.back()->send_all(testing::post_request("/v1/chat/completions", body.dump())));
    // The next is sent once this one is in the stage: the stage and the virtual loop see one order.
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (server_->api_server_stats().requests < i + 1 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(1ms);
    ASSERT_EQ(server_->api_server_stats().requests, i + 1);
  }
  std::vector<std::int64_t> prompt_tokens;
  for (auto& c : clients) {
    const auto r = c->read_response(60000ms);
    ASSERT_EQ(r.status, 200) << r.body;
    prompt_tokens.push_back(json::parse(r.body)["usage"]["prompt_tokens"].get<std::int64_t>());
  }
  EXPECT_EQ(server_->engine_stats().late_submissions, 0);
  const json recorded = timeline->stop_and_take_json();
  const std::vector<json> live = requests_by_arrival(recorded);
  ASSERT_EQ(live.size(), 3u);
  const vision::VisionGeometry& geometry = config.request.geometry;
  std::vector<serving::VirtualRequest> requests(3);
  for (std::size_t i = 0; i < 3; ++i) {
    serving::VirtualRequest& v = requests[i];
    v.arrival_ns = live[i]["arrival_ns"].get<Nanos>() - live[0]["arrival_ns"].get<Nanos>();
    const vision::GridTHW grid = vision::image_grid(geometry, heights[i], 64);
    // One image a request: its identity as the timeline records it serves as its mm hash.
    const std::uint64_t image_hash = std::stoull(live[i]["image_hash"].get<std::string>(), nullptr, 16);
    v.images_sent = {{64 * heights[i], image_hash,
                      serving::processor_item_bytes(grid.patches(), static_cast<int>(geometry.patch_size),
                                                    static_cast<int>(geometry.temporal_patch_size), 2.0)}};
    v.request.prompt_tokens = prompt_tokens[i];
    v.request.images = {{vision::image_token_count(geometry, grid), grid, image_hash}};
    v.request.image_offset = v.request.prompt_tokens - v.request.image_tokens();
    v.request.output_tokens = 20;
    v.request.content_hash = std::stoull(live[i]["content_hash"].get<std::string>(), nullptr, 16);
  }
  EXPECT_EQ(requests[1].request.content_hash, requests[0].request.content_hash);
  EXPECT_NE(requests[2].request.content_hash, requests[0].request.content_hash);
  serving::SchedulerConfig scheduler;
  scheduler.max_num_seqs = config.engine.max_num_seqs;
  scheduler.max_num_batched_tokens = config.engine.max_num_batched_tokens;
  scheduler.encoder_budget_tokens = config.engine.max_num_encoder_input_tokens;
  scheduler.kv_capacity_tokens = config.engine.kv_capacity_tokens;
  scheduler.kv_block_tokens = config.engine.kv_block_tokens;
  serving::VirtualArmOptions options;
  options.keep_steps = true;
  options.api_server = config.api_server;
  const serving::VirtualArmResult virt =
      serving::run_virtual_arm(requests, scheduler, config.engine.lm, config.engine.encoder, options);
  const ApiServerStats a = server_->api_server_stats();
  EXPECT_EQ(a.processor_cache_hits, 1);
  EXPECT_EQ(virt.engine.api_server_cache_hits, 1);
  EXPECT_EQ(a.modelled_ns, virt.engine.api_server_ns);
  EXPECT_EQ(a.queue_ns, virt.engine.api_server_queue_ns);
  EXPECT_EQ(a.modelled_ns, 3 * 100'000'000 + (64 * 48 + 64 * 50) * 20'000);  // the duplicate: no HF processor
  const json& steps = recorded["steps"];
  ASSERT_EQ(steps.size(), virt.steps.size());
  for (std::size_t k = 0; k < virt.steps.size(); ++k) {
    SCOPED_TRACE("step " + std::to_string(k));
    EXPECT_EQ(steps[k]["planned_start_ns"].get<Nanos>() - live[0]["arrival_ns"].get<Nanos>(),
              virt.steps[k].start_ns - virt.start_ns);
    EXPECT_EQ(steps[k]["planned_encoder_ns"].get<Nanos>(), virt.steps[k].encoder_ns);
    EXPECT_EQ(steps[k]["planned_lm_ns"].get<Nanos>(), virt.steps[k].lm_ns);
    EXPECT_EQ(steps[k]["sequences"].get<std::int64_t>(), virt.steps[k].sequences);
  }
}

std::filesystem::path source_dir() {
  const char* dir = std::getenv("ENCBENCH_SOURCE_DIR");
  return dir ? std::filesystem::path(dir) : std::filesystem::current_path();
}

// The profiler used to renumber device op ids, so host spans (which carry the
// recorder's ids) pointed at the wrong ops or at none. Every linked host span must find its op.
TEST(ServerTrace, EveryHostSpanLinksToItsDeviceOp) {
  const auto dir = std::filesystem::temp_directory_path() / ("encbench_server_trace_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  ServeOptions o;
  o.port = 0;
  o.model = "tiny-qwen3-vl";
  o.device = "sim:ascend-910b";
  o.profiles_dir = source_dir() / "scenarios/devices";
  o.profile_dir = dir;
  o.enable_profiling = true;
  o.encoder_preset = "baseline";  // baseline has host spans tied to ops (syncs, D2H copies)
  Server server(build_server_config(o));
  server.start();
  const auto post = [&](const std::string& path, const std::string& body) {
    RawConnection c(server.port());
    c.send_all(testing::post_request(path, body));
    return c.read_response();
  };
  ASSERT_EQ(post("/start_profile", "").status, 200);
  for (int i = 0; i < 3; ++i) {  // sequential: three steps, three forwards in one trace
    json body = {{"messages", {{{"role", "user"},
                                {"content", {{{"type", "image_url"},
                                              {"image_url", {{"url", testing::data_url(64 + 32 * i, 48, false)}}}}}}}}},
                 {"max_tokens", 2}};
    ASSERT_EQ(post("/v1/chat/completions", body.dump()).status, 200);
  }
  const auto stop = post("/stop_profile", "");
  ASSERT_EQ(stop.status, 200) << stop.body;
  const json summary = json::parse(stop.body);
  EXPECT_EQ(summary["forwards"], 3);
  std::ifstream in(summary["trace_path"].get<std::string>());
  const json trace = json::parse(in);
  const json& events = trace.is_array() ? trace : trace["traceEvents"];
  std::set<std::uint64_t> op_ids;
  std::size_t ops = 0;
  std::vector<std::uint64_t> linked;
  for (const json& e : events) {
    if (e.value("ph", "") != "X" || !e.contains("args")) continue;
    const std::string cat = e.value("cat", "");
    const std::uint64_t id = e["args"].value("op_id", std::uint64_t{0});
    if (cat.rfind("host_", 0) == 0) {
      if (id != 0) linked.push_back(id);
    } else if (e["args"].contains("stream")) {
      ++ops;
      op_ids.insert(id);
    }
  }
  EXPECT_EQ(op_ids.size(), ops) << "device op ids must be unique in one trace";
  EXPECT_GE(ops, 3u * 10u);
  ASSERT_GE(linked.size(), 3u) << "the baseline preset's syncs link host spans to device ops";
  std::size_t unlinked = 0;
  for (const std::uint64_t id : linked) unlinked += op_ids.count(id) == 0;
  EXPECT_EQ(unlinked, 0u) << "of " << linked.size() << " linked host spans";
  server.stop();
  std::filesystem::remove_all(dir);
}

// /stop_profile also answers with the engine's steps and requests of the window
// (plain times on the server's clock), each request named by its x-request-id and response id.
TEST(ServerProfile, StopAnswerCarriesTheEngineTimeline) {
  const auto dir = std::filesystem::temp_directory_path() / ("encbench_server_etl_" + std::to_string(::getpid()));
  ServeOptions o;
  o.port = 0;
  o.model = "tiny-qwen3-vl";
  o.device = "sim:ascend-910b";
  o.profiles_dir = source_dir() / "scenarios/devices";
  o.profile_dir = dir;
  o.enable_profiling = true;
  Server server(build_server_config(o));
  server.start();
  const auto post = [&](const std::string& path, const std::string& body, const std::string& headers = "") {
    RawConnection c(server.port());
    c.send_all(testing::post_request(path, body, headers));
    return c.read_response();
  };
  ASSERT_EQ(post("/start_profile", "").status, 200);
  for (int i = 0; i < 3; ++i) {  // three images: a repeated one would come from the encoder cache
    json body = {{"messages", {{{"role", "user"},
                                {"content", {{{"type", "image_url"},
                                              {"image_url", {{"url", testing::data_url(64, 48 + i, false)}}}}}}}}},
                 {"max_tokens", 2}};
    ASSERT_EQ(post("/v1/chat/completions", body.dump(), "x-request-id: req-" + std::to_string(i) + "\r\n").status, 200);
  }
  const auto stop = post("/stop_profile", "");
  server.stop();
  ASSERT_EQ(stop.status, 200) << stop.body;
  const json t = json::parse(stop.body)["engine_timeline"];
  ASSERT_TRUE(t.is_object()) << stop.body;
  EXPECT_EQ(t["version"], 1);
  EXPECT_FALSE(t["clock"]["boot_id"].get<std::string>().empty());
  EXPECT_EQ(t["steps_dropped"], 0);
  ASSERT_EQ(t["requests"].size(), 3u);
  std::set<std::int64_t> steps;
  for (const json& s : t["steps"]) steps.insert(s["step"].get<std::int64_t>());
  for (int i = 0; i < 3; ++i) {
    const json& r = t["requests"][static_cast<std::size_t>(i)];
    EXPECT_EQ(r["client_request_id"], "req-" + std::to_string(i));  // sequential: in order
    EXPECT_EQ(r["response_id"].get<std::string>().rfind("chatcmpl-", 0), 0u);
    EXPECT_LE(r["arrival_ns"].get<std::int64_t>(), r["submitted_ns"].get<std::int64_t>());
    EXPECT_LE(r["submitted_ns"].get<std::int64_t>(), r["first_scheduled_ns"].get<std::int64_t>());
    EXPECT_LT(r["first_scheduled_ns"].get<std::int64_t>(), r["first_token_ns"].get<std::int64_t>());
    EXPECT_EQ(steps.count(r["encoder_step"].get<std::int64_t>()), 1u) << r.dump();
  }
  std::filesystem::remove_all(dir);
}

// The real encoder on sim with a 64 MiB device budget (tiny model): a 448x448 image fits, a
// 1024x1024 one (4096 patches) does not. The allocator frees its cache, retries, gives up; the
// request gets 503 and the next small one is served.
TEST(ServerDeviceMemory, BudgetExhaustionIs503AndServingGoesOn) {
  ServeOptions o;
  o.port = 0;
  o.model = "tiny-qwen3-vl";
  o.device = "sim:ascend-910b";
  o.profiles_dir = source_dir() / "scenarios/devices";
  o.encoder_preset = "optimized";
  o.device_memory_gb = 0.0625;
  o.device_cache_keep_mb = 0;
  Server server(build_server_config(o));
  server.start();
  const auto chat_image = [&](int side) {
    json body = {{"messages", {{{"role", "user"},
                                {"content", {{{"type", "image_url"},
                                              {"image_url", {{"url", testing::data_url(side, side, false)}}}}}}}}},
                 {"max_tokens", 2}};
    RawConnection c(server.port());
    c.send_all(testing::post_request("/v1/chat/completions", body.dump()));
    return c.read_response();
  };
  EXPECT_EQ(chat_image(448).status, 200);
  const auto big = chat_image(1024);
  EXPECT_EQ(big.status, 503) << big.body;
  const json error = json::parse(big.body, nullptr, false);
  ASSERT_TRUE(error.is_object()) << big.body;
  EXPECT_EQ(error["error"]["code"], "out_of_device_memory");
  const std::string message = error["error"]["message"].get<std::string>();
  EXPECT_NE(message.find("out of device memory"), std::string::npos) << message;
  EXPECT_NE(message.find("budget"), std::string::npos) << message;
  EXPECT_EQ(chat_image(448).status, 200);
  const EngineCoreStats stats = server.engine_stats();
  EXPECT_EQ(stats.encoder_oom, 1);
  EXPECT_EQ(stats.requests_failed, 1);
  EXPECT_GE(stats.idle_trims, 1);
  EXPECT_LE(stats.idle_trims, 3);  // once per busy -> idle transition
  server.stop();
  o.device_memory_gb = 0.004;  // not even the weights and the warm-up forward fit
  EXPECT_THROW(build_server_config(o), InvalidInput);
}

}  // namespace
}  // namespace encbench::server
