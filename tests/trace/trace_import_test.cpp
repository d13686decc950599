// Reading and importing profiler traces: exact timestamps, both layouts, links, bad input.
#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "harness/core/error.hpp"
#include "harness/trace_read/trace_import.hpp"
#include "tests/trace/trace_test_support.hpp"

using namespace encbench;
using namespace encbench::trace;
using encbench::trace::support::fixture;
using encbench::trace::support::us;

TEST(ParseUs, ExactDecimalsToNanoseconds) {
  Nanos ns = 0;
  ASSERT_TRUE(parse_us_to_ns("20.500", ns));
  EXPECT_EQ(ns, 20'500);
  ASSERT_TRUE(parse_us_to_ns("1700000000000020.500", ns));  // 19 digits of ns: beyond a double
  EXPECT_EQ(ns, 1'700'000'000'000'020'500);
  ASSERT_TRUE(parse_us_to_ns("7", ns));
  EXPECT_EQ(ns, 7'000);
  ASSERT_TRUE(parse_us_to_ns("0.0015", ns));  // rounds to the nearest ns
  EXPECT_EQ(ns, 2);
  ASSERT_TRUE(parse_us_to_ns("-1.25", ns));
  EXPECT_EQ(ns, -1'250);
  ASSERT_TRUE(parse_us_to_ns("1.5e3", ns));
  EXPECT_EQ(ns, 1'500'000);
  EXPECT_FALSE(parse_us_to_ns("abc", ns));
  EXPECT_FALSE(parse_us_to_ns("", ns));
  EXPECT_FALSE(parse_us_to_ns("99999999999999999999", ns));
}

TEST(Reader, KeepsOnlyWhatTheImporterNeeds) {
  std::ifstream in(fixture("kineto_two_streams.json"));
  const RawTrace raw = read_raw_trace(in, "kineto");
  EXPECT_TRUE(raw.has_trace_events_key);
  EXPECT_TRUE(raw.kineto_header);
  EXPECT_EQ(raw.base_time_ns, 1'700'000'000'000'000'000);
  EXPECT_EQ(raw.stats.events_total, 31u);
  // Dropped: 7 metadata (kept in maps), 1 python_function, 1 instant.
  EXPECT_EQ(raw.stats.events_dropped, 9u);
  EXPECT_EQ(raw.stats.events_kept, raw.events.size());
  EXPECT_EQ(raw.events.size(), 22u);
  EXPECT_EQ(raw.thread_names.at({0, 7}), "stream 7 ");
  EXPECT_EQ(raw.process_labels.at(0), "GPU 0");
}

TEST(ImportKineto, DeviceOpsStreamsAndLaunchLinks) {
  const ImportedTrace t = import_trace_file(fixture("kineto_two_streams.json"));
  EXPECT_EQ(t.layout, TraceLayout::kineto);
  ASSERT_EQ(t.devices.size(), 1u);
  const DeviceTrace& d = t.devices[0];
  EXPECT_EQ(d.device, 0);
  EXPECT_EQ(d.timeline.device_kind, "cuda:0");
  ASSERT_EQ(d.timeline.device_ops.size(), 7u);
  ASSERT_EQ(d.timeline.streams.size(), 2u);
  EXPECT_EQ(d.timeline.streams[0].stream, 7);
  EXPECT_EQ(d.timeline.streams[1].stream, 13);
  EXPECT_EQ(t.counts.linked_by_correlation, 6u);
  EXPECT_EQ(t.counts.linked_by_flow, 1u);  // attention_k6: ac2g flow only
  EXPECT_EQ(t.counts.unlinked_ops, 0u);
  EXPECT_EQ(t.counts.skipped_device_sync, 1u);
  EXPECT_EQ(t.counts.skipped_device_annotations, 1u);

  auto op = [&](const std::string& name) {
    const auto it = std::find_if(d.timeline.device_ops.begin(), d.timeline.device_ops.end(),
                                 [&](const auto& o) { return o.name == name; });
    EXPECT_NE(it, d.timeline.device_ops.end()) << name;
    return *it;
  };
  EXPECT_EQ(op("gemm_k1").submit_ns, us(0));
  EXPECT_EQ(op("gemm_k1").start_ns, us(20));
  EXPECT_EQ(op("gemm_k1").end_ns, us(120));
  EXPECT_EQ(op("tiny_k3").submit_ns, us(300));
  EXPECT_EQ(op("attention_k6").submit_ns, us(600));
  EXPECT_EQ(op("attention_k6").stream, 13);
  const auto copy = op("Memcpy HtoD (Pageable -> Device)");
  EXPECT_EQ(copy.category, timeline::OpCategory::memcpy_h2d);
  EXPECT_EQ(copy.bytes, 4096);
  EXPECT_EQ(copy.host_thread, op("rotary_k5").host_thread);
  EXPECT_NE(copy.host_thread, op("gemm_k1").host_thread);

  // Host spans: runtime calls are api, the synchronize is wait, cpu ops are work; python
  // stack frames are not imported.
  ASSERT_EQ(d.timeline.host_spans.size(), 9u);
  std::size_t waits = 0, apis = 0, works = 0;
  for (const auto& s : d.timeline.host_spans) {
    waits += s.kind == timeline::HostSpanKind::wait;
    apis += s.kind == timeline::HostSpanKind::api;
    works += s.kind == timeline::HostSpanKind::work;
    if (s.name == "cudaDeviceSynchronize") {
      EXPECT_EQ(s.kind, timeline::HostSpanKind::wait);
    }
  }
  EXPECT_EQ(waits, 1u);
  EXPECT_EQ(apis, 7u);
  EXPECT_EQ(works, 1u);
  ASSERT_EQ(d.launches.size(), 7u);
  for (const auto& l : d.launches) EXPECT_TRUE(l.api_is_runtime);
}

TEST(ImportTorchNpu, AscendHardwareTasksFlowsAndExactAbsoluteTimes) {
  const ImportedTrace t = import_trace_file(fixture("torch_npu_two_streams.json"));
  EXPECT_EQ(t.layout, TraceLayout::torch_npu);
  ASSERT_EQ(t.devices.size(), 1u);
  const DeviceTrace& d = t.devices[0];
  EXPECT_EQ(d.label, "NPU 0");
  EXPECT_EQ(d.timeline.device_kind, "npu:0");
  ASSERT_EQ(d.timeline.device_ops.size(), 5u);
  EXPECT_EQ(t.counts.skipped_device_sync, 1u);         // EVENT_WAIT task
  EXPECT_EQ(t.counts.skipped_device_annotations, 2u);  // HCCL lane, Overlap Analysis
  EXPECT_EQ(t.counts.linked_by_flow, 4u);
  EXPECT_EQ(t.counts.unlinked_ops, 1u);
  EXPECT_EQ(d.ops_without_launch, 1u);

  const Nanos base = support::kNpuBaseNs;
  const auto& ops = d.timeline.device_ops;
  EXPECT_EQ(ops[0].name, "MatMul");
  EXPECT_EQ(ops[0].start_ns, base + us(20.5));  // exact to the ns at 1.7e18
  EXPECT_EQ(ops[0].end_ns, base + us(120.5));
  // HostToDevice (node launch) wins over torch_to_npu (framework op) for the submit time.
  EXPECT_EQ(ops[0].submit_ns, base + us(5));
  EXPECT_EQ(ops[0].stream, 2);
  const auto softmax = std::find_if(ops.begin(), ops.end(), [](const auto& o) { return o.name == "SoftmaxV2"; });
  ASSERT_NE(softmax, ops.end());
  EXPECT_EQ(softmax->submit_ns, base + us(280));  // only torch_to_npu links it
  const auto copy = std::find_if(ops.begin(), ops.end(), [](const auto& o) { return o.name == "MemCopy"; });
  ASSERT_NE(copy, ops.end());
  EXPECT_EQ(copy->submit_ns, base);  // no launch: treated as queued since the trace start
  const auto gelu = std::find_if(ops.begin(), ops.end(), [](const auto& o) { return o.name == "Gelu"; });
  ASSERT_NE(gelu, ops.end());
  EXPECT_EQ(gelu->stream, 3);

  std::size_t waits = 0;
  for (const auto& s : d.timeline.host_spans) waits += s.kind == timeline::HostSpanKind::wait;
  EXPECT_EQ(waits, 1u);  // AscendCL@aclrtSynchronizeStream
  // Launch stats only pair runtime launches; the framework-op link is not one.
  std::size_t runtime_links = 0;
  for (const auto& l : d.launches) runtime_links += l.api_is_runtime;
  EXPECT_EQ(d.launches.size(), 4u);
  EXPECT_EQ(runtime_links, 3u);
}

// One rule for every Ascend Hardware task type, whatever its case: waits and records
// only hold a stream, placeholders are the profiler's own markers.
TEST(ImportTorchNpu, TaskTypesByOneCaseInsensitiveRule) {
  for (const char* sync : {"EVENT_WAIT_SQE", "EVENT_RECORD_SQE", "Notify Wait", "notify_record", "EVENT_WAIT"}) {
    EXPECT_EQ(npu_task_kind(sync), NpuTaskKind::sync) << sync;
  }
  for (const char* placeholder : {"PLACE_HOLDER_SQE", "place_holder"}) {
    EXPECT_EQ(npu_task_kind(placeholder), NpuTaskKind::placeholder) << placeholder;
  }
  for (const char* op : {"AI_CORE", "AI_VECTOR_CORE", "MIX_AIV", "SDMA", "PCIE_DMA_SQE", "Write Value", ""}) {
    EXPECT_EQ(npu_task_kind(op), NpuTaskKind::op) << op;
  }
  EXPECT_TRUE(is_npu_collective_thread("Group 0 Communication"));
  EXPECT_FALSE(is_npu_collective_thread("Plane 0"));

  // A placeholder, a notify wait, a kernel and a collective with its per-task plane lane.
  const std::string text = R"json([
  {"ph":"M","name":"process_name","pid":1263872,"tid":0,"args":{"name":"Ascend Hardware"}},
  {"ph":"M","name":"process_labels","pid":1263872,"tid":0,"args":{"labels":"NPU"}},
  {"ph":"M","name":"process_name","pid":1263904,"tid":0,"args":{"name":"HCCL"}},
  {"ph":"M","name":"thread_name","pid":1263904,"tid":0,"args":{"name":"Group 0 Communication"}},
  {"ph":"M","name":"thread_name","pid":1263904,"tid":1,"args":{"name":"Plane 0"}},
  {"ph":"X","name":"PROFILING_ENABLE","pid":1263872,"tid":0,"ts":"1700000000000000.000","dur":0.02,"args":{"Task Type":"PLACE_HOLDER_SQE","Physic Stream Id":0}},
  {"ph":"X","name":"MatMul","pid":1263872,"tid":2,"ts":"1700000000000500.000","dur":10,"args":{"Task Type":"AI_CORE","Physic Stream Id":2}},
  {"ph":"X","name":"Notify Wait","pid":1263872,"tid":4,"ts":"1700000000000520.000","dur":50,"args":{"Task Type":"Notify Wait","Physic Stream Id":4}},
  {"ph":"X","name":"hcom_allReduce_","pid":1263904,"tid":0,"ts":"1700000000000515.000","dur":60},
  {"ph":"X","name":"Notify_Wait","pid":1263904,"tid":1,"ts":"1700000000000520.000","dur":50}
])json";
  const ImportedTrace t = import_trace_text(text, "hccl.json");
  ASSERT_EQ(t.devices.size(), 1u);
  const auto& ops = t.devices[0].timeline.device_ops;
  ASSERT_EQ(ops.size(), 2u);  // not the placeholder (it would open the span 500 us early), not the wait
  EXPECT_EQ(ops[0].name, "MatMul");
  EXPECT_EQ(ops[1].name, "hcom_allReduce_");
  EXPECT_EQ(ops[1].stream, kCollectiveStreamBase);
  EXPECT_EQ(t.counts.collectives, 1u);
  EXPECT_EQ(t.counts.skipped_device_sync, 1u);
  EXPECT_EQ(t.counts.skipped_device_annotations, 2u);  // the placeholder, the plane task
}

TEST(ImportGzip, SameResultAsPlain) {
  const auto dir = support::scratch_dir("gzip");
  const auto gz = dir / "trace.json.gz";
  support::gzip_file(fixture("kineto_two_streams.json"), gz);
  const ImportedTrace plain = import_trace_file(fixture("kineto_two_streams.json"));
  const ImportedTrace packed = import_trace_file(gz);
  EXPECT_TRUE(packed.read.gzip);
  EXPECT_FALSE(plain.read.gzip);
  EXPECT_EQ(packed.read.json_bytes, plain.read.json_bytes);
  EXPECT_LT(packed.read.file_bytes, plain.read.file_bytes);
  ASSERT_EQ(packed.devices.size(), 1u);
  ASSERT_EQ(packed.devices[0].timeline.device_ops.size(), plain.devices[0].timeline.device_ops.size());
  for (std::size_t i = 0; i < plain.devices[0].timeline.device_ops.size(); ++i) {
    EXPECT_EQ(packed.devices[0].timeline.device_ops[i].start_ns, plain.devices[0].timeline.device_ops[i].start_ns);
    EXPECT_EQ(packed.devices[0].timeline.device_ops[i].submit_ns, plain.devices[0].timeline.device_ops[i].submit_ns);
  }
  std::filesystem::remove_all(dir);
}

namespace {
std::string import_error(const std::string& text) {
  try {
    import_trace_text(text, "input");
  } catch (const InvalidInput& e) {
    return e.what();
  }
  return "no error";
}
std::string import_file_error(const std::filesystem::path& path) {
  try {
    import_trace_file(path);
  } catch (const InvalidInput& e) {
    return e.what();
  }
  return "no error";
}
}  // namespace

TEST(BadInput, ClearMessages) {
  EXPECT_NE(import_error("this is not json").find("not valid JSON"), std::string::npos);
  EXPECT_NE(import_error("").find("truncated or empty"), std::string::npos);
  EXPECT_NE(import_error("{\"foo\": 1}").find("not a Chrome trace"), std::string::npos);
  EXPECT_NE(import_error("42").find("not a Chrome trace"), std::string::npos);
  EXPECT_NE(import_error("{\"traceEvents\": 3}").find("not a Chrome trace"), std::string::npos);
  const std::string host_only =
      R"([{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":1,"dur":2}])";
  EXPECT_NE(import_error(host_only).find("no device events"), std::string::npos);
  EXPECT_NE(import_error("[]").find("no device events"), std::string::npos);

  std::ifstream in(fixture("kineto_two_streams.json"));
  std::stringstream whole;
  whole << in.rdbuf();
  const std::string text = whole.str();
  const std::string cut = import_error(text.substr(0, text.size() / 2));
  EXPECT_NE(cut.find("truncated"), std::string::npos) << cut;
  EXPECT_NE(import_file_error("/nonexistent/trace.json").find("cannot read"), std::string::npos);
}

TEST(BadInput, TruncatedGzip) {
  const auto dir = support::scratch_dir("badgz");
  const auto gz = dir / "trace.json.gz";
  support::gzip_file(fixture("kineto_two_streams.json"), gz);
  const auto size = std::filesystem::file_size(gz);
  std::filesystem::resize_file(gz, size / 2);
  const std::string message = import_file_error(gz);
  EXPECT_NE(message.find("truncated"), std::string::npos) << message;
  std::filesystem::remove_all(dir);
}
