#pragma once
// Shared by the two attention implementations (attention.cu: WMMA; attention_mma.cu: mma.sync),
// so both accept exactly the same tensors and map blocks to query tiles the same way.
#include <cstdint>

#include "kernels/cuda/cuda_kernels.hpp"
#include "kernels/cuda/tile_plan.hpp"

namespace encbench::kernels::cuda::attention_detail {

struct Params {
  const void* q;
  const void* k;
  const void* v;
  void* out;
  long long q_stride, k_stride, v_stride, out_stride;
  const std::int32_t* cu;    // fused-varlen
  int num_segments;
  const std::int32_t* work;  // flash-unpad work list, or null
  std::int32_t total_tokens;
  float scale_log2;          // softmax scale * log2(e)
};

// Validates the tensors and fills the pointer/stride/scale part of the kernel parameters
// (defined in attention.cu). Throws InvalidInput naming `op`.
Params make_params(const AttentionTensors& t, int scale_head_dim, const char* op);

#if defined(__CUDACC__)
// The block's (sequence, query tile): from the host work list (flash-unpad) or by binary search
// over cu_seqlens (fused-varlen). seq < 0: nothing to do (idle virtual tile or malformed entry,
// where writing nothing beats reading out of bounds).
__device__ __forceinline__ TileLocation locate_block(const Params& p, int block_m) {
  TileLocation loc;
  if (p.work == nullptr)
    return locate_varlen_tile(p.cu, p.num_segments, static_cast<int>(blockIdx.x), block_m, p.total_tokens);
  const std::int32_t* entry = p.work + 3 * static_cast<long long>(blockIdx.x);
  loc.seq_start = entry[0];
  loc.seq_len = entry[1];
  loc.q_begin = entry[2];
  if (loc.seq_start < 0 || loc.seq_len <= 0 || loc.seq_start > p.total_tokens - loc.seq_len ||
      loc.q_begin < 0 || loc.q_begin >= loc.seq_len)
    return TileLocation{};
  loc.seq = 0;
  return loc;
}
#endif

}  // namespace encbench::kernels::cuda::attention_detail
