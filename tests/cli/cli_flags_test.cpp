// Flag wiring of the real binaries. Bad flags and values must give a clear one-line reason and exit
// status 2 (before any work starts); good flags must reach the result JSON. encbench-instr: exit
// codes, and under valgrind instruction counts that are identical from run to run.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct Proc {
  int status = -1;
  std::string output;  // stdout and stderr
};

// Runs `binary args` with a time limit (a server that failed to refuse a flag would otherwise run).
// Valgrind runs get more: on the loaded 2-core machine one took up to 90 s.
Proc run(const std::string& binary, const std::string& args, int limit_s = 60) {
  const std::string cmd = "timeout " + std::to_string(limit_s) + " " + binary + " " + args + " 2>&1";
  Proc r;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
  const int rc = ::pclose(p);
  r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  return r;
}

Proc encbench(const std::string& args) { return run(ENCBENCH_BINARY, args); }

// stdout and stderr apart: an error must be the only thing said, with nothing on stdout before it.
struct SplitProc {
  int status = -1;
  std::string out, err;
};

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

SplitProc encbench_split(const std::string& args, int limit_s = 60) {
  const fs::path err = fs::temp_directory_path() / ("encbench-cli-stderr-" + std::to_string(::getpid()));
  const std::string cmd = "timeout " + std::to_string(limit_s) + " " + ENCBENCH_BINARY + " " + args + " 2>" + err.string();
  SplitProc s;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return s;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) s.out.append(buf, n);
  const int rc = ::pclose(p);
  s.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  s.err = read_all(err);
  fs::remove(err);
  return s;
}

std::size_t lines_in(const std::string& text) {
  std::size_t n = 0;
  for (char c : text) n += c == '\n' ? 1 : 0;
  return n + (!text.empty() && text.back() != '\n' ? 1 : 0);
}

// A socket listening on loopback at a port the kernel picks (held until close): a port taken.
struct HeldPort {
  int fd = -1;
  int port = 0;
  HeldPort() {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 && ::listen(fd, 4) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0)
      port = ntohs(addr.sin_port);
  }
  ~HeldPort() { ::close(fd); }
};

// A loopback port where nothing listens (taken by the kernel, then let go).
int free_port() {
  const HeldPort held;
  return held.port;
}

fs::path temp_dir(const std::string& tag) {
  const fs::path d = fs::temp_directory_path() / ("encbench-cli-" + tag + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

json read_json(const fs::path& p) {
  std::ifstream in(p);
  return json::parse(in);
}

struct BadCase {
  std::string args;
  std::string reason;  // a part of the message that names the problem
};

void expect_refused(const std::vector<BadCase>& cases) {
  for (const auto& c : cases) {
    const Proc r = encbench(c.args);
    EXPECT_EQ(r.status, 2) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find(c.reason), std::string::npos) << c.args << ": expected '" << c.reason
                                                           << "' in:\n" << r.output;
    EXPECT_LT(r.output.size(), 600u) << c.args << ": a clear error, not a dump";
  }
}

const std::string kTiny = "--model tiny-qwen2.5-vl --image 448x448 --device sim:ascend-910b";

TEST(CliEncode, BadFlagsExit2WithTheReason) {
  expect_refused({
      {"encode --bogus", "--bogus"},
      {"encode " + kTiny + " --preset nope", "unknown preset 'nope'"},
      {"encode " + kTiny + " --clock sideways", "unknown clock 'sideways'"},
      {"encode --model tiny-qwen2.5-vl --image 448x448 --device warp9", "unknown device 'warp9'"},
      {"encode " + kTiny + " --seq-lens sometimes", "--seq-lens: unknown value 'sometimes'"},
      {"encode " + kTiny + " --forwards 0", "--forwards must be in"},
      {"encode --model tiny-qwen2.5-vl --image 12x", "--image '12x'"},
      {"encode --model tiny-qwen2.5-vl", "no inputs"},
      {"encode " + kTiny + " --forwards many", "--forwards"},
      {"encode " + kTiny + " --cuda-gemm-math bf16", "--cuda-gemm-math: unknown value 'bf16'"},
  });
}

TEST(CliEncode, FlagsReachTheResult) {
  const fs::path dir = temp_dir("encode");
  const Proc r = encbench("encode " + kTiny + " --preset optimized --seq-lens layer0-cache --forwards 3 --warmup 1 --json " +
                         (dir / "e.json").string());
  ASSERT_EQ(r.status, 0) << r.output;
  const json j = read_json(dir / "e.json");
  EXPECT_EQ(j["schema"], "encbench-encode");
  EXPECT_EQ(j["preset"], "custom");                      // a preset with an override
  EXPECT_EQ(j["toggles"]["seq_lens"], "layer0-cache");  // the override beats the preset
  EXPECT_EQ(j["toggles"]["kernel"], "fused-varlen");     // the rest is the preset's
  EXPECT_EQ(j["clock"], "virtual");                      // the default on sim devices
  EXPECT_EQ(j["cuda_gemm_math"], "fp32");                // the default (used on cuda devices only)
  EXPECT_EQ(j["samples"]["forward_ms"].size(), 3u);
  // layer0-cache: exactly one D2H sync per forward.
  EXPECT_DOUBLE_EQ(j["summary"]["syncs_per_forward"].get<double>(), 1.0);
  for (double v : j["samples"]["forward_ms"]) {
    EXPECT_GT(v, 0.0);
    EXPECT_LT(v, 1000.0);
  }
  fs::remove_all(dir);
}

// encode runs the encoder with its MLP by default, as serve and run do; --no-mlp leaves it out and
// --mlp is accepted as before (the virtual clock makes the two defaults' forwards bit-identical).
TEST(CliEncode, MlpIsOnByDefault) {
  const fs::path dir = temp_dir("encode-mlp");
  const std::string base = "encode " + kTiny + " --forwards 2 --warmup 0 --json ";
  ASSERT_EQ(encbench(base + (dir / "default.json").string()).status, 0);
  ASSERT_EQ(encbench(base + (dir / "mlp.json").string() + " --mlp").status, 0);
  const Proc without = encbench(base + (dir / "no-mlp.json").string() + " --no-mlp");
  ASSERT_EQ(without.status, 0) << without.output;
  const json d = read_json(dir / "default.json"), m = read_json(dir / "mlp.json"), n = read_json(dir / "no-mlp.json");
  EXPECT_TRUE(d["mlp"].get<bool>());
  EXPECT_TRUE(m["mlp"].get<bool>());
  EXPECT_FALSE(n["mlp"].get<bool>());
  EXPECT_EQ(d["samples"]["forward_ms"], m["samples"]["forward_ms"]);
  // The MLP is two GEMMs of 4x the hidden width a layer: it costs more than it could round away.
  EXPECT_GT(d["summary"]["forward_ms"].get<double>(), 1.2 * n["summary"]["forward_ms"].get<double>());
  EXPECT_NE(without.output.find("attention blocks only (--no-mlp)"), std::string::npos) << without.output;
  fs::remove_all(dir);
}

TEST(CliAb, BadFlagsExit2WithTheReason) {
  expect_refused({
      {"ab --bogus", "--bogus"},
      {"ab " + kTiny + " --a nope", "unknown preset 'nope'"},
      {"ab " + kTiny + " --alpha 2", "--alpha must be in (0, 0.5)"},
      {"ab " + kTiny + " --b-kernel sloppy", "--kernel: unknown value 'sloppy'"},
  });
}

TEST(CliAb, FlagsReachTheResult) {
  const fs::path dir = temp_dir("ab");
  const Proc r = encbench("ab " + kTiny + " --a baseline --b optimized --b-seq-lens value-cache --forwards 2 --json " +
                         (dir / "ab.json").string());
  ASSERT_EQ(r.status, 0) << r.output;
  const json j = read_json(dir / "ab.json");
  EXPECT_EQ(j["schema"], "encbench-ab");
  EXPECT_EQ(j["a"]["toggles"]["seq_lens"], "d2h-per-layer");
  EXPECT_EQ(j["b"]["toggles"]["seq_lens"], "value-cache");
  EXPECT_EQ(j["a"]["samples"]["forward_ms"].size(), 2u);
  EXPECT_EQ(j["b"]["samples"]["forward_ms"].size(), 2u);
  fs::remove_all(dir);
}

TEST(CliRun, BadFlagsExit2WithTheReason) {
  expect_refused({
      {"run --bogus", "--bogus"},
      {"run --request-rate -1", "--request-rate must be positive"},
      {"run --presets baseline", "--presets needs exactly two presets"},
      {"run --scenario /nonexistent/scenario.json", "cannot read scenario file"},
      {"run --rounds 0", "--rounds must be in"},
      {"run --clock virtual --sample-text-tokens 100", "they need --workload"},
      {"run --clock virtual --workload w.json --num-prompts 10 --sample-output-tokens 5",
       "at least one token for each of the 10 requests"},
      {"run --sample-text-tokens -3", "--sample-text-tokens"},
      {"run --presets baseline,nosuch", "--presets: unknown preset 'nosuch'"},
      {"run --clock virtual --sweep request-rate=1,2 --plot-timeline t.html", "--plot-timeline draws one run, not a sweep"},
  });
}

// A scenario whose published table gives the run's totals, without sample_totals: the draws stay
// free and a note names the flags; with them the run reports the totals as its input.
TEST(CliRun, PublishedTotalsPointAtTheSampleFlags) {
  const char* src = std::getenv("ENCBENCH_SOURCE_DIR");
  ASSERT_NE(src, nullptr);
  json scenario = read_json(fs::path(src) / "scenarios/seeds/pr5810.json");
  scenario.erase("sample_totals");
  scenario["workload"] = (fs::path(src) / scenario["workload"].get<std::string>()).string();
  scenario["serving_model"] = (fs::path(src) / scenario["serving_model"].get<std::string>()).string();
  const fs::path dir = temp_dir("published-totals");
  std::ofstream(dir / "s.json") << scenario.dump();
  const std::string base = "run --scenario " + (dir / "s.json").string() + " --seeds 1 --profiles-dir " +
                           (fs::path(src) / "scenarios/devices").string() + " --result " + (dir / "r.json").string();
  const Proc free = encbench(base);
  ASSERT_EQ(free.status, 0) << free.output;
  EXPECT_NE(free.output.find("the published table gives this run's totals (input 7191, generated 1004)"),
            std::string::npos) << free.output;
  EXPECT_LT(read_json(dir / "r.json")["arms"][0]["seeds"][0]["serving"]["total_input_tokens"].get<int>(), 7191);
  const Proc held = encbench(base + " --sample-text-tokens 7191");
  ASSERT_EQ(held.status, 0) << held.output;
  EXPECT_EQ(held.output.find("the published table gives"), std::string::npos);
  EXPECT_NE(held.output.find("Total input tokens (input)"), std::string::npos);
  EXPECT_EQ(read_json(dir / "r.json")["arms"][0]["seeds"][0]["serving"]["total_input_tokens"].get<int>(), 7191);
}

TEST(CliServe, BadFlagsExit2WithTheReason) {
  expect_refused({
      {"serve --bogus", "--bogus"},
      {"serve --port 70000", "--port must be in [0, 65535]"},
      {"serve --encoder-preset nope", "unknown preset 'nope'"},
      {"serve --encoder weird", "--encoder must be real or cost-model"},
      {"serve --limit-mm-per-prompt abc", "--limit-mm-per-prompt"},
      {"serve --device warp9", "--device must be cpu or sim:<profile>"},
      {"serve --fail-rate 2 --port 0", "--fail-rate"},
      {"serve --disconnect-rate -1 --port 0", "--disconnect-rate"},
      {"serve --stall-ms -5 --port 0", "--stall-ms"},
      {"serve --encoder-clock sideways --port 0", "--encoder-clock must be real or virtual"},
      {"serve --encoder-clock virtual --device cpu --port 0", "--encoder-clock virtual needs --encoder real on a sim"},
      {"serve --encoder-clock virtual --encoder cost-model --port 0", "--encoder-clock virtual needs"},
      {"serve --max-api-server-queue 0 --port 0", "--max-api-server-queue must be in [1, 1048576]"},
      {"run --live-encoder-clock sideways", "--live-encoder-clock"},
      // The device library's message, as encode's: the known profiles listed.
      {"serve --device sim:nope --port 0", "known profiles: "},
      {"serve --device sim:nope --port 0", "ascend-910b"},
  });
}

// A port another process holds, or an address this host does not have: the OS's reason in one
// line (the error code used to be read after close() had reset it: "Success"), exit 2.
// One 200-in/128-out request pair against `encbench serve --port 0 FLAGS` (1 req/s, ignore_eos):
// the client's mean TPOT, and the server's log (its first line says which serving model it runs).
struct ServedTpot {
  double mean_tpot_ms = 0;
  std::string serve_log;
  std::string server_device;  // what the result says the server ran on
};

ServedTpot served_tpot(const fs::path& dir, const std::string& serve_flags) {
  const std::string e = ENCBENCH_BINARY;
  const fs::path log = dir / "serve.log", result = dir / "r.json";
  const std::string script =
      e + " serve --port 0 " + serve_flags + " > " + log.string() + " 2>&1 &\npid=$!\n" +
      "for i in $(seq 600); do grep -q listening " + log.string() + " && break; sleep 0.1; done\n" +
      "port=$(grep -o 'port=[0-9]*' " + log.string() + " | head -1 | cut -d= -f2)\n" + e +
      " bench serve --backend openai-chat --endpoint /v1/chat/completions --port $port --dataset-name random "
      "--random-input-len 200 --random-output-len 128 --num-prompts 2 --request-rate 1 --ignore-eos --save-result "
      "--result-dir " + dir.string() + " --result-filename r.json > " + (dir / "bench.log").string() + " 2>&1\n" +
      "rc=$?\nkill -INT $pid; wait $pid\nexit $rc\n";
  std::ofstream(dir / "run.sh") << script;
  ServedTpot t;
  const Proc r = run("bash", (dir / "run.sh").string(), 120);
  t.serve_log = read_all(log);
  EXPECT_EQ(r.status, 0) << r.output << read_all(dir / "bench.log") << t.serve_log;
  if (fs::exists(result)) {
    const json j = read_json(result);
    t.mean_tpot_ms = j["mean_tpot_ms"].get<double>();
    t.server_device = j.value("server_device", "");
  }
  return t;
}

// serve's default device and model (sim:ascend-910b, qwen3-vl-8b) run the calibrated serving model
// the project ships, and its first line says so; --serving-model roofline is the roofline alone.
// Hand computation of one decode step (Qwen3-8B's 16.38 GB of bf16 weights, the profile's
// 1.6 TB/s), from the serving model file's coefficients: calibrated = 16.38 / (1.6 x 0.70 of
// bandwidth) + 10 ms fixed + 0.191 ms a sequence + 455 LM kernels x 4 us of device gaps = 26.64 ms
// (plus a few us of KV reads and the real clock's lateness); roofline = 16.38 / 1.6 + 2 ms fixed
// = 12.24 ms. A refit of the serving model moves the first: rerun and update both.
TEST(CliServe, DefaultsToTheCalibratedServingModel) {
  const fs::path dir = temp_dir("serve-default-model");
  fs::create_directories(dir / "calibrated");
  fs::create_directories(dir / "roofline");
  const ServedTpot calibrated = served_tpot(dir / "calibrated", "");
  const std::string first_line = calibrated.serve_log.substr(0, calibrated.serve_log.find('\n'));
  EXPECT_NE(first_line.find("serving_model="), std::string::npos) << first_line;
  EXPECT_NE(first_line.find("scenarios/serving/ascend-910b-qwen3-vl-8b.json"), std::string::npos) << first_line;
  EXPECT_NE(calibrated.serve_log.find("calibrated default for sim:ascend-910b and qwen3-vl-8b"), std::string::npos);
  // The client recorded the server's device (from its /v1/models), not its own machine's.
  EXPECT_EQ(calibrated.server_device, "sim:ascend-910b");
  EXPECT_GT(calibrated.mean_tpot_ms, 26.3);
  EXPECT_LT(calibrated.mean_tpot_ms, 29.5);
  const ServedTpot roofline = served_tpot(dir / "roofline", "--serving-model roofline");
  EXPECT_NE(roofline.serve_log.find("serving_model=roofline"), std::string::npos) << roofline.serve_log;
  EXPECT_GT(roofline.mean_tpot_ms, 12.0);
  EXPECT_LT(roofline.mean_tpot_ms, 14.5);
  fs::remove_all(dir);
}

// run: the same default, said on its first progress line and kept in the result's scenario.
TEST(CliRun, DefaultsToTheCalibratedServingModel) {
  const fs::path dir = temp_dir("run-default-model");
  const std::string base = "run --clock virtual --num-prompts 20 --seeds 1 --result ";
  const Proc calibrated = encbench(base + (dir / "c.json").string());
  ASSERT_EQ(calibrated.status, 0) << calibrated.output;
  EXPECT_EQ(calibrated.output.rfind("[run] serving model: ", 0), 0u) << calibrated.output.substr(0, 300);
  EXPECT_NE(calibrated.output.find("ascend-910b-qwen3-vl-8b.json (calibrated default"), std::string::npos);
  EXPECT_TRUE(read_json(dir / "c.json")["scenario"]["serving_model"].get<std::string>().ends_with(
      "scenarios/serving/ascend-910b-qwen3-vl-8b.json"));
  const Proc roofline = encbench(base + (dir / "r.json").string() + " --serving-model roofline");
  ASSERT_EQ(roofline.status, 0) << roofline.output;
  EXPECT_EQ(roofline.output.rfind("[run] serving model: roofline", 0), 0u) << roofline.output.substr(0, 300);
  EXPECT_EQ(read_json(dir / "r.json")["scenario"]["serving_model"], "");
  // The calibrated decode step is the slower one (26.6 vs 12.2 ms by hand, above).
  const auto tpot = [&](const char* name) {
    return read_json(dir / name)["arms"][0]["seeds"][0]["serving"]["mean_tpot_ms"].get<double>();
  };
  EXPECT_GT(tpot("c.json"), tpot("r.json") + 5.0);
  fs::remove_all(dir);
}

TEST(CliServe, CannotListenSaysTheOsReason) {
  const HeldPort held;
  ASSERT_GT(held.port, 0);
  const SplitProc taken = encbench_split("serve --null --port " + std::to_string(held.port));
  EXPECT_EQ(taken.status, 2) << taken.err;
  EXPECT_NE(taken.err.find("cannot listen on 127.0.0.1:" + std::to_string(held.port) + ": Address already in use"),
            std::string::npos) << taken.err;
  EXPECT_EQ(lines_in(taken.err), 1u) << taken.err;
  // 192.0.2.1 is TEST-NET-1 (RFC 5737): no host has it.
  const SplitProc foreign = encbench_split("serve --null --host 192.0.2.1 --port 0");
  EXPECT_EQ(foreign.status, 2) << foreign.err;
  EXPECT_NE(foreign.err.find("Cannot assign requested address"), std::string::npos) << foreign.err;
  EXPECT_EQ(foreign.err.find("Success"), std::string::npos) << foreign.err;
  EXPECT_EQ(lines_in(foreign.err), 1u) << foreign.err;
}

TEST(CliBenchServe, ConnectionLimitsBeyondTheFileLimitExit2BeforeContactingTheServer) {
  // Port 9 has no server: had the client contacted it, the error would be "cannot reach", exit 1.
  const std::string base = "bench serve --backend openai-chat --base-url http://127.0.0.1:9 --model m "
                           "--dataset-name random --num-prompts 2 ";
  expect_refused({
      {base + "--max-connections 999999999", "ulimit -n"},
      {base + "--max-connections 0", "--max-connections must be >= 1"},
      {base + "--max-connections -3", "--max-connections must be >= 1"},
  });
}

// A dataset path that does not exist, whatever --dataset-name: one line, exit 2, nothing on stdout.
// Only an owner/name id adds the way to a local export (a pointer to the docs, not a script).
TEST(CliBenchServe, MissingDatasetFileIsOneLine) {
  const std::string base = "bench serve --backend openai-chat --base-url http://127.0.0.1:" +
                           std::to_string(free_port()) + " --model m --num-prompts 2 ";
  for (const std::string name : {"hf", "custom", "sharegpt", "burstgpt"}) {
    const SplitProc r = encbench_split(base + "--dataset-name " + name + " --dataset-path out/nope.jsonl");
    EXPECT_EQ(r.status, 2) << name << "\n" << r.err;
    EXPECT_NE(r.err.find("--dataset-path 'out/nope.jsonl': no such file or directory"), std::string::npos)
        << name << "\n" << r.err;
    EXPECT_EQ(lines_in(r.err), 1u) << name << "\n" << r.err;
    EXPECT_EQ(r.out, "") << name;
  }
  const SplitProc id = encbench_split(base + "--dataset-name hf --dataset-path lmarena-ai/no-such-dataset-xyz");
  EXPECT_EQ(id.status, 2) << id.err;
  EXPECT_NE(id.err.find("no such file"), std::string::npos) << id.err;
  EXPECT_NE(id.err.find("Hugging Face"), std::string::npos) << id.err;
  EXPECT_NE(id.err.find("docs/client.md"), std::string::npos) << id.err;
  EXPECT_LE(lines_in(id.err), 3u) << id.err;
  EXPECT_EQ(id.out, "");
}

// Nothing listens at the server's address: bench serve (with or without --model) and bench sweep
// say so in one line on stderr, print nothing on stdout, and exit 1 (docs/client.md).
TEST(CliBenchServe, UnreachableServerIsOneLineExit1) {
  const std::string url = "http://127.0.0.1:" + std::to_string(free_port());
  const std::string workload = " --backend openai-chat --dataset-name random --num-prompts 2 --base-url " + url;
  for (const std::string& args : {"bench serve --model m" + workload, "bench serve" + workload,
                                 "bench sweep --sweep request-rate=1,2 --model m" + workload}) {
    const SplitProc r = encbench_split(args);
    EXPECT_EQ(r.status, 1) << args << "\n" << r.out << r.err;
    EXPECT_NE(r.err.find("cannot reach " + url), std::string::npos) << args << "\n" << r.err;
    EXPECT_EQ(lines_in(r.err), 1u) << args << "\n" << r.err;
    EXPECT_EQ(r.out, "") << args;
  }
}

// An arm's port taken before anything started: said once, exit 2, and no ./ab-a-vs-b/ left.
TEST(CliBenchAb, TakenArmPortLeavesNothingBehind) {
  const fs::path dir = temp_dir("bench-ab-port");
  const HeldPort held;
  const std::string serve = std::string(ENCBENCH_BINARY) + " serve --null --port {port}";
  const SplitProc r = encbench_split("bench ab --arm 'a=" + serve + "' --arm 'b=" + serve + "' --arm-port a:" +
                                     std::to_string(held.port) + " --rounds 1 --dataset-name random --num-prompts 4 "
                                     "--result-dir " + dir.string());
  EXPECT_EQ(r.status, 2) << r.out << r.err;
  const std::string said = "port " + std::to_string(held.port) + " is already in use";
  std::size_t times = 0;
  const std::string all = r.out + r.err;
  for (auto pos = all.find(said); pos != std::string::npos; pos = all.find(said, pos + 1)) ++times;
  EXPECT_EQ(times, 1u) << all;
  EXPECT_FALSE(fs::exists(dir / "ab-a-vs-b"));
  fs::remove_all(dir);
}

TEST(CliBenchAb, BadFlagsExit2WithTheReason) {
  const std::string arms = "bench ab --arm 'a=srv --port {port}' --arm 'b=srv --port {port}' ";
  expect_refused({
      {"bench ab --arm a=http://127.0.0.1:9", "exactly two --arm"},
      {"bench ab --arm 'a=srv' --arm 'b=srv {port}'", "--arm a: the command needs {port}"},
      {"bench ab --arm a=http://h:1 --arm a=http://h:2", "different names"},
      {arms + "--rounds 0", "--rounds must be 1..1000"},
      {arms + "--plan 3x", "--plan expects a percentage"},
      {arms + "--port 8000", "--port does not apply"},
      {arms + "--arm-env c:K=V", "--arm-env: no arm called 'c'"},
      {arms + "--arm-port a:0", "--arm-port a: port must be 1..65535"},
      {arms + "--alpha 0.7", "--alpha must be in (0, 0.5)"},
  });
}

// The CLI end to end: two encbench servers (--null: instant tokens) started per round by the
// recipes, one round each; the result and the page are written, exit 0.
TEST(CliBenchAb, TwoStartedServersOneRound) {
  const fs::path dir = temp_dir("bench-ab");
  const std::string serve = std::string(ENCBENCH_BINARY) + " serve --null --port {port}";
  const Proc r = encbench("bench ab --arm 'a=" + serve + "' --arm 'b=" + serve + "' --rounds 1 "
                          "--dataset-name random --random-input-len 8 --random-output-len 4 --num-prompts 8 "
                          "--ready-timeout 60 --ab-dir " + dir.string());
  const json j = read_json(dir / "ab.json");
  // Exit 1 only for NO VERDICT, which a loaded machine may cause (the client fell behind).
  if (j["invalid_reasons"].empty())
    EXPECT_EQ(r.status, 0) << r.output;
  else
    EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_EQ(j["schema"], "encbench-live-ab");
  ASSERT_EQ(j["arms"].size(), 2u);
  for (const auto& arm : j["arms"]) {
    ASSERT_EQ(arm["rounds"].size(), 1u);
    EXPECT_EQ(arm["rounds"][0]["serving"]["completed"], 8);
    EXPECT_EQ(arm["rounds"][0]["server"]["ready_endpoint"], "/health");
    EXPECT_TRUE(arm["rounds"][0]["server"]["port_free_after_stop"].get<bool>());
  }
  EXPECT_TRUE(fs::exists(dir / "ab.html"));
  EXPECT_NE(r.output.find("Minimum detectable effect"), std::string::npos);
  // No tokenizer: said once for the process, not per warm-up and measured run of each arm.
  std::size_t notes = 0;
  for (auto pos = r.output.find("no tokenizer"); pos != std::string::npos; pos = r.output.find("no tokenizer", pos + 1))
    ++notes;
  EXPECT_EQ(notes, 1u) << r.output;
  fs::remove_all(dir);
}

TEST(CliHelp, EveryCommandListsItsFlags) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> commands = {
      {"encode", {"--model", "--image", "--device", "--clock", "--preset", "--forwards", "--json"}},
      {"ab", {"--a", "--b", "--alpha", "--forwards", "--json"}},
      {"run", {"--scenario", "--rounds", "--request-rate", "--presets", "--result"}},
      {"serve", {"--port", "--encoder-preset", "--fail-rate", "--stall-ms"}},
      {"bench serve", {"--max-connections", "--max-concurrency", "--request-rate", "--idle-timeout", "--max-response-bytes",
                       "--max-output-chunks", "--allow-all-failed"}},
      {"bench ab", {"--arm", "--arm-env", "--arm-cwd", "--arm-port", "--rounds", "--ready-timeout", "--stop-grace",
                    "--plan", "--min-change", "--ab-dir", "--request-rate", "--dataset-name", "--num-prompts"}},
  };
  for (const auto& [cmd, flags] : commands) {
    const Proc r = encbench(cmd + " --help");
    EXPECT_EQ(r.status, 0) << cmd;
    for (const auto& f : flags) EXPECT_NE(r.output.find(f), std::string::npos) << cmd << " --help lacks " << f;
  }
}

TEST(CliGate, ScriptRefusesBadFlagsAndListsItsOwn) {
  // ENCBENCH_SOURCE_DIR and ENCBENCH_BINARY_DIR both come from CTest (cmake/EncbenchTargets.cmake).
  const char* src = std::getenv("ENCBENCH_SOURCE_DIR");
  const char* bin = std::getenv("ENCBENCH_BINARY_DIR");
  ASSERT_NE(src, nullptr);
  ASSERT_NE(bin, nullptr) << "ENCBENCH_BINARY_DIR did not reach the test";
  EXPECT_TRUE(fs::exists(fs::path(bin) / "CMakeCache.txt")) << bin;
  const std::string script = std::string(src) + "/scripts/ci-gate.sh";
  for (const std::string args : {"--bogus", "--rounds 0", "--micro-reps x", "--base-build /nonexistent/build",
                                 "--micro-min-time fast"}) {
    const Proc r = run(script, args);
    EXPECT_EQ(r.status, 2) << args << "\n" << r.output;
    EXPECT_NE(r.output.find("ci-gate: "), std::string::npos) << args << "\n" << r.output;
  }
  const Proc h = run(script, "--help");
  EXPECT_EQ(h.status, 0);
  for (const char* f : {"--base", "--rounds", "--instr-filter", "--no-instr", "--micro-filter", "--serving-cmd",
                        "--base-build", "--head-build", "--gate", "--out", "--keep"})
    EXPECT_NE(h.output.find(f), std::string::npos) << f;
}

#ifdef ENCBENCH_INSTR_BINARY
Proc instr(const std::string& args) { return run(ENCBENCH_INSTR_BINARY, args, 280); }

TEST(CliInstr, BadFlagsExit2AndHelpListsEveryFlag) {
  for (const std::string args : {"--bogus", "--forwards 0", "--forwards x", "--filter '('", "--filter nomatch",
                                 "--out"}) {
    const Proc r = instr(args);
    EXPECT_EQ(r.status, 2) << args << "\n" << r.output;
    EXPECT_NE(r.output.find("encbench-instr:"), std::string::npos) << args << "\n" << r.output;
  }
  const Proc h = instr("--help");
  EXPECT_EQ(h.status, 0);
  for (const char* f : {"--out", "--filter", "--forwards", "--list", "--valgrind", "--keep-dumps"})
    EXPECT_NE(h.output.find(f), std::string::npos) << f;
  const Proc l = instr("--list");
  EXPECT_EQ(l.status, 0);
  EXPECT_NE(l.output.find("instr/kernels/attention/fused_varlen/d80/1x256"), std::string::npos);
  EXPECT_NE(l.output.find("instr/encoder/forward/tiny-qwen2.5-vl/sim:ascend-910b/optimized"), std::string::npos);
  // A missing valgrind is an error of its own (3), not a crash or empty output.
  const Proc v = instr("--valgrind /nonexistent/valgrind --filter fused_varlen/d80/4x64");
  EXPECT_EQ(v.status, 3) << v.output;
}

bool have_valgrind() { return std::system("valgrind --version >/dev/null 2>&1") == 0; }

TEST(CliInstr, KernelCountsAreIdenticalAcrossRuns) {
  if (!have_valgrind()) GTEST_SKIP() << "valgrind is not installed";
  const fs::path dir = temp_dir("instr-kernel");
  std::vector<double> counts;
  for (int i = 0; i < 2; ++i) {
    std::string name = "k";
    name += std::to_string(i);
    const fs::path out = dir / (name + ".json");
    const Proc r = instr("--filter fused_varlen/d80/4x64 --out " + out.string());
    ASSERT_EQ(r.status, 0) << r.output;
    const json j = read_json(out);
    ASSERT_EQ(j["benchmarks"].size(), 1u);
    counts.push_back(j["benchmarks"][0]["instructions"].get<double>());
  }
  // 4 heads x 4 windows of 64 tokens x d80: ~2.6 MFLOP of attention; some millions of instructions.
  EXPECT_GT(counts[0], 1e6);
  EXPECT_LT(counts[0], 1e8);
  EXPECT_EQ(counts[0], counts[1]);
  fs::remove_all(dir);
}

TEST(CliInstr, EncoderHostPathPerLayer) {
  if (!have_valgrind()) GTEST_SKIP() << "valgrind is not installed";
  const fs::path dir = temp_dir("instr-encoder");
  const Proc r = instr("--filter 'instr/encoder' --forwards 1 --out " + (dir / "e.json").string());
  ASSERT_EQ(r.status, 0) << r.output;
  const json j = read_json(dir / "e.json");
  ASSERT_EQ(j["benchmarks"].size(), 2u);
  double per_forward[2] = {0, 0};
  for (std::size_t i = 0; i < 2; ++i) {
    const json& row = j["benchmarks"][i];
    double parts = row["host_instructions_pre_layers"].get<double>() + row["host_instructions_post_layers"].get<double>();
    for (int layer = 0; layer < 8; ++layer) {  // tiny-qwen2.5-vl has depth 8
      const std::string key = "host_instructions_layer_" + std::to_string(layer);
      ASSERT_TRUE(row.contains(key)) << key;
      EXPECT_GT(row[key].get<double>(), 1000.0) << key;
      parts += row[key].get<double>();
    }
    EXPECT_FALSE(row.contains("host_instructions_layer_8"));
    per_forward[i] = row["host_instructions_per_forward"].get<double>();
    EXPECT_DOUBLE_EQ(parts, per_forward[i]);
    EXPECT_GT(per_forward[i], 1e4);
    EXPECT_LT(per_forward[i], 1e7);
  }
  EXPECT_NE(j["benchmarks"][0]["name"].get<std::string>().find("baseline"), std::string::npos);
  // The optimized preset's host path does less per forward and never syncs; baseline syncs per layer.
  EXPECT_LT(per_forward[1], per_forward[0]);
  EXPECT_DOUBLE_EQ(j["benchmarks"][0]["syncs_per_forward"].get<double>(), 8.0);
  EXPECT_DOUBLE_EQ(j["benchmarks"][1]["syncs_per_forward"].get<double>(), 0.0);
  fs::remove_all(dir);
}
#endif

}  // namespace
