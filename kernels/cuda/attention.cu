// Varlen flash attention for the ViT (TND layout, no causal mask), one kernel template shared by
// the two shapes:
//   fused-varlen  block -> (sequence, query tile) found on the device from cu_seqlens
//                 (tile_plan.hpp: binary search over V(s) = cu[s]/BM + s); no host lengths;
//   flash-unpad   block -> entry of a host-built work list; head dim padded to 128 in memory.
//
// Per block: 64 queries of one head, 4 warps x 16 rows. Per 64-key step: S = Q K^T with WMMA
// (16x16x16, 16-bit inputs, fp32 accumulators), online softmax in fp32 (exp2 with the scale
// folded into log2 space), P rounded to the storage dtype, O += P V with WMMA. O lives in shared
// memory as fp32 because WMMA's accumulator layout is opaque (the per-row rescale needs rows).
// Head dims 72/80 are rounded up to 80 in shared memory only (zero columns), so device memory
// keeps the model's native layout.
// attention_mma.cu implements the same contracts with mma.sync and O in registers (FA2 style);
// this WMMA kernel stays the callers' default until that one is verified on a GPU.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mma.h>

#include <cmath>
#include <cstdint>

#include "harness/core/error.hpp"
#include "kernels/cuda/attention_common.cuh"
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/cuda_kernels.hpp"

namespace encbench::kernels::cuda {
namespace {

using namespace nvcuda;
using attention_detail::Params;
constexpr int BM = kAttentionBlockM;
constexpr int BN = kAttentionBlockN;
constexpr int kThreads = kAttentionThreads;
static_assert(BM == 16 * (kThreads / 32), "one warp per 16 query rows");

constexpr std::size_t round128(std::size_t bytes) { return (bytes + 127) / 128 * 128; }

template <int D>
struct Layout {
  static constexpr int DP = mma_head_dim(D);
  static constexpr int LD = DP + 8;    // 16-bit elements per Q/K/V row (+16 B against bank conflicts)
  static constexpr int LDS = BN + 4;   // floats per score row
  static constexpr int LDP = BN + 8;   // 16-bit per P row; P aliases the warp's own score rows
  static constexpr int LDO = DP + 4;   // floats per O row
  static constexpr std::size_t q_off = 0;
  static constexpr std::size_t k_off = round128(q_off + BM * LD * 2);
  static constexpr std::size_t v_off = round128(k_off + BN * LD * 2);
  static constexpr std::size_t s_off = round128(v_off + BN * LD * 2);
  static constexpr std::size_t o_off = round128(s_off + BM * LDS * 4);
  static constexpr std::size_t ml_off = round128(o_off + BM * LDO * 4);
  static constexpr std::size_t bytes = ml_off + 2 * BM * 4;
  static_assert(16 * LDP * 2 <= 16 * LDS * 4, "P rows must fit inside the warp's score rows");
};

template <class T> __device__ __forceinline__ T from_f(float x);
template <> __device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float x) { return __float2bfloat16(x); }
template <> __device__ __forceinline__ __half from_f<__half>(float x) { return __float2half(x); }

// Rows [0, rows) of `src` (16-byte chunks, D*2 is a multiple of 16) into shared rows of LD;
// rows [rows, max_rows) become zeros so padded rows never carry stale data.
template <class T, int D, int LD>
__device__ __forceinline__ void load_rows(T* dst, const T* src, long long stride, int rows,
                                          int max_rows) {
  constexpr int kChunks = D / 8;
  for (int i = threadIdx.x; i < max_rows * kChunks; i += kThreads) {
    const int r = i / kChunks, c = i % kChunks;
    uint4 value = make_uint4(0, 0, 0, 0);
    if (r < rows) value = __ldg(reinterpret_cast<const uint4*>(src + r * stride + c * 8));
    *reinterpret_cast<uint4*>(dst + r * LD + c * 8) = value;
  }
}

template <class T, int D>
__global__ void __launch_bounds__(kThreads) attention_kernel(Params p) {
  using L = Layout<D>;
  constexpr int DP = L::DP;
  extern __shared__ __align__(128) unsigned char smem[];
  T* sq = reinterpret_cast<T*>(smem + L::q_off);
  T* sk = reinterpret_cast<T*>(smem + L::k_off);
  T* sv = reinterpret_cast<T*>(smem + L::v_off);
  float* ss = reinterpret_cast<float*>(smem + L::s_off);
  float* so = reinterpret_cast<float*>(smem + L::o_off);
  float* row_max = reinterpret_cast<float*>(smem + L::ml_off);
  float* row_sum = row_max + BM;

  const TileLocation loc = attention_detail::locate_block(p, BM);
  if (loc.seq < 0) return;  // idle virtual tile or malformed work entry
  const int head = blockIdx.y;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int q_rows = min(BM, loc.seq_len - loc.q_begin);

  if constexpr (DP > D) {  // zero the MMA padding columns once; loads never write them
    constexpr int kPad = DP - D;
    for (int i = threadIdx.x; i < BM * kPad; i += kThreads) {
      const int r = i / kPad, c = D + i % kPad;
      sq[r * L::LD + c] = from_f<T>(0.f);
      sk[r * L::LD + c] = from_f<T>(0.f);
      sv[r * L::LD + c] = from_f<T>(0.f);
    }
  }
  const T* q_src = static_cast<const T*>(p.q) + (loc.seq_start + loc.q_begin) * p.q_stride + head * D;
  load_rows<T, D, L::LD>(sq, q_src, p.q_stride, q_rows, BM);
  for (int i = threadIdx.x; i < BM * L::LDO; i += kThreads) so[i] = 0.f;
  for (int i = threadIdx.x; i < BM; i += kThreads) {
    row_max[i] = -INFINITY;
    row_sum[i] = 0.f;
  }
  __syncthreads();

  const T* k_src = static_cast<const T*>(p.k) + loc.seq_start * p.k_stride + head * D;
  const T* v_src = static_cast<const T*>(p.v) + loc.seq_start * p.v_stride + head * D;
  float* s_warp = ss + warp * 16 * L::LDS;
  T* p_warp = reinterpret_cast<T*>(s_warp);
  float* o_warp = so + warp * 16 * L::LDO;
  const int r = lane >> 1, half = lane & 1;  // softmax: two lanes per row, 32 columns each
  const int row = warp * 16 + r;

  for (int n0 = 0; n0 < loc.seq_len; n0 += BN) {
    const int kv_rows = min(BN, loc.seq_len - n0);
    load_rows<T, D, L::LD>(sk, k_src + n0 * p.k_stride, p.k_stride, kv_rows, BN);
    load_rows<T, D, L::LD>(sv, v_src + n0 * p.v_stride, p.v_stride, kv_rows, BN);
    __syncthreads();

    {  // S = Q K^T for this warp's 16 rows
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[BN / 16];
#pragma unroll
      for (int j = 0; j < BN / 16; ++j) wmma::fill_fragment(acc[j], 0.f);
#pragma unroll
      for (int kk = 0; kk < DP / 16; ++kk) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> a;
        wmma::load_matrix_sync(a, sq + warp * 16 * L::LD + kk * 16, L::LD);
#pragma unroll
        for (int j = 0; j < BN / 16; ++j) {
          wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> b;
          wmma::load_matrix_sync(b, sk + j * 16 * L::LD + kk * 16, L::LD);
          wmma::mma_sync(acc[j], a, b, acc[j]);
        }
      }
#pragma unroll
      for (int j = 0; j < BN / 16; ++j)
        wmma::store_matrix_sync(s_warp + j * 16, acc[j], L::LDS, wmma::mem_row_major);
    }
    __syncwarp();

    // Online softmax in log2 space. Keys beyond the sequence are masked; the first step always
    // has a valid key, so the running max is finite from then on.
    float vals[32];
    float step_max = -INFINITY;
#pragma unroll
    for (int c = 0; c < 32; ++c) {
      const int col = half * 32 + c;
      const float s = (col < kv_rows) ? s_warp[r * L::LDS + col] * p.scale_log2 : -INFINITY;
      vals[c] = s;
      step_max = fmaxf(step_max, s);
    }
    step_max = fmaxf(step_max, __shfl_xor_sync(0xffffffffu, step_max, 1));
    const float m_old = row_max[row];
    const float m_new = fmaxf(m_old, step_max);
    float step_sum = 0.f;
#pragma unroll
    for (int c = 0; c < 32; ++c) {
      vals[c] = exp2f(vals[c] - m_new);
      step_sum += vals[c];
    }
    step_sum += __shfl_xor_sync(0xffffffffu, step_sum, 1);
    const float alpha = exp2f(m_old - m_new);  // 0 on the first step (m_old = -inf)
    __syncwarp();  // every lane has read its scores before P overwrites the same bytes
#pragma unroll
    for (int c = 0; c < 32; ++c) p_warp[r * L::LDP + half * 32 + c] = from_f<T>(vals[c]);
    if (half == 0) {
      row_max[row] = m_new;
      row_sum[row] = row_sum[row] * alpha + step_sum;
    }
    for (int c = half * (DP / 2); c < (half + 1) * (DP / 2); ++c) o_warp[r * L::LDO + c] *= alpha;
    __syncwarp();

#pragma unroll
    for (int dd = 0; dd < DP / 16; ++dd) {  // O += P V
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> o;
      wmma::load_matrix_sync(o, o_warp + dd * 16, L::LDO, wmma::mem_row_major);
#pragma unroll
      for (int kk = 0; kk < BN / 16; ++kk) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> a;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> b;
        wmma::load_matrix_sync(a, p_warp + kk * 16, L::LDP);
        wmma::load_matrix_sync(b, sv + kk * 16 * L::LD + dd * 16, L::LD);
        wmma::mma_sync(o, a, b, o);
      }
      wmma::store_matrix_sync(o_warp + dd * 16, o, L::LDO, wmma::mem_row_major);
    }
    __syncthreads();  // K/V shared memory is refilled by the next step
  }

  // Epilogue: O / l, rounded to the storage dtype, 16-byte stores, only the tile's real rows.
  T* out = static_cast<T*>(p.out) + (loc.seq_start + loc.q_begin) * p.out_stride + head * D;
  constexpr int kChunks = D / 8;
  for (int i = lane; i < 16 * kChunks; i += 32) {
    const int rr = i / kChunks, ch = i % kChunks;
    const int out_row = warp * 16 + rr;
    if (out_row >= q_rows) continue;
    const float inv = 1.f / row_sum[out_row];
    union {
      uint4 vec;
      T elems[8];
    } pack;
#pragma unroll
    for (int e = 0; e < 8; ++e) pack.elems[e] = from_f<T>(o_warp[rr * L::LDO + ch * 8 + e] * inv);
    *reinterpret_cast<uint4*>(out + out_row * p.out_stride + ch * 8) = pack.vec;
  }
}

template <class T, int D>
void launch(const Params& params, long long tiles, int heads, cudaStream_t stream) {
  if (tiles <= 0) return;
  auto* kernel = attention_kernel<T, D>;
  ENCBENCH_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           static_cast<int>(Layout<D>::bytes)));
  kernel<<<dim3(static_cast<unsigned>(tiles), static_cast<unsigned>(heads)), kThreads,
           Layout<D>::bytes, stream>>>(params);
  ENCBENCH_CUDA_CHECK_LAUNCH("attention_kernel launch");
}

template <class T>
void dispatch_head_dim(int head_dim, const Params& params, long long tiles, int heads,
                       cudaStream_t stream) {
  switch (head_dim) {
    case 64: return launch<T, 64>(params, tiles, heads, stream);
    case 72: return launch<T, 72>(params, tiles, heads, stream);
    case 80: return launch<T, 80>(params, tiles, heads, stream);
    case 128: return launch<T, 128>(params, tiles, heads, stream);
    default: throw InvalidInput("attention: head_dim " + std::to_string(head_dim) +
                                " is not compiled (64, 72, 80, 128)");
  }
}

void run(DType dtype, int head_dim, const Params& params, long long tiles, int heads, void* stream) {
  if (dtype == DType::bf16)
    dispatch_head_dim<__nv_bfloat16>(head_dim, params, tiles, heads, as_stream(stream));
  else
    dispatch_head_dim<__half>(head_dim, params, tiles, heads, as_stream(stream));
}

}  // namespace

namespace attention_detail {

static bool aligned16(const void* ptr) { return reinterpret_cast<std::uintptr_t>(ptr) % 16 == 0; }

// Validates the tensors and fills the pointer/stride part of the kernel parameters.
Params make_params(const AttentionTensors& t, int scale_head_dim, const char* op) {
  const std::string name(op);
  require(t.q && t.k && t.v && t.out, name + ": q, k, v and out must be device pointers");
  require(attention_head_dim_supported(t.head_dim),
          name + ": head_dim " + std::to_string(t.head_dim) + " is not compiled (64, 72, 80, 128)");
  require(t.num_heads > 0 && t.num_heads <= 65535, name + ": num_heads must be in [1, 65535]");
  require(t.total_tokens >= 0, name + ": total_tokens must be >= 0");
  require(aligned16(t.q) && aligned16(t.k) && aligned16(t.v) && aligned16(t.out),
          name + ": tensors must be 16-byte aligned");
  const long long row = static_cast<long long>(t.num_heads) * t.head_dim;
  auto stride = [&](long long given, const char* which) {
    const long long s = given == 0 ? row : given;
    require(s >= row && s % 8 == 0, name + ": " + which + " stride must be >= heads*head_dim and a multiple of 8");
    return s;
  };
  Params p{};
  p.q = t.q;
  p.k = t.k;
  p.v = t.v;
  p.out = t.out;
  p.q_stride = stride(t.q_stride, "q");
  p.k_stride = stride(t.k_stride, "k");
  p.v_stride = stride(t.v_stride, "v");
  p.out_stride = stride(t.out_stride, "out");
  p.total_tokens = t.total_tokens;
  const float scale = t.scale != 0.f ? t.scale : 1.f / std::sqrt(static_cast<float>(scale_head_dim));
  p.scale_log2 = scale * 1.4426950408889634f;
  return p;
}

}  // namespace attention_detail

bool attention_head_dim_supported(int head_dim) {
  return head_dim == 64 || head_dim == 72 || head_dim == 80 || head_dim == 128;
}

std::size_t attention_shared_bytes(int head_dim) {
  switch (head_dim) {
    case 64: return Layout<64>::bytes;
    case 72: return Layout<72>::bytes;
    case 80: return Layout<80>::bytes;
    case 128: return Layout<128>::bytes;
    default: return 0;
  }
}

void fused_varlen_attention(const AttentionTensors& tensors, const std::int32_t* cu_seqlens_device,
                            int num_segments, void* stream) {
  Params p = attention_detail::make_params(tensors, tensors.head_dim, "fused_varlen_attention");
  require(cu_seqlens_device != nullptr, "fused_varlen_attention: cu_seqlens must be a device pointer");
  require(num_segments > 0 || tensors.total_tokens == 0,
          "fused_varlen_attention: num_segments must be > 0");
  p.cu = cu_seqlens_device;
  p.num_segments = num_segments;
  const long long tiles = varlen_grid_tiles(tensors.total_tokens, num_segments, BM);
  require(tiles < (1LL << 31), "fused_varlen_attention: too many tiles");
  run(tensors.dtype, tensors.head_dim, p, tiles, tensors.num_heads, stream);
}

void flash_unpad_attention(const AttentionTensors& padded_tensors, int original_head_dim,
                           const std::int32_t* work_list_device, int work_tiles, void* stream) {
  require(padded_tensors.head_dim == 128, "flash_unpad_attention: tensors must be padded to head_dim 128");
  require(original_head_dim > 0 && original_head_dim <= 128,
          "flash_unpad_attention: original_head_dim must be in [1, 128]");
  Params p = attention_detail::make_params(padded_tensors, original_head_dim, "flash_unpad_attention");
  require(work_tiles >= 0, "flash_unpad_attention: work_tiles must be >= 0");
  require(work_tiles == 0 || work_list_device != nullptr,
          "flash_unpad_attention: work list must be a device pointer");
  p.work = work_list_device;
  run(padded_tensors.dtype, 128, p, work_tiles, padded_tensors.num_heads, stream);
}

}  // namespace encbench::kernels::cuda
