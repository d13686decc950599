// `encbench bench serve`'s exit status when every request failed: the real binary
// against the scripted server, every response an HTTP 503. Exit 4 with a message saying why (the
// result still printed and saved), exit 0 with --allow-all-failed, and the bounds' flags refused
// with exit 2 when out of range.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/support/test_server.hpp"
#include "tests/support/process.hpp"

namespace {

using encbench::testing::Fault;
using encbench::testing::Script;
using encbench::testing::ServerConfig;
using encbench::testing::TestServer;

using Outcome = encbench::testing::CommandOutcome;  // stdout and stderr together (2>&1)

Outcome encbench_bench_serve(int port, const std::string& extra) {
  const std::string command = std::string("timeout 120 ") + ENCBENCH_EXE +
                              " bench serve --backend openai-chat --port " + std::to_string(port) +
                              " --model m --dataset-name random --random-input-len 8 --random-output-len 4"
                              " --num-prompts 4 --disable-tqdm " + extra + " 2>&1";
  return encbench::testing::run_command(command);
}

ServerConfig failing_server(bool every_request) {
  Script fail;
  fail.fault = Fault::http_error;
  fail.http_status = 503;
  ServerConfig sc;
  sc.scripts = every_request ? std::vector<Script>{fail} : std::vector<Script>{Script{}, fail};
  return sc;
}

std::filesystem::path temp_dir(const std::string& tag) {
  const auto d = std::filesystem::temp_directory_path() / ("encbench-exit-" + tag + "-" + std::to_string(getpid()));
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

}  // namespace

TEST(BenchServeExit, EveryRequestFailedExits4AndStillSavesTheResult) {
  TestServer server(failing_server(true));
  server.start();
  const auto dir = temp_dir("all-failed");
  const Outcome r = encbench_bench_serve(server.port(), "--save-result --result-dir " + dir.string() +
                                                            " --result-filename r.json");
  EXPECT_EQ(r.rc, 4) << r.output;
  EXPECT_NE(r.output.find("every request failed (4 of them"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("--allow-all-failed"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("HTTP 503"), std::string::npos) << r.output;  // the reasons are printed first
  std::ifstream in(dir / "r.json");
  ASSERT_TRUE(in.good()) << r.output;
  const auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j["completed"], 0);
  EXPECT_EQ(j["failed"], 4);
  EXPECT_EQ(j["response_bounds"]["max_response_bytes"], std::int64_t{256} << 20);
  EXPECT_EQ(j["response_bounds"]["max_output_chunks"], 1'000'000);
  EXPECT_EQ(j["response_bounds"]["idle_timeout_s"], 1800.0);
  std::filesystem::remove_all(dir);
}

TEST(BenchServeExit, AllowAllFailedKeepsExitZero) {
  TestServer server(failing_server(true));
  server.start();
  const Outcome r = encbench_bench_serve(server.port(), "--allow-all-failed");
  EXPECT_EQ(r.rc, 0) << r.output;
  EXPECT_EQ(r.output.find("every request failed"), std::string::npos) << r.output;
}

TEST(BenchServeExit, SomeSuccessesExitZero) {
  TestServer server(failing_server(false));
  server.start();
  const Outcome r = encbench_bench_serve(server.port(), "");
  EXPECT_EQ(r.rc, 0) << r.output;
  EXPECT_NE(r.output.find("Failed requests:"), std::string::npos) << r.output;
}

TEST(BenchServeExit, BoundsOutOfRangeExit2BeforeSending) {
  TestServer server(failing_server(false));
  server.start();
  for (const char* bad_flag : {"--max-response-bytes 0", "--max-output-chunks -1", "--idle-timeout -2"}) {
    const std::string bad = bad_flag;
    const Outcome r = encbench_bench_serve(server.port(), bad);
    EXPECT_EQ(r.rc, 2) << bad << ": " << r.output;
    EXPECT_NE(r.output.find(bad.substr(0, bad.find(' '))), std::string::npos) << r.output;
  }
  EXPECT_EQ(server.served_count(), 0u);
}
