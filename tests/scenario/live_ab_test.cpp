// `encbench bench ab` against servers its recipes start: the scripted test server as a separate
// process (encbench-test-server) with known TTFTs, and recipes that fail on purpose (exit at once,
// never ready, die mid-round, port taken, a URL refusing connections, Ctrl-C). Every case checks
// the message names the arm and round, the finished rounds are written, and no process of any
// started server is left (kill(-pgid, 0) fails with ESRCH).
#include <gtest/gtest.h>

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "harness/core/error.hpp"
#include "harness/core/result_json.hpp"
#include "harness/scenario/live_ab.hpp"
#include "tests/scenario/scenario_test_paths.hpp"

namespace encbench::scenario {
namespace {

std::string test_server(double ttft_ms) {
  std::ostringstream cmd;
  cmd << "exec '" << ENCBENCH_TEST_SERVER_BIN << "' --port {port} --ttft-ms " << ttft_ms << " --itl-ms 1";
  return cmd.str();
}

client::BenchConfig small_workload(int prompts) {
  client::BenchConfig c;
  c.backend = client::Backend::openai;
  c.endpoint = "/v1/completions";
  c.base_url = "http://127.0.0.1:1";  // replaced per round
  c.dataset.name = "random";
  c.dataset.num_prompts = static_cast<std::size_t>(prompts);
  c.dataset.random.input_len = 8;
  c.dataset.random.output_len = 4;
  c.ignore_eos = true;
  c.request_rate = 200;
  c.num_warmups = 1;
  c.timeout_s = 30;
  return c;
}

LiveAbOptions two_arms(const std::string& a, const std::string& b, const std::string& dir) {
  LiveAbOptions o;
  o.arms = {parse_arm("base=" + a), parse_arm("opt=" + b)};
  o.rounds = 2;
  o.ready_timeout_s = 60;
  o.stop_grace_s = 5;
  o.out_dir = testpaths::temp_dir("live-ab", dir);
  return o;
}

// Records every started server's process group, to check none is left.
struct GroupLog {
  std::set<pid_t> groups;
  void attach(LiveAbOptions& o) {
    o.on_ready = [this](const std::string&, int, pid_t pgid) {
      if (pgid > 0) groups.insert(pgid);
    };
  }
};

bool group_gone(pid_t pgid) { return ::kill(-pgid, 0) == -1 && errno == ESRCH; }

LiveAbRun run(const LiveAbOptions& o, int prompts = 12) {
  std::ostringstream out, progress;
  LiveAbRun r = run_live_ab(small_workload(prompts), o, {"test"}, out, progress);
  r.result["test_stdout"] = out.str();
  return r;
}

TEST(LiveAbTest, InterleavedRoundsOnFreshServersFindTheFasterArm) {
  LiveAbOptions o = two_arms(test_server(40), test_server(10), "faster");
  o.rounds = 3;
  GroupLog log;
  log.attach(o);
  const LiveAbRun r = run(o, 20);
  EXPECT_EQ(r.exit_code(), r.result["invalid_reasons"].empty() ? 0 : 1) << r.failure;
  EXPECT_EQ(log.groups.size(), 6u);  // a fresh server per arm and round
  for (pid_t g : log.groups) EXPECT_TRUE(group_gone(g)) << g;
  const auto& doc = r.result;
  EXPECT_EQ(doc["schema"], "encbench-live-ab");
  ASSERT_EQ(doc["arms"].size(), 2u);
  // ABBA: base first in round 1, second in round 2.
  EXPECT_EQ(doc["arms"][0]["rounds"][0]["position"], 0);
  EXPECT_EQ(doc["arms"][0]["rounds"][1]["position"], 1);
  EXPECT_EQ(doc["arms"][1]["rounds"][1]["position"], 0);
  for (const auto& arm : doc["arms"])
    for (const auto& round : arm["rounds"]) {
      EXPECT_EQ(round["serving"]["completed"], 20);
      EXPECT_TRUE(round["server"]["port_free_after_stop"].get<bool>());
      EXPECT_FALSE(round["server"]["group_left"].get<bool>());
      EXPECT_FALSE(round["server"]["killed_after_grace"].get<bool>());  // the test server ends on SIGTERM
      // Scripted 40 / 10 ms before the first token: the client sees that, plus little.
      const double ttft = round["serving"]["mean_ttft_ms"].get<double>();
      const double scripted = arm["name"] == "base" ? 40.0 : 10.0;
      EXPECT_GE(ttft, scripted);
      EXPECT_LT(ttft, scripted + 30);
      std::ifstream log_file(round["server"]["stdout"].get<std::string>());
      std::string first;
      std::getline(log_file, first);
      EXPECT_NE(first.find("listening on http://127.0.0.1:" + std::to_string(round["server"]["port"].get<int>())),
                std::string::npos)
          << first;
      EXPECT_EQ(round["server"]["ready_endpoint"], "/v1/models");  // the test server has no /health
    }
  bool found = false;
  for (const auto& v : doc["verdicts"])
    if (v["metric"] == "mean_ttft_ms") {
      found = true;
      // Scripted 40 vs 10 ms: FASTER, unless this machine's load made the rounds differ so much
      // that the change is not significant; then SAME, and the MDE of the same test must say the
      // run could not promise to see it (a change beyond the MDE is significant by construction).
      EXPECT_EQ(v["test"], "t on log round values");
      if (v["verdict"] != "FASTER") {
        EXPECT_EQ(v["verdict"], "SAME") << v["reason"];
        EXPECT_GT(v["mde_rel"].get<double>(), -v["relative_change"].get<double>()) << v["reason"];
      }
      EXPECT_LT(v["relative_change"].get<double>(), -0.4);
      EXPECT_GT(v["relative_change"].get<double>(), -0.9);
      EXPECT_TRUE(v["mde_rel"].is_number());
    }
  EXPECT_TRUE(found);
  // A loaded machine may trip the client-lag guard: then no verdict is printed, and it says why.
  if (doc["invalid_reasons"].empty() && doc["verdicts"][0]["verdict"] == "FASTER")
    EXPECT_NE(doc["headline"].get<std::string>().find("mean TTFT FASTER"), std::string::npos)
        << doc["test_stdout"].get<std::string>();
  else
    EXPECT_EQ(doc["headline"], "no verdict");
  ASSERT_FALSE(r.html_path.empty());
  std::ifstream html_in(r.html_path);
  const std::string html((std::istreambuf_iterator<char>(html_in)), std::istreambuf_iterator<char>());
  const auto summary = html.find("id=\"ab-verdict\""), verdict = html.find("id=\"verdict\"");
  ASSERT_NE(summary, std::string::npos);
  ASSERT_NE(verdict, std::string::npos);
  EXPECT_LT(summary, verdict);  // the A/B verdict first
  EXPECT_NE(html.find("id=\"ab-rounds\""), std::string::npos);
  EXPECT_NE(html.find("cdf-"), std::string::npos);  // pooled latency CDFs
  EXPECT_EQ(read_json_file(r.json_path)["schema_version"], 1);
  const std::string out = doc["test_stdout"];
  EXPECT_NE(out.find("Per-round values"), std::string::npos);
  EXPECT_NE(out.find("Minimum detectable effect"), std::string::npos);
}

// The failure cases share the check: one message naming arm and round, base's round 1 kept and
// written, and no process of any started server left.
void expect_failure(const LiveAbRun& r, const std::string& arm_round, const std::string& reason,
                    std::size_t base_rounds_kept) {
  EXPECT_EQ(r.exit_code(), 1);
  EXPECT_NE(r.failure.find(arm_round), std::string::npos) << r.failure;
  EXPECT_NE(r.failure.find(reason), std::string::npos) << r.failure;
  const auto doc = read_json_file(r.json_path);  // written although the run failed
  EXPECT_EQ(doc["failure"], r.failure);
  EXPECT_EQ(doc["arms"][0]["rounds"].size(), base_rounds_kept);
}

TEST(LiveAbTest, CommandThatExitsAtOnce) {
  LiveAbOptions o = two_arms(test_server(5), "echo cannot start on {port} >&2; exit 3", "exits");
  GroupLog log;
  log.attach(o);
  const auto t0 = std::chrono::steady_clock::now();
  const LiveAbRun r = run(o);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(55));  // not the 60 s timeout
  expect_failure(r, "arm 'opt', round 1", "exited with status 3 before it became ready", 1);
  EXPECT_NE(r.failure.find("cannot start on"), std::string::npos) << r.failure;  // its stderr, quoted
  for (pid_t g : log.groups) EXPECT_TRUE(group_gone(g));
}

TEST(LiveAbTest, CommandThatNeverBecomesReady) {
  LiveAbOptions o = two_arms(test_server(5), "echo $$ > {round_dir}/pid; exec sleep 600 # {port}", "never");
  o.ready_timeout_s = 1.5;
  const LiveAbRun r = run(o);
  expect_failure(r, "arm 'opt', round 1", "not ready within --ready-timeout", 1);
  std::ifstream pid_file(o.out_dir / "round-1-opt" / "pid");
  pid_t pid = 0;
  ASSERT_TRUE(pid_file >> pid);
  EXPECT_TRUE(group_gone(pid));  // the sleep was stopped with its group
}

TEST(LiveAbTest, ServerThatDiesMidRound) {
  LiveAbOptions o = two_arms(test_server(5), test_server(5), "dies");
  std::set<pid_t> groups;
  o.on_ready = [&](const std::string& arm, int round, pid_t pgid) {
    groups.insert(pgid);
    if (arm == "opt" && round == 1) ::kill(-pgid, SIGKILL);
  };
  const LiveAbRun r = run(o);
  expect_failure(r, "arm 'opt', round 1", "killed by signal 9", 1);
  for (pid_t g : groups) EXPECT_TRUE(group_gone(g));
}

TEST(LiveAbTest, FixedPortAlreadyTaken) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(fd, 4), 0);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const int port = ntohs(addr.sin_port);
  LiveAbOptions o = two_arms(test_server(5), test_server(5), "port");
  apply_arm_port(o.arms, "opt:" + std::to_string(port));
  GroupLog log;
  log.attach(o);
  const LiveAbRun r = run(o);
  ::close(fd);
  expect_failure(r, "arm 'opt', round 1", "port " + std::to_string(port) + " is already in use", 1);
  ASSERT_EQ(log.groups.size(), 1u);  // base's round-1 server, stopped with its group
  for (pid_t g : log.groups) EXPECT_TRUE(group_gone(g));
}

// Occurrences of `needle` in `text`.
std::size_t count_of(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (auto pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + needle.size())) ++n;
  return n;
}

// A listening socket on a port the kernel picks; closed by the caller.
int listen_on_free_port(int& port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  EXPECT_EQ(::listen(fd, 4), 0);
  EXPECT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  port = ntohs(addr.sin_port);
  return fd;
}

// The first arm's port taken: the run never starts. One error (InvalidInput: exit 2, as `serve`
// on a taken port), nothing printed besides, and no result directory left behind.
TEST(LiveAbTest, FirstArmPortTakenLeavesNoDirectory) {
  int port = 0;
  const int fd = listen_on_free_port(port);
  LiveAbOptions o = two_arms(test_server(5), test_server(5), "first-port");
  o.out_dir = o.out_dir / "ab-base-vs-opt";  // not there yet, as a default --ab-dir
  apply_arm_port(o.arms, "base:" + std::to_string(port));
  GroupLog log;
  log.attach(o);
  std::ostringstream out, progress;
  std::string error;
  try {
    run_live_ab(small_workload(12), o, {"test"}, out, progress);
  } catch (const InvalidInput& e) {
    error = e.what();
  }
  ::close(fd);
  EXPECT_NE(error.find("arm 'base', round 1: port " + std::to_string(port) + " is already in use"), std::string::npos)
      << error;
  EXPECT_EQ(out.str(), "");
  EXPECT_EQ(progress.str(), "");
  EXPECT_FALSE(std::filesystem::exists(o.out_dir));
  EXPECT_TRUE(log.groups.empty());  // no server was started
}

// A failure after a round finished is reported once (the report's line), not also on progress.
TEST(LiveAbTest, LaterFailureIsSaidOnce) {
  int port = 0;
  const int fd = listen_on_free_port(port);
  LiveAbOptions o = two_arms(test_server(5), test_server(5), "said-once");
  apply_arm_port(o.arms, "opt:" + std::to_string(port));
  std::ostringstream out, progress;
  const LiveAbRun r = run_live_ab(small_workload(12), o, {"test"}, out, progress);
  ::close(fd);
  const std::string said = "port " + std::to_string(port) + " is already in use";
  EXPECT_EQ(count_of(out.str() + progress.str(), said), 1u) << out.str() << "\n---\n" << progress.str();
  EXPECT_TRUE(std::filesystem::exists(r.json_path));  // the finished round is written
}

TEST(LiveAbTest, UrlThatRefusesConnections) {
  const int port = pick_free_port();  // nothing listens there
  LiveAbOptions o = two_arms(test_server(5), "http://127.0.0.1:" + std::to_string(port), "url");
  o.ready_timeout_s = 1;
  GroupLog log;
  log.attach(o);
  const LiveAbRun r = run(o);
  expect_failure(r, "arm 'opt', round 1", "not ready within --ready-timeout", 1);
  EXPECT_NE(r.failure.find("http://127.0.0.1:" + std::to_string(port)), std::string::npos);
  ASSERT_EQ(log.groups.size(), 1u);
  for (pid_t g : log.groups) EXPECT_TRUE(group_gone(g));
}

TEST(LiveAbTest, InterruptStopsTheServersAndWritesWhatFinished) {
  LiveAbOptions o = two_arms(test_server(5), test_server(5), "sigint");
  int pipe_fds[2];  // non-blocking, as the CLI's signalfd: the client drains it until EAGAIN
  ASSERT_EQ(::pipe2(pipe_fds, O_NONBLOCK | O_CLOEXEC), 0);
  o.stop_fd = pipe_fds[0];
  std::set<pid_t> groups;
  o.on_ready = [&](const std::string&, int round, pid_t pgid) {
    groups.insert(pgid);
    if (round == 2) {  // Ctrl-C as round 2's first server (opt) starts its run
      const char byte = 1;
      ASSERT_EQ(::write(pipe_fds[1], &byte, 1), 1);
    }
  };
  const LiveAbRun r = run(o);
  ::close(pipe_fds[0]);
  ::close(pipe_fds[1]);
  EXPECT_EQ(r.exit_code(), 130);
  EXPECT_TRUE(r.interrupted);
  const auto doc = read_json_file(r.json_path);
  EXPECT_TRUE(doc["interrupted"].get<bool>());
  EXPECT_EQ(doc["arms"][0]["rounds"].size(), 1u);  // round 1 of both arms kept
  EXPECT_EQ(doc["arms"][1]["rounds"].size(), 1u);
  EXPECT_FALSE(r.html_path.empty());
  EXPECT_EQ(groups.size(), 3u);
  for (pid_t g : groups) EXPECT_TRUE(group_gone(g));
}

TEST(LiveAbTest, EnvAndWorkingDirectoryReachTheCommand) {
  LiveAbOptions o = two_arms(test_server(5), "pwd > {round_dir}/cwd; echo $AB_MARK > {round_dir}/env; " + test_server(5),
                             "env");
  o.rounds = 1;
  apply_arm_env(o.arms, "opt:AB_MARK=hello world {arm} {round}");
  apply_arm_cwd(o.arms, "opt:/tmp");
  const LiveAbRun r = run(o);
  ASSERT_EQ(r.failure, "");  // (exit 1 without a failure = NO VERDICT: a loaded machine's client lag)
  std::ifstream cwd(o.out_dir / "round-1-opt" / "cwd"), env(o.out_dir / "round-1-opt" / "env");
  std::string cwd_line, env_line;
  std::getline(cwd, cwd_line);
  std::getline(env, env_line);
  EXPECT_EQ(std::filesystem::canonical(cwd_line), std::filesystem::canonical("/tmp"));
  EXPECT_EQ(env_line, "hello world opt 1");
}

// A server that writes a profiler trace into {round_dir}: each round's trace is analysed (the
// kineto fixture of tests/trace: busy 300 us, idle 380 us of which sync_stall 150 us), summed per
// arm; an unreadable trace is noted, not fatal.
TEST(LiveAbTest, RoundTracesAreAnalysedAndSummedPerArm) {
  const std::string fixture = (testpaths::source_dir() / "tests/trace/fixtures/kineto_two_streams.json").string();
  const std::string with_trace = "mkdir -p {round_dir}/torch && cp '" + fixture + "' {round_dir}/torch/w.pt.trace.json && " +
                                 test_server(5);
  const std::string with_bad_trace = "echo not-json > {round_dir}/bad.trace.json; " + test_server(5);
  LiveAbOptions o = two_arms(with_trace, with_bad_trace, "traces");
  const LiveAbRun r = run(o);
  ASSERT_EQ(r.failure, "");
  const auto& good = r.result["arms"][0]["trace_summary"];
  EXPECT_EQ(good["traces"], 2);  // one per round
  EXPECT_DOUBLE_EQ(good["busy_ms"].get<double>(), 2 * 0.300);
  EXPECT_DOUBLE_EQ(good["idle_ms"].get<double>(), 2 * 0.380);
  EXPECT_DOUBLE_EQ(good["idle_ms_by_class"]["sync_stall"].get<double>(), 2 * 0.150);
  const auto& bad = r.result["arms"][1];
  EXPECT_EQ(bad["trace_summary"]["traces"], 0);
  ASSERT_EQ(bad["rounds"][0]["server"]["traces"].size(), 1u);
  EXPECT_TRUE(bad["rounds"][0]["server"]["traces"][0].contains("error"));
  EXPECT_NE(r.result["test_stdout"].get<std::string>().find("Server profiler traces"), std::string::npos);
  std::ifstream html_in(r.html_path);
  const std::string html((std::istreambuf_iterator<char>(html_in)), std::istreambuf_iterator<char>());
  EXPECT_NE(html.find("id=\"ab-traces\""), std::string::npos);
}

// A torch-profiler (Kineto) trace of one step: k1, then (with_sync) a D2H copy the host waits
// for with cudaStreamSynchronize, then k2 launched after the wait; without it, k2 follows k1.
std::string one_step_trace(bool with_sync) {
  const std::string head = R"json({"schemaVersion": 1, "traceEvents": [
  {"ph":"M","name":"process_name","pid":100,"tid":0,"args":{"name":"python3"}},
  {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":100,"tid":100,"ts":0,"dur":5,"args":{"correlation":1}},
  {"ph":"X","cat":"kernel","name":"k1","pid":0,"tid":7,"ts":10,"dur":100,"args":{"correlation":1,"stream":7,"device":0}},)json";
  if (with_sync)
    return head + R"json(
  {"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":100,"tid":100,"ts":0,"dur":270},
  {"ph":"X","cat":"cuda_runtime","name":"cudaMemcpyAsync","pid":100,"tid":100,"ts":10,"dur":5,"args":{"correlation":2}},
  {"ph":"X","cat":"cuda_runtime","name":"cudaStreamSynchronize","pid":100,"tid":100,"ts":20,"dur":100,"args":{"correlation":3}},
  {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":100,"tid":100,"ts":150,"dur":5,"args":{"correlation":4}},
  {"ph":"X","cat":"gpu_memcpy","name":"Memcpy DtoH (Device -> Pageable)","pid":0,"tid":7,"ts":110,"dur":5,"args":{"correlation":2,"stream":7,"device":0}},
  {"ph":"X","cat":"kernel","name":"k2","pid":0,"tid":7,"ts":160,"dur":100,"args":{"correlation":4,"stream":7,"device":0}}]})json";
  return head + R"json(
  {"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":100,"tid":100,"ts":0,"dur":210},
  {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":100,"tid":100,"ts":10,"dur":5,"args":{"correlation":4}},
  {"ph":"X","cat":"kernel","name":"k2","pid":0,"tid":7,"ts":110,"dur":100,"args":{"correlation":4,"stream":7,"device":0}}]})json";
}

// Scripted servers that write a profiler trace into their round's directory, as vLLM does with
// VLLM_TORCH_PROFILER_DIR={round_dir}/torch: the A/B runs `trace diff` between the arms round by
// round (the references: the traces' own sync and launch counts); the After server writes no
// trace in round 2, which is noted, not fatal.
TEST(LiveAbTest, TraceDiffBetweenArmsFromTheRoundsTraces) {
  const auto dir = testpaths::temp_dir("live-ab", "trace-diff-src");
  std::ofstream(dir / "sync.json") << one_step_trace(true);
  std::ofstream(dir / "nosync.json") << one_step_trace(false);
  const std::string base = "mkdir -p {round_dir}/torch && cp '" + (dir / "sync.json").string() +
                           "' {round_dir}/torch/step.pt.trace.json && " + test_server(5);
  const std::string opt = "if [ {round} = 1 ]; then mkdir -p {round_dir}/torch && cp '" + (dir / "nosync.json").string() +
                          "' {round_dir}/torch/step.pt.trace.json; fi; " + test_server(5);
  LiveAbOptions o = two_arms(base, opt, "trace-diff");
  const LiveAbRun r = run(o);
  ASSERT_EQ(r.failure, "");
  ASSERT_TRUE(r.result.contains("trace_diff")) << r.result["test_stdout"].get<std::string>();
  const auto& d = r.result["trace_diff"];
  EXPECT_EQ(d["rounds_diffed"], 1);
  ASSERT_EQ(d["rounds"].size(), 2u);
  EXPECT_EQ(d["rounds"][1]["round"], 2);
  EXPECT_NE(d["rounds"][1].value("error", std::string()).find("no readable trace from arm B"), std::string::npos)
      << d["rounds"][1].dump();
  const auto& mean = d["mean"];
  EXPECT_DOUBLE_EQ(mean["syncs_per_forward"]["a"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(mean["syncs_per_forward"]["b"].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(mean["d2h_per_forward"]["a"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(mean["d2h_per_forward"]["b"].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(mean["launches_per_forward"]["a"].get<double>(), 3.0);
  EXPECT_DOUBLE_EQ(mean["launches_per_forward"]["b"].get<double>(), 2.0);
  EXPECT_NEAR(mean["forward_ms"]["a"].get<double>(), 0.270, 1e-9);
  EXPECT_NEAR(mean["forward_ms"]["b"].get<double>(), 0.210, 1e-9);
  EXPECT_NEAR(mean["forward_ms"]["delta"].get<double>(), -0.060, 1e-9);
  // The idle-gap analysis of every round's trace is still there (three traces: base 2, opt 1).
  EXPECT_EQ(r.result["arms"][0]["trace_summary"]["traces"], 2);
  EXPECT_EQ(r.result["arms"][1]["trace_summary"]["traces"], 1);
  const std::string out = r.result["test_stdout"];
  EXPECT_NE(out.find("Trace diff per forward"), std::string::npos) << out;
  EXPECT_NE(read_json_file(r.json_path).value("trace_diff", nlohmann::json()).value("rounds_diffed", 0), 0);
  std::ifstream html_in(r.html_path);
  const std::string html((std::istreambuf_iterator<char>(html_in)), std::istreambuf_iterator<char>());
  EXPECT_NE(html.find("id=\"ab-trace-diff\""), std::string::npos);
}

// Servers that write no trace: no trace diff section at all (nothing to note).
TEST(LiveAbTest, NoTracesMeansNoTraceDiff) {
  LiveAbOptions o = two_arms(test_server(5), test_server(5), "no-traces");
  o.rounds = 1;
  const LiveAbRun r = run(o, 4);
  ASSERT_EQ(r.failure, "");
  EXPECT_FALSE(r.result.contains("trace_diff"));
  EXPECT_EQ(r.result["test_stdout"].get<std::string>().find("Trace diff"), std::string::npos);
}

TEST(LiveAbTest, BadArmsAreRefusedNamingTheFlag) {
  auto message = [](auto&& f) {
    try {
      f();
    } catch (const InvalidInput& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_NE(message([] { parse_arm("no-equals"); }).find("--arm expects NAME=RECIPE"), std::string::npos);
  EXPECT_NE(message([] { validate_arms({parse_arm("a=serve --port 8000"), parse_arm("b=http://h:1")}); }).find("{port}"),
            std::string::npos);
  EXPECT_NE(message([] { validate_arms({parse_arm("a=http://h:1")}); }).find("exactly two"), std::string::npos);
  EXPECT_NE(message([] { validate_arms({parse_arm("a=http://h:1"), parse_arm("a=http://h:2")}); }).find("different names"),
            std::string::npos);
  std::vector<ArmRecipe> arms{parse_arm("a=x {port}"), parse_arm("b=y {port}")};
  EXPECT_NE(message([&] { apply_arm_env(arms, "c:K=V"); }).find("no arm called 'c'"), std::string::npos);
  EXPECT_NE(message([&] { apply_arm_port(arms, "a:70000"); }).find("1..65535"), std::string::npos);
  EXPECT_NE(message([&] { apply_arm_cwd(arms, "a:/no/such/dir"); }).find("not a directory"), std::string::npos);
  EXPECT_EQ(expand_recipe("s --port {port} --tag {arm}-{round}", 1234, 2, "opt", "/r"), "s --port 1234 --tag opt-2");
}

}  // namespace
}  // namespace encbench::scenario
