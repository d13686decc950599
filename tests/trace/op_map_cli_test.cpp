// `--device trace:FILE` with a torch_npu-format trace of real kernel names, end to end through the
// real binary: encode times its ops through the shipped op name map (counts move from fell_back
// to mapped), --op-map replaces the map, bad maps exit 2 with a message, and serve reports the
// counts at shutdown and in its result JSON.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "harness/core/result_json.hpp"
#include "tests/trace/trace_test_support.hpp"
#include "tests/support/process.hpp"

using encbench::trace::support::fixture;
namespace fs = std::filesystem;

namespace {

// Built with += (GCC 12 warns falsely, -Wrestrict, on "'" + string + "'").
std::string quoted(const fs::path& path) {
  std::string text(1, '\'');
  text += path.string();
  text += '\'';
  return text;
}

std::string slurp(const fs::path& p) { return encbench::testing::read_text_file(p); }

int exit_code(const std::string& command) {
  const int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Runs `encbench ARGS` with stdout+stderr in `log`; returns the exit code.
int run_cli(const std::string& args, const fs::path& log) {
  return exit_code(quoted(ENCBENCH_CLI_PATH) + " " + args + " > " + quoted(log) + " 2>&1");
}

class OpMapCli : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = encbench::trace::support::scratch_dir("opmap"); }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string trace_device() const { return "--device trace:" + quoted(fixture("torch_npu_vit_forward.json")); }
  std::string encode_args() const {
    return "encode --model tiny-qwen3-vl --image 64x64 --mlp --forwards 1 --warmup 0 " + trace_device();
  }
  fs::path write(const std::string& name, const std::string& text) const {
    std::ofstream(dir_ / name) << text;
    return dir_ / name;
  }
  fs::path dir_;
};

constexpr const char* kEmptyMap =
    R"({"schema": "encbench-op-name-map", "version": 1, "encbench_ops": [], "trace_kernels": []})";

}  // namespace

TEST_F(OpMapCli, EncodeTimesRealKernelNamesThroughTheShippedMap) {
  const fs::path mapped = dir_ / "mapped.json";
  ASSERT_EQ(run_cli(encode_args() + " --json " + quoted(mapped), dir_ / "e1.log"), 0) << slurp(dir_ / "e1.log");
  const nlohmann::json counts = encbench::read_json_file(mapped)["device"]["measured_op_times"];
  EXPECT_GT(counts["mapped"].get<int>(), 0);
  // Only the host-to-device uploads fall back: a torch_npu MemCopy task does not say its direction
  // and the shipped map reads it as the D2H of the forward.
  EXPECT_LT(counts["fell_back"].get<int>(), counts["mapped"].get<int>() / 10);
  EXPECT_EQ(counts["exact"].get<int>(), 0);
  EXPECT_NE(slurp(dir_ / "e1.log").find("mapped by kernel role"), std::string::npos);

  // --op-map with an empty map: the same trace's kernels reach no op, everything falls back.
  const fs::path unmapped = dir_ / "unmapped.json";
  ASSERT_EQ(run_cli(encode_args() + " --op-map " + quoted(write("empty.json", kEmptyMap)) + " --json " +
                         quoted(unmapped),
                     dir_ / "e2.log"),
            0)
      << slurp(dir_ / "e2.log");
  const nlohmann::json none = encbench::read_json_file(unmapped)["device"]["measured_op_times"];
  EXPECT_EQ(none["mapped"].get<int>(), 0);
  EXPECT_EQ(none["fell_back"], counts["total"]);
  // The mapped ops took the trace's (slower than roofline) times.
  EXPECT_GT(encbench::read_json_file(mapped)["summary"]["device_busy_ms"].get<double>(),
            encbench::read_json_file(unmapped)["summary"]["device_busy_ms"].get<double>());
}

TEST_F(OpMapCli, BadOpMapsExitTwoWithAMessage) {
  EXPECT_EQ(run_cli(encode_args() + " --op-map " + quoted(dir_ / "missing.json"), dir_ / "b1.log"), 2);
  EXPECT_NE(slurp(dir_ / "b1.log").find("--op-map: no such file"), std::string::npos) << slurp(dir_ / "b1.log");
  EXPECT_EQ(run_cli(encode_args() + " --op-map " + quoted(write("bad.json", "{\"schema\": 3")), dir_ / "b2.log"), 2);
  EXPECT_NE(slurp(dir_ / "b2.log").find("not valid JSON"), std::string::npos) << slurp(dir_ / "b2.log");
  const std::string typo = R"({"schema": "encbench-op-name-map", "version": 1, "encbench_ops": [],
    "trace_kernels": [{"kernels": "MatMulV2", "role": "gem", "source": "x"}]})";
  EXPECT_EQ(run_cli(encode_args() + " --op-map " + quoted(write("typo.json", typo)), dir_ / "b3.log"), 2);
  EXPECT_NE(slurp(dir_ / "b3.log").find("role 'gem'"), std::string::npos) << slurp(dir_ / "b3.log");
  EXPECT_EQ(run_cli("encode --model tiny-qwen3-vl --image 64x64 --device sim:ascend-910b --op-map " +
                         quoted(write("empty.json", kEmptyMap)),
                     dir_ / "b4.log"),
            2);
  EXPECT_NE(slurp(dir_ / "b4.log").find("needs a trace:<file>"), std::string::npos) << slurp(dir_ / "b4.log");
}

TEST_F(OpMapCli, ServeReportsTheCountsAtShutdownAndInItsResult) {
  // Start, wait for the listening line (the start-up forward has run by then), stop with SIGINT.
  const fs::path log = dir_ / "serve.log", result = dir_ / "serve.json";
  const std::string serve = quoted(ENCBENCH_CLI_PATH) + " serve --port 0 --model tiny-qwen3-vl " + trace_device() +
                            " --result-json " + quoted(result) + " > " + quoted(log) + " 2>&1";
  const fs::path script = write("serve.sh", serve + " &\npid=$!\nfor i in $(seq 300); do grep -q listening " +
                                                 quoted(log) + " && break; sleep 0.1; done\nkill -INT $pid\nwait $pid\n");
  ASSERT_EQ(exit_code("sh " + quoted(script)), 0) << slurp(log);
  const std::string text = slurp(log);
  EXPECT_NE(text.find("encbench-serve op times from trace"), std::string::npos) << text;
  EXPECT_NE(text.find("mapped by kernel role"), std::string::npos) << text;
  const nlohmann::json j = encbench::read_json_file(result);
  EXPECT_GT(j["measured_op_times"]["mapped"].get<int>(), 0) << j.dump(2);
}
