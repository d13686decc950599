#include "kernels/thread_pool.hpp"

namespace encbench::kernels {

unsigned ThreadPool::default_workers() { return std::max(1u, std::thread::hardware_concurrency()); }

ThreadPool::ThreadPool(unsigned workers) : workers_(workers ? workers : default_workers()) {
  helpers_.reserve(workers_ - 1);
  for (unsigned w = 1; w < workers_; ++w) helpers_.emplace_back([this, w] { helper_loop(w); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& t : helpers_) t.join();
}

void ThreadPool::work(unsigned worker) {
  for (;;) {
    const std::size_t item = next_item_.fetch_add(1, std::memory_order_relaxed);
    if (item >= num_items_) return;
    try {
      (*job_)(item, worker);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!error_) error_ = std::current_exception();
      next_item_.store(num_items_, std::memory_order_relaxed);  // skip the rest
    }
  }
}

void ThreadPool::helper_loop(unsigned worker) {
  std::uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
    }
    work(worker);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (--busy_helpers_ == 0) done_.notify_one();
    }
  }
}

void ThreadPool::run(std::size_t num_items,
                     const std::function<void(std::size_t, unsigned)>& fn) {
  if (num_items == 0) return;
  if (helpers_.empty() || num_items == 1) {
    for (std::size_t i = 0; i < num_items; ++i) fn(i, 0);
    return;
  }
  const std::lock_guard<std::mutex> run_lock(run_mutex_);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = &fn;
    num_items_ = num_items;
    next_item_.store(0, std::memory_order_relaxed);
    busy_helpers_ = static_cast<unsigned>(helpers_.size());
    error_ = nullptr;
    ++generation_;
  }
  wake_.notify_all();
  work(0);
  std::exception_ptr error;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [&] { return busy_helpers_ == 0; });
    job_ = nullptr;
    error = error_;
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace encbench::kernels
