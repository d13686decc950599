#pragma once
// Device memory and pinned host staging for the CUDA backend (internal).
#include <cuda_runtime.h>

#include <cstddef>
#include <map>
#include <mutex>
#include <vector>

#include "harness/device/device.hpp"
#include "harness/timeline/recorder.hpp"

namespace encbench::device::cuda_backend {

// caching: released blocks go to a free list keyed by their rounded size (caching_block_size) and
// are reused by later requests of that size class. Reuse is safe without events because every op
// of this backend is ordered on the device's streams the way PyTorch's caching allocator assumes
// (a block freed by the host is only reused by work enqueued later). fresh: cudaMalloc/cudaFree per
// request; cudaFree implicitly synchronizes the device, so fresh mode shows that stall.
class CudaAllocator final : public Allocator {
 public:
  CudaAllocator(AllocMode mode, int ordinal, timeline::Recorder* recorder);
  ~CudaAllocator() override;
  Buffer allocate(std::size_t bytes) override;
  AllocatorStats stats() const override;
  AllocMode mode() const override { return mode_; }
  void release_cached();  // returns cached blocks to CUDA
  std::size_t trim(std::size_t keep_bytes) override;
  void reset_peaks() override;

 protected:
  void release(void* data, std::size_t bytes) noexcept override;

 private:
  AllocMode mode_;
  int ordinal_;
  timeline::Recorder* recorder_;
  mutable std::mutex mutex_;
  std::multimap<std::size_t, void*> free_blocks_;  // block size -> pointer
  std::map<void*, std::size_t> block_size_;        // live blocks: pointer -> block size
  AllocatorStats stats_;
};

// Pinned host buffers for copies. A block handed out for an H2D copy stays busy until the copy's
// event completes; D2H blocks are returned by the caller after its synchronize.
class PinnedPool {
 public:
  PinnedPool() = default;
  ~PinnedPool();
  PinnedPool(const PinnedPool&) = delete;
  PinnedPool& operator=(const PinnedPool&) = delete;

  struct Block {
    void* data = nullptr;
    std::size_t bytes = 0;
    cudaEvent_t done = nullptr;  // recorded after the last copy using the block
    bool busy = false;           // handed out and not yet returned
    bool pending = false;        // returned with a copy still in flight (check `done`)
  };
  Block* acquire(std::size_t bytes);
  // Returns the block once the work already enqueued on `stream` (its copy) completes.
  void release_after(Block* block, cudaStream_t stream);
  void release_now(Block* block);

 private:
  std::mutex mutex_;
  std::vector<Block*> blocks_;
};

}  // namespace encbench::device::cuda_backend
