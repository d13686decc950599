// `encbench trace analyze` end to end: output files, result envelope, exit code 2 on bad input.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "harness/core/result_json.hpp"
#include "tests/trace/trace_test_support.hpp"
#include "tests/support/process.hpp"

using encbench::trace::support::fixture;
namespace fs = std::filesystem;

namespace {

std::string quote(const fs::path& path) { return encbench::testing::shell_quote(path); }

// Arguments joined by spaces.
template <class... Parts>
std::string args_of(const Parts&... parts) {
  std::string joined;
  ((joined += parts, joined += ' '), ...);
  return joined;
}

int run_cli(const std::string& args, const fs::path& log) {
  std::string command = quote(ENCBENCH_CLI_PATH);
  command += " trace analyze ";
  command += args;
  command += " > ";
  command += quote(log);
  command += " 2>&1";
  const int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string slurp(const fs::path& p) { return encbench::testing::read_text_file(p); }

}  // namespace

TEST(TraceCli, WritesEnvelopeJsonAndAnnotatedChromeTrace) {
  const auto dir = encbench::trace::support::scratch_dir("cli");
  const auto json_out = dir / "analysis.json";
  const auto chrome_out = dir / "gaps.json";
  const int rc = run_cli(args_of(quote(fixture("kineto_two_streams.json")), "--json", quote(json_out),
                                 "--chrome-trace", quote(chrome_out), "--top", "3"),
                         dir / "log.txt");
  ASSERT_EQ(rc, 0) << slurp(dir / "log.txt");
  const std::string log = slurp(dir / "log.txt");
  EXPECT_NE(log.find("HTA classes"), std::string::npos) << log;
  const nlohmann::json j = encbench::read_json_file(json_out);
  EXPECT_EQ(j["schema"], "encbench-trace-analysis");
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_TRUE(j.contains("git_sha"));
  EXPECT_TRUE(j.contains("argv"));
  EXPECT_DOUBLE_EQ(j["devices"][0]["hta_classes"]["host_wait_us"].get<double>(), 320.0);
  EXPECT_EQ(j["devices"][0]["largest_gaps"].size(), 3u);
  EXPECT_GT(j["input"]["parse_s"].get<double>(), 0.0);
  EXPECT_GT(j["input"]["peak_rss_mib"].get<double>(), 0.0);
  const nlohmann::json chrome = encbench::read_json_file(chrome_out);
  ASSERT_TRUE(chrome.contains("traceEvents"));
  std::size_t gaps = 0, counters = 0, device_ops = 0;
  for (const auto& e : chrome["traceEvents"]) {
    gaps += e.value("cat", "") == "idle_gap";
    counters += e.value("ph", "") == "C";
    device_ops += e.value("ph", "") == "X" && e.value("cat", "") != "idle_gap" && e.value("pid", 0) == 2;
  }
  EXPECT_EQ(gaps, 4u);        // the four device gaps, annotated
  EXPECT_EQ(counters, 8u + 6u);  // queue length change points of streams 7 and 13
  EXPECT_EQ(device_ops, 7u);
  // The annotated trace is itself an encbench trace: analysing it again gives the same idle time.
  const auto again = dir / "again.json";
  ASSERT_EQ(run_cli(args_of(quote(chrome_out), "--json", quote(again)), dir / "log2.txt"), 0)
      << slurp(dir / "log2.txt");
  const nlohmann::json j2 = encbench::read_json_file(again);
  EXPECT_EQ(j2["input"]["layout"], "encbench");
  EXPECT_EQ(j2["devices"][0]["idle"]["idle_us"], j["devices"][0]["idle"]["idle_us"]);
  EXPECT_EQ(j2["devices"][0]["idle"]["idle_us_by_class"], j["devices"][0]["idle"]["idle_us_by_class"]);
  fs::remove_all(dir);
}

TEST(TraceCli, BadInputExitsTwoWithAMessage) {
  const auto dir = encbench::trace::support::scratch_dir("cli_bad");
  std::ofstream(dir / "not.json") << "hello";
  std::ofstream(dir / "host_only.json") << R"({"traceEvents":[{"ph":"X","cat":"cpu_op","name":"a","pid":1,"tid":1,"ts":1,"dur":1}]})";
  encbench::trace::support::gzip_file(fixture("torch_npu_two_streams.json"), dir / "t.json.gz");
  fs::resize_file(dir / "t.json.gz", fs::file_size(dir / "t.json.gz") - 20);
  struct Case {
    std::string args, message;
  };
  const Case cases[] = {
      {quote(dir / "not.json"), "not valid JSON"},
      {quote(dir / "host_only.json"), "no device events"},
      {quote(dir / "t.json.gz"), "truncated"},
      {quote(dir / "missing.json"), "cannot read"},
      {args_of(quote(fixture("kineto_two_streams.json")), "--window", "5"), "--window"},
      {args_of(quote(fixture("kineto_two_streams.json")), "--stream", "42"), "no device ops match"},
      {args_of(quote(fixture("kineto_two_streams.json")), "--kernel-wait-threshold-us", "-1"), "threshold"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(run_cli(c.args, dir / "log.txt"), 2) << c.args;
    const std::string log = slurp(dir / "log.txt");
    EXPECT_NE(log.find(c.message), std::string::npos) << c.args << "\n" << log;
  }
  fs::remove_all(dir);
}

// The issue's round trip: what `encbench encode --trace` writes, `trace analyze` reads back with
// the same idle figures as encode reported for that (last) forward.
TEST(TraceCli, EncodeTraceRoundTripsWithTheSameIdleFigures) {
  const auto dir = encbench::trace::support::scratch_dir("cli_encode");
  std::string encode = quote(ENCBENCH_CLI_PATH);
  encode += args_of(" encode --device sim:ascend-910b --image 448x448 --forwards 1 --warmup 0 --trace",
                    quote(dir / "trace.json"), "--json", quote(dir / "encode.json"), "--max-gaps 5 >",
                    quote(dir / "encode.log"), "2>&1");
  const int status = std::system(encode.c_str());
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << slurp(dir / "encode.log");
  ASSERT_EQ(run_cli(args_of(quote(dir / "trace.json"), "--top 5 --json", quote(dir / "analysis.json")),
                    dir / "log.txt"),
            0)
      << slurp(dir / "log.txt");
  const nlohmann::json e = encbench::read_json_file(dir / "encode.json");
  const nlohmann::json a = encbench::read_json_file(dir / "analysis.json");
  EXPECT_EQ(a["input"]["layout"], "encbench");
  const auto& idle = a["devices"][0]["idle"];
  EXPECT_DOUBLE_EQ(idle["idle_fraction"].get<double>(), e["samples"]["idle_fraction"].back().get<double>());
  const auto& encode_gaps = e["gaps"];
  const auto& trace_gaps = idle["largest_gaps"];
  ASSERT_EQ(trace_gaps.size(), encode_gaps.size());
  ASSERT_GT(encode_gaps.size(), 0u);
  for (std::size_t i = 0; i < encode_gaps.size(); ++i) {
    EXPECT_DOUBLE_EQ(trace_gaps[i]["duration_us"].get<double>(), encode_gaps[i]["duration_us"].get<double>());
    EXPECT_EQ(trace_gaps[i]["class"], encode_gaps[i]["class"]);
    EXPECT_EQ(trace_gaps[i]["cause"], encode_gaps[i]["cause"]);
  }
  fs::remove_all(dir);
}
