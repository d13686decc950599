#include "harness/device_cuda/cuda_memory.hpp"

#include <iterator>
#include <new>
#include <string>

#include "harness/core/error.hpp"
#include "harness/device_cuda/cuda_device.hpp"
#include "kernels/cuda/cuda_check.hpp"

namespace encbench::device::cuda_backend {

CudaAllocator::CudaAllocator(AllocMode mode, int ordinal, timeline::Recorder* recorder)
    : mode_(mode), ordinal_(ordinal), recorder_(recorder) {}

CudaAllocator::~CudaAllocator() {
  release_cached();
  // Blocks still owned by live Buffers are freed by CUDA at context teardown; a Buffer must not
  // outlive its device (the same rule as the cpu device).
}

Buffer CudaAllocator::allocate(std::size_t bytes) {
  require(bytes > 0, "cuda allocator: zero-byte allocation");
  require(bytes <= (std::size_t{1} << 40), "cuda allocator: request of " + std::to_string(bytes) +
                                               " bytes is absurd");
  const std::size_t block = mode_ == AllocMode::caching ? caching_block_size(bytes) : bytes;
  {
    std::lock_guard lock(mutex_);
    ++stats_.requests;
    if (mode_ == AllocMode::caching) {
      auto it = free_blocks_.find(block);
      if (it != free_blocks_.end()) {
        void* data = it->second;
        free_blocks_.erase(it);
        block_size_[data] = block;
        ++stats_.cache_hits;
        stats_.bytes_cached -= block;
        stats_.bytes_in_use += block;
        if (stats_.bytes_in_use > stats_.peak_bytes_in_use) stats_.peak_bytes_in_use = stats_.bytes_in_use;
        return wrap(data, bytes);
      }
    }
  }
  void* data = nullptr;
  {
    timeline::ScopedHostSpan span(recorder_, "cudaMalloc", timeline::HostSpanKind::api);
    cudaSetDevice(ordinal_);
    cudaError_t status = cudaMalloc(&data, block);
    if (status == cudaErrorMemoryAllocation && mode_ == AllocMode::caching) {
      (void)cudaGetLastError();
      release_cached();  // as PyTorch: free the cache and retry once
      status = cudaMalloc(&data, block);
    }
    if (status == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();
      throw std::bad_alloc();
    }
    ENCBENCH_CUDA_CHECK(status);
  }
  std::lock_guard lock(mutex_);
  ++stats_.system_allocations;
  block_size_[data] = block;
  stats_.bytes_in_use += block;
  if (stats_.bytes_in_use > stats_.peak_bytes_in_use) stats_.peak_bytes_in_use = stats_.bytes_in_use;
  return wrap(data, bytes);
}

void CudaAllocator::release(void* data, std::size_t) noexcept {
  std::size_t block = 0;
  {
    std::lock_guard lock(mutex_);
    auto it = block_size_.find(data);
    if (it == block_size_.end()) return;
    block = it->second;
    block_size_.erase(it);
    ++stats_.releases;
    stats_.bytes_in_use -= block;
    if (mode_ == AllocMode::caching) {
      free_blocks_.emplace(block, data);
      stats_.bytes_cached += block;
      return;
    }
  }
  timeline::ScopedHostSpan span(recorder_, "cudaFree", timeline::HostSpanKind::wait);
  cudaSetDevice(ordinal_);
  cudaFree(data);  // synchronizes the device: recorded as a wait
}

void CudaAllocator::release_cached() {
  std::multimap<std::size_t, void*> blocks;
  {
    std::lock_guard lock(mutex_);
    blocks.swap(free_blocks_);
    stats_.bytes_cached = 0;
  }
  if (blocks.empty()) return;
  cudaSetDevice(ordinal_);
  for (auto& [size, data] : blocks) cudaFree(data);
}

std::size_t CudaAllocator::trim(std::size_t keep_bytes) {
  std::vector<void*> released_blocks;
  std::size_t released = 0;
  {
    std::lock_guard lock(mutex_);
    // Largest blocks first, until at most keep_bytes stay cached.
    while (!free_blocks_.empty() && stats_.bytes_cached > keep_bytes) {
      auto it = std::prev(free_blocks_.end());
      released += it->first;
      stats_.bytes_cached -= it->first;
      released_blocks.push_back(it->second);
      free_blocks_.erase(it);
    }
    stats_.bytes_trimmed += released;
  }
  if (!released_blocks.empty()) {
    cudaSetDevice(ordinal_);
    for (void* data : released_blocks) cudaFree(data);
  }
  return released;
}

void CudaAllocator::reset_peaks() {
  std::lock_guard lock(mutex_);
  stats_.peak_bytes_in_use = stats_.bytes_in_use;
}

AllocatorStats CudaAllocator::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

PinnedPool::~PinnedPool() {
  for (Block* block : blocks_) {
    if (block->done) {
      cudaEventSynchronize(block->done);
      cudaEventDestroy(block->done);
    }
    cudaFreeHost(block->data);
    delete block;
  }
}

PinnedPool::Block* PinnedPool::acquire(std::size_t bytes) {
  std::lock_guard lock(mutex_);
  for (Block* block : blocks_) {
    if (block->busy || block->bytes < bytes) continue;
    if (block->pending) {
      if (cudaEventQuery(block->done) != cudaSuccess) {
        (void)cudaGetLastError();  // cudaErrorNotReady is not an error here
        continue;
      }
      block->pending = false;
    }
    block->busy = true;
    return block;
  }
  std::size_t size = 64 << 10;
  while (size < bytes) size *= 2;
  auto* block = new Block();
  block->bytes = size;
  ENCBENCH_CUDA_CHECK(cudaHostAlloc(&block->data, size, cudaHostAllocDefault));
  ENCBENCH_CUDA_CHECK(cudaEventCreateWithFlags(&block->done, cudaEventDisableTiming));
  block->busy = true;
  blocks_.push_back(block);
  return block;
}

void PinnedPool::release_after(Block* block, cudaStream_t stream) {
  ENCBENCH_CUDA_CHECK(cudaEventRecord(block->done, stream));
  std::lock_guard lock(mutex_);
  block->busy = false;
  block->pending = true;
}

void PinnedPool::release_now(Block* block) {
  std::lock_guard lock(mutex_);
  block->busy = false;
  block->pending = false;
}

}  // namespace encbench::device::cuda_backend
