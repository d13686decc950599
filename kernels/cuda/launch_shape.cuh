#pragma once
// Internal to the .cu files: the launch shape of the simple grid-stride kernels (elementwise.cu,
// encoder_ops.cu), kept in one place so they size their grids the same way.
#include <algorithm>
#include <cstdint>

namespace encbench::kernels::cuda {

inline constexpr int kThreads = 256;

// Enough blocks to fill a Hopper GPU several times over (132 SMs x 32); the loops stride past
// that, so any n (e.g. 4 x 4784 tokens x 1280 hidden = 24.5 M floats) is covered.
inline unsigned blocks_for(std::int64_t n) {
  return static_cast<unsigned>(std::clamp<std::int64_t>((n + kThreads - 1) / kThreads, 1, 132 * 32));
}

}  // namespace encbench::kernels::cuda

// 64-bit grid-stride loop over [0, n): consecutive threads take consecutive i (coalesced).
#define GRID_STRIDE(i, n) \
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < (n); \
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
