#pragma once
// Plain task records passed from the portable drivers (attention.cpp, gemm.cpp, peak.cpp) to the
// per-ISA compute objects (isa_*.cpp). Each isa_*.cpp is compiled with its own -m flags, so this
// header must stay free of the standard library: any inline library function instantiated in an
// AVX-512 object could be picked by the linker for the portable path and fault on older CPUs.
#include <cstddef>
#include <cstdint>

namespace encbench::kernels::detail {

// Row-group height of the attention tile: scores are computed for this many query rows at a time.
// A multiple of every Q.K^T micro-tile row count (4); P.V tiles pick divisors of it.
constexpr int kAttnRowGroup = 16;
// Keys are packed in multiples of this many (the widest vector), zero-padded.
constexpr int kKeyPad = 16;

// One (segment, query head, query block) of flash attention.
struct AttnBlockTask {
  const float* q = nullptr;        // first query row of the block, this head
  std::size_t q_row_stride = 0;    // floats between consecutive tokens (heads * head_dim)
  float* out = nullptr;            // first output row of the block, this head
  std::size_t out_row_stride = 0;
  int rows = 0;                    // query rows in the block (<= block_q)
  int head_dim = 0;                // D, the reduction length of Q.K^T
  int head_dim_padded = 0;         // Dp = D rounded up to kKeyPad (V and O row length)
  // K^T blocks of this (kv head, segment): per block, panels of IsaOps::attn_key_chunk keys
  // (the last one narrower), each [D][panel keys] contiguous, at panel key offset * D.
  const float* k_packed = nullptr;
  const float* v_packed = nullptr; // V blocks: [n_pad][Dp] per block
  int seq_len = 0;                 // keys in the segment
  int block_kv = 0;                // keys per KV block (multiple of kKeyPad)
  float scale_log2 = 0;            // softmax scale * log2(e): scores are taken base 2
};

// Per-worker scratch for one AttnBlockTask (floats, 64-byte aligned).
struct AttnScratch {
  float* q_tile = nullptr;  // [rows_padded][D], pre-scaled
  float* o_tile = nullptr;  // [rows_padded][Dp]
  float* row_max = nullptr; // [rows_padded]
  float* row_sum = nullptr; // [rows_padded]
  float* scores = nullptr;  // [kAttnRowGroup][block_kv]
};

// One (row block, column block, k block) of the packed GEMM: C[mc, nc] (+)= A_packed B_packed.
// A is packed as mc rounded up to MR rows in panels [kc][MR]; B as nc rounded up to NR columns in
// panels [kc][NR] (zero rows/columns past the edge), MR/NR being the ISA's register tile.
struct GemmBlockTask {
  const float* a_packed = nullptr;
  const float* b_packed = nullptr;
  int mc = 0, nc = 0, kc = 0;     // valid rows, columns, reduction length
  int nb = 0;                     // columns per sub-block of the macro-kernel (0 or NR: classic)
  float* c = nullptr;             // C[0, 0] of the block
  std::size_t ldc = 0;
  const float* bias = nullptr;    // bias of the block's first column, or null
  bool first = false;             // first k block: C = bias + AB; later ones: C += AB
};

// Function table of one ISA path.
struct IsaOps {
  void (*attend_block)(const AttnBlockTask& task, const AttnScratch& scratch);
  void (*gemm_block)(const GemmBlockTask& task);
  // Packing for gemm_block: A rows into MR-row panels, W rows (output columns) into one NR panel.
  void (*gemm_pack_a)(const float* a, std::size_t lda, int rows, int kc, float* dst);
  // dst[d * width + j] = src[j * lds + d] for j < rows, d < cols; zero for rows <= j < width
  // (K^T packing of attention, GEMM panels).
  void (*pack_transposed)(const float* src, std::size_t lds, int rows, int cols, int width,
                          float* dst);
  void (*gemm_pack_b)(const float* w, std::size_t ldw, int cols, int kc, float* dst);
  int gemm_mr, gemm_nr;  // register tile of gemm_block: rows x columns
  // Runs `iterations` rounds of the independent-accumulator FMA loop; returns a checksum so the
  // loop cannot be optimised away. flops_per_iteration is what one round computes.
  float (*fma_loop)(std::uint64_t iterations);
  double fma_flops_per_iteration;
  // Keys per K^T panel of attend_block (the Q.K^T micro-tile's width): a panel's rows are read
  // contiguously, where one [D][n_pad] block had rows n_pad floats apart and, at n_pad = 256
  // (1 KiB), mapped a tile's 80 rows onto a few L1 sets that could not hold them.
  int attn_key_chunk;
};

const IsaOps& isa_ops_portable();
#if ENCBENCH_KERNELS_X86
const IsaOps& isa_ops_avx2();
const IsaOps& isa_ops_avx512();
#endif

}  // namespace encbench::kernels::detail
