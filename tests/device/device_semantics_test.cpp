// Device semantics of the cpu backend: in-order streams, D2H waits for earlier work, events,
// recording invariants, launch overhead, errors from kernel bodies, clean destruction.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <numeric>
#include <stdexcept>
#include <thread>
#include <vector>

#include "harness/core/error.hpp"
#include "harness/device/device.hpp"
#include "tests/support/devices.hpp"

using namespace encbench;
using namespace encbench::device;
using timeline::HostSpanKind;
using timeline::OpCategory;

namespace {

using encbench::testing::cpu_test_device;
std::unique_ptr<Device> cpu_device(unsigned threads = 2, Nanos launch_overhead_ns = 0) {
  return cpu_test_device(threads, launch_overhead_ns);
}

void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

const timeline::DeviceOp* find_op(const timeline::Timeline& timeline, const std::string& name) {
  for (const auto& op : timeline.device_ops) {
    if (op.name == name) return &op;
  }
  return nullptr;
}

void expect_recording_invariants(const timeline::Timeline& timeline) {
  for (const auto& op : timeline.device_ops) {
    EXPECT_LE(op.submit_ns, op.start_ns) << op.name;
    EXPECT_LE(op.start_ns, op.end_ns) << op.name;
  }
  for (const auto& span : timeline.host_spans) EXPECT_LE(span.start_ns, span.end_ns) << span.name;
}

}  // namespace

TEST(CpuDevice, InfoDescribesARealDevice) {
  auto device = cpu_device(3);
  EXPECT_EQ(device->info().kind, "cpu");
  EXPECT_FALSE(device->info().modelled);
  EXPECT_TRUE(device->info().computes_results);
  EXPECT_EQ(device->info().device_threads, 3u);
}

TEST(CpuDevice, StreamExecutesInSubmitOrderOnADeviceThread) {
  auto device = cpu_device();
  Stream& stream = device->default_stream();
  constexpr int kOps = 40;
  std::vector<int> order;  // touched only by the stream's device thread until synchronize
  std::vector<std::thread::id> executors;
  const auto host = std::this_thread::get_id();
  for (int i = 0; i < kOps; ++i) {
    stream.launch(KernelLaunch{std::string("k").append(std::to_string(i)), {}, -1, [&, i](kernels::WorkerPool&) {
                                 if (i % 7 == 0) sleep_ms(1);  // uneven durations
                                 order.push_back(i);
                                 executors.push_back(std::this_thread::get_id());
                               }});
  }
  stream.synchronize();
  std::vector<int> expected(kOps);
  std::iota(expected.begin(), expected.end(), 0);
  EXPECT_EQ(order, expected);
  for (const auto& id : executors) EXPECT_NE(id, host);

  const auto timeline = device->collect_timeline();
  expect_recording_invariants(timeline);
  std::vector<const timeline::DeviceOp*> kernels;
  for (const auto& op : timeline.device_ops) {
    if (op.category == OpCategory::kernel) kernels.push_back(&op);
  }
  ASSERT_EQ(kernels.size(), static_cast<std::size_t>(kOps));
  for (std::size_t i = 1; i < kernels.size(); ++i) {
    EXPECT_GE(kernels[i]->start_ns, kernels[i - 1]->end_ns);
    EXPECT_GT(kernels[i]->id, kernels[i - 1]->id);
  }
}

TEST(CpuDevice, HostAndDeviceOverlap) {
  auto device = cpu_device();
  std::atomic<bool> release{false};
  std::atomic<bool> started{false};
  device->default_stream().launch(KernelLaunch{"blocker", {}, -1, [&](kernels::WorkerPool&) {
                                                 started = true;
                                                 while (!release.load()) std::this_thread::yield();
                                               }});
  // launch returned although the kernel cannot finish until the host releases it
  while (!started.load()) std::this_thread::yield();
  release = true;
  device->synchronize();
}

TEST(CpuDevice, D2HWaitsForEarlierWorkAndCopiesItsOutput) {
  auto device = cpu_device();
  Stream& stream = device->default_stream();
  constexpr std::size_t kCount = 1024;
  Buffer buffer = device->allocator().allocate(kCount * sizeof(float));
  std::vector<float> input(kCount);
  for (std::size_t i = 0; i < kCount; ++i) input[i] = static_cast<float>(i) * 0.5f + 1.0f;
  stream.copy_h2d(buffer, 0, input.data(), input.size() * sizeof(float), "upload");
  std::fill(input.begin(), input.end(), -7.0f);  // staged at submit: must not affect the device
  float* data = buffer.as<float>();
  stream.launch(KernelLaunch{"slow_square", {}, 3, [data](kernels::WorkerPool& pool) {
                               sleep_ms(30);
                               pool.run(kCount, [data](std::size_t i, unsigned) { data[i] = data[i] * data[i]; });
                             }});
  std::vector<float> output(kCount, 0.0f);
  stream.copy_d2h(output.data(), buffer, 0, kCount * sizeof(float), "result_d2h", 3);
  const Nanos returned = now_ns();
  for (std::size_t i = 0; i < kCount; ++i) {
    const float x = static_cast<float>(i) * 0.5f + 1.0f;
    ASSERT_EQ(output[i], x * x) << i;
  }
  const auto timeline = device->collect_timeline();
  expect_recording_invariants(timeline);
  const auto* kernel = find_op(timeline, "slow_square");
  const auto* copy = find_op(timeline, "result_d2h");
  ASSERT_NE(kernel, nullptr);
  ASSERT_NE(copy, nullptr);
  EXPECT_EQ(copy->category, OpCategory::memcpy_d2h);
  EXPECT_EQ(copy->layer, 3);
  EXPECT_GE(copy->start_ns, kernel->end_ns);
  EXPECT_GE(returned, copy->end_ns);
  // The host's wait span, named after the label, covers the kernel's end.
  bool found_wait = false;
  for (const auto& span : timeline.host_spans) {
    if (span.kind == HostSpanKind::wait && span.name == "result_d2h") {
      found_wait = true;
      EXPECT_LE(span.start_ns, kernel->end_ns);
      EXPECT_GE(span.end_ns, copy->end_ns);
      EXPECT_EQ(span.op_id, copy->id);
      EXPECT_EQ(span.layer, 3);
    }
  }
  EXPECT_TRUE(found_wait);
}

TEST(CpuDevice, SynchronizeRecordsWaitSpanAndSyncMarker) {
  auto device = cpu_device();
  device->default_stream().launch(KernelLaunch{"k", {}, -1, [](kernels::WorkerPool&) { sleep_ms(5); }});
  device->default_stream().synchronize("end of forward");
  const auto timeline = device->collect_timeline();
  const auto* marker = find_op(timeline, "end of forward");
  const auto* kernel = find_op(timeline, "k");
  ASSERT_NE(marker, nullptr);
  EXPECT_EQ(marker->category, OpCategory::sync);
  EXPECT_GE(marker->start_ns, kernel->end_ns);
  std::size_t waits = 0;
  for (const auto& span : timeline.host_spans) {
    if (span.kind == HostSpanKind::wait) {
      ++waits;
      EXPECT_EQ(span.name, "end of forward");
      EXPECT_GE(span.end_ns, kernel->end_ns);
    }
  }
  EXPECT_EQ(waits, 1u);
}

TEST(CpuDevice, EventsOrderWorkAcrossStreams) {
  auto device = cpu_device();
  Stream& producer = device->default_stream();
  Stream& consumer = device->create_stream("consumer");
  EXPECT_EQ(consumer.index(), 1);
  EXPECT_EQ(consumer.name(), "consumer");
  Buffer value = device->allocator().allocate(sizeof(int));
  int* cell = value.as<int>();
  *cell = 0;
  int observed = -1;
  producer.launch(KernelLaunch{"produce", {}, -1, [cell](kernels::WorkerPool&) {
                                 sleep_ms(30);
                                 *cell = 42;
                               }});
  auto event = producer.record_event();
  consumer.wait_event(event);
  consumer.launch(KernelLaunch{"consume", {}, -1, [cell, &observed](kernels::WorkerPool&) { observed = *cell; }});
  consumer.synchronize();
  EXPECT_EQ(observed, 42);
  event->synchronize();
  EXPECT_TRUE(event->query());
  const auto timeline = device->collect_timeline();
  expect_recording_invariants(timeline);
  const auto* produce = find_op(timeline, "produce");
  const auto* consume = find_op(timeline, "consume");
  ASSERT_NE(produce, nullptr);
  ASSERT_NE(consume, nullptr);
  EXPECT_EQ(consume->stream, 1);
  EXPECT_GE(consume->start_ns, produce->end_ns);
  EXPECT_GE(event->completed_ns(), produce->end_ns);
  EXPECT_LE(event->completed_ns(), consume->start_ns);
  ASSERT_EQ(timeline.streams.size(), 2u);
  EXPECT_EQ(timeline.streams[1].name, "consumer");
}

TEST(CpuDevice, EveryOpRecordedWithOrderedTimes) {
  auto device = cpu_device();
  Stream& a = device->default_stream();
  Stream& b = device->create_stream("b");
  Buffer buffer = device->allocator().allocate(4096);
  std::vector<unsigned char> host(4096, 1);
  for (int layer = 0; layer < 4; ++layer) {
    a.copy_h2d(buffer, 0, host.data(), host.size(), "h2d", layer);
    a.launch(KernelLaunch{"kernel", {1e6, 4096}, layer, [](kernels::WorkerPool& pool) {
                            pool.run(8, [](std::size_t, unsigned) {});
                          }});
    b.memset(buffer, 0, 128, "memset", layer);
    a.copy_d2h(host.data(), buffer, 0, 64, "d2h", layer);
  }
  device->synchronize();
  const auto timeline = device->collect_timeline();
  expect_recording_invariants(timeline);
  std::size_t counts[5] = {};
  for (const auto& op : timeline.device_ops) ++counts[static_cast<int>(op.category)];
  EXPECT_EQ(counts[static_cast<int>(OpCategory::kernel)], 4u);
  EXPECT_EQ(counts[static_cast<int>(OpCategory::memcpy_h2d)], 4u);
  EXPECT_EQ(counts[static_cast<int>(OpCategory::memcpy_d2h)], 4u);
  EXPECT_EQ(counts[static_cast<int>(OpCategory::memset)], 4u);
  EXPECT_EQ(counts[static_cast<int>(OpCategory::sync)], 2u);  // device sync: one per stream
  // Every submitted op has an api span on the host naming it, with its op id.
  std::size_t api_spans = 0;
  for (const auto& span : timeline.host_spans) {
    if (span.kind == HostSpanKind::api && span.op_id != 0) ++api_spans;
  }
  EXPECT_EQ(api_spans, 16u);
  std::size_t alloc_spans = 0;
  for (const auto& span : timeline.host_spans) {
    if (span.kind == HostSpanKind::api && span.name == "alloc") ++alloc_spans;
  }
  EXPECT_EQ(alloc_spans, 1u);  // allocations are host API calls too
  EXPECT_EQ(timeline.host_threads.size(), 1u);
}

TEST(CpuDevice, LaunchOverheadIsSpentInsideApiSpans) {
  constexpr Nanos kOverhead = 200'000;
  auto device = cpu_device(1, kOverhead);
  for (int i = 0; i < 5; ++i) device->default_stream().launch(KernelLaunch{"noop", {}, -1, {}});
  device->synchronize();
  const auto timeline = device->collect_timeline();
  std::size_t launches = 0;
  for (const auto& span : timeline.host_spans) {
    if (span.kind != HostSpanKind::api || span.name != "noop") continue;
    ++launches;
    EXPECT_GE(span.end_ns - span.start_ns, kOverhead);
    const auto* op = [&]() -> const timeline::DeviceOp* {
      for (const auto& candidate : timeline.device_ops) {
        if (candidate.id == span.op_id) return &candidate;
      }
      return nullptr;
    }();
    ASSERT_NE(op, nullptr);
    // The op is submitted after the modelled dispatch work, inside the api span.
    EXPECT_GE(op->submit_ns - span.start_ns, kOverhead);
    EXPECT_LE(op->submit_ns, span.end_ns);
  }
  EXPECT_EQ(launches, 5u);
}

TEST(CpuDevice, KernelExceptionsSurfaceAtTheNextSync) {
  auto device = cpu_device(2);
  Stream& stream = device->default_stream();
  stream.launch(KernelLaunch{"throws", {}, -1, [](kernels::WorkerPool&) { throw std::out_of_range("bad index 7"); }});
  bool later_ran = false;
  stream.launch(KernelLaunch{"later", {}, -1, [&](kernels::WorkerPool&) { later_ran = true; }});
  EXPECT_THROW(
      {
        try {
          stream.synchronize();
        } catch (const std::out_of_range& error) {
          EXPECT_STREQ(error.what(), "bad index 7");
          throw;
        }
      },
      std::out_of_range);
  EXPECT_TRUE(later_ran);  // the worker survived
  EXPECT_NO_THROW(stream.synchronize());  // reported once

  // Thrown inside a pool worker item: surfaces through copy_d2h.
  Buffer buffer = device->allocator().allocate(64);
  stream.launch(KernelLaunch{"pool_throws", {}, -1, [](kernels::WorkerPool& pool) {
                               pool.run(100, [](std::size_t item, unsigned) {
                                 if (item == 37) throw std::runtime_error("item 37 failed");
                               });
                             }});
  char host[64];
  EXPECT_THROW(stream.copy_d2h(host, buffer, 0, sizeof(host), "after_failure"), std::runtime_error);
  EXPECT_NO_THROW(device->synchronize());
}

TEST(CpuDevice, DestructionWithPendingWorkIsClean) {
  std::atomic<int> executed{0};
  {
    auto device = cpu_device(1);
    Stream& a = device->default_stream();
    Stream& b = device->create_stream("b");
    for (int i = 0; i < 20; ++i) {
      a.launch(KernelLaunch{"slow", {}, -1, [&](kernels::WorkerPool&) {
                              sleep_ms(20);
                              ++executed;
                            }});
    }
    b.wait_event(a.record_event());  // b blocked behind a's pending work
    b.launch(KernelLaunch{"after", {}, -1, [&](kernels::WorkerPool&) { ++executed; }});
    Buffer buffer = device->allocator().allocate(1 << 20);
    (void)buffer;
  }  // destroyed with most work still queued: must return promptly, not run all 20 x 20 ms
  EXPECT_LT(executed.load(), 21);
}

TEST(DeviceSpec, ParsesKnownSpecsAndRejectsOthers) {
  EXPECT_EQ(parse_device_spec("cpu").backend, DeviceSpec::Backend::cpu);
  EXPECT_EQ(parse_device_spec("sim:h100-sxm").profile, "h100-sxm");
  EXPECT_EQ(parse_device_spec("cuda").backend, DeviceSpec::Backend::cuda);
  EXPECT_EQ(parse_device_spec("cuda:3").cuda_index, 3);
  EXPECT_THROW(parse_device_spec("cuda:x"), InvalidInput);
  EXPECT_THROW(parse_device_spec("sim:"), InvalidInput);
  EXPECT_THROW(parse_device_spec("gpu"), InvalidInput);
  DeviceOptions options;
  options.spec = "cuda:0";
  // Without the CUDA backend: "not built with CUDA"; with it but no GPU: "no CUDA device".
  // Only a machine with a GPU may succeed.
  try {
    auto cuda = make_device(options);
    EXPECT_EQ(cuda->info().kind.rfind("cuda", 0), 0u);
  } catch (const InvalidInput& error) {
    // The module itself loads in this test binary (it exports what the module uses).
    const std::string what = error.what();
    EXPECT_TRUE(what.find("no CUDA device") != std::string::npos ||
                what.find("not built with CUDA") != std::string::npos) << what;
  }
  EXPECT_EQ(parse_alloc_mode("fresh"), AllocMode::fresh);
  EXPECT_THROW(parse_alloc_mode("pooled"), InvalidInput);
}

TEST(CpuDevice, BadRangesAreInvalidInput) {
  auto device = cpu_device(1);
  Buffer buffer = device->allocator().allocate(100);
  char host[200];
  EXPECT_THROW(device->default_stream().copy_h2d(buffer, 50, host, 51, "too far"), InvalidInput);
  EXPECT_THROW(device->default_stream().copy_d2h(host, buffer, 101, 0, "offset"), InvalidInput);
  EXPECT_THROW(device->default_stream().memset(Buffer{}, 0, 1, "empty"), InvalidInput);
  EXPECT_NO_THROW(device->default_stream().copy_d2h(host, buffer, 0, 100, "ok"));
}
