#pragma once
// A WorkerPool backed by persistent std::threads: the calling thread works as worker 0, the
// others wait on a condition variable between run() calls, so a kernel uses exactly num_workers()
// cores. One kernel runs on the pool at a time: concurrent callers (several streams of one device)
// take turns, like kernels sharing the cores of one device. The project's one thread pool: the
// devices' kernel pool, benchmarks and `encbench peak`.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "kernels/worker_pool.hpp"

namespace encbench::kernels {

class ThreadPool final : public WorkerPool {
 public:
  // workers == 0: default_workers().
  explicit ThreadPool(unsigned workers = 0);
  static unsigned default_workers();  // one per hardware thread (at least 1)
  ~ThreadPool() override;
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  unsigned num_workers() const override { return workers_; }
  // Rethrows the first exception an item threw, after all items finished or were skipped.
  void run(std::size_t num_items,
           const std::function<void(std::size_t item, unsigned worker)>& fn) override;

 private:
  void helper_loop(unsigned worker);
  void work(unsigned worker);

  unsigned workers_;
  std::vector<std::thread> helpers_;
  std::mutex run_mutex_;  // one kernel on the pool at a time
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  std::uint64_t generation_ = 0;
  unsigned busy_helpers_ = 0;
  bool stopping_ = false;
  const std::function<void(std::size_t, unsigned)>* job_ = nullptr;
  std::size_t num_items_ = 0;
  std::atomic<std::size_t> next_item_{0};
  std::exception_ptr error_;
};

}  // namespace encbench::kernels
