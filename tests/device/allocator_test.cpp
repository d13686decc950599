#include "harness/device/allocator.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

#include "harness/core/error.hpp"

using namespace encbench;
using namespace encbench::device;

TEST(Allocator, FreshGoesToTheSystemEveryTime) {
  auto allocator = make_allocator({.mode = AllocMode::fresh});
  EXPECT_EQ(allocator->mode(), AllocMode::fresh);
  {
    Buffer a = allocator->allocate(1000);
    EXPECT_EQ(a.bytes(), 1000u);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(a.data()) % kDeviceAlignment, 0u);
    const AllocatorStats in_use = allocator->stats();
    EXPECT_EQ(in_use.bytes_in_use, 1000u);
  }
  { Buffer b = allocator->allocate(1000); }
  const AllocatorStats stats = allocator->stats();
  EXPECT_EQ(stats.requests, 2u);
  EXPECT_EQ(stats.system_allocations, 2u);
  EXPECT_EQ(stats.cache_hits, 0u);
  EXPECT_EQ(stats.releases, 2u);
  EXPECT_EQ(stats.bytes_in_use, 0u);
  EXPECT_EQ(stats.peak_bytes_in_use, 1000u);
  EXPECT_EQ(stats.bytes_cached, 0u);
}

TEST(Allocator, CachingReusesTheSizeClass) {
  auto allocator = make_allocator({.mode = AllocMode::caching});
  void* first = nullptr;
  {
    Buffer a = allocator->allocate(1000);
    first = a.data();
    Buffer b = allocator->allocate(3000);
    EXPECT_EQ(allocator->stats().peak_bytes_in_use, 4000u);
  }
  EXPECT_EQ(allocator->stats().bytes_cached, caching_size_class(1000) + caching_size_class(3000));
  Buffer c = allocator->allocate(900);  // same 1024-byte class as 1000
  EXPECT_EQ(c.data(), first);
  Buffer d = allocator->allocate(5000);  // new class: system allocation
  const AllocatorStats stats = allocator->stats();
  EXPECT_EQ(stats.requests, 4u);
  EXPECT_EQ(stats.system_allocations, 3u);
  EXPECT_EQ(stats.cache_hits, 1u);
  EXPECT_EQ(stats.releases, 2u);
  EXPECT_EQ(stats.bytes_in_use, 5900u);
  EXPECT_EQ(stats.bytes_cached, caching_size_class(3000));
  EXPECT_EQ(caching_size_class(1), 512u);
  EXPECT_EQ(caching_size_class(513), 1024u);
  EXPECT_EQ(caching_size_class((1u << 20) + 1), 2u << 20);
}

TEST(Allocator, RejectsZeroAndAbsurdRequests) {
  auto allocator = make_allocator({.mode = AllocMode::caching});
  EXPECT_THROW(allocator->allocate(0), InvalidInput);
  EXPECT_THROW(allocator->allocate(kMaxAllocationBytes + 1), InvalidInput);
}

TEST(Allocator, MovedBuffersReleaseOnce) {
  auto allocator = make_allocator({.mode = AllocMode::fresh});
  Buffer a = allocator->allocate(64);
  Buffer b = std::move(a);
  EXPECT_FALSE(a);
  EXPECT_TRUE(b);
  Buffer c;
  c = std::move(b);
  c = Buffer{};
  EXPECT_EQ(allocator->stats().releases, 1u);
}

namespace {

// A device whose single stream is "busy" until the test says otherwise.
class FakeProgress final : public WorkProgress {
 public:
  std::vector<std::uint64_t> fence() const override { return {submitted.load()}; }
  bool reached(const std::vector<std::uint64_t>& fence) const override { return completed.load() >= fence[0]; }
  std::atomic<std::uint64_t> submitted{0}, completed{0};
};

}  // namespace

TEST(Allocator, ReleaseWaitsForQueuedWork) {
  for (AllocMode mode : {AllocMode::fresh, AllocMode::caching}) {
    FakeProgress progress;
    auto allocator = make_allocator({.mode = mode, .progress = &progress});
    progress.submitted = 5;  // five ops queued that may use the block
    progress.completed = 2;
    { Buffer a = allocator->allocate(1000); }
    AllocatorStats stats = allocator->stats();
    EXPECT_EQ(stats.deferred_releases, 1u) << to_string(mode);
    EXPECT_EQ(stats.bytes_in_use, 0u);
    EXPECT_GT(stats.bytes_pending_release, 0u);
    EXPECT_EQ(stats.bytes_cached, 0u);
    { Buffer still_busy = allocator->allocate(1000); }  // cannot reuse yet
    EXPECT_EQ(allocator->stats().cache_hits, 0u);
    progress.completed = 5;
    Buffer b = allocator->allocate(1000);
    stats = allocator->stats();
    EXPECT_EQ(stats.bytes_pending_release, 0u) << to_string(mode);
    EXPECT_EQ(stats.cache_hits, mode == AllocMode::caching ? 1u : 0u);
  }
}
