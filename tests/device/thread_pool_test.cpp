// The devices' kernel pool (kernels::ThreadPool, the project's one thread pool) as a device uses it.
#include "kernels/thread_pool.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

using encbench::kernels::ThreadPool;

TEST(DeviceKernelPool, RunsEveryItemOnceOnValidWorkers) {
  ThreadPool pool(3);
  EXPECT_EQ(pool.num_workers(), 3u);
  for (std::size_t items : {0u, 1u, 2u, 1000u}) {
    std::vector<std::atomic<int>> hits(items);
    std::atomic<bool> bad_worker{false};
    pool.run(items, [&](std::size_t item, unsigned worker) {
      if (worker >= 3) bad_worker = true;
      ++hits[item];
    });
    for (std::size_t i = 0; i < items; ++i) ASSERT_EQ(hits[i].load(), 1) << i;
    EXPECT_FALSE(bad_worker.load());
  }
}

TEST(DeviceKernelPool, RethrowsTheFirstErrorAndStaysUsable) {
  ThreadPool pool(2);
  EXPECT_THROW(pool.run(500, [](std::size_t item, unsigned) {
                 if (item == 10) throw std::invalid_argument("item 10");
               }),
               std::invalid_argument);
  std::atomic<std::size_t> count{0};
  pool.run(64, [&](std::size_t, unsigned) { ++count; });
  EXPECT_EQ(count.load(), 64u);
}

TEST(DeviceKernelPool, DefaultSizeIsAllCores) {
  ThreadPool pool(0);
  EXPECT_EQ(pool.num_workers(), ThreadPool::default_workers());
}

// Two streams of one device launch kernels at once: they take turns, so one kernel's items all
// finish before the other's start (the recorded order is two unbroken runs), and each caller sees
// every one of its own items.
TEST(DeviceKernelPool, ConcurrentCallersTakeTurns) {
  ThreadPool pool(3);
  std::mutex order_mutex;
  std::vector<int> order;
  std::atomic<int> items_a{0}, items_b{0};
  const auto launch = [&](int job, std::atomic<int>& items) {
    for (int kernel = 0; kernel < 20; ++kernel)
      pool.run(50, [&](std::size_t, unsigned) {
        ++items;
        const std::lock_guard lock(order_mutex);
        order.push_back(job * 100 + kernel);
      });
  };
  std::thread a(launch, 1, std::ref(items_a));
  std::thread b(launch, 2, std::ref(items_b));
  a.join();
  b.join();
  EXPECT_EQ(items_a.load(), 1000);
  EXPECT_EQ(items_b.load(), 1000);
  ASSERT_EQ(order.size(), 2000u);
  // Every kernel's 50 items are contiguous in the recorded order.
  for (std::size_t k = 0; k < order.size(); k += 50)
    for (std::size_t i = k; i < k + 50; ++i) ASSERT_EQ(order[i], order[k]) << "kernel interleaved at " << i;
}
