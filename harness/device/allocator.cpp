#include "harness/device/allocator.hpp"

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <string>

#include "harness/core/error.hpp"

namespace encbench::device {

std::size_t caching_size_class(std::size_t bytes) {
  constexpr std::size_t kSmallStep = 512;
  constexpr std::size_t kLargeStep = std::size_t{1} << 20;
  const std::size_t step = bytes <= kLargeStep ? kSmallStep : kLargeStep;
  return (bytes + step - 1) / step * step;
}

namespace {

std::size_t round_up(std::size_t bytes, std::size_t multiple) {
  return (bytes + multiple - 1) / multiple * multiple;
}

std::string gib(std::uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
  return text;
}

}  // namespace

OutOfDeviceMemory::OutOfDeviceMemory(std::size_t requested_bytes, std::uint64_t reserved_bytes,
                                     std::uint64_t budget_bytes)
    : std::runtime_error("out of device memory: needed " + std::to_string(requested_bytes) + " bytes (" +
                         gib(requested_bytes) + ") with " + gib(reserved_bytes) + " reserved, budget " +
                         gib(budget_bytes)),
      requested(requested_bytes),
      reserved(reserved_bytes),
      budget(budget_bytes) {}

namespace {

class StreamOrderedAllocator final : public Allocator {
 public:
  explicit StreamOrderedAllocator(const AllocatorOptions& options) : options_(options) {
    stats_.budget_bytes = options.budget_bytes;
  }

  ~StreamOrderedAllocator() override {
    // The owning device has drained its streams before destroying the allocator.
    for (const Pending& pending : pending_) give_back(pending.data);
    for (auto& [size_class, blocks] : free_lists_) {
      for (void* block : blocks) give_back(block);
    }
  }

  Buffer allocate(std::size_t bytes) override {
    require(bytes > 0, "device allocation of 0 bytes");
    require(bytes <= kMaxAllocationBytes,
            "device allocation of " + std::to_string(bytes) + " bytes exceeds the 1 TiB limit");
    const std::size_t capacity = capacity_for(bytes);
    const timeline::ScopedHostSpan api_span(options_.recorder, "alloc", timeline::HostSpanKind::api);
    void* data = nullptr;
    {
      const std::lock_guard lock(mutex_);
      ++stats_.requests;
      settle_pending_locked();
      if (options_.mode == AllocMode::caching) data = take_cached_locked(capacity);
      if (data == nullptr) {
        if (!fits_locked(capacity)) {
          // Like PyTorch's caching allocator: free every cached block, then try once more.
          ++stats_.cache_flushes;
          release_cache_locked(0);
          if (!fits_locked(capacity)) {
            ++stats_.out_of_memory;
            throw OutOfDeviceMemory(bytes, stats_.bytes_reserved, options_.budget_bytes);
          }
        }
        data = obtain(capacity);
        ++stats_.system_allocations;
        stats_.bytes_reserved += capacity;
        if (stats_.bytes_reserved > stats_.peak_bytes_reserved) stats_.peak_bytes_reserved = stats_.bytes_reserved;
      }
      stats_.bytes_in_use += bytes;
      stats_.bytes_requested += bytes;
      if (stats_.bytes_in_use > stats_.peak_bytes_in_use) stats_.peak_bytes_in_use = stats_.bytes_in_use;
    }
    return wrap(data, bytes);
  }

  AllocatorStats stats() const override {
    const std::lock_guard lock(mutex_);
    return stats_;
  }

  AllocMode mode() const override { return options_.mode; }

  std::size_t trim(std::size_t keep_bytes) override {
    const std::lock_guard lock(mutex_);
    settle_pending_locked();
    const std::size_t released = release_cache_locked(keep_bytes);
    stats_.bytes_trimmed += released;
    return released;
  }

  void reset_peaks() override {
    const std::lock_guard lock(mutex_);
    stats_.peak_bytes_in_use = stats_.bytes_in_use;
    stats_.peak_bytes_reserved = stats_.bytes_reserved;
  }

 protected:
  void release(void* data, std::size_t bytes) noexcept override {
    const std::size_t capacity = capacity_for(bytes);
    // Ask for the fence before taking our lock (the device's locks are never held while it
    // calls into the allocator, so the order allocator -> device is the only one).
    std::vector<std::uint64_t> fence;
    bool idle = true;
    if (options_.progress != nullptr) {
      fence = options_.progress->fence();
      idle = options_.progress->reached(fence);
    }
    const std::lock_guard lock(mutex_);
    ++stats_.releases;
    stats_.bytes_in_use -= bytes;
    if (!idle) {
      ++stats_.deferred_releases;
      stats_.bytes_pending_release += capacity;
      pending_.push_back(Pending{data, capacity, std::move(fence)});
      return;
    }
    retire_locked(data, capacity);
  }

 private:
  struct Pending {
    void* data;
    std::size_t capacity;
    std::vector<std::uint64_t> fence;
  };

  std::size_t capacity_for(std::size_t bytes) const {
    return options_.mode == AllocMode::caching ? caching_size_class(bytes) : round_up(bytes, kDeviceAlignment);
  }

  bool fits_locked(std::size_t capacity) const {
    return options_.budget_bytes == 0 || stats_.bytes_reserved + capacity <= options_.budget_bytes;
  }

  void* obtain(std::size_t capacity) {
    if (!options_.materialize) {
      // An address range of its own per block, never reused, never backed by memory.
      void* address = reinterpret_cast<void*>(kUnmaterializedBase + next_unmaterialized_offset_);
      next_unmaterialized_offset_ += capacity;
      return address;
    }
    void* data = std::aligned_alloc(kDeviceAlignment, capacity);
    if (data == nullptr) throw std::bad_alloc();
    return data;
  }

  void give_back(void* data) const {
    if (options_.materialize) std::free(data);
  }

  void* take_cached_locked(std::size_t capacity) {
    auto it = free_lists_.find(capacity);
    if (it == free_lists_.end() || it->second.empty()) return nullptr;
    void* data = it->second.back();
    it->second.pop_back();
    ++stats_.cache_hits;
    stats_.bytes_cached -= capacity;
    return data;
  }

  // Frees cached blocks, largest classes first, until at most keep_bytes stay cached.
  std::size_t release_cache_locked(std::size_t keep_bytes) {
    std::size_t released = 0;
    for (auto it = free_lists_.rbegin(); it != free_lists_.rend() && stats_.bytes_cached > keep_bytes; ++it) {
      auto& [capacity, blocks] = *it;
      while (!blocks.empty() && stats_.bytes_cached > keep_bytes) {
        give_back(blocks.back());
        blocks.pop_back();
        stats_.bytes_cached -= capacity;
        stats_.bytes_reserved -= capacity;
        released += capacity;
      }
    }
    return released;
  }

  void retire_locked(void* data, std::size_t capacity) {
    if (options_.mode == AllocMode::caching) {
      free_lists_[capacity].push_back(data);
      stats_.bytes_cached += capacity;
    } else {
      give_back(data);
      stats_.bytes_reserved -= capacity;
    }
  }

  void settle_pending_locked() {
    if (pending_.empty() || options_.progress == nullptr) return;
    std::size_t kept = 0;
    for (std::size_t i = 0; i < pending_.size(); ++i) {
      if (options_.progress->reached(pending_[i].fence)) {
        stats_.bytes_pending_release -= pending_[i].capacity;
        retire_locked(pending_[i].data, pending_[i].capacity);
      } else {
        if (kept != i) pending_[kept] = std::move(pending_[i]);  // never self-move: it empties the fence
        ++kept;
      }
    }
    pending_.resize(kept);
  }

  const AllocatorOptions options_;
  mutable std::mutex mutex_;
  AllocatorStats stats_;
  std::map<std::size_t, std::vector<void*>> free_lists_;
  std::vector<Pending> pending_;
  std::uintptr_t next_unmaterialized_offset_ = 0;
};

}  // namespace

std::unique_ptr<Allocator> make_allocator(const AllocatorOptions& options) {
  return std::make_unique<StreamOrderedAllocator>(options);
}

}  // namespace encbench::device
