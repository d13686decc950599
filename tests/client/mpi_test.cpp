// Sharded `encbench bench serve` under mpirun: 2 ranks on this machine against the scripted
// loopback server (in this process). Every mpirun runs under `timeout 120`, on loopback only
// (shared-memory BTL, TCP restricted to lo). Skipped, with a message, when MPI was not built.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>
#include <thread>

#include "harness/client/schedule.hpp"
#include "harness/core/stats.hpp"
#include "tests/support/test_server.hpp"
#include "tests/support/process.hpp"

namespace encbench::client {
namespace {

using encbench::testing::Script;
using encbench::testing::ServerConfig;
using encbench::testing::TestServer;

using Outcome = encbench::testing::CommandOutcome;  // stdout and stderr together (2>&1)

// Runs a shell command line, capturing its output; rc as the shell reports it.
Outcome shell(const std::string& command) { return encbench::testing::run_command(command + " 2>&1"); }

std::string mpirun_prefix() {
  std::string cmd = std::string("timeout 120 ") + ENCBENCH_MPIEXEC;
  if (geteuid() == 0) cmd += " --allow-run-as-root";
  // Loopback only: shared memory between the ranks, TCP (if any) on lo; no core binding (the
  // ranks share the 2 cores with the server).
  return cmd + " --oversubscribe --bind-to none --mca btl self,vader --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo";
}

std::string bench_args(int port, std::uint64_t seed, const std::string& extra = "", int num_prompts = 400) {
  return std::string(ENCBENCH_EXE) + " bench serve --backend openai-chat --port " + std::to_string(port) +
         " --model m --dataset-name random --random-input-len 16 --random-output-len 4 --num-prompts " +
         std::to_string(num_prompts) + " --request-rate 200 --disable-tqdm --request-id-prefix mpi- --seed " +
         std::to_string(seed) + extra;
}

std::size_t posts(const TestServer& server) {
  std::size_t n = 0;
  for (const auto& s : server.served()) n += s.method == "POST" ? 1 : 0;
  return n;
}

#define SKIP_WITHOUT_MPI()                                                                          \
  do {                                                                                              \
    if (!kHaveMpi) GTEST_SKIP() << "encbench was built without MPI (ENCBENCH_MPI=OFF or no MPI found: " \
                                   "install openmpi-bin libopenmpi-dev and reconfigure)";            \
  } while (0)

#ifdef ENCBENCH_HAVE_MPI
constexpr bool kHaveMpi = true;
#else
constexpr bool kHaveMpi = false;
#endif

// One 2-rank run shared by the checks on its result: 400 requests at 200 req/s, seed 7.
class TwoRanks : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!kHaveMpi) return;
    Script s;
    s.ttft_ms = 3;
    s.itl_ms = 1;
    ServerConfig sc;
    sc.scripts = {s};
    server_ = new TestServer(sc);
    server_->start();
    dir_ = ::testing::TempDir() + "encbench-mpi-" + std::to_string(getpid());
    run_ = shell(mpirun_prefix() + " -np 2 " +
                 bench_args(server_->port(), 7, " --save-result --save-detailed --result-dir " + dir_ + " --result-filename r.json"));
    server_->stop();
    std::ifstream in(dir_ + "/r.json");
    if (in) result_ = nlohmann::json::parse(in, nullptr, false);
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    SKIP_WITHOUT_MPI();
    ASSERT_EQ(run_.rc, 0) << run_.output;
    ASSERT_TRUE(result_.is_object()) << "no result JSON in " << dir_ << "\n" << run_.output;
  }
  static inline TestServer* server_ = nullptr;
  static inline std::string dir_;
  static inline Outcome run_;
  static inline nlohmann::json result_;
};

TEST_F(TwoRanks, EveryRequestCompletesOnce) {
  // The server saw each of the 400 request ids exactly once, from two processes.
  std::map<std::string, int> seen;
  for (const auto& s : server_->served())
    if (s.method == "POST") ++seen[s.request_id];
  EXPECT_EQ(seen.size(), 400u);
  for (int i = 0; i < 400; ++i) EXPECT_EQ(seen["mpi-" + std::to_string(i)], 1) << "request " << i;
  EXPECT_EQ(result_["completed"], 400);
  EXPECT_EQ(result_["failed"], 0);
  // request order = global index, as a one-process run
  const auto ids = result_["request_ids"].get<std::vector<std::string>>();
  ASSERT_EQ(ids.size(), 400u);
  for (std::size_t i = 0; i < ids.size(); ++i) EXPECT_EQ(ids[i], "mpi-" + std::to_string(i));
  // The JSON names the ranks, each with its half of the work.
  const auto& sh = result_["sharding"];
  ASSERT_TRUE(sh.is_object());
  EXPECT_EQ(sh["ranks"], 2);
  ASSERT_EQ(sh["per_rank"].size(), 2u);
  for (int k = 0; k < 2; ++k) {
    EXPECT_EQ(sh["per_rank"][k]["rank"], k);
    EXPECT_EQ(sh["per_rank"][k]["requests"], 200);
    EXPECT_EQ(sh["per_rank"][k]["completed"], 200);
    EXPECT_FALSE(sh["per_rank"][k]["host"].get<std::string>().empty());
    const double cpu = sh["per_rank"][k]["cpu_utilization"];
    EXPECT_GT(cpu, 0.0);
    EXPECT_LT(cpu, 2.0);
  }
  // Rank 0 alone prints: one result block.
  std::size_t blocks = 0;
  for (std::size_t pos = 0; (pos = run_.output.find("Serving Benchmark Result", pos)) != std::string::npos; ++pos) ++blocks;
  EXPECT_EQ(blocks, 1u) << run_.output;
}

TEST_F(TwoRanks, MergedIntendedTimesAreTheOneProcessSchedule) {
  const auto intended = result_["intended_times"].get<std::vector<double>>();
  ASSERT_EQ(intended.size(), 400u);
  const auto offsets = arrival_offsets_ns(400, 200, 1.0, 7);
  const auto other = arrival_offsets_ns(400, 200, 1.0, 8);
  double worst = 0, worst_other = 0;
  for (std::size_t i = 1; i < 400; ++i) {
    const double got = intended[i] - intended[0];
    worst = std::max(worst, std::abs(got - static_cast<double>(offsets[i] - offsets[0]) / 1e9));
    worst_other = std::max(worst_other, std::abs(got - static_cast<double>(other[i] - other[0]) / 1e9));
  }
  // Exact in integer ns; the JSON's seconds (absolute monotonic) round at ~1e-11 s.
  EXPECT_LT(worst, 1e-8);
  EXPECT_GT(worst_other, 1e-3);  // the check can tell two seeds apart
  // Clock offsets on one machine: rank 0 is the reference; rank 1's estimate is within its bound
  // (true offset 0: CLOCK_MONOTONIC is one clock here).
  const auto& r1 = result_["sharding"]["per_rank"][1];
  EXPECT_EQ(result_["sharding"]["per_rank"][0]["clock_offset_ns"], 0);
  const long long bound = r1["clock_offset_error_bound_ns"];
  EXPECT_GE(bound, 0);
  EXPECT_LE(std::llabs(r1["clock_offset_ns"].get<long long>()), bound + 1);
}

TEST_F(TwoRanks, AggregatesRecomputedFromMergedRecordsEqualPrinted) {
  std::vector<double> ttft_ms, itl_ms, e2el_ms;
  for (double t : result_["ttfts"]) ttft_ms.push_back(t * 1000);
  for (const auto& per_request : result_["itls"])
    for (double t : per_request) itl_ms.push_back(t * 1000);
  std::int64_t out_tokens = 0, in_tokens = 0;
  for (auto n : result_["output_lens"]) out_tokens += n.get<std::int64_t>();
  for (auto n : result_["input_lens"]) in_tokens += n.get<std::int64_t>();
  ASSERT_EQ(ttft_ms.size(), 400u);
  EXPECT_EQ(result_["total_output_tokens"], out_tokens);
  EXPECT_EQ(result_["total_input_tokens"], in_tokens);
  EXPECT_EQ(out_tokens, 400 * 4);
  auto near = [](double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(1.0, std::abs(b)); };
  EXPECT_TRUE(near(result_["mean_ttft_ms"], encbench::stats::mean(ttft_ms)));
  EXPECT_TRUE(near(result_["median_ttft_ms"], encbench::stats::median(ttft_ms)));
  EXPECT_TRUE(near(result_["p99_ttft_ms"], encbench::stats::percentile(ttft_ms, 99)));
  EXPECT_TRUE(near(result_["mean_itl_ms"], encbench::stats::mean(itl_ms)));
  EXPECT_TRUE(near(result_["p99_itl_ms"], encbench::stats::percentile(itl_ms, 99)));
  // The printed block shows the same numbers (2 decimals).
  char line[128];
  std::snprintf(line, sizeof line, "%-40s %-10.2f", "Mean TTFT (ms):", encbench::stats::mean(ttft_ms));
  EXPECT_NE(run_.output.find(line), std::string::npos) << line << "\n" << run_.output;
  std::snprintf(line, sizeof line, "%-40s %-10.2f", "P99 ITL (ms):", encbench::stats::percentile(itl_ms, 99));
  EXPECT_NE(run_.output.find(line), std::string::npos) << line;
  // Per-rank dispatch lag = the merged per-request lags of that rank's round-robin shard.
  const auto lags = result_["dispatch_lags_ms"].get<std::vector<double>>();
  ASSERT_EQ(lags.size(), 400u);
  for (int k = 0; k < 2; ++k) {
    std::vector<double> mine;
    for (std::size_t i = static_cast<std::size_t>(k); i < lags.size(); i += 2) mine.push_back(lags[i]);
    EXPECT_TRUE(near(result_["sharding"]["per_rank"][k]["dispatch_lag_p99_ms"], encbench::stats::percentile(mine, 99))) << "rank " << k;
  }
  const auto all_lag_p99 = result_["dispatch_lag_ms"];
  EXPECT_TRUE(all_lag_p99.is_object());
}

TEST(MpiRanks, DifferentSeedIsRefusedBeforeAnythingIsSent) {
  SKIP_WITHOUT_MPI();
  TestServer server(ServerConfig{});
  server.start();
  // MPMD: rank 0 with --seed 1, rank 1 with --seed 2.
  const Outcome r = shell(mpirun_prefix() + " -np 1 " + bench_args(server.port(), 1) + " : -np 1 " + bench_args(server.port(), 2));
  server.stop();
  EXPECT_EQ(r.rc, 2) << r.output;
  EXPECT_NE(r.output.find("rank 1 differs from rank 0 in --seed: '2' vs '1'"), std::string::npos) << r.output;
  EXPECT_EQ(posts(server), 0u);
  EXPECT_EQ(r.output.find("Serving Benchmark Result"), std::string::npos);
}

TEST(MpiRanks, MissingDatasetOnOneRankStopsAllWithItsReason) {
  SKIP_WITHOUT_MPI();
  TestServer server(ServerConfig{});
  server.start();
  const std::string ok = bench_args(server.port(), 1);
  std::string bad = ok;
  const std::string random = "--dataset-name random";
  bad.replace(bad.find(random), random.size(), "--dataset-name custom --dataset-path /nonexistent/encbench-mpi.jsonl");
  const Outcome r = shell(mpirun_prefix() + " -np 1 " + ok + " : -np 1 " + bad);
  server.stop();
  EXPECT_EQ(r.rc, 2) << r.output;
  EXPECT_NE(r.output.find("rank 1 differs from rank 0 in prepared"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("/nonexistent/encbench-mpi.jsonl"), std::string::npos) << r.output;
  EXPECT_EQ(posts(server), 0u);
}

TEST(MpiRanks, RankThatDiesFailsTheRunInsteadOfHanging) {
  SKIP_WITHOUT_MPI();
  Script s;
  s.ttft_ms = 3;
  ServerConfig sc;
  sc.scripts = {s};
  TestServer server(sc);
  server.start();
  // Rank 1 runs under a shell that SIGKILLs it once the run is under way (this test creates the
  // flag file after the server has seen 20 requests), inside 20 s of arrivals; rank 0 must not
  // wait for its records forever: the run ends non-zero, long before the outer `timeout 120`
  // (rc 124) and the schedule's end. Event-driven, so a slow (ASan) start cannot spoil it.
  const std::string args = bench_args(server.port(), 3, "", 4000);
  const std::string flag = ::testing::TempDir() + "encbench-mpi-kill-" + std::to_string(getpid());
  std::remove(flag.c_str());
  const std::string killer = "sh -c '" + args + " & p=$!; n=0; while [ ! -e " + flag +
                             " ] && [ $n -lt 1000 ]; do sleep 0.1; n=$((n+1)); done; kill -9 $p; wait $p'";
  Outcome r;
  std::thread runner([&] { r = shell(mpirun_prefix() + " -np 1 " + args + " : -np 1 " + killer); });
  for (int i = 0; i < 1000 && posts(server) < 20; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::ofstream(flag) << "kill\n";
  runner.join();
  std::remove(flag.c_str());
  server.stop();
  EXPECT_NE(r.rc, 0) << r.output;
  EXPECT_NE(r.rc, 124) << "mpirun hung until the outer timeout\n" << r.output;
  EXPECT_EQ(r.output.find("Serving Benchmark Result"), std::string::npos) << r.output;
  const std::size_t sent = posts(server);
  EXPECT_GT(sent, 0u) << "rank 1 died before the run started\n" << r.output;  // it died mid-run
  EXPECT_LT(sent, 4000u) << r.output;                                          // and the run stopped
}

}  // namespace
}  // namespace encbench::client
