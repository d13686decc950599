// Concurrency stress for the sanitizer run: several host threads, streams and events at once,
// and devices created and destroyed with work in flight.
#include <gtest/gtest.h>
#include "tests/support/sanitized.hpp"

#include <atomic>
#include <cstdlib>
#include <thread>
#include <vector>

#include "harness/device/device.hpp"

using namespace encbench;
using namespace encbench::device;

namespace {
int scaled(int n) { return encbench::testing::sanitized() ? n / 4 : n; }
}  // namespace

TEST(DeviceStress, ManyHostThreadsStreamsAndEvents) {
  DeviceOptions options;
  options.device_threads = 2;
  auto device = make_device(options);
  constexpr int kThreads = 3;
  const int ops = scaled(200);
  std::vector<Stream*> streams{&device->default_stream()};
  for (int t = 1; t < kThreads; ++t) streams.push_back(&device->create_stream(std::string("s").append(std::to_string(t))));
  std::atomic<long> executed{0};
  std::vector<std::thread> hosts;
  for (int t = 0; t < kThreads; ++t) {
    hosts.emplace_back([&, t] {
      device->recorder().name_thread(std::string("host ").append(std::to_string(t)));
      Stream& own = *streams[static_cast<std::size_t>(t)];
      Buffer scratch = device->allocator().allocate(256);
      char host[256];
      for (int i = 0; i < ops; ++i) {
        own.launch(KernelLaunch{"k", {}, i % 4, [&](kernels::WorkerPool& pool) {
                                  pool.run(16, [&](std::size_t, unsigned) { ++executed; });
                                }});
        if (i % 10 == 0) {
          auto event = own.record_event();
          streams[static_cast<std::size_t>((t + 1) % kThreads)]->wait_event(event);
        }
        if (i % 25 == 0) own.copy_d2h(host, scratch, 0, sizeof(host), "d2h", i % 4);
        if (i % 40 == 0) {
          Buffer temporary = device->allocator().allocate(1024 + static_cast<std::size_t>(i));
          own.memset(temporary, 0, temporary.bytes(), "memset");
        }  // released with the memset possibly still queued: stream-ordered release
      }
      own.synchronize();
    });
  }
  for (auto& host : hosts) host.join();
  device->synchronize();
  EXPECT_EQ(executed.load(), 16L * ops * kThreads);
  const auto timeline = device->collect_timeline();
  std::size_t kernels = 0;
  for (const auto& op : timeline.device_ops) {
    EXPECT_LE(op.submit_ns, op.start_ns);
    EXPECT_LE(op.start_ns, op.end_ns);
    if (op.category == timeline::OpCategory::kernel) ++kernels;
  }
  EXPECT_EQ(kernels, static_cast<std::size_t>(ops * kThreads));
  EXPECT_EQ(timeline.host_threads.size(), static_cast<std::size_t>(kThreads) + 1);  // + this thread
  const AllocatorStats stats = device->allocator().stats();
  EXPECT_EQ(stats.bytes_in_use, 0u);
  EXPECT_EQ(stats.requests, stats.releases);
}

TEST(DeviceStress, CreateAndDestroyWithWorkInFlight) {
  for (int round = 0; round < scaled(20); ++round) {
    DeviceOptions options;
    options.device_threads = 2;
    options.alloc_mode = round % 2 == 0 ? AllocMode::fresh : AllocMode::caching;
    auto device = make_device(options);
    Stream& a = device->default_stream();
    Stream& b = device->create_stream("b");
    Buffer buffer = device->allocator().allocate(4096);
    for (int i = 0; i < 20; ++i) {
      a.memset(buffer, i, buffer.bytes(), "memset");
      a.launch(KernelLaunch{"k", {}, -1, [](kernels::WorkerPool& pool) { pool.run(8, [](std::size_t, unsigned) {}); }});
      b.wait_event(a.record_event());
    }
    buffer = Buffer{};  // released while work is queued
  }
  SUCCEED();
}
