// The bad-input corpus: 500+ deterministic (fixed-seed) invalid requests sent to one
// server over keep-alive connections. Every answer must be an OpenAI error object with a 4xx
// status, the server must stay up, its RSS (this process) must stay bounded, and a normal
// request must still succeed afterwards. Every case is invalid by construction (a mutation that
// could still be a valid request is not in the corpus), so "4xx" is exact, not "not 5xx".
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "harness/server/server.hpp"
#include "tests/server/raw_http.hpp"
#include "tests/server/test_images.hpp"
#include "tests/support/process.hpp"

namespace encbench::server {
namespace {

using nlohmann::json;
using testing::RawConnection;

constexpr const char* kModel = "qwen3-vl-8b";

using encbench::testing::rss_bytes;

struct Case {
  std::string what;
  std::string path = "/v1/chat/completions";
  std::string body;
};

json base_chat() {
  return {{"model", kModel},
          {"messages", {{{"role", "user"}, {"content", "describe"}}}},
          {"max_tokens", 4},
          {"ignore_eos", true}};
}

json chat_with_parts(json parts) {
  json body = base_chat();
  body["messages"][0]["content"] = std::move(parts);
  return body;
}

json image_part(const std::string& url) { return {{"type", "image_url"}, {"image_url", {{"url", url}}}}; }

std::string png_with_size(std::string png, std::uint32_t width, std::uint32_t height) {
  // IHDR data starts at byte 16: width, height (big endian).
  for (int i = 0; i < 4; ++i) {
    png[static_cast<std::size_t>(16 + i)] = static_cast<char>((width >> (24 - 8 * i)) & 0xFF);
    png[static_cast<std::size_t>(20 + i)] = static_cast<char>((height >> (24 - 8 * i)) & 0xFF);
  }
  return png;
}

std::string jpeg_with_size(std::string jpeg, std::uint16_t width, std::uint16_t height) {
  // SOF0 (FF C0): length(2) precision(1) height(2) width(2).
  const std::size_t sof = jpeg.find("\xFF\xC0");
  if (sof == std::string::npos) return jpeg;
  jpeg[sof + 5] = static_cast<char>(height >> 8);
  jpeg[sof + 6] = static_cast<char>(height & 0xFF);
  jpeg[sof + 7] = static_cast<char>(width >> 8);
  jpeg[sof + 8] = static_cast<char>(width & 0xFF);
  return jpeg;
}

std::vector<Case> build_corpus() {
  std::mt19937_64 rng(20261123);  // fixed: the corpus is the same on every run
  std::vector<Case> cases;
  const auto add = [&](std::string what, const json& body, std::string path = "/v1/chat/completions") {
    cases.push_back({std::move(what), std::move(path), body.dump(-1, ' ', false, json::error_handler_t::replace)});
  };
  const auto add_raw = [&](std::string what, std::string body, std::string path = "/v1/chat/completions") {
    cases.push_back({std::move(what), std::move(path), std::move(body)});
  };

  // 1. Types swapped: every field with every wrong type.
  const std::vector<json> wrong_values = {json(true), json(1), json(-1), json("x"), json::array(),
                                          json::object(), json(1.5), json::array({1, 2})};
  const std::vector<std::pair<std::string, std::vector<int>>> fields = {
      // (field, indices of wrong_values that are wrong for it)
      {"messages", {0, 1, 2, 3, 4, 5, 6, 7}}, {"model", {0, 1, 2, 4, 5, 6, 7}},
      {"max_tokens", {0, 2, 3, 4, 5, 6, 7}},     {"max_completion_tokens", {0, 2, 3, 4, 5, 6, 7}},
      {"stream", {1, 2, 3, 4, 5, 6, 7}},      {"stream_options", {0, 1, 2, 3, 4, 6, 7}},
      {"temperature", {0, 3, 4, 5, 7}},       {"top_p", {0, 3, 4, 5, 7}},
      {"n", {0, 2, 3, 4, 5, 6, 7}},           {"seed", {0, 3, 4, 5, 6, 7}},
      {"ignore_eos", {1, 2, 3, 4, 5, 6, 7}},  {"best_of", {0, 2, 3, 4, 5, 6, 7}},
      {"presence_penalty", {0, 3, 4, 5, 7}},  {"frequency_penalty", {0, 3, 4, 5, 7}}};
  for (const auto& [field, wrong] : fields)
    for (const int w : wrong) {
      json body = base_chat();
      body[field] = wrong_values[static_cast<std::size_t>(w)];
      add("type:" + field + "=" + body[field].dump(), body);
    }
  // Message-level shapes.
  for (const json& message : {json(1), json("user"), json::array(), json::object(), json({{"role", 1}, {"content", "x"}}),
                              json({{"role", "robot"}, {"content", "x"}}), json({{"role", "user"}}),
                              json({{"role", "user"}, {"content", 5}}), json({{"role", "user"}, {"content", true}}),
                              json({{"role", "user"}, {"content", json::object()}})}) {
    json body = base_chat();
    body["messages"] = json::array({message});
    add("message:" + message.dump(), body);
  }

  // 2. Huge and negative numbers.
  const std::vector<std::string> bad_counts = {
      "0", "-1", "-9223372036854775808", "9223372036854775807", "9223372036854775806", "18446744073709551615",
      "1e308", "-1e308", "1e19", "32769", "32768", "4294967296", "2147483648", "99999999999999999999999",
      "1.5", "-0.5", "1e-300"};
  for (const char* field : {"max_tokens", "max_completion_tokens"})
    for (const auto& value : bad_counts) {
      std::string body = base_chat().dump();
      body.insert(body.size() - 1, std::string(",\"") + field + "\":" + value);
      // max_tokens then appears twice; the parser keeps the last one.
      add_raw(std::string("number:") + field + "=" + value, body);
    }
  for (const char* field : {"n", "best_of"})
    for (const char* value : {"0", "2", "-1", "9223372036854775807", "18446744073709551615", "1e300"}) {
      std::string body = base_chat().dump();
      body.insert(body.size() - 1, std::string(",\"") + field + "\":" + value);
      add_raw(std::string("number:") + field + "=" + value, body);
    }
  for (const char* value : {"18446744073709551616", "1e300", "-1e300", "0.5"}) {
    std::string body = base_chat().dump();
    body.insert(body.size() - 1, std::string(",\"seed\":") + value);
    add_raw(std::string("number:seed=") + value, body);
  }
  // Completions: huge token-id lists are fine only within max_model_len.
  for (const char* value : {"-1", "9223372036854775807", "1e308"}) {
    add_raw(std::string("completions:max_tokens=") + value,
            std::string(R"({"prompt":"hi","max_tokens":)") + value + "}", "/v1/completions");
  }
  add("completions:prompt=number", json{{"prompt", 5}}, "/v1/completions");
  add("completions:prompt=batched", json{{"prompt", {"a", "b"}}}, "/v1/completions");
  add("completions:prompt=mixed", json{{"prompt", {1, "b"}}}, "/v1/completions");
  add("completions:prompt=too-long", json{{"prompt", std::vector<int>(40000, 7)}}, "/v1/completions");

  // 3. Huge dimensions in tiny PNG/JPEG bodies, and images the processor refuses.
  const std::string png = testing::encode_image(32, 32, false);
  const std::string jpeg = testing::encode_image(32, 32, true);
  const std::vector<std::pair<std::uint32_t, std::uint32_t>> dims = {
      {100000, 100000}, {65535, 65535}, {16777216, 1}, {1, 16777216}, {0, 32}, {32, 0}, {0xFFFFFFFFu, 0xFFFFFFFFu},
      {8193, 8193},     {7000, 7000},   {4096, 1},     {1, 4096},     {50000, 1000}, {1000, 50000}, {7071, 7071}};
  for (const auto& [w, h] : dims)
    add("png-dims:" + std::to_string(w) + "x" + std::to_string(h),
        chat_with_parts({image_part("data:image/png;base64," + testing::base64(png_with_size(png, w, h)))}));
  // JPEG: stb_image decodes a short JPEG leniently (missing data reads as zeros), so only sizes
  // refused by the header check (over 50 Mpixel, zero) or by the aspect ratio are in the corpus.
  const std::vector<std::pair<std::uint16_t, std::uint16_t>> jpeg_dims = {
      {65535, 65535}, {8193, 8193}, {0, 32}, {32, 0}, {4096, 1}, {1, 4096}, {60000, 1000}, {1000, 60000}, {20000, 20000}};
  for (const auto& [w, h] : jpeg_dims)
    add("jpeg-dims:" + std::to_string(w) + "x" + std::to_string(h),
        chat_with_parts({image_part("data:image/jpeg;base64," + testing::base64(jpeg_with_size(jpeg, w, h)))}));
  // Well-formed images with an aspect ratio over 200.
  add("aspect:4096x1", chat_with_parts({image_part(testing::data_url(4096, 1, false))}));
  add("aspect:1x1000", chat_with_parts({image_part(testing::data_url(1, 1000, true))}));

  // 4. Truncated and invalid base64, corrupted image bytes.
  const std::string b64 = testing::base64(png);
  const std::size_t sos = jpeg.find("\xFF\xDA");
  for (int i = 0; i < 80; ++i) {
    // PNG cut between 10 % and 90 % (the image data itself, never only the trailing IEND chunk);
    // JPEG cut before its scan starts (stb_image pads a cut scan with zeros and accepts it).
    const bool is_png = i % 2 == 1;
    const std::size_t cut = is_png ? png.size() / 10 + rng() % (png.size() * 8 / 10) : 2 + rng() % (sos - 2);
    const std::string bytes = (is_png ? png : jpeg).substr(0, cut);
    add("truncated:" + std::to_string(cut),
        chat_with_parts({image_part(std::string(is_png ? "data:image/png;base64," : "data:image/jpeg;base64,") +
                                    testing::base64(bytes))}));
  }
  const std::string bad_chars = "$%&*!@#^ \n\t\\-_.~";
  for (int i = 0; i < 80; ++i) {
    std::string broken = b64;
    broken[rng() % broken.size()] = bad_chars[rng() % bad_chars.size()];
    add("bad-base64:" + std::to_string(i), chat_with_parts({image_part("data:image/png;base64," + broken)}));
  }
  for (const std::string& tail : {std::string("A"), std::string("AAAAA"), std::string("=A=="), std::string("")})
    add("bad-base64-shape:" + tail, chat_with_parts({image_part("data:image/png;base64," + tail)}));
  for (int i = 0; i < 40; ++i) {  // garbage bytes behind a valid signature
    std::string bytes = png.substr(0, 8);
    for (int k = 0; k < 40 + i; ++k) bytes.push_back(static_cast<char>(rng() & 0xFF));
    add("garbage-png:" + std::to_string(i),
        chat_with_parts({image_part("data:image/png;base64," + testing::base64(bytes))}));
  }
  for (const std::string& url : {std::string("data:image/png,abc"), std::string("data:image/png;base64"),
                                 std::string("data:text/plain;base64,aGk="), std::string("data:;base64,aGk="),
                                 std::string("http://127.0.0.1/a.png"), std::string("file:///etc/passwd"),
                                 std::string("ftp://x/y"), std::string("")})
    add("url:" + url.substr(0, 30), chat_with_parts({image_part(url)}));

  // 5. Deep JSON nesting (beyond the parser's 64 levels), inside and outside the request.
  for (const int depth : {65, 100, 1000, 10000, 100000}) {
    add_raw("nest-array:" + std::to_string(depth), std::string(static_cast<std::size_t>(depth), '[') +
                                                        std::string(static_cast<std::size_t>(depth), ']'));
    std::string objects;
    for (int d = 0; d < depth; ++d) objects += "{\"a\":";
    objects += "1";
    objects += std::string(static_cast<std::size_t>(depth), '}');
    add_raw("nest-object:" + std::to_string(depth), objects);
    std::string body = base_chat().dump();
    body.insert(body.size() - 1, ",\"extra\":" + std::string(static_cast<std::size_t>(depth), '[') +
                                     std::string(static_cast<std::size_t>(depth), ']'));
    add_raw("nest-field:" + std::to_string(depth), body);
    add_raw("nest-unclosed:" + std::to_string(depth), std::string(static_cast<std::size_t>(depth), '['));
  }

  // 6. Wrong content-part shapes.
  const std::vector<json> bad_parts = {
      json(1), json("text"), json::array(), json(nullptr), json::object(), json({{"type", 1}}),
      json({{"type", "text"}}), json({{"type", "text"}, {"text", 5}}), json({{"type", "text"}, {"text", json::array()}}),
      json({{"type", "image_url"}}), json({{"type", "image_url"}, {"image_url", 5}}),
      json({{"type", "image_url"}, {"image_url", json::array()}}),
      json({{"type", "image_url"}, {"image_url", json::object()}}),
      json({{"type", "image_url"}, {"image_url", {{"url", 5}}}}),
      json({{"type", "image_url"}, {"image_url", {{"url", nullptr}}}}),
      json({{"type", "image"}, {"image", "x"}}), json({{"type", "input_audio"}}), json({{"type", "video_url"}}),
      json({{"type", ""}}), json({{"type", "TEXT"}, {"text", "x"}})};
  for (const json& part : bad_parts) {
    add("part:" + part.dump(), chat_with_parts(json::array({part})));
    add("part-after-text:" + part.dump(), chat_with_parts(json::array({{{"type", "text"}, {"text", "hi"}}, part})));
  }
  // Too many images (limit 2 in this server).
  const std::string small = testing::data_url(32, 32, false);
  add("too-many-images", chat_with_parts({image_part(small), image_part(small), image_part(small)}));

  // 7. Bodies that are not requests at all, and unknown models.
  for (const std::string& body : {std::string(""), std::string("null"), std::string("1"), std::string("\"x\""),
                                  std::string("[]"), std::string("{"), std::string("{\"messages\":"),
                                  std::string("\xff\xfe\x00\x01", 4), std::string("{\"messages\":[}")})
    add_raw("not-json:" + std::to_string(body.size()), body);
  for (int i = 0; i < 20; ++i) {
    json body = base_chat();
    body["model"] = "model-" + std::to_string(rng() % 100000);
    add("unknown-model", body);
  }
  // Random structured garbage: objects with random keys/values, but no 'messages' at all.
  for (int i = 0; i < 40; ++i) {
    json body = json::object();
    for (int k = 0; k < 1 + static_cast<int>(rng() % 5); ++k) {
      std::string key = "k";  // appended, not "k" + ...: GCC 12 -Wrestrict false positive
      key += std::to_string(rng() % 50);
      body[key] = wrong_values[rng() % wrong_values.size()];
    }
    add("no-messages:" + std::to_string(i), body);
  }
  return cases;
}

bool is_openai_error(const RawConnection::Response& r, std::string* why) {
  const json body = json::parse(r.body, nullptr, false);
  if (!body.is_object() || !body.contains("error") || !body["error"].is_object()) {
    *why = "not an error object: " + r.body.substr(0, 200);
    return false;
  }
  const json& e = body["error"];
  const bool ok = e.contains("message") && e["message"].is_string() && !e["message"].get<std::string>().empty() &&
                  e.contains("type") && e["type"].is_string() && e.contains("param") &&
                  (e["param"].is_null() || e["param"].is_string()) && e.contains("code") &&
                  (e["code"].is_null() || e["code"].is_string());
  if (!ok) *why = "malformed error object: " + r.body.substr(0, 200);
  return ok;
}

TEST(BadInputCorpus, EveryAnswerIsA4xxErrorObjectAndTheServerStaysUp) {
  ServerConfig config;
  config.port = 0;
  config.request.served_model_name = kModel;
  config.request.geometry = vision::vision_geometry_for(kModel);
  config.request.limit_images_per_prompt = 2;
  config.max_body_bytes = 4u << 20;
  config.engine.max_num_seqs = 8;
  config.engine.lm = serving::StepCostModel{0.2, 0.0, 0.0};
  config.engine.encoder = make_cost_model_encoder(EncoderCostModel{0.1, 0.0, 0.0});
  Server server(config);
  server.start();

  const auto send = [&](RawConnection& c, const Case& k) {
    if (!c.send_all(testing::post_request(k.path, k.body))) return RawConnection::Response{};
    return c.read_response();
  };
  const Case normal{"normal", "/v1/chat/completions",
                    chat_with_parts({{{"type", "text"}, {"text", "what is this"}}, image_part(testing::data_url(448, 448, false))})
                        .dump()};
  {
    RawConnection warm(server.port());
    for (int i = 0; i < 3; ++i) ASSERT_EQ(send(warm, normal).status, 200);
  }
  const std::int64_t rss_before = rss_bytes();

  const std::vector<Case> corpus = build_corpus();
  ASSERT_GE(corpus.size(), 500u);
  std::map<int, int> by_status;
  auto connection = std::make_unique<RawConnection>(server.port());
  for (std::size_t i = 0; i < corpus.size(); ++i) {
    const Case& k = corpus[i];
    RawConnection::Response r = send(*connection, k);
    if (!r.complete) {  // the server may close after an error; one retry on a fresh connection
      connection = std::make_unique<RawConnection>(server.port());
      r = send(*connection, k);
    }
    ASSERT_TRUE(r.complete) << "no answer to case " << i << " " << k.what;
    ++by_status[r.status];
    EXPECT_GE(r.status, 400) << k.what << ": " << r.body.substr(0, 300);
    EXPECT_LT(r.status, 500) << k.what << ": " << r.body.substr(0, 300);
    std::string why;
    EXPECT_TRUE(is_openai_error(r, &why)) << k.what << ": " << why;
    if (r.headers.count("connection") && r.headers["connection"] == "close")
      connection = std::make_unique<RawConnection>(server.port());
  }
  for (const auto& [status, count] : by_status) std::cout << "status " << status << ": " << count << "\n";
  EXPECT_GE(by_status[400], 450);  // nearly everything is a 400; 404 for unknown models
  EXPECT_EQ(by_status[404], 20);

  // Still serving, and a normal request succeeds.
  RawConnection after(server.port());
  const RawConnection::Response ok = send(after, normal);
  ASSERT_EQ(ok.status, 200) << ok.body;
  const json body = json::parse(ok.body);
  EXPECT_GT(body["usage"]["prompt_tokens"].get<std::int64_t>(), 196);  // the 448x448 image: 196 tokens
  EXPECT_LT(body["usage"]["prompt_tokens"].get<std::int64_t>(), 220);

  const std::int64_t rss_after = rss_bytes();
  const std::int64_t growth = rss_after - rss_before;
  std::cout << "RSS before " << rss_before / (1 << 20) << " MiB, after " << rss_after / (1 << 20) << " MiB\n";
#if defined(ENCBENCH_SANITIZED)
  const std::int64_t kBound = std::int64_t{256} << 20;  // ASan's quarantine keeps freed memory
#else
  const std::int64_t kBound = std::int64_t{128} << 20;
#endif
  EXPECT_LT(growth, kBound);
  EXPECT_GT(rss_after, 0);
  const HttpStats stats = server.http_stats();
  EXPECT_EQ(stats.requests_of("/v1/chat/completions", 500), 0);
  server.stop();
}

}  // namespace
}  // namespace encbench::server
