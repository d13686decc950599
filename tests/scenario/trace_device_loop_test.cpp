// `serve` and `run` on a trace:FILE device report how their encoder ops got their times (issue
// #29): /metrics counts the lookups, and the preset A/B's result carries each arm's counts on
// both clocks. The trace is the torch_npu-format fixture with real kernel names, so the counts
// are mostly `mapped` (through the shipped op name map).
#include <gtest/gtest.h>

#include "tests/scenario/scenario_test_paths.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "harness/cli/preset_server.hpp"
#include "harness/scenario/preset_ab.hpp"
#include "harness/server/serve_command.hpp"
#include "harness/server/server.hpp"

namespace encbench {
namespace {

using testpaths::source_dir;

std::string trace_device() {
  return "trace:" + (source_dir() / "tests/trace/fixtures/torch_npu_vit_forward.json").string();
}

scenario::PresetAbOptions small_loop(const std::filesystem::path& dir) {
  scenario::PresetAbOptions o;
  o.wiring.start_server = cli::start_preset_server;  // the real-clock case: encbench serve in-process
  o.device = trace_device();
  o.profiles_dir = source_dir() / "scenarios/devices";
  o.presets = {"baseline", "optimized"};
  o.rounds = 1;
  o.num_prompts = 3;
  o.request_rate = 50;
  o.output_len = 3;
  o.image_width = 64;
  o.image_height = 48;
  o.profile = false;
  o.outputs.result_dir = dir;
  return o;
}

void expect_arm_counts(const nlohmann::json& result, const std::string& out) {
  for (int arm = 0; arm < 2; ++arm) {
    const nlohmann::json& counts = result["arms"][arm]["measured_op_times"];
    ASSERT_TRUE(counts.is_object()) << result["arms"][arm].dump(2);
    EXPECT_GT(counts["mapped"].get<int>(), 0);
    EXPECT_EQ(counts["total"].get<int>(), counts["exact"].get<int>() + counts["scaled"].get<int>() +
                                              counts["name_only"].get<int>() + counts["mapped"].get<int>() +
                                              counts["fell_back"].get<int>());
  }
  EXPECT_NE(out.find("Encoder op times (trace device"), std::string::npos) << out;
  EXPECT_NE(out.find("optimized: op times from trace"), std::string::npos) << out;
}

TEST(TraceDeviceServe, MetricsCountTheOpTimeLookups) {
  server::ServeOptions so;
  so.port = 0;
  so.model = "tiny-qwen3-vl";
  so.device = trace_device();
  so.profiles_dir = source_dir() / "scenarios/devices";
  server::Server srv(server::build_server_config(so));
  ASSERT_NE(srv.config().measured_op_times, nullptr);
  // The start-up forward already ran on the trace's op times.
  const std::string metrics = srv.metrics_text();
  EXPECT_NE(metrics.find("# TYPE encbench:encoder_op_time_lookups_total counter"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("encbench:encoder_op_time_lookups_total{lookup=\"mapped\"} "), std::string::npos);
  EXPECT_EQ(metrics.find("encbench:encoder_op_time_lookups_total{lookup=\"mapped\"} 0\n"), std::string::npos);

  so.device = "sim:ascend-910b";  // no trace: no such metric
  server::Server sim(server::build_server_config(so));
  EXPECT_EQ(sim.metrics_text().find("encoder_op_time_lookups_total"), std::string::npos);
}

TEST(TraceDeviceRun, RealClockArmsCarryTheirOpTimeCounts) {
  const auto dir = testpaths::temp_dir("tracedev", "real");
  scenario::PresetAbOptions o = small_loop(dir);
  o.model = "tiny-qwen3-vl";
  std::ostringstream out, progress;
  const auto run = scenario::run_preset_ab(o, {"test"}, out, progress);
  expect_arm_counts(run.result, out.str());
  EXPECT_EQ(run.result["arms"][0]["measured_op_times"]["repeats"], 1);
}

TEST(TraceDeviceRun, VirtualClockArmsCarryTheirOpTimeCounts) {
  const auto dir = testpaths::temp_dir("tracedev", "virtual");
  scenario::PresetAbOptions o = small_loop(dir);
  o.model = "qwen3-vl-8b";  // the virtual clock needs a preset with a language_model block
  o.clock = scenario::RunClock::virtual_time;
  o.image_width = o.image_height = 448;
  std::ofstream(dir / "serving.json") << R"({"schema": "encbench-serving-model", "name": "test",
    "lm_fixed_ms": {"value": 20, "source": "test"}})";
  o.serving_model = dir / "serving.json";
  std::ostringstream out, progress;
  const auto run = scenario::run_preset_ab(o, {"test"}, out, progress);
  expect_arm_counts(run.result, out.str());
}

}  // namespace
}  // namespace encbench
