// Real torch_npu profiles (Ascend/msinsight's test data, tests/trace/fixtures/msinsight/README.md)
// against the figures expected_figures.py computes from the raw files without encbench's code,
// and, through that script, against torch_npu's own step_trace_time.csv and kernel_details.csv.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "harness/core/number_format.hpp"
#include "harness/core/result_json.hpp"
#include "harness/trace/ascend_profile_dir.hpp"
#include "harness/trace/replay.hpp"
#include "harness/trace/trace_analysis.hpp"
#include "tests/support/process.hpp"
#include "tests/trace/trace_test_support.hpp"

namespace encbench::trace {
namespace {

namespace fs = std::filesystem;

fs::path msinsight_dir() { return support::fixture("msinsight"); }

const nlohmann::json& expected() {
  static const nlohmann::json j = read_json_file(msinsight_dir() / "expected.json");
  return j;
}

fs::path trace_path(const nlohmann::json& e) { return msinsight_dir() / e["trace"].get<std::string>(); }

// kernel_details.csv rows: name, start and duration (the csv writes "1736405443881410.320\t").
struct KernelRow {
  std::string name;
  Nanos start_ns = 0, dur_ns = 0;
};
std::vector<KernelRow> kernel_rows(const fs::path& csv) {
  std::ifstream in(csv);
  std::string line;
  std::getline(in, line);
  std::vector<std::string> header;
  for (std::stringstream h(line); std::getline(h, line, ',');) header.push_back(line);
  const auto column = [&](const std::string& name) {
    return static_cast<std::size_t>(std::find(header.begin(), header.end(), name) - header.begin());
  };
  const std::size_t name_at = column("Name"), start_at = column("Start Time(us)"), dur_at = column("Duration(us)");
  std::vector<KernelRow> rows;
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::string cell;
    bool quoted = false;
    for (const char c : line) {  // quoted cells hold commas ("32,3,224,224")
      if (c == '"') quoted = !quoted;
      else if (c == ',' && !quoted) cells.push_back(std::exchange(cell, {}));
      else cell += c;
    }
    cells.push_back(cell);
    KernelRow row;
    row.name = cells.at(name_at);
    EXPECT_TRUE(parse_us_to_ns(cells.at(start_at), row.start_ns)) << line;
    EXPECT_TRUE(parse_us_to_ns(cells.at(dur_at), row.dur_ns)) << line;
    rows.push_back(row);
  }
  return rows;
}

void expect_figures(const timeline::GapAnalysis& g, const nlohmann::json& e, const std::string& what) {
  SCOPED_TRACE(what);
  EXPECT_EQ(g.op_count, e["op_count"].get<std::size_t>());
  EXPECT_EQ(g.span_start_ns, e["span_start_ns"].get<Nanos>());
  EXPECT_EQ(g.span_end_ns, e["span_end_ns"].get<Nanos>());
  EXPECT_EQ(g.busy_ns, e["busy_ns"].get<Nanos>());
  EXPECT_EQ(g.idle_ns, e["idle_ns"].get<Nanos>());
  EXPECT_EQ(g.gaps.size(), e["gaps"].get<std::size_t>());
}

TEST(TraceMsinsight, ImportCountsTasksCollectivesAndSkewAsTheScript) {
  for (const auto& e : expected()["traces"]) {
    SCOPED_TRACE(e["trace"].get<std::string>());
    const ImportedTrace t = import_trace_file(trace_path(e));
    EXPECT_EQ(t.layout, TraceLayout::torch_npu);
    ASSERT_EQ(t.devices.size(), 1u);
    EXPECT_EQ(t.counts.device_ops, e["device_ops"].get<std::size_t>());
    EXPECT_EQ(t.counts.collectives, e["collectives"].get<std::size_t>());
    EXPECT_EQ(t.counts.skipped_device_sync, e["sync_tasks"].get<std::size_t>());  // EVENT_*, Notify Wait
    EXPECT_EQ(t.devices[0].skewed_ops, e["skewed_ops"].get<std::size_t>());
    EXPECT_EQ(t.devices[0].max_skew_ns, e["max_skew_ns"].get<Nanos>());
    const auto& ops = t.devices[0].timeline.device_ops;
    for (const auto& op : ops) {
      EXPECT_NE(op.name, "PROFILING_ENABLE");
      EXPECT_NE(op.name, "Notify Wait");
    }
    // The collectives run on a stream of their own, named after their HCCL lane.
    const auto streams = t.devices[0].timeline.streams;
    EXPECT_TRUE(std::any_of(streams.begin(), streams.end(), [](const auto& s) {
      return s.stream == kCollectiveStreamBase && s.name == "Group 0 Communication";
    }));
    // torch_npu's kernel list (kernels and hcom collectives) are all device ops, exactly.
    const auto rows = kernel_rows(trace_path(e).parent_path() / "kernel_details.csv");
    ASSERT_EQ(rows.size(), e["kernel_details_rows"].get<std::size_t>());
    for (const KernelRow& row : rows) {
      const bool found = std::any_of(ops.begin(), ops.end(), [&](const auto& op) {
        return op.name == row.name && std::abs(op.start_ns - row.start_ns) <= 1 &&
               std::abs((op.end_ns - op.start_ns) - row.dur_ns) <= 1;
      });
      EXPECT_TRUE(found) << row.name << " at " << numbers::exact_us(row.start_ns);
    }
  }
}

TEST(TraceMsinsight, StepWindowIsTorchNpusExtentWithTheWholeTraceBeside) {
  for (const auto& e : expected()["traces"]) {
    SCOPED_TRACE(e["trace"].get<std::string>());
    const ImportedTrace t = import_trace_file(trace_path(e));
    const TraceReport r = analyze_trace(t, {});
    ASSERT_EQ(r.devices.size(), 1u);
    const DeviceReport& d = r.devices[0];
    EXPECT_EQ(d.window.start_ns, e["window_start_ns"].get<Nanos>());
    EXPECT_EQ(d.window.end_ns, e["window_end_ns"].get<Nanos>());
    EXPECT_NE(d.window.source.find("Overlap Analysis"), std::string::npos) << d.window.source;
    expect_figures(d.gaps, e["window"], "step window");
    ASSERT_TRUE(d.whole_trace.has_value());
    expect_figures(*d.whole_trace, e["whole_trace"], "whole trace");
    ASSERT_FALSE(d.largest_gaps.empty());
    EXPECT_EQ(d.largest_gaps[0].gap.start_ns, e["window"]["largest_gap_start_ns"].get<Nanos>());
    EXPECT_EQ(d.largest_gaps[0].gap.duration_ns(), e["window"]["largest_gap_ns"].get<Nanos>());

    // Queue lengths never go below zero; skewed launches are left out, as the script counts.
    std::size_t left_out = 0;
    for (const StreamReport& s : d.streams) {
      left_out += s.queue.left_out;
      for (const QueuePoint& p : s.queue.series) EXPECT_GE(p.length, 0) << "stream " << s.stream;
    }
    EXPECT_EQ(left_out, e["queue_left_out"].get<std::size_t>());

    AnalyzeOptions whole;
    whole.whole_trace = true;
    const TraceReport w = analyze_trace(t, whole);
    EXPECT_TRUE(w.devices[0].window.whole());
    EXPECT_FALSE(w.devices[0].whole_trace.has_value());
    expect_figures(w.devices[0].gaps, e["whole_trace"], "--window whole");
  }
}

TEST(TraceMsinsight, CliPrintsAbsoluteTimesExactly) {
  const auto dir = support::scratch_dir("msinsight_cli");
  for (const auto& e : expected()["traces"]) {
    SCOPED_TRACE(e["trace"].get<std::string>());
    const fs::path json_out = dir / "analysis.json", log = dir / "log.txt";
    const std::string command = testing::shell_quote(ENCBENCH_CLI_PATH) + " trace analyze " +
                                testing::shell_quote(trace_path(e)) + " --top 1 --json " +
                                testing::shell_quote(json_out) + " > " + testing::shell_quote(log) + " 2>&1";
    const int status = std::system(command.c_str());
    const std::string text = testing::read_text_file(log);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << text;
    // 19 significant digits, as in the file: a double would print ...410.250 for ...410.320.
    const std::string window = numbers::exact_us(e["window_start_ns"].get<Nanos>()) + " .. " +
                               numbers::exact_us(e["window_end_ns"].get<Nanos>()) + " us";
    EXPECT_NE(text.find(window), std::string::npos) << text;
    EXPECT_NE(text.find("at " + numbers::exact_us(e["window"]["largest_gap_start_ns"].get<Nanos>()) + " us"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("whole trace: span"), std::string::npos) << text;
    const nlohmann::json j = read_json_file(json_out);
    const auto& d = j["devices"][0];
    EXPECT_EQ(d["window"]["start_ns"].get<Nanos>(), e["window_start_ns"].get<Nanos>());
    EXPECT_EQ(d["largest_gaps"][0]["start_ns"].get<Nanos>(), e["window"]["largest_gap_start_ns"].get<Nanos>());
    EXPECT_EQ(d["idle_whole_trace"]["span_start_ns"].get<Nanos>(), e["whole_trace"]["span_start_ns"].get<Nanos>());
    EXPECT_DOUBLE_EQ(d["idle_whole_trace"]["idle_us"].get<double>(), ns_to_us(e["whole_trace"]["idle_ns"].get<Nanos>()));
    EXPECT_EQ(j["import"]["skewed_ops"].get<std::size_t>(), e["skewed_ops"].get<std::size_t>());
  }
}

TEST(TraceMsinsight, ReplayOfTheStepReproducesIt) {
  // level1 links launches to CANN calls; its one ProfilerStep is the forward.
  const auto& e = expected()["traces"][1];
  const ReplayModel m = build_replay_model(import_trace_file(trace_path(e)), -1);
  EXPECT_EQ(m.ops.size(), e["device_ops"].get<std::size_t>());
  ASSERT_EQ(m.forwards.size(), 1u);
  EXPECT_EQ(m.forwards[0].name, "ProfilerStep#50");
  const std::vector<ForwardTimes> trace_times = trace_forward_times(m);
  const ReplayMetrics replayed = measure_replay(m, replay(m), support::us(30));
  const double trace_ms = ns_to_ms(trace_times[0].duration_ns());
  EXPECT_NEAR(ns_to_ms(replayed.forwards[0].duration_ns()), trace_ms, 0.02 * trace_ms);
}

// The step's longest event wait (65.6 ms: the compute stream waiting for the allreduce, found by
// expected_figures.py from the raw events) is on the critical path under the collective's name,
// not as a queue gap of the copy after it (before: "queue_gap MEMCPY_ASYNC 70.851 ms").
TEST(TraceMsinsight, CriticalPathNamesTheAllreduceTheStreamWaitedFor) {
  const auto& e = expected()["traces"][1];
  const ReplayModel m = build_replay_model(import_trace_file(trace_path(e)), -1);
  const ReplayMetrics replayed = measure_replay(m, replay(m), support::us(30), 40);
  ASSERT_EQ(replayed.forwards.size(), 1u);
  const std::string releaser = e["longest_event_wait"]["released_by"].get<std::string>();
  EXPECT_EQ(releaser.rfind("hcom_allReduce", 0), 0u) << releaser;
  Nanos held = 0, copy_queue = 0;
  for (const CriticalSegment& s : replayed.forwards[0].critical_path.segments) {
    if (s.kind == "cross_stream_wait" && s.name == releaser) held += s.total_ns;
    if (s.kind == "queue_gap" && s.name == "MEMCPY_ASYNC") copy_queue += s.total_ns;
  }
  EXPECT_GE(held, e["longest_event_wait"]["dur_ns"].get<Nanos>());
  EXPECT_LT(copy_queue, support::us(1000));
}

// The compute stream's longest gap in each step is covered by an EVENT_WAIT_SQE that ends after
// the next op's launch: the allreduce's stream released it (cross_stream_wait). On level2 rank1
// the 69.4 ms gap's next op is launched 94.5 us after the gap opens (host/device skew), so a
// class taken from the launch alone is host_wait (the script's stream_gap_host_class); before the
// event waits were read, that stream reported ~99 ms host_wait. Skew is reported, never clipped
// silently, and queue lengths stay at or above zero (as StepWindowIsTorchNpusExtentWithTheWholeTraceBeside checks).
TEST(TraceMsinsight, EventWaitGapIsCrossStreamWhateverTheSkew) {
  const auto dir = support::scratch_dir("msinsight_skew");
  for (const auto& e : expected()["traces"]) {
    SCOPED_TRACE(e["trace"].get<std::string>());
    const auto& w = e["longest_event_wait"];
    const TraceReport r = analyze_trace(import_trace_file(trace_path(e)), {});
    const timeline::Gap* found = nullptr;
    const StreamReport* holder = nullptr;
    for (const StreamReport& s : r.devices.at(0).streams) {
      for (const timeline::Gap& g : s.gaps.gaps) {
        if (g.start_ns == w["stream_gap_start_ns"].get<Nanos>()) found = &g, holder = &s;
      }
    }
    ASSERT_NE(found, nullptr) << "no stream gap at " << numbers::exact_us(w["stream_gap_start_ns"].get<Nanos>());
    EXPECT_EQ(found->duration_ns(), w["stream_gap_ns"].get<Nanos>());
    EXPECT_EQ(w["stream_gap_class"].get<std::string>(), "cross_stream_wait");
    EXPECT_EQ(to_string(found->gap_class), w["stream_gap_class"].get<std::string>());
    // None of the gap is booked to the host: the stream's host_wait is its other gaps' (22-26 ms
    // on these ranks; 95 ms and more with the 60-69 ms gap in it).
    EXPECT_GE(holder->gaps.idle_ns_by_class.at(timeline::GapClass::cross_stream_wait), w["stream_gap_ns"].get<Nanos>());
    EXPECT_LT(holder->gaps.idle_ns_by_class.at(timeline::GapClass::host_wait), w["stream_gap_ns"].get<Nanos>() / 2);
  }
  // level2 rank1: the case with skew. Count and maximum reported in the text and the JSON.
  const auto& e = expected()["traces"][2];
  ASSERT_EQ(e["trace"].get<std::string>().rfind("level2/rank1", 0), 0u);
  EXPECT_EQ(e["longest_event_wait"]["stream_gap_host_class"].get<std::string>(), "host_wait");
  const Nanos launch_after_gap_start =
      e["longest_event_wait"]["next_op_launch_ns"].get<Nanos>() - e["longest_event_wait"]["stream_gap_start_ns"].get<Nanos>();
  EXPECT_GT(launch_after_gap_start, support::us(50));
  EXPECT_LT(launch_after_gap_start, support::us(150));
  const fs::path json_out = dir / "analysis.json", log = dir / "log.txt";
  const std::string command = testing::shell_quote(ENCBENCH_CLI_PATH) + " trace analyze " +
                              testing::shell_quote(trace_path(e)) + " --json " + testing::shell_quote(json_out) +
                              " > " + testing::shell_quote(log) + " 2>&1";
  const int status = std::system(command.c_str());
  const std::string text = testing::read_text_file(log);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << text;
  const std::string skew_line = "clock skew: " + std::to_string(e["skewed_ops"].get<std::size_t>()) +
                                " ops start before their launch (max " +
                                numbers::fixed(ns_to_us(e["max_skew_ns"].get<Nanos>()), 3) + " us)";
  EXPECT_NE(text.find(skew_line), std::string::npos) << skew_line << "\n" << text;
  EXPECT_EQ(text.find("warning: host and device clocks disagree"), std::string::npos) << text;
  const nlohmann::json j = read_json_file(json_out);
  EXPECT_EQ(j["import"]["skewed_ops"].get<std::size_t>(), e["skewed_ops"].get<std::size_t>());
  EXPECT_DOUBLE_EQ(j["import"]["max_skew_us"].get<double>(), ns_to_us(e["max_skew_ns"].get<Nanos>()));
  std::size_t left_out = 0;
  for (const auto& s : j["devices"][0]["streams"]) {
    left_out += s["queue_length"]["left_out"].get<std::size_t>();
    for (const auto& length : s["queue_length"]["series_length"]) EXPECT_GE(length.get<int>(), 0) << "stream " << s["stream"];
  }
  EXPECT_EQ(left_out, e["queue_left_out"].get<std::size_t>());
}

TEST(TraceMsinsight, ExpectedFiguresAreCurrent) {
  if (std::system("python3 -c 'import json' > /dev/null 2>&1") != 0) GTEST_SKIP() << "no python3";
  const std::string command =
      "python3 " + testing::shell_quote(msinsight_dir() / "expected_figures.py") + " --check";
  EXPECT_EQ(std::system(command.c_str()), 0) << "run " << command.substr(0, command.size() - 8) << " --write";
}

}  // namespace
}  // namespace encbench::trace

namespace encbench::trace {
namespace {

// torch_npu's MSPTI export is Kineto's layout: process "NPU" (pid 0), kernels on tid 47 with
// args.streamId, launches as privateuse1_runtime calls with ac2g flows. An excerpt of msinsight's
// sample (mspti/excerpt_mspti_trace.py, whose --expected computes these figures from the excerpt).
TEST(TraceMsinsight, MsptiExportIsReadAsNpuDeviceLanes) {
  const ImportedTrace t = import_trace_file(msinsight_dir() / "mspti" / "npu_mspti_excerpt.pt.trace.json");
  EXPECT_EQ(t.layout, TraceLayout::kineto);
  ASSERT_EQ(t.devices.size(), 1u);
  EXPECT_EQ(t.devices[0].label, "NPU 0");
  EXPECT_EQ(t.devices[0].timeline.device_kind, "npu:0");
  ASSERT_EQ(t.devices[0].timeline.streams.size(), 1u);
  EXPECT_EQ(t.devices[0].timeline.streams[0].stream, 47);
  EXPECT_EQ(t.counts.device_ops, 23u);
  EXPECT_EQ(t.counts.linked_by_flow, 11u);
  EXPECT_EQ(t.counts.skipped_profiler_spans, 1u);
  std::size_t runtime_calls = 0;
  for (const timeline::HostSpan& s : t.devices[0].timeline.host_spans) {
    runtime_calls += s.kind == timeline::HostSpanKind::api ? 1 : 0;
  }
  EXPECT_EQ(runtime_calls, 11u);  // privateuse1_runtime: launch calls, not host work
  AnalyzeOptions whole;
  whole.whole_trace = true;
  const TraceReport r = analyze_trace(t, whole);
  EXPECT_EQ(r.devices[0].gaps.busy_ns, 185'304);
  EXPECT_EQ(r.devices[0].gaps.span_end_ns - r.devices[0].gaps.span_start_ns, 1'953'799);
  EXPECT_EQ(r.devices[0].gaps.idle_ns, 1'768'495);
}

}  // namespace
}  // namespace encbench::trace

namespace encbench::trace {
namespace {

fs::path profile_dir(const nlohmann::json& e) { return trace_path(e).parent_path().parent_path(); }

// Runs `trace analyze DIR`; returns the exit code and the output.
std::pair<int, std::string> analyze_dir(const fs::path& dir, const fs::path& log) {
  const std::string command = testing::shell_quote(ENCBENCH_CLI_PATH) + " trace analyze " + testing::shell_quote(dir) +
                              " --top 1 > " + testing::shell_quote(log) + " 2>&1";
  const int status = std::system(command.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, testing::read_text_file(log)};
}

// Every row of torch_npu's kernel_details.csv is an op of the trace (expected_figures.py finds each
// within 1 ns of its duration): the cross-check matches them all and disagrees by at most 1 ns.
TEST(TraceMsinsight, ProfileDirectoryCrossChecksKernelDetails) {
  for (const auto& e : expected()["traces"]) {
    SCOPED_TRACE(e["trace"].get<std::string>());
    const AscendProfileFiles files = find_ascend_profile_files(profile_dir(e));
    EXPECT_EQ(files.trace, trace_path(e));
    const KernelTableCheck check = check_kernel_details(files.kernel_details, import_trace_file(files.trace));
    EXPECT_TRUE(check.problems.empty());
    EXPECT_EQ(check.rows, e["kernel_details_rows"].get<std::size_t>());
    EXPECT_EQ(check.matched, check.rows);
    EXPECT_LE(check.largest_disagreement_ns, 1);
    // op_statistic.csv (level 1 only): per-type totals against the trace's ops of that type.
    const OpStatisticCheck types = check_op_statistic(files.op_statistic, check);
    if (e["op_statistic"].is_null()) {
      ASSERT_EQ(types.problems.size(), 1u);
      EXPECT_NE(types.problems[0].find("op_statistic.csv: missing"), std::string::npos) << types.problems[0];
    } else {
      EXPECT_TRUE(types.problems.empty());
      EXPECT_EQ(types.types, e["op_statistic"]["types"].get<std::size_t>());
      EXPECT_EQ(types.compared, types.types);
      EXPECT_EQ(types.largest_disagreement_ns, e["op_statistic"]["largest_disagreement_ns"].get<Nanos>());
      EXPECT_EQ(types.largest_type, e["op_statistic"]["largest_type"].get<std::string>());
    }
  }
  const auto [code, text] = analyze_dir(profile_dir(expected()["traces"][1]), support::scratch_dir("dir_ok") / "log");
  EXPECT_EQ(code, 0) << text;
  EXPECT_NE(text.find("kernel_details.csv: 191 rows, 191 found as ops"), std::string::npos) << text;
  EXPECT_NE(text.find("op_statistic.csv: 33 op types, 33 compared"), std::string::npos) << text;
}

// A missing or cut kernel table: one line naming the file and what was expected; the trace is
// still analysed. No trace at all: exit 2 naming the file expected.
TEST(TraceMsinsight, ProfileDirectoryWithMissingOrCutFiles) {
  const fs::path scratch = support::scratch_dir("ascend_dir");
  const fs::path copy = scratch / "rank0_ascend_pt", out = copy / "ASCEND_PROFILER_OUTPUT";
  fs::remove_all(copy);
  fs::create_directories(copy);
  fs::copy(profile_dir(expected()["traces"][1]), copy, fs::copy_options::recursive);
  const std::string table = testing::read_text_file(out / "kernel_details.csv");
  // Cut in the middle of the 11th row (line 12): 10 complete rows before it.
  std::size_t cut = 0;
  for (int line = 0; line < 11; ++line) cut = table.find('\n', cut) + 1;
  std::ofstream(out / "kernel_details.csv", std::ios::trunc) << table.substr(0, cut + 40);
  auto [code, text] = analyze_dir(copy, scratch / "cut.log");
  EXPECT_EQ(code, 0) << text;
  EXPECT_NE(text.find("kernel_details.csv: truncated or malformed at line 12"), std::string::npos) << text;
  EXPECT_NE(text.find("cross-checked the 10 rows before it"), std::string::npos) << text;
  EXPECT_NE(text.find("NPU 0: window"), std::string::npos) << text;  // the rest analysed
  fs::remove(out / "kernel_details.csv");
  std::tie(code, text) = analyze_dir(copy, scratch / "missing.log");
  EXPECT_EQ(code, 0) << text;
  EXPECT_NE(text.find("kernel_details.csv: missing; expected torch_npu's per-kernel table"), std::string::npos) << text;
  EXPECT_NE(text.find("NPU 0: window"), std::string::npos) << text;
  fs::remove(out / "trace_view.json.gz");
  std::tie(code, text) = analyze_dir(copy, scratch / "no_trace.log");
  EXPECT_EQ(code, 2) << text;
  EXPECT_NE(text.find("trace_view.json: missing; expected torch_npu's trace"), std::string::npos) << text;
  fs::remove_all(scratch);
}

}  // namespace
}  // namespace encbench::trace
