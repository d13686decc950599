// encbench_server_hostile: hostile peers against a running `encbench serve`, for the
// figures in docs/server.md (scripts/measure-server-hostile.sh runs it and reads the server's
// RSS). Not a test: it measures, and prints one JSON line per mode.
//   encbench_server_hostile images PORT MODEL [png|jpeg]  twenty 7000x7000 images sent over and
//                                                   over; meanwhile 20 text chats, one at a time:
//                                                   their latency p50/p99/max
//   encbench_server_hostile inflight PORT MODEL     16 sockets declare 32 MiB bodies and send 1
//                                                   byte; then 20 normal POSTs: their statuses
//   encbench_server_hostile noread PORT MODEL N TOKENS HOLD_S  N streams of TOKENS that are
//                                                   never read, held HOLD_S seconds
//   encbench_server_hostile file PORT MODEL URL     one chat with an image_url (a file:// FIFO):
//                                                   status and time to answer
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/imaging/decode.hpp"
#include "tests/server/raw_http.hpp"
#include "tests/server/test_images.hpp"

namespace {

using encbench::server::testing::RawConnection;
using nlohmann::json;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

std::string chat(const std::string& model, const json& content, std::int64_t max_tokens, bool stream) {
  json body = {{"model", model}, {"max_tokens", max_tokens}, {"ignore_eos", true}, {"stream", stream}};
  body["messages"] = json::array({{{"role", "user"}, {"content", content}}});
  return encbench::server::testing::post_request("/v1/chat/completions", body.dump());
}

std::string image_chat(const std::string& model, const std::string& url) {
  return chat(model, json::array({{{"type", "text"}, {"text", "what is it"}}, {{"type", "image_url"}, {"image_url", {{"url", url}}}}}),
              2, false);
}

// 7000x7000 (49 Mpixel): a smooth gradient, so the PNG is small (~200 KB, like the issue's).
std::string large_image_url(bool jpeg) {
  constexpr int kSide = 7000;
  std::vector<std::uint8_t> rgb(static_cast<std::size_t>(kSide) * kSide * 3);
  for (int y = 0; y < kSide; ++y)
    for (int x = 0; x < kSide; ++x) {
      std::uint8_t* px = &rgb[(static_cast<std::size_t>(y) * kSide + x) * 3];
      px[0] = static_cast<std::uint8_t>(x / 28);
      px[1] = static_cast<std::uint8_t>(y / 28);
      px[2] = 128;
    }
  const std::string bytes = jpeg ? encbench::imaging::encode_jpeg(rgb.data(), kSide, kSide, 75)
                                 : encbench::imaging::encode_png(rgb.data(), kSide, kSide, 3);
  std::fprintf(stderr, "7000x7000 %s: %zu bytes\n", jpeg ? "JPEG" : "PNG", bytes.size());
  return std::string(jpeg ? "data:image/jpeg;base64," : "data:image/png;base64,") +
         encbench::server::testing::base64(bytes);
}

double percentile(std::vector<double> values, double p) {
  std::sort(values.begin(), values.end());
  const std::size_t at = std::min(values.size() - 1, static_cast<std::size_t>(p / 100.0 * static_cast<double>(values.size())));
  return values[at];
}

int run_images(std::uint16_t port, const std::string& model, bool jpeg) {
  const std::string request = image_chat(model, large_image_url(jpeg));
  std::atomic<bool> stop{false};
  std::atomic<int> answered{0};
  std::vector<int> statuses(20, 0);
  std::vector<std::thread> senders;
  for (int i = 0; i < 20; ++i)
    senders.emplace_back([&, i] {
      while (!stop.load()) {
        RawConnection c(port);
        c.send_all(request);
        statuses[static_cast<std::size_t>(i)] = c.read_response(120s).status;
        ++answered;
      }
    });
  std::this_thread::sleep_for(200ms);  // the image requests are arriving and being refused
  std::vector<double> latencies;
  int text_ok = 0;
  for (int i = 0; i < 20; ++i) {
    const auto start = Clock::now();
    RawConnection c(port);
    c.send_all(chat(model, "hello there", 4, false));
    text_ok += c.read_response(120s).status == 200;
    latencies.push_back(ms_since(start));
  }
  const int during = answered.load();
  stop = true;
  for (auto& t : senders) t.join();
  std::printf("%s\n", json{{"mode", "images"},
                           {"format", jpeg ? "jpeg" : "png"},
                           {"text_ok", text_ok},
                           {"text_ms_p50", percentile(latencies, 50)},
                           {"text_ms_p99", percentile(latencies, 99)},
                           {"text_ms_max", *std::max_element(latencies.begin(), latencies.end())},
                           {"image_answers_during_text", during},
                           {"image_status", statuses[0]}}
                          .dump()
                          .c_str());
  return 0;
}

int run_inflight(std::uint16_t port, const std::string& model) {
  std::vector<std::unique_ptr<RawConnection>> idle;
  for (int i = 0; i < 16; ++i) {
    idle.push_back(std::make_unique<RawConnection>(port));
    idle.back()->send_all(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
        "content-length: 33554432\r\n\r\n{");
  }
  std::this_thread::sleep_for(200ms);
  json statuses = json::array();
  std::vector<double> latencies;
  for (int i = 0; i < 20; ++i) {
    const auto start = Clock::now();
    RawConnection c(port);
    c.send_all(chat(model, "hello there", 4, false));
    statuses.push_back(c.read_response(120s).status);
    latencies.push_back(ms_since(start));
  }
  std::printf("%s\n", json{{"mode", "inflight"}, {"statuses", statuses}, {"ms_p99", percentile(latencies, 99)}}.dump().c_str());
  return 0;
}

int run_noread(std::uint16_t port, const std::string& model, int streams, std::int64_t tokens, int hold_s) {
  const std::string request = chat(model, "hello there", tokens, true);
  std::vector<std::unique_ptr<RawConnection>> silent;
  for (int i = 0; i < streams; ++i) {
    silent.push_back(std::make_unique<RawConnection>(port));
    silent.back()->send_all(request);
  }
  std::fprintf(stderr, "holding %d unread streams for %d s\n", streams, hold_s);
  std::this_thread::sleep_for(std::chrono::seconds(hold_s));
  const auto start = Clock::now();
  RawConnection c(port);
  c.send_all(chat(model, "hello there", 4, false));
  const int status = c.read_response(120s).status;
  std::printf("%s\n", json{{"mode", "noread"}, {"streams", streams}, {"tokens", tokens}, {"other_status", status},
                           {"other_ms", ms_since(start)}}
                          .dump()
                          .c_str());
  return 0;
}

int run_file(std::uint16_t port, const std::string& model, const std::string& url) {
  const auto start = Clock::now();
  RawConnection c(port);
  c.send_all(image_chat(model, url));
  const auto r = c.read_response(30s);
  const double ms = ms_since(start);
  const auto text_start = Clock::now();
  RawConnection t(port);
  t.send_all(chat(model, "hello there", 4, false));
  const int text_status = t.read_response(30s).status;
  std::printf("%s\n", json{{"mode", "file"}, {"status", r.status}, {"answered", r.complete}, {"ms", ms},
                           {"body", r.body.substr(0, 200)}, {"text_status", text_status}, {"text_ms", ms_since(text_start)}}
                          .dump()
                          .c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() >= 3) {
    const auto port = static_cast<std::uint16_t>(std::atoi(args[1].c_str()));
    const std::string& model = args[2];
    if (args[0] == "images") return run_images(port, model, args.size() > 3 && args[3] == "jpeg");
    if (args[0] == "inflight") return run_inflight(port, model);
    if (args[0] == "noread" && args.size() == 6)
      return run_noread(port, model, std::atoi(args[3].c_str()), std::atoll(args[4].c_str()), std::atoi(args[5].c_str()));
    if (args[0] == "file" && args.size() == 4) return run_file(port, model, args[3]);
  }
  std::fprintf(stderr,
               "usage: %s images PORT MODEL [png|jpeg] | inflight PORT MODEL | noread PORT MODEL N TOKENS HOLD_S | "
               "file PORT MODEL URL\n",
               argv[0]);
  return 2;
}
