// The sim backend on the virtual clock: exact modelled gaps, no tensor memory, load invariance.
#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "harness/core/error.hpp"
#include "harness/device/allocator.hpp"
#include "harness/device/device.hpp"
#include "harness/device/sim_profile.hpp"
#include "harness/timeline/gaps.hpp"
#include "tests/support/busy_neighbours.hpp"

using namespace encbench;
using namespace encbench::device;
using timeline::OpCategory;

namespace {

namespace fs = std::filesystem;

// Round numbers so every expected time can be worked out by hand.
constexpr Nanos kFixed = 2000;          // kernel fixed cost
constexpr double kPeak = 1e12;          // 1e6 FLOP = 1 us
constexpr double kMemBw = 1e11;         // 1e5 B = 1 us
constexpr Nanos kD2hLatency = 3000;     // + 1 ns per byte
constexpr Nanos kH2dLatency = 1000;     // + 0.5 ns per byte
constexpr Nanos kWakeup = 50'000;

nlohmann::json number(double value) { return {{"value", value}, {"source", "test"}}; }

class VirtualClock : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("encbench_virtual_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    const nlohmann::json profile = {{"name", "vtest"},
                                    {"peak_fp32_flops_per_s", number(kPeak / 4)},
                                    {"peak_fp16_flops_per_s", number(kPeak)},
                                    {"mem_bytes_per_s", number(kMemBw)},
                                    {"kernel_fixed_ns", number(kFixed)},
                                    {"d2h_latency_ns", number(kD2hLatency)},
                                    {"d2h_bytes_per_s", number(1e9)},
                                    {"h2d_latency_ns", number(kH2dLatency)},
                                    {"h2d_bytes_per_s", number(2e9)},
                                    {"host_wakeup_ns", number(kWakeup)},
                                    {"memory_bytes", number(1e6)}};
    std::ofstream(dir_ / "vtest.json") << profile.dump(2);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Measured host time (the mode these tests are about): `cpu_step_ns`, a scripted host CPU clock
  // that advances this much per reading, so host time between calls is known exactly (-1: the
  // real thread CPU clock).
  std::unique_ptr<Device> make(bool verify, Nanos cpu_step_ns, Nanos launch_overhead_ns = 0) {
    DeviceOptions options;
    options.spec = "sim:vtest";
    options.clock = ClockMode::virtual_time;
    options.host_time = HostTime::measured;
    options.verify = verify;
    options.device_threads = 1;
    options.profiles_dir = dir_;
    options.launch_overhead_ns = launch_overhead_ns;
    if (cpu_step_ns >= 0) {
      auto ticks = std::make_shared<Nanos>(0);
      options.host_cpu_clock = [ticks, cpu_step_ns] { return *ticks += cpu_step_ns; };
    }
    return make_device(options);
  }

  fs::path dir_;
};

KernelLaunch kernel(std::string name, double flops, int layer = -1) {
  return KernelLaunch{std::move(name), {flops, 0}, layer, {}, {}};
}

const timeline::DeviceOp& op_named(const timeline::Timeline& tl, const std::string& name) {
  for (const auto& op : tl.device_ops)
    if (op.name == name) return op;
  throw std::runtime_error("no op " + name);
}

TEST_F(VirtualClock, SyncGapIsExactlyTheModelledLatencyWakeupAndHostWork) {
  // Every host CPU clock reading advances 100 ns. Host time between two device calls is then
  // exactly 100 ns (one reading at the previous call's exit, one at the next call's entry).
  auto dev = make(false, 100);
  Stream& s = dev->default_stream();
  Buffer lengths = dev->allocator().allocate(64);
  s.launch(kernel("k1", 10e6));  // 2 us fixed + 10 us
  std::int32_t host_copy[16];
  s.copy_d2h(host_copy, lengths, 0, 64, "seq_lens_d2h", 0);  // 3 us + 64 ns
  s.launch(kernel("k2", 1e6));
  s.synchronize("end");
  const timeline::Timeline tl = dev->collect_timeline();
  const auto& k1 = op_named(tl, "k1");
  const auto& d2h = op_named(tl, "seq_lens_d2h");
  const auto& k2 = op_named(tl, "k2");
  EXPECT_EQ(k1.end_ns - k1.start_ns, kFixed + 10'000);
  EXPECT_EQ(d2h.start_ns, k1.end_ns);  // queued behind k1
  EXPECT_EQ(d2h.end_ns - d2h.start_ns, kD2hLatency + 64);
  EXPECT_EQ(k2.end_ns - k2.start_ns, kFixed + 1'000);
  // The sync gap: the host wakes kWakeup after the copy ends, then spends 100 ns of CPU before
  // its next submit, which starts at once on an idle device.
  EXPECT_EQ(k2.submit_ns, d2h.end_ns + kWakeup + 100);
  EXPECT_EQ(k2.start_ns - d2h.end_ns, kWakeup + 100);
  const timeline::GapAnalysis gaps = timeline::analyze_gaps(tl);
  ASSERT_EQ(gaps.gaps.size(), 1u);
  EXPECT_EQ(gaps.gaps[0].duration_ns(), kWakeup + 100);
  EXPECT_EQ(gaps.gaps[0].gap_class, timeline::GapClass::sync_stall);
  // Content: no memory behind the buffer, the host copy is zero-filled.
  EXPECT_EQ(host_copy[0], 0);
}

TEST_F(VirtualClock, LaunchOverheadIsHostTimeAndQueuedOpsStartBackToBack) {
  auto dev = make(false, 0, 5'000);  // host CPU frozen; 5 us per submit
  Stream& s = dev->default_stream();
  for (int i = 0; i < 4; ++i) s.launch(kernel("k" + std::to_string(i), 20e6));  // 22 us each
  s.synchronize("end");
  const timeline::Timeline tl = dev->collect_timeline();
  ASSERT_EQ(tl.device_ops.size(), 5u);  // 4 kernels + the sync marker
  const Nanos t0 = tl.device_ops[0].submit_ns;
  for (int i = 0; i < 4; ++i) {
    const auto& op = tl.device_ops[static_cast<std::size_t>(i)];
    EXPECT_EQ(op.submit_ns, t0 + 5'000 * i);           // the host pays 5 us per submit
    EXPECT_EQ(op.start_ns, t0 + 22'000 * i);           // device-bound: back to back
    EXPECT_EQ(op.end_ns - op.start_ns, 22'000);
  }
  EXPECT_EQ(timeline::analyze_gaps(tl).idle_ns, 0);
  // The api span of each submit is exactly the launch overhead.
  int api_spans = 0;
  for (const auto& span : tl.host_spans)
    if (span.kind == timeline::HostSpanKind::api) {
      EXPECT_EQ(span.end_ns - span.start_ns, 5'000) << span.name;
      ++api_spans;
    }
  EXPECT_EQ(api_spans, 4);
}

TEST_F(VirtualClock, HostBoundSubmitsLeaveGapsOfTheHostTime) {
  auto dev = make(false, 0, 30'000);  // 30 us per submit, 3 us kernels: host-bound
  Stream& s = dev->default_stream();
  for (int i = 0; i < 3; ++i) s.launch(kernel("k" + std::to_string(i), 1e6));
  s.synchronize("end");
  const timeline::GapAnalysis gaps = timeline::analyze_gaps(dev->collect_timeline());
  ASSERT_EQ(gaps.gaps.size(), 2u);
  for (const auto& gap : gaps.gaps) EXPECT_EQ(gap.duration_ns(), 30'000 - 3'000);
}

TEST_F(VirtualClock, EventsOrderStreamsAndHostWaits) {
  auto dev = make(false, 0);
  Stream& a = dev->default_stream();
  Stream& b = dev->create_stream("side");
  a.launch(kernel("a1", 100e6));  // 102 us
  auto done = a.record_event();
  b.wait_event(done);
  b.launch(kernel("b1", 1e6));
  EXPECT_FALSE(done->query());  // the host is still at submit time
  done->synchronize();
  EXPECT_TRUE(done->query());
  dev->synchronize();
  const timeline::Timeline tl = dev->collect_timeline();
  EXPECT_EQ(op_named(tl, "b1").start_ns, op_named(tl, "a1").end_ns);
  EXPECT_EQ(done->completed_ns(), op_named(tl, "a1").end_ns);
}

TEST_F(VirtualClock, NoTensorMemoryWithoutVerifyButAccountedAgainstTheBudget) {
  auto dev = make(false, 0);
  EXPECT_FALSE(dev->info().materialized);
  EXPECT_EQ(dev->info().clock, "virtual");
  EXPECT_EQ(dev->info().memory_budget_bytes, 1'000'000u);  // the profile's memory_bytes
  Allocator& alloc = dev->allocator();
  Buffer big = alloc.allocate(600'000);
  // An address no host memory uses: never dereferenced by the device.
  EXPECT_GE(reinterpret_cast<std::uintptr_t>(big.data()), kUnmaterializedBase);
  std::vector<float> src(1000, 1.0f);
  dev->default_stream().copy_h2d(big, 0, src.data(), 4000, "h2d");
  dev->default_stream().memset(big, 0, 600'000, "zero");
  EXPECT_EQ(alloc.stats().peak_bytes_in_use, 600'000u);
  // 600,000 + 600,000 exceeds the 1,000,000-byte profile: refused with the figures.
  try {
    (void)alloc.allocate(600'000);
    FAIL() << "expected OutOfDeviceMemory";
  } catch (const OutOfDeviceMemory& oom) {
    EXPECT_EQ(oom.requested, 600'000u);
    EXPECT_EQ(oom.budget, 1'000'000u);
    EXPECT_NE(std::string(oom.what()).find("out of device memory"), std::string::npos);
  }
  big = Buffer();  // cached, still reserved
  EXPECT_EQ(alloc.stats().bytes_cached, caching_size_class(600'000));
  // A request that only fits after the cache is flushed succeeds (flush + retry).
  Buffer other = alloc.allocate(900'000);
  EXPECT_EQ(alloc.stats().cache_flushes, 2u);  // one for the refused request, one here
  EXPECT_EQ(alloc.stats().bytes_cached, 0u);
}

TEST_F(VirtualClock, VerifyComputesResultsWithTheSameTimeline) {
  auto dev = make(true, 0);
  EXPECT_TRUE(dev->info().materialized);
  Stream& s = dev->default_stream();
  Buffer buf = dev->allocator().allocate(16);
  const std::int32_t in[4] = {1, 2, 3, 4};
  s.copy_h2d(buf, 0, in, 16, "h2d");
  std::int32_t* device_data = buf.as<std::int32_t>();
  s.launch(KernelLaunch{"double", {4e6, 0}, -1, [device_data](kernels::WorkerPool&) {
                          for (int i = 0; i < 4; ++i) device_data[i] *= 2;
                        }, {}});
  std::int32_t out[4] = {};
  s.copy_d2h(out, buf, 0, 16, "d2h");
  EXPECT_EQ(out[3], 8);
  const timeline::Timeline tl = dev->collect_timeline();
  EXPECT_EQ(op_named(tl, "double").end_ns - op_named(tl, "double").start_ns, kFixed + 4'000);
}

TEST_F(VirtualClock, ThreadCpuClockIgnoresOtherBusyThreads) {
  // Same work with and without two threads spinning beside it: the virtual time moves only by
  // what the host thread itself computes (a few us per submit), not by preemption.
  auto run = [&] {
    auto dev = make(false, -1);
    Stream& s = dev->default_stream();
    for (int i = 0; i < 200; ++i) s.launch(kernel("k", 50e6));  // 52 us each, device-bound
    s.synchronize("end");
    const auto gaps = timeline::analyze_gaps(dev->collect_timeline());
    return gaps.span_end_ns - gaps.span_start_ns;
  };
  const Nanos quiet = run();
  Nanos loaded = 0;
  {
    const testing_support::BusyNeighbours busy(2);
    loaded = run();
  }
  EXPECT_EQ(quiet, 200 * 52'000);  // device-bound: exactly the modelled sum
  EXPECT_EQ(loaded, quiet);
}

// A host model whose class i costs (i + 1) us: every charge below names its class exactly.
HostModel stepped_host_model() {
  HostModel m = zero_host_model("stepped", "test");
  for (std::size_t i = 0; i < kHostOpClassCount; ++i) m.costs[i].ns = static_cast<Nanos>(i + 1) * 1'000;
  return m;
}

TEST_F(VirtualClock, ModelledHostTimeChargesEachCallItsClassCost) {
  DeviceOptions options;
  options.spec = "sim:vtest";
  options.clock = ClockMode::virtual_time;
  options.profiles_dir = dir_;
  options.launch_overhead_ns = 500;
  options.host_model = std::make_shared<const HostModel>(stepped_host_model());
  // A CPU clock that would add 1 ms per reading: the model mode never reads it.
  options.host_cpu_clock = [t = Nanos{0}]() mutable { return t += 1'000'000; };
  auto dev = make_device(options);
  EXPECT_EQ(dev->info().host_time, "model");
  EXPECT_EQ(dev->info().host_model, "stepped");
  ASSERT_NE(dev->host_model(), nullptr);
  const HostModel& m = *dev->host_model();
  Stream& s = dev->default_stream();
  Buffer buf = dev->allocator().allocate(64);
  const Nanos t0 = dev->host_now_ns();
  s.launch(kernel("k1", 1e6));
  const Nanos after_launch = dev->host_now_ns();
  EXPECT_EQ(after_launch - t0, 500 + m.cost(HostOpClass::kernel_launch));
  std::int32_t host[16] = {};
  s.copy_h2d(buf, 0, host, 64, "h2d");
  EXPECT_EQ(dev->host_now_ns() - after_launch, 500 + m.cost(HostOpClass::h2d_copy));
  const Nanos before_work = dev->host_now_ns();
  dev->host_work(HostOpClass::host_math);
  dev->host_work(HostOpClass::allocation);
  EXPECT_EQ(dev->host_now_ns() - before_work, m.cost(HostOpClass::host_math) + m.cost(HostOpClass::allocation));
  // The D2H: its host part, then the wait until the copy ends + wake-up.
  s.copy_d2h(host, buf, 0, 64, "d2h", 0);
  const timeline::Timeline tl = dev->collect_timeline();
  const auto& d2h = op_named(tl, "d2h");
  EXPECT_EQ(d2h.submit_ns, before_work + m.cost(HostOpClass::host_math) + m.cost(HostOpClass::allocation) + 500 +
                               m.cost(HostOpClass::d2h_copy));
  EXPECT_EQ(dev->host_now_ns(), d2h.end_ns + kWakeup);
  // A synchronize on an idle device costs its host part alone.
  const Nanos before_sync = dev->host_now_ns();
  s.synchronize("end");
  EXPECT_EQ(dev->host_now_ns() - before_sync, m.cost(HostOpClass::stream_sync));
  auto event = s.record_event();
  s.wait_event(event);
  EXPECT_EQ(dev->host_now_ns() - before_sync,
            m.cost(HostOpClass::stream_sync) + m.cost(HostOpClass::event_record) + m.cost(HostOpClass::event_wait));
}

TEST_F(VirtualClock, ModelledHostTimeRepeatsBitForBitOnABusyMachine) {
  // The same submits with and without two threads spinning beside it, and under whatever build
  // runs this test: the model mode reads no machine clock, so the figures are equal.
  auto run = [&] {
    DeviceOptions options;
    options.spec = "sim:vtest";
    options.clock = ClockMode::virtual_time;
    options.profiles_dir = dir_;
    options.host_model = std::make_shared<const HostModel>(stepped_host_model());
    auto dev = make_device(options);
    Stream& s = dev->default_stream();
    Buffer buf = dev->allocator().allocate(64);
    std::int32_t host[16] = {};
    for (int i = 0; i < 50; ++i) {
      s.launch(kernel("k", 1e6));
      dev->host_work(HostOpClass::host_scalar);
      if (i % 10 == 0) s.copy_d2h(host, buf, 0, 64, "d2h", i);
    }
    s.synchronize("end");
    return dev->host_now_ns();
  };
  const Nanos quiet = run();
  Nanos loaded = 0;
  {
    const testing_support::BusyNeighbours busy(2);
    loaded = run();
  }
  EXPECT_EQ(loaded, quiet);
  EXPECT_GT(quiet, 50 * 1'000);  // 50 launches of 1 us each at least: time did move
}

TEST_F(VirtualClock, DefaultHostModelComesFromTheSourceTreeWhenTheProfileFolderHasNone) {
  DeviceOptions options;
  options.spec = "sim:vtest";
  options.clock = ClockMode::virtual_time;
  options.profiles_dir = dir_;  // no host-models/ here
  auto dev = make_device(options);
  ASSERT_NE(dev->host_model(), nullptr);
  EXPECT_EQ(dev->host_model()->name, kDefaultHostModel);
  options.host_time = HostTime::none;
  auto none = make_device(options);
  EXPECT_EQ(none->host_model(), nullptr);
  EXPECT_EQ(none->info().host_time, "none");
}

TEST_F(VirtualClock, BadInputIsAClearError) {
  DeviceOptions options;
  options.spec = "cpu";
  options.clock = ClockMode::virtual_time;
  try {
    (void)make_device(options);
    FAIL() << "expected InvalidInput";
  } catch (const InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find("needs a sim device"), std::string::npos) << e.what();
  }
  try {
    (void)parse_clock_mode("wall");
    FAIL() << "expected InvalidInput";
  } catch (const InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find("virtual, real"), std::string::npos) << e.what();
  }
}

}  // namespace
