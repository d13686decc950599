// Hostile peers at the server: what a few cheap sockets or big images could do to everyone else.
// Each defect the issue found is a regression test here, on raw sockets against an in-process
// server (ASan runs these too):
//   - images refused from their header (encoder budget) before any pixel is decoded, and text
//     requests answered while the image lane is held;
//   - declared but unsent bodies hold no bytes of --max-inflight-bytes;
//   - a FIFO (or any non-regular file) under --allowed-local-media-path is a quick 400;
//   - clients that never read cost a bounded amount of memory (--max-unsent-bytes);
//   - the profiling endpoints are off unless enabled, and kept profiles are capped.
// Nothing here asserts speed: ordering and bounds only.
#include <gtest/gtest.h>
#include "tests/support/sanitized.hpp"
#include <nlohmann/json.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "harness/server/encoder_profiler.hpp"
#include "harness/server/serve_command.hpp"
#include "harness/server/server.hpp"
#include "tests/server/inflight_bodies.hpp"
#include "tests/server/raw_http.hpp"
#include "tests/server/test_images.hpp"
#include "tests/support/process.hpp"

namespace encbench::server {
namespace {

using nlohmann::json;
using testing::RawConnection;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr const char* kModel = "qwen3-vl-8b";

ServerConfig test_config() {
  ServerConfig config;
  config.port = 0;
  config.request.served_model_name = kModel;
  config.request.geometry = vision::vision_geometry_for(kModel);
  config.engine.lm = serving::StepCostModel{0.2, 0.0, 0.0};
  config.engine.encoder = make_cost_model_encoder(EncoderCostModel{0.1, 0.0, 0.0});
  return config;
}

// Resident set of this process (the in-process server's memory is ours).
using encbench::testing::rss_bytes;

using encbench::testing::eventually;

json text_chat(std::int64_t max_tokens = 4) {
  json body = {{"model", kModel}, {"max_tokens", max_tokens}, {"ignore_eos", true}};
  body["messages"] = json::array({{{"role", "user"}, {"content", "hello there"}}});
  return body;
}

json image_chat(const std::string& url, const std::string& image_key = "image_url") {
  json body = {{"model", kModel}, {"max_tokens", 2}, {"ignore_eos", true}};
  body["messages"] = json::array({{{"role", "user"},
                                   {"content", json::array({{{"type", "text"}, {"text", "what is it"}},
                                                            {{"type", "image_url"}, {image_key, {{"url", url}}}}})}}});
  return body;
}

RawConnection::Response post(const Server& server, const std::string& body, const std::string& path = "/v1/chat/completions") {
  RawConnection c(server.port());
  if (!c.send_all(testing::post_request(path, body))) return {};
  return c.read_response(30000ms);
}

std::string error_code(const RawConnection::Response& r) {
  const json body = json::parse(r.body, nullptr, false);
  if (!body.is_object() || !body.contains("error") || !body["error"]["code"].is_string()) return "";
  return body["error"]["code"].get<std::string>();
}

std::uint32_t crc32(const std::string& bytes) {
  std::uint32_t crc = 0xFFFFFFFFu;
  for (const char c : bytes) {
    crc ^= static_cast<unsigned char>(c);
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

// A real 8x8 PNG whose IHDR (CRC fixed) claims width x height: its header is valid, its pixel
// data far too short, so only a decode could find it broken.
std::string png_claiming(std::uint32_t width, std::uint32_t height) {
  std::string png = testing::encode_image(8, 8, false);
  const auto put32 = [&](std::size_t at, std::uint32_t v) {
    for (int i = 0; i < 4; ++i) png[at + static_cast<std::size_t>(i)] = static_cast<char>((v >> (24 - 8 * i)) & 0xFF);
  };
  put32(16, width);   // IHDR data starts at 16: width, height
  put32(20, height);
  put32(29, crc32(png.substr(12, 17)));  // CRC over type + 13 data bytes
  return png;
}

std::string png_data_url(const std::string& png) { return "data:image/png;base64," + testing::base64(png); }

// --------------------------------------------------------------------------- images

TEST(HostileImages, OverBudgetImagesAreRefusedFromTheirHeaderBeforeAnyDecode) {
  Server server(test_config());
  server.start();
  // 7000x7000 (49 Mpixel, under the 50 Mpixel cap) needs 16384 tokens at qwen3-vl's max_pixels,
  // over the 8192-token encoder budget. Its pixel data is 8x8 worth: a decode would call it
  // truncated (invalid_image); refused from the header, it is mm_item_too_large.
  const std::string url = png_data_url(png_claiming(7000, 7000));
  for (int i = 0; i < 20; ++i) {
    const auto r = post(server, image_chat(url).dump());
    ASSERT_EQ(r.status, 400) << r.body;
    EXPECT_EQ(error_code(r), "mm_item_too_large") << r.body;
  }
  // Within the budget, the same lie is found by the full decode.
  const auto small_lie = post(server, image_chat(png_data_url(png_claiming(64, 64))).dump());
  EXPECT_EQ(small_lie.status, 400);
  EXPECT_EQ(error_code(small_lie), "invalid_image") << small_lie.body;
  // Over the pixel cap the pixel limit speaks first, as before.
  const auto bomb = post(server, image_chat(png_data_url(png_claiming(100000, 100000))).dump());
  EXPECT_EQ(error_code(bomb), "image_too_large") << bomb.body;
  EXPECT_EQ(post(server, image_chat(testing::data_url(64, 48, false)).dump()).status, 200);
  server.stop();
}

// Holds the image lane's only thread (decode_threads = 1) in the profile handler, which runs on
// that lane: the constructor installs the handler into the config the server is built from (this
// object must outlive the server); hold() sends /start_profile and returns once the handler runs;
// release() lets it answer 200 on holder().
class ImageLaneHold {
 public:
  explicit ImageLaneHold(ServerConfig& config) {
    config.decode_threads = 1;
    config.profile = [this, released = released_](ProfileAction) {
      entered_.set_value();
      released.wait();
      return ProfileReply{200, "{}"};
    };
  }
  bool hold(const Server& server) {
    holder_ = std::make_unique<RawConnection>(server.port());
    if (!holder_->send_all(testing::post_request("/start_profile", ""))) return false;
    entered_.get_future().wait();
    return true;
  }
  void release() { release_.set_value(); }
  RawConnection& holder() { return *holder_; }

 private:
  std::promise<void> release_;
  std::shared_future<void> released_ = release_.get_future().share();
  std::promise<void> entered_;
  std::unique_ptr<RawConnection> holder_;
};

// The image lane is held (its one thread blocked in the profile handler, which runs there); a
// text-only request is still answered, an image request waits for the lane, and a request whose
// image key is spelt with a JSON escape (so the text lane takes it first) is sent on to the image
// lane rather than decoded on the text lane.
TEST(HostileImages, TextRequestsAreAnsweredWhileTheImageLaneIsHeld) {
  ServerConfig config = test_config();
  ImageLaneHold lane(config);
  Server server(config);
  server.start();
  ASSERT_TRUE(lane.hold(server));

  RawConnection image(server.port());
  ASSERT_TRUE(image.send_all(testing::post_request("/v1/chat/completions", image_chat(testing::data_url(32, 32, false)).dump())));
  std::string escaped = image_chat(testing::data_url(32, 32, false)).dump();
  for (std::size_t at; (at = escaped.find("\"image_url\"")) != std::string::npos;)
    escaped.replace(at, 11, "\"image\\u005furl\"");  // the key and the part's type
  RawConnection sneaky(server.port());
  ASSERT_TRUE(sneaky.send_all(testing::post_request("/v1/chat/completions", escaped)));

  for (int i = 0; i < 5; ++i) {
    const auto text = post(server, text_chat().dump());
    ASSERT_TRUE(text.complete);
    EXPECT_EQ(text.status, 200) << text.body;
  }
  // Nothing of the image requests was answered while the lane was held.
  EXPECT_EQ(image.read_some(50ms).value_or("EOF"), "");
  EXPECT_EQ(sneaky.read_some(1ms).value_or("EOF"), "");
  EXPECT_EQ(server.http_stats().decode_queue, 2);

  lane.release();
  EXPECT_EQ(lane.holder().read_response().status, 200);
  const auto image_answer = image.read_response(30000ms);
  EXPECT_EQ(image_answer.status, 200) << image_answer.body;
  const auto sneaky_answer = sneaky.read_response(30000ms);
  EXPECT_EQ(sneaky_answer.status, 200) << sneaky_answer.body;
  EXPECT_EQ(json::parse(sneaky_answer.body)["usage"]["prompt_tokens"],
            json::parse(image_answer.body)["usage"]["prompt_tokens"]);  // its image was counted
  server.stop();
}

TEST(HostileImages, TheDecodeQueueIsBoundedAndEachRequestHasADeadline) {
  ServerConfig config = test_config();
  config.max_decode_queue = 2;
  config.decode_timeout_ns = 1;  // expired as soon as queued
  ImageLaneHold lane(config);
  Server server(config);
  server.start();
  ASSERT_TRUE(lane.hold(server));
  const std::string request = testing::post_request("/v1/chat/completions", image_chat(testing::data_url(32, 32, false)).dump());
  std::vector<std::unique_ptr<RawConnection>> queued;
  for (int i = 0; i < 2; ++i) {
    queued.push_back(std::make_unique<RawConnection>(server.port()));
    ASSERT_TRUE(queued.back()->send_all(request));
  }
  // Both wait in the queue, so a third is refused at once.
  ASSERT_TRUE(eventually([&] { return server.http_stats().decode_queue == 2; }));
  RawConnection third(server.port());
  ASSERT_TRUE(third.send_all(request));
  const auto full = third.read_response(30000ms);
  EXPECT_EQ(full.status, 503) << full.body;
  EXPECT_EQ(error_code(full), "decode_queue_full") << full.body;
  EXPECT_EQ(full.headers.count("retry-after"), 1u);
  EXPECT_EQ(server.http_stats().decode_queue_rejections, 1);
  lane.release();
  // Their deadline passed while they waited: refused before their image is decoded.
  for (auto& c : queued) {
    const auto r = c->read_response(30000ms);
    EXPECT_EQ(r.status, 503) << r.body;
    EXPECT_EQ(error_code(r), "decode_timeout") << r.body;
  }
  EXPECT_EQ(post(server, text_chat().dump()).status, 200);  // text has no decode deadline
  server.stop();
}

// --------------------------------------------------------------------------- in-flight bytes

using testing::post_header;

TEST(HostileBodies, DeclaredButUnsentBodiesDoNotLockOthersOut) {
  ServerConfig config = test_config();  // --max-body-bytes 32 MiB, --max-inflight-bytes 512 MiB
  Server server(config);
  server.start();
  std::vector<std::unique_ptr<RawConnection>> idle;
  for (int i = 0; i < 16; ++i) {
    idle.push_back(std::make_unique<RawConnection>(server.port()));
    ASSERT_TRUE(idle.back()->send_all(post_header(33554432) + "{"));
  }
  ASSERT_TRUE(eventually([&] { return server.http_stats().inflight_bytes == 16; }));
  for (int i = 0; i < 3; ++i) {
    const auto r = post(server, text_chat().dump());
    EXPECT_EQ(r.status, 200) << r.body;
  }
  EXPECT_EQ(server.http_stats().inflight_rejections, 0);
  idle.clear();
  EXPECT_TRUE(eventually([&] { return server.http_stats().inflight_bytes == 0; }));
  server.stop();
}

TEST(HostileBodies, ArrivedBytesAreHeldAndRefusedBeyondTheLimit) {
  ServerConfig config = test_config();
  config.max_body_bytes = 1'000'000;
  config.max_inflight_bytes = 1'500'000;
  Server server(config);
  server.start();
  // A has sent 900,000 bytes of its body: they are held.
  const auto a = testing::hold_arrived_body(server, 1'000'000, 900'000);
  ASSERT_FALSE(::testing::Test::HasFailure());
  // B declares 700,000: it cannot fit beside what arrived, refused before its body is read.
  testing::expect_declared_body_refused(server, 700'000);
  ASSERT_FALSE(::testing::Test::HasFailure());
  // C declares 500,000 (fits now), D 500,000 too (its bytes have not arrived); C's arrive and
  // fill the limit, then D's arriving bytes are refused mid-body.
  RawConnection c(server.port());
  ASSERT_TRUE(c.send_all(post_header(500'000)));
  RawConnection d(server.port());
  ASSERT_TRUE(d.send_all(post_header(500'000)));
  ASSERT_TRUE(c.send_all("{\"model\":" + std::string(500'000 - 10, ' ')));
  ASSERT_TRUE(eventually([&] { return server.http_stats().inflight_bytes >= 1'399'990; }));
  d.send_all(std::string(500'000, ' '));  // the server may close before it all arrives
  const auto mid_body = d.read_response();
  EXPECT_EQ(mid_body.status, 503) << mid_body.body;
  EXPECT_EQ(error_code(mid_body), "server_busy");
  // A and C complete (invalid JSON: 400) and give their bytes back; B's retry then fits.
  ASSERT_TRUE(a->send_all(std::string(100'000 - 1, ' ') + "}"));
  ASSERT_TRUE(c.send_all("}"));
  EXPECT_EQ(a->read_response().status, 400);
  EXPECT_EQ(c.read_response().status, 400);
  ASSERT_TRUE(eventually([&] { return server.http_stats().inflight_bytes == 0; }));
  EXPECT_EQ(post(server, text_chat().dump() + std::string(690'000, ' ')).status, 200);
  EXPECT_EQ(server.http_stats().inflight_rejections, 2);
  server.stop();
}

// --------------------------------------------------------------------------- local media

class LocalMedia : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("encbench_local_media_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "sub");
    ASSERT_EQ(::mkfifo((dir_ / "pipe.png").c_str(), 0600), 0);
    std::ofstream(dir_ / "ok.png", std::ios::binary) << testing::encode_image(32, 32, false);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(LocalMedia, AFifoIsRefusedQuicklyAndBlocksNobody) {
  ServerConfig config = test_config();
  config.decode_threads = 1;
  config.request.image_policy.allowed_local_media_path = fs::canonical(dir_);
  Server server(config);
  server.start();
  for (const char* name : {"pipe.png", "sub"}) {
    // Before: open() of a FIFO without a writer blocked the only decode thread forever.
    const auto r = post(server, image_chat("file://" + (dir_ / name).string()).dump());
    ASSERT_TRUE(r.complete) << name << ": no answer";
    EXPECT_EQ(r.status, 400) << r.body;
    EXPECT_EQ(error_code(r), "invalid_image_url") << r.body;
    EXPECT_NE(r.body.find("not a regular file"), std::string::npos) << r.body;
  }
  const auto ok = post(server, image_chat("file://" + (dir_ / "ok.png").string()).dump());
  EXPECT_EQ(ok.status, 200) << ok.body;
  EXPECT_EQ(post(server, text_chat().dump()).status, 200);
  const auto outside = post(server, image_chat("file:///dev/zero").dump());
  EXPECT_EQ(error_code(outside), "local_media_not_allowed") << outside.body;
  server.stop();
}

// --------------------------------------------------------------------------- unread output

// Streaming requests whose clients never read: each stream stops formatting at
// --max-unsent-bytes (the tokens it still owes kept as a count), so memory does not grow with
// the answers. Before: 200 such streams of 32000 tokens took 1.6 GiB.
TEST(HostileReaders, StreamsThatAreNeverReadKeepMemoryBounded) {
  ServerConfig config = test_config();
  config.engine.null_mode = true;
  config.engine.encoder = nullptr;
  config.request.max_model_len = 1 << 20;
  Server server(config);
  server.start();
  // ~38 MB of SSE per stream: more than the kernel's socket buffers take, so every stream must
  // wait for its client (50 of them: 1.9 GB before the bound).
  constexpr std::int64_t kTokens = 200'000;
  json body = text_chat(kTokens);
  body["stream"] = true;
  const std::string request = testing::post_request("/v1/chat/completions", body.dump());
  (void)post(server, text_chat().dump());  // warm: threads and pools exist before the baseline
  const std::int64_t before = rss_bytes();
  constexpr int kStreams = 50;
  std::vector<std::unique_ptr<RawConnection>> silent;
  for (int i = 0; i < kStreams; ++i) {
    silent.push_back(std::make_unique<RawConnection>(server.port()));
    ASSERT_TRUE(silent.back()->send_all(request));
  }
  // Every stream is paused at its bound, its client's socket buffers full.
  ASSERT_TRUE(eventually([&] { return server.http_stats().streams_backpressured == kStreams; }, 120s));
  const std::int64_t grown = rss_bytes() - before;
  // ASan's quarantine (256 MiB by default) keeps the freed frames of the ~10 MB each stream
  // pushed into its socket before pausing; without the bound the streams would hold ~1.9 GB.
  const std::int64_t bound = encbench::testing::sanitized() ? (600ll << 20) : (200ll << 20);
  EXPECT_LT(grown, bound) << "RSS grew by " << (grown >> 20) << " MiB";
  EXPECT_EQ(server.http_stats().streams_active, kStreams);
  // A paused stream resumes when its client reads, and is complete.
  const auto whole = silent.front()->read_response(120000ms);
  ASSERT_TRUE(whole.complete);
  const auto events = testing::sse_data_events(whole.body);
  EXPECT_EQ(events.size(), 1u + static_cast<std::size_t>(kTokens) + 1u);  // role, tokens, [DONE]
  EXPECT_EQ(events.back(), "[DONE]");
  EXPECT_EQ(post(server, text_chat().dump()).status, 200);  // the others block nobody
  server.stop();
}

// --------------------------------------------------------------------------- profiling

TEST(Profiling, EndpointsAreOffUnlessEnabled) {
  const auto dir = fs::temp_directory_path() / ("encbench_profiling_off_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  ServeOptions o;
  o.port = 0;
  o.model = "tiny-qwen3-vl";
  o.device = "sim:ascend-910b";
  o.profiles_dir = fs::path(ENCBENCH_TEST_SOURCE_DIR) / "scenarios/devices";
  o.profile_dir = dir;
  {
    Server server(build_server_config(o));
    server.start();
    for (const char* path : {"/start_profile", "/stop_profile"}) {
      const auto r = post(server, "", path);
      EXPECT_EQ(r.status, 404) << path;
      EXPECT_EQ(error_code(r), "profiling_disabled") << r.body;
    }
    server.stop();
  }
  EXPECT_FALSE(fs::exists(dir));
  o.enable_profiling = true;
  Server server(build_server_config(o));
  server.start();
  EXPECT_EQ(post(server, "", "/start_profile").status, 200);
  EXPECT_EQ(post(server, "", "/stop_profile").status, 200);
  server.stop();
  fs::remove_all(dir);
}

TEST(Profiling, KeptProfilesAreCapped) {
  const auto dir = fs::temp_directory_path() / ("encbench_profiling_cap_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "someone-elses.json") << "{}";
  EncoderProfiler profiler(dir, 8, nullptr, 3);
  for (int i = 0; i < 10; ++i) {
    ASSERT_EQ(profiler.handle(ProfileAction::start).status, 200);
    ASSERT_EQ(profiler.handle(ProfileAction::stop).status, 200);
  }
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  const std::vector<std::string> expected = {
      "encoder-profile-10.json",      "encoder-profile-10.trace.json", "encoder-profile-8.json",
      "encoder-profile-8.trace.json", "encoder-profile-9.json",        "encoder-profile-9.trace.json",
      "someone-elses.json"};
  EXPECT_EQ(names, expected);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace encbench::server
