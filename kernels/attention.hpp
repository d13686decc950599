#pragma once
// Packed variable-length multi-head attention on TND tensors.
//
// Layout (all fp32, row-major, contiguous):
//   q, out  [total_tokens, num_heads,    head_dim]
//   k, v    [total_tokens, num_kv_heads, head_dim]
// Tokens are grouped into segments (images, windows); a token attends to every token of its own
// segment and to nothing else (no causal mask). Query head h reads kv head
// h / (num_heads / num_kv_heads) (GQA; MQA when num_kv_heads == 1). The caller passes the softmax
// scale (usually 1/sqrt(original head_dim)).
//
// Three kernels:
//   attention_reference  fp64 accumulation, plain loops: the oracle.
//   flash_unpad          shaped like torch_npu._npu_flash_attention_unpad: per-segment lengths in
//                        a HOST array; tensors (and output) already padded to head_dim_padded.
//   fused_varlen         shaped like flash_attn_varlen_func / npu_fusion_attention: cumulative
//                        lengths (int32, num_segments + 1) read from (device) memory when the
//                        kernel runs; native head_dim; unpadded output.
// Both fast kernels: flash-style tiled online softmax in fp32, SIMD path chosen at run time,
// parallel over (segment, head, query block) on the WorkerPool.
//
// Every function validates its arguments and throws encbench::InvalidInput with a message naming
// the bad argument; it never reads out of bounds on bad metadata.
#include <cstddef>
#include <cstdint>

#include "kernels/isa.hpp"
#include "kernels/worker_pool.hpp"
#include "kernels/workspace.hpp"

namespace encbench::kernels {

// Block sizes of the tiled kernels; 0 picks the default for this machine's caches
// (attention_default_tiling, kernels/blocking.hpp).
struct AttentionTiling {
  int block_q = 0;   // query rows per work item
  int block_kv = 0;  // keys per KV block (rounded up to a multiple of 16)
};

// Optional element counts of the caller's buffers: when non-zero they are checked against the
// shape (catches mismatched shapes when the caller has them, e.g. device buffers).
struct BufferSizes {
  std::size_t q = 0, k = 0, v = 0, out = 0;  // in floats
};

struct VarlenAttentionArgs {
  const float* q = nullptr;
  const float* k = nullptr;
  const float* v = nullptr;
  float* out = nullptr;
  const std::int32_t* cu_seqlens = nullptr;  // num_segments + 1 entries: 0, ..., total_tokens
  std::int64_t num_segments = 0;
  std::int64_t total_tokens = 0;
  int num_heads = 0;
  int num_kv_heads = 0;  // divides num_heads
  int head_dim = 0;      // native (64, 72, 80, 128, or any positive value)
  float scale = 0;       // finite
  BufferSizes sizes;     // optional
};

struct FlashUnpadArgs {
  const float* q = nullptr;  // [total_tokens, num_heads, head_dim_padded], zero-padded columns
  const float* k = nullptr;
  const float* v = nullptr;
  float* out = nullptr;      // [total_tokens, num_heads, head_dim_padded] (padding written as 0)
  const std::int32_t* seq_lens = nullptr;  // host array, num_segments entries, each >= 0
  std::int64_t num_segments = 0;
  std::int64_t total_tokens = 0;  // must equal sum(seq_lens)
  int num_heads = 0;
  int num_kv_heads = 0;
  int head_dim_padded = 0;  // the layout's head_dim (128 for an 80-dim model on the NPU path)
  int head_dim = 0;         // the model's head_dim (<= head_dim_padded); 0 = same as padded
  float scale = 0;          // from the ORIGINAL head_dim
  BufferSizes sizes;
};

// Returns the padded head_dim the NPU unpad path uses: 128 when 64 < head_dim < 128, else as is.
int npu_padded_head_dim(int head_dim);

void attention_reference(const VarlenAttentionArgs& args, WorkerPool& pool);

void fused_varlen(const VarlenAttentionArgs& args, WorkerPool& pool, Isa isa = Isa::best,
                  Workspace* workspace = nullptr, AttentionTiling tiling = {});

void flash_unpad(const FlashUnpadArgs& args, WorkerPool& pool, Isa isa = Isa::best,
                 Workspace* workspace = nullptr, AttentionTiling tiling = {});

// The tiling a call with these arguments uses (defaults resolved for head_dim, the width the
// kernel computes: head_dim_padded for flash_unpad), e.g. for reports.
AttentionTiling resolve_tiling(AttentionTiling requested, int head_dim);

}  // namespace encbench::kernels
