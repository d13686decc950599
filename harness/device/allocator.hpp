#pragma once
// Device memory allocators behind the Allocator contract (device.hpp).
//
// Two modes, as the issue asks:
//   fresh    every request goes to the system allocator (64-byte aligned) and is freed on release;
//   caching  blocks are rounded up to a size class and kept on per-class free lists for reuse.
// Releases are stream-ordered: a block released while the device still has earlier work queued
// (which may read or write it) is parked until that work has completed, then freed (fresh) or
// made reusable (caching). This is stricter than CUDA's per-stream caching allocator (which reuses
// at once on the same stream) but always safe, also for host code dereferencing Buffer::data().
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "harness/device/device.hpp"
#include "harness/timeline/recorder.hpp"

namespace encbench::device {

// How far the device's streams have got, so the allocator can tell when a released block is no
// longer referenced by queued work. A fence is the per-stream count of submitted commands.
class WorkProgress {
 public:
  virtual ~WorkProgress() = default;
  virtual std::vector<std::uint64_t> fence() const = 0;
  virtual bool reached(const std::vector<std::uint64_t>& fence) const = 0;
};

inline constexpr std::size_t kDeviceAlignment = 64;
// Largest single request accepted; anything larger is a caller bug, reported as InvalidInput.
inline constexpr std::size_t kMaxAllocationBytes = std::size_t{1} << 40;

// Capacity a caching allocator reserves for a request: multiples of 512 B up to 1 MiB, then
// multiples of 1 MiB (so near sizes share a class but big blocks waste at most 1 MiB).
std::size_t caching_size_class(std::size_t bytes);

struct AllocatorOptions {
  AllocMode mode = AllocMode::caching;
  // May be null (no device work to order against: releases take effect at once).
  const WorkProgress* progress = nullptr;
  // false: blocks are device addresses in a range no host memory uses (never dereferenced) and
  // a size; nothing is allocated or zero-filled. The sim backend without verify.
  bool materialize = true;
  std::uint64_t budget_bytes = 0;  // bound on bytes_reserved; 0: unlimited
  // May be null: each allocate() is recorded as a host span kind=api named "alloc".
  timeline::Recorder* recorder = nullptr;
};

// First address handed out by an allocator that does not materialise memory: non-canonical on
// x86-64 and AArch64, so a stray dereference faults at once instead of touching host memory.
inline constexpr std::uintptr_t kUnmaterializedBase = std::uintptr_t{1} << 62;

std::unique_ptr<Allocator> make_allocator(const AllocatorOptions& options);

}  // namespace encbench::device
