// Varlen flash attention, FlashAttention-2 style, on mma.sync (the second implementation beside
// attention.cu's WMMA kernel; same tensors, same tile planning, selectable by the caller).
//
// Per block: BM = 16 * kWarps queries of one head; each warp owns 16 query rows for the whole
// kernel. Per 64-key step:
//   S = Q K^T     mma.sync.m16n8k16 (16-bit in, fp32 accumulate); Q (loaded once per block) and
//                 K fragments come from shared memory by ldmatrix;
//   softmax       online, in registers, log2 space (scale folded into one FFMA before ex2), row
//                 max/sum reduced across the 4 lanes of a quad that share a row;
//   O += P V      P is the S accumulator rounded to 16 bits: the m16n8 accumulator layout of two
//                 adjacent key n-tiles is exactly the m16k16 A-fragment layout of the next mma, so
//                 P never leaves registers; V fragments by ldmatrix.trans (V is stored key-major).
// K/V tiles are double-buffered with cp.async (the next tile loads while this one computes).
// Shared rows are padded by 16 bytes: the row pitch in 16-byte units is odd (9, 11, 17), so the
// eight row addresses of one ldmatrix phase fall in eight distinct bank groups.
// Tail masking: rows past the segment are zero-filled by cp.async's src-size 0 form (nothing is
// read from global memory for them) and their scores are set to -inf before the softmax.
//
// Fragment layouts (PTX ISA, "Matrix Fragments for mma.m16n8k16 with floating point type"),
// g = lane / 4, t = lane % 4:
//   A (16x16): a0 = (g, 2t..2t+1), a1 = (g+8, 2t..), a2 = (g, 2t+8..), a3 = (g+8, 2t+8..)
//   B (16x8):  b0 = (k 2t..2t+1, n g), b1 = (k 2t+8..2t+9, n g)
//   C (16x8):  c0,c1 = (g, 2t..2t+1), c2,c3 = (g+8, 2t..2t+1)
// ldmatrix.x4: lanes 8i..8i+7 give the row addresses of matrix i, register i receives matrix i
// with lane holding (row g, cols 2t..2t+1); with .trans, (rows 2t..2t+1, col g).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "harness/core/error.hpp"
#include "kernels/cuda/attention_common.cuh"
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/cuda_kernels.hpp"

namespace encbench::kernels::cuda {
namespace {

using attention_detail::Params;
constexpr int kBlockN = 64;  // keys per step: 8 n-tiles of S, 4 k-steps of P V

template <int D, int kWarps>
struct MmaLayout {
  static constexpr int BM = 16 * kWarps;
  static constexpr int BN = kBlockN;
  static constexpr int kThreads = 32 * kWarps;
  static constexpr int DP = mma_head_dim(D);  // 72 -> 80 in shared memory only
  static constexpr int LD = DP + 8;           // elements per shared row (+16 B, see above)
  static constexpr int kv_elems = BN * LD;    // one K or V buffer
  // Q | K0 | K1 | V0 | V1, all 16-bit.
  static constexpr int k_elem_off = BM * LD;
  static constexpr int v_elem_off = k_elem_off + 2 * kv_elems;
  static constexpr std::size_t bytes = static_cast<std::size_t>(v_elem_off + 2 * kv_elems) * 2;
  static_assert((LD * 2 / 16) % 2 == 1, "odd 16-byte row pitch keeps ldmatrix conflict-free");
};

__device__ __forceinline__ std::uint32_t smem_addr(const void* ptr) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(ptr));
}

// 16 bytes global -> shared, bypassing L1; src_bytes 0 writes zeros and reads nothing.
__device__ __forceinline__ void cp_async16(std::uint32_t dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}

__device__ __forceinline__ void ldmatrix_x4(std::uint32_t (&r)[4], std::uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x4_trans(std::uint32_t (&r)[4], std::uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// d += a * b for one m16n8k16 tile; the dtype picks the PTX type suffix.
template <class T>
__device__ __forceinline__ void mma16816(float (&d)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                                         std::uint32_t b1) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

// Two floats -> one register of two 16-bit values, `lo` in the low half (the lower column, as
// the fragment layouts and ldmatrix place it).
template <class T>
__device__ __forceinline__ std::uint32_t pack2(float lo, float hi) {
  std::uint32_t bits;
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    memcpy(&bits, &v, 4);
  } else {
    const __half2 v = __floats2half2_rn(lo, hi);
    memcpy(&bits, &v, 4);
  }
  return bits;
}

// ex2.approx: one MUFU op; exact 0 for -inf (masked keys, the first step's alpha).
__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// Rows [0, rows) of a [*, D] tile (token stride `stride`) into shared rows of LD by cp.async;
// rows [rows, max_rows) become zeros without a global read (the source address stays `src`).
template <int D, int LD, int kThreads, class T>
__device__ __forceinline__ void async_load_rows(T* dst, const T* src, long long stride, int rows,
                                                int max_rows) {
  constexpr int kChunks = D / 8;
  for (int i = threadIdx.x; i < max_rows * kChunks; i += kThreads) {
    const int r = i / kChunks, c = i % kChunks;
    const bool valid = r < rows;
    cp_async16(smem_addr(dst + r * LD + c * 8), valid ? src + r * stride + c * 8 : src, valid ? 16 : 0);
  }
}

// Columns [D, DP) of every shared row are read by ldmatrix but never loaded: zero them once so
// they add exact zeros to Q K^T (and give finite, discarded output columns in P V).
template <class T, int D, int LD, int kThreads>
__device__ __forceinline__ void zero_pad_columns(T* smem_rows, int total_rows) {
  constexpr int kPad = mma_head_dim(D) - D;
  if constexpr (kPad > 0) {
    // Zero bits (+0 in bf16 and fp16), not T{}: the dtypes' default constructors may leave the
    // value uninitialized depending on the header's configuration.
    auto* bits = reinterpret_cast<std::uint16_t*>(smem_rows);
    for (int i = threadIdx.x; i < total_rows * kPad; i += kThreads) bits[(i / kPad) * LD + D + i % kPad] = 0;
  }
}

// S = Q K^T for the warp's 16 rows and BN keys of one K buffer. Q's A fragments are re-read from
// shared memory each step (one ldmatrix.x4 per 16 dims, a fifth of the K traffic) rather than
// held in registers: 6 fewer registers at D 80 (133), 0 spills, 3 blocks of 4 warps per SM.
template <class T, int DP, int LD, int BN>
__device__ __forceinline__ void scores(float (&s)[BN / 8][4], std::uint32_t q_base, const T* k_buf, int lane) {
#pragma unroll
  for (int n = 0; n < BN / 8; ++n) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.f;
  // Matrices of one x4 load: (keys 0-7, dims 0-7), (keys 0-7, dims 8-15), (keys 8-15, dims 0-7),
  // (keys 8-15, dims 8-15) -> b0/b1 of n-tile 2j, then b0/b1 of n-tile 2j+1.
  const std::uint32_t base = smem_addr(k_buf + ((lane & 7) + ((lane >> 4) << 3)) * LD + ((lane >> 3) & 1) * 8);
#pragma unroll
  for (int kk = 0; kk < DP / 16; ++kk) {
    std::uint32_t qf[4];
    ldmatrix_x4(qf, q_base + kk * 16 * 2);
#pragma unroll
    for (int j = 0; j < BN / 16; ++j) {
      std::uint32_t b[4];
      ldmatrix_x4(b, base + (j * 16 * LD + kk * 16) * 2);
      mma16816<T>(s[2 * j], qf, b[0], b[1]);
      mma16816<T>(s[2 * j + 1], qf, b[2], b[3]);
    }
  }
}

// Keys at or past `valid_keys` (a partial last tile) get -inf, so they weigh exactly 0.
template <int NT>
__device__ __forceinline__ void mask_keys(float (&s)[NT][4], int valid_keys, int lane) {
  const int col0 = (lane & 3) * 2;
#pragma unroll
  for (int n = 0; n < NT; ++n) {
#pragma unroll
    for (int e = 0; e < 4; ++e)
      if (n * 8 + col0 + (e & 1) >= valid_keys) s[n][e] = -INFINITY;
  }
}

// Online softmax for the lane's two rows (h = 0: row g, values e = 0,1; h = 1: row g+8, e = 2,3).
// m is the running max in log2 units (already scaled); l is the lane's partial row sum (its
// columns only; the quad reduces it once at the end). Every step has at least one real key, so
// m is finite after the first step and alpha = 0 there (O and l start at 0).
template <int NT, int DT>
__device__ __forceinline__ void online_softmax(float (&s)[NT][4], float (&o)[DT][4], float (&m)[2],
                                               float (&l)[2], float scale_log2) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float mx = -INFINITY;
#pragma unroll
    for (int n = 0; n < NT; ++n) mx = fmaxf(mx, fmaxf(s[n][2 * h], s[n][2 * h + 1]));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    const float m_new = fmaxf(m[h], mx * scale_log2);  // scale > 0: max commutes with it
    const float alpha = fast_exp2(m[h] - m_new);
    m[h] = m_new;
    float sum = 0.f;
#pragma unroll
    for (int n = 0; n < NT; ++n) {
#pragma unroll
      for (int e = 2 * h; e < 2 * h + 2; ++e) {
        s[n][e] = fast_exp2(fmaf(s[n][e], scale_log2, -m_new));
        sum += s[n][e];
      }
    }
    l[h] = l[h] * alpha + sum;
#pragma unroll
    for (int d = 0; d < DT; ++d) {
      o[d][2 * h] *= alpha;
      o[d][2 * h + 1] *= alpha;
    }
  }
}

// O += P V: P's A fragment for keys 16kk..16kk+15 is n-tiles 2kk (a0, a1) and 2kk+1 (a2, a3).
template <class T, int DP, int LD, int BN>
__device__ __forceinline__ void accumulate_pv(float (&o)[DP / 8][4], const float (&p)[BN / 8][4],
                                              const T* v_buf, int lane) {
  // Matrices of one x4.trans load: (keys 0-7, dims 0-7), (keys 8-15, dims 0-7), (keys 0-7,
  // dims 8-15), (keys 8-15, dims 8-15) -> b0/b1 of d-tile 2j, then b0/b1 of d-tile 2j+1.
  const std::uint32_t base = smem_addr(v_buf + (lane & 15) * LD + (lane >> 4) * 8);
#pragma unroll
  for (int kk = 0; kk < BN / 16; ++kk) {
    const std::uint32_t a[4] = {pack2<T>(p[2 * kk][0], p[2 * kk][1]), pack2<T>(p[2 * kk][2], p[2 * kk][3]),
                                pack2<T>(p[2 * kk + 1][0], p[2 * kk + 1][1]),
                                pack2<T>(p[2 * kk + 1][2], p[2 * kk + 1][3])};
#pragma unroll
    for (int j = 0; j < DP / 16; ++j) {
      std::uint32_t b[4];
      ldmatrix_x4_trans(b, base + (kk * 16 * LD + j * 16) * 2);
      mma16816<T>(o[2 * j], a, b[0], b[1]);
      mma16816<T>(o[2 * j + 1], a, b[2], b[3]);
    }
  }
}

// O / l rounded to T, staged through the warp's own (no longer needed) Q rows so that device
// memory sees 16-byte row-contiguous stores; only the tile's real rows are written.
template <class T, int D, int LD>
__device__ __forceinline__ void store_output(float (&o)[mma_head_dim(D) / 8][4], float (&l)[2], T* stage,
                                             T* out, long long out_stride, int first_row, int q_rows,
                                             int lane) {
  float inv[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float sum = l[h];
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    sum += __shfl_xor_sync(0xffffffffu, sum, 2);
    inv[h] = 1.f / sum;  // sum >= 1: the row max contributes exp2(0)
  }
  const int g = lane >> 2, c = (lane & 3) * 2;
#pragma unroll
  for (int d = 0; d < mma_head_dim(D) / 8; ++d) {
    *reinterpret_cast<std::uint32_t*>(stage + g * LD + d * 8 + c) = pack2<T>(o[d][0] * inv[0], o[d][1] * inv[0]);
    *reinterpret_cast<std::uint32_t*>(stage + (g + 8) * LD + d * 8 + c) = pack2<T>(o[d][2] * inv[1], o[d][3] * inv[1]);
  }
  __syncwarp();
  constexpr int kChunks = D / 8;
  for (int i = lane; i < 16 * kChunks; i += 32) {
    const int r = i / kChunks, ch = i % kChunks;
    if (first_row + r < q_rows)
      *reinterpret_cast<uint4*>(out + (first_row + r) * out_stride + ch * 8) =
          *reinterpret_cast<const uint4*>(stage + r * LD + ch * 8);
  }
}

template <class T, int D, int kWarps>
__global__ void __launch_bounds__(32 * kWarps) attention_mma_kernel(Params p) {
  using L = MmaLayout<D, kWarps>;
  constexpr int DP = L::DP, LD = L::LD, BN = L::BN;
  extern __shared__ __align__(128) unsigned char smem[];
  T* sq = reinterpret_cast<T*>(smem);
  T* sk = sq + L::k_elem_off;
  T* sv = sq + L::v_elem_off;

  const TileLocation loc = attention_detail::locate_block(p, L::BM);
  if (loc.seq < 0) return;  // idle virtual tile or malformed work entry
  const int head = blockIdx.y;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int q_rows = min(L::BM, loc.seq_len - loc.q_begin);
  const int kv_steps = (loc.seq_len + BN - 1) / BN;
  const T* q_src = static_cast<const T*>(p.q) + (loc.seq_start + loc.q_begin) * p.q_stride + head * D;
  const T* k_src = static_cast<const T*>(p.k) + loc.seq_start * p.k_stride + head * D;
  const T* v_src = static_cast<const T*>(p.v) + loc.seq_start * p.v_stride + head * D;
  auto load_kv = [&](int step) {
    const int rows = min(BN, loc.seq_len - step * BN), buf = step & 1;
    async_load_rows<D, LD, L::kThreads>(sk + buf * L::kv_elems, k_src + step * BN * p.k_stride, p.k_stride, rows, BN);
    async_load_rows<D, LD, L::kThreads>(sv + buf * L::kv_elems, v_src + step * BN * p.v_stride, p.v_stride, rows, BN);
  };

  zero_pad_columns<T, D, LD, L::kThreads>(sq, L::BM + 4 * BN);  // Q, K0, K1, V0, V1 are contiguous
  async_load_rows<D, LD, L::kThreads>(sq, q_src, p.q_stride, q_rows, L::BM);
  load_kv(0);
  cp_async_commit();  // group: Q and K/V step 0
  // Q's A fragments (ldmatrix.x4): rows warp*16 + lane%16, dims +8 for lanes 16-31.
  const std::uint32_t q_base = smem_addr(sq + (warp * 16 + (lane & 15)) * LD + (lane >> 4) * 8);

  float o[DP / 8][4];
#pragma unroll
  for (int d = 0; d < DP / 8; ++d) o[d][0] = o[d][1] = o[d][2] = o[d][3] = 0.f;
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};
  for (int step = 0; step < kv_steps; ++step) {
    if (step + 1 < kv_steps) load_kv(step + 1);  // into the buffer step - 1 used (freed below)
    cp_async_commit();                            // possibly empty: keeps the wait count uniform
    cp_async_wait<1>();                           // this step's K/V have landed
    __syncthreads();
    const int buf = step & 1;
    float s[BN / 8][4];
    scores<T, DP, LD, BN>(s, q_base, sk + buf * L::kv_elems, lane);
    const int valid_keys = loc.seq_len - step * BN;
    if (valid_keys < BN) mask_keys(s, valid_keys, lane);
    online_softmax(s, o, m, l, p.scale_log2);
    accumulate_pv<T, DP, LD, BN>(o, s, sv + buf * L::kv_elems, lane);
    __syncthreads();  // every warp is done with `buf` before step + 1 refills it
  }

  T* out = static_cast<T*>(p.out) + (loc.seq_start + loc.q_begin) * p.out_stride + head * D;
  store_output<T, D, LD>(o, l, sq + warp * 16 * LD, out, p.out_stride, warp * 16, q_rows, lane);
}

template <class T, int D, int kWarps>
void launch(const Params& params, long long tiles, int heads, cudaStream_t stream) {
  if (tiles <= 0) return;
  auto* kernel = attention_mma_kernel<T, D, kWarps>;
  constexpr std::size_t bytes = MmaLayout<D, kWarps>::bytes;
  ENCBENCH_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
  kernel<<<dim3(static_cast<unsigned>(tiles), static_cast<unsigned>(heads)), 32 * kWarps, bytes, stream>>>(params);
  ENCBENCH_CUDA_CHECK_LAUNCH("attention_mma_kernel launch");
}

template <class T, int kWarps>
void dispatch_head_dim(int head_dim, const Params& params, long long tiles, int heads, cudaStream_t stream) {
  switch (head_dim) {
    case 64: return launch<T, 64, kWarps>(params, tiles, heads, stream);
    case 72: return launch<T, 72, kWarps>(params, tiles, heads, stream);
    case 80: return launch<T, 80, kWarps>(params, tiles, heads, stream);
    case 128: return launch<T, 128, kWarps>(params, tiles, heads, stream);
    default: throw InvalidInput("attention_mma: head_dim " + std::to_string(head_dim) + " is not compiled (64, 72, 80, 128)");
  }
}

template <class T>
void dispatch_block(int queries_per_block, int head_dim, const Params& params, long long tiles, int heads,
                    cudaStream_t stream) {
  if (queries_per_block == 128)
    dispatch_head_dim<T, 8>(head_dim, params, tiles, heads, stream);
  else
    dispatch_head_dim<T, 4>(head_dim, params, tiles, heads, stream);
}

void run(DType dtype, int queries_per_block, int head_dim, const Params& params, long long tiles, int heads,
         void* stream) {
  if (dtype == DType::bf16)
    dispatch_block<__nv_bfloat16>(queries_per_block, head_dim, params, tiles, heads, as_stream(stream));
  else
    dispatch_block<__half>(queries_per_block, head_dim, params, tiles, heads, as_stream(stream));
}

template <int kWarps>
std::size_t shared_bytes(int head_dim) {
  switch (head_dim) {
    case 64: return MmaLayout<64, kWarps>::bytes;
    case 72: return MmaLayout<72, kWarps>::bytes;
    case 80: return MmaLayout<80, kWarps>::bytes;
    case 128: return MmaLayout<128, kWarps>::bytes;
    default: return 0;
  }
}

void require_block(int queries_per_block, const char* op) {
  require(queries_per_block == 64 || queries_per_block == 128,
          std::string(op) + ": queries_per_block must be 64 or 128, got " + std::to_string(queries_per_block));
}

}  // namespace

std::size_t attention_mma_shared_bytes(int head_dim, int queries_per_block) {
  if (queries_per_block == 64) return shared_bytes<4>(head_dim);
  if (queries_per_block == 128) return shared_bytes<8>(head_dim);
  return 0;
}

void fused_varlen_attention_mma(const AttentionTensors& tensors, const std::int32_t* cu_seqlens_device,
                                int num_segments, void* stream, int queries_per_block) {
  require_block(queries_per_block, "fused_varlen_attention_mma");
  Params p = attention_detail::make_params(tensors, tensors.head_dim, "fused_varlen_attention_mma");
  require(cu_seqlens_device != nullptr, "fused_varlen_attention_mma: cu_seqlens must be a device pointer");
  require(num_segments > 0 || tensors.total_tokens == 0, "fused_varlen_attention_mma: num_segments must be > 0");
  p.cu = cu_seqlens_device;
  p.num_segments = num_segments;
  const long long tiles = varlen_grid_tiles(tensors.total_tokens, num_segments, queries_per_block);
  require(tiles < (1LL << 31), "fused_varlen_attention_mma: too many tiles");
  run(tensors.dtype, queries_per_block, tensors.head_dim, p, tiles, tensors.num_heads, stream);
}

void flash_unpad_attention_mma(const AttentionTensors& padded_tensors, int original_head_dim,
                               const std::int32_t* work_list_device, int work_tiles, void* stream,
                               int queries_per_block) {
  require_block(queries_per_block, "flash_unpad_attention_mma");
  require(padded_tensors.head_dim == 128, "flash_unpad_attention_mma: tensors must be padded to head_dim 128");
  require(original_head_dim > 0 && original_head_dim <= 128,
          "flash_unpad_attention_mma: original_head_dim must be in [1, 128]");
  Params p = attention_detail::make_params(padded_tensors, original_head_dim, "flash_unpad_attention_mma");
  require(work_tiles >= 0, "flash_unpad_attention_mma: work_tiles must be >= 0");
  require(work_tiles == 0 || work_list_device != nullptr, "flash_unpad_attention_mma: work list must be a device pointer");
  p.work = work_list_device;
  run(padded_tensors.dtype, queries_per_block, 128, p, work_tiles, padded_tensors.num_heads, stream);
}

}  // namespace encbench::kernels::cuda
