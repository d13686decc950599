#pragma once
// Threads that spin for the lifetime of the object: the "two busy processes beside it" load of
// the virtual-clock tests, without leaving the test process.
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

namespace encbench::testing_support {

class BusyNeighbours {
 public:
  explicit BusyNeighbours(int threads) {
    for (int i = 0; i < threads; ++i)
      threads_.emplace_back([this] {
        volatile std::uint64_t x = 0;
        while (!stop_.load(std::memory_order_relaxed)) x = x + 1;
      });
  }
  ~BusyNeighbours() {
    stop_ = true;
    for (auto& t : threads_) t.join();
  }
  BusyNeighbours(const BusyNeighbours&) = delete;
  BusyNeighbours& operator=(const BusyNeighbours&) = delete;

 private:
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

}  // namespace encbench::testing_support
