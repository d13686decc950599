// bench multi-turn: the real binary against the scripted server over VisionArena-Chat rows
// (tests/parquet/data/chat_v1_snappy.parquet: rows 0-4 hold 1, 2, 3, 1 and 2 user turns). The
// server scripts TTFT by turn (60 ms for turn 0, 10 ms later), so the first turns' TTFT and the
// later turns' are known apart; the bodies it received show the history re-sent (2k+1 messages at
// turn k, the server's own answer as the assistant turn, the image on the first user message
// every time); the turn records show the think time between an answer and the next turn and at
// most --max-concurrency sessions active at once.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/support/process.hpp"
#include "tests/support/test_server.hpp"

namespace {

namespace fs = std::filesystem;
using encbench::testing::Script;
using encbench::testing::ServerConfig;
using encbench::testing::TestServer;
using nlohmann::json;

ServerConfig turn_scripted_server() {
  Script first, later;
  first.ttft_ms = 60;
  later.ttft_ms = 10;
  ServerConfig sc;
  sc.scripts = {first, later, later};  // request ids end in the turn: mt-<session>-<turn>
  return sc;
}

}  // namespace

TEST(BenchMultiTurn, TurnsFollowAnswersWithThinkTimeHistoryAndSessionConcurrency) {
  TestServer server(turn_scripted_server());
  server.start();
  const fs::path dir = fs::temp_directory_path() / ("encbench-multi-turn-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string command = std::string("timeout 120 ") + ENCBENCH_EXE +
                              " bench multi-turn --backend openai-chat --port " + std::to_string(server.port()) +
                              " --model m --dataset-name hf --dataset-path " + ENCBENCH_TEST_SOURCE_DIR +
                              "/tests/parquet/data/chat_v1_snappy.parquet --num-prompts 5 --disable-shuffle --hf-output-len 3"
                              " --max-concurrency 2 --think-time constant:0.05 --multi-turn-result " + (dir / "mt.json").string() + " 2>&1";
  const auto outcome = encbench::testing::run_command(command);
  ASSERT_EQ(outcome.rc, 0) << outcome.output;
  std::ifstream in(dir / "mt.json");
  const json r = json::parse(in);
  EXPECT_EQ(r.at("schema"), "encbench-multi-turn");
  EXPECT_EQ(r.at("sessions"), 5);
  EXPECT_EQ(r.at("turns"), 9);  // 1 + 2 + 3 + 1 + 2
  EXPECT_EQ(r.at("failed_turns"), 0);
  EXPECT_EQ(r.at("peak_sessions_in_flight"), 2);
  // TTFT: the scripted 60 ms for first turns, 10 ms for later ones (plus the loopback's cost).
  EXPECT_EQ(r["ttft_first_turn_ms"].value("count", 0), 5);
  EXPECT_EQ(r["ttft_later_turns_ms"].value("count", 0), 4);
  EXPECT_GE(r["ttft_first_turn_ms"].value("mean", 0.0), 60.0);
  EXPECT_LT(r["ttft_first_turn_ms"].value("mean", 1e9), 100.0);
  EXPECT_GE(r["ttft_later_turns_ms"].value("mean", 0.0), 10.0);
  EXPECT_LT(r["ttft_later_turns_ms"].value("mean", 1e9), 50.0);
  // Think time: each later turn leaves >= 50 ms after its session's previous answer ended.
  std::map<std::pair<int, int>, json> by_turn;
  for (const auto& t : r.at("turn_records")) by_turn[{t.at("session").get<int>(), t.at("turn").get<int>()}] = t;
  ASSERT_EQ(by_turn.size(), 9u);
  for (const auto& [key, t] : by_turn) {
    EXPECT_EQ(t.at("history_messages").get<int>(), 2 * key.second + 1);
    if (key.second == 0) continue;
    const json& previous = by_turn.at({key.first, key.second - 1});
    const double gap = t.at("dispatch_s").get<double>() - previous.at("end_s").get<double>();
    EXPECT_GE(gap, 0.05) << key.first << "/" << key.second;
    EXPECT_LT(gap, 0.15) << key.first << "/" << key.second;
  }
  // Sessions in flight (first dispatch to last end) never exceed --max-concurrency 2.
  std::map<int, std::pair<double, double>> span;
  for (const auto& [key, t] : by_turn) {
    auto& s = span.try_emplace(key.first, 1e9, 0.0).first->second;
    s.first = std::min(s.first, t.at("dispatch_s").get<double>());
    s.second = std::max(s.second, t.at("end_s").get<double>());
  }
  for (const auto& [a, sa] : span) {
    int overlapping = 0;
    for (const auto& [b, sb] : span) overlapping += sb.first <= sa.first && sa.first < sb.second ? 1 : 0;
    EXPECT_LE(overlapping, 2) << "session " << a;
  }
  // What the server received: the history re-sent with its own answers and the image each turn.
  std::size_t checked = 0;
  for (const auto& served : server.served()) {
    const json body = json::parse(served.body);
    const auto& messages = body.at("messages");
    const int turn = served.request_id.back() - '0';
    ASSERT_EQ(messages.size(), static_cast<std::size_t>(2 * turn + 1)) << served.request_id;
    EXPECT_EQ(messages[0].at("content")[1].at("type"), "image_url") << served.request_id;
    for (int k = 1; k < 2 * turn; k += 2) {
      EXPECT_EQ(messages[static_cast<std::size_t>(k)].at("role"), "assistant");
      EXPECT_FALSE(messages[static_cast<std::size_t>(k)].at("content").get<std::string>().empty()) << served.request_id;
    }
    if (turn > 0) {
      EXPECT_NE(messages.back().at("content").get<std::string>().find("turn " + std::to_string(turn)), std::string::npos)
          << "turn k sends the row's k-th user message";
      ++checked;
    }
  }
  EXPECT_EQ(checked, 4u);
  EXPECT_NE(outcome.output.find("Multi-turn sessions"), std::string::npos) << outcome.output;
  fs::remove_all(dir);
}
