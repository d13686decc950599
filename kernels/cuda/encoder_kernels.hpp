#pragma once
// fp32 CUDA kernels of the vision encoder's non-attention ops (what harness/encoder/host_math.hpp
// does on the CPU), behind plain C++ entry points like cuda_kernels.hpp: device pointers, the
// stream as `void*` (a cudaStream_t), enqueue only (no synchronize, capturable), InvalidInput for
// bad arguments before anything is enqueued, CudaError for a failed launch.
//
// The encoder keeps its activations in fp32 on every device, so these kernels read and write fp32;
// only attention converts to bf16 (convert_from_f32 / convert_to_f32 in cuda_kernels.hpp). Every
// kernel is a grid-stride loop over its output elements with consecutive threads on consecutive
// addresses (coalesced), or one block per row for the norms.
#include <cstddef>
#include <cstdint>

#include "kernels/cuda/cuda_kernels.hpp"

namespace encbench::kernels::cuda {

// nn.Linear in fp32: out[m, n] = sum_k x[m, k] * w[n, k] (+ bias[n]), row-major, through
// cublasGemmEx with CUDA_R_32F operands. tf32 = false: CUBLAS_COMPUTE_32F (full fp32 products);
// true: CUBLAS_COMPUTE_32F_FAST_TF32 (tensor cores, 10-bit mantissa inputs).
struct GemmF32Args {
  const float* x = nullptr;     // [m, k]
  const float* w = nullptr;     // [n, k]
  const float* bias = nullptr;  // [n] or null
  float* out = nullptr;         // [m, n]
  std::int64_t m = 0, n = 0, k = 0;
  bool tf32 = false;
};
void gemm_f32(BlasHandle& blas, const GemmF32Args& args, void* stream);

// out[r, c] += bias[c].
void add_bias_f32(float* out, std::int64_t rows, std::int64_t cols, const float* bias, void* stream);

// Per-row LayerNorm (beta non-null) or RMSNorm (beta null) over `dim`, fp64 sums as the CPU path
// (host_math.cpp) so the two agree to fp32 rounding. out may not alias x.
void norm_rows_f32(const float* x, const float* gamma, const float* beta, float* out, std::int64_t rows,
                   std::int64_t dim, double eps, void* stream);

enum class Activation { gelu_erf, gelu_tanh, quick_gelu };
// In place: x[i] = act(x[i]) (the formulas of host_math.cpp).
void activation_f32(Activation act, float* x, std::int64_t n, void* stream);

// out[r, c] = silu(gate_up[r, c]) * gate_up[r, inner + c] (rows of width 2 * inner).
void silu_mul_f32(const float* gate_up, float* out, std::int64_t rows, std::int64_t inner, void* stream);

// out[i] = x[i] + y[i] (out may alias x).
void add_f32(const float* x, const float* y, float* out, std::int64_t n, void* stream);

// dst[t*dst_row + h*dst_head + c] = src[t*src_row + src_off + h*src_head + c] for c < d, 0 for
// d <= c < dst_head (host_math.hpp copy_heads: split heads, pad, unpad).
struct HeadCopyF32 {
  const float* src = nullptr;
  std::int64_t src_row = 0, src_off = 0, src_head = 0;
  float* dst = nullptr;
  std::int64_t dst_row = 0, dst_head = 0;
  std::int64_t tokens = 0, heads = 0, d = 0;
};
void copy_heads_f32(const HeadCopyF32& copy, void* stream);

// Qwen2-VL vision 2D rotary in place on q and k (k may be null) of layout [t, h, lanes] with row
// stride `row` and head stride `head_stride`: lanes [0, head_dim/4) rotate by pos_h[t] *
// inv_freq, [head_dim/4, head_dim/2) by pos_w[t] * inv_freq, inv_freq[j] = theta^(-2j/(head_dim/2)),
// rotate_half over the first head_dim lanes; angles and cos/sin in fp64 as host_math.cpp.
struct Rotary2dF32 {
  float* q = nullptr;
  float* k = nullptr;
  std::int64_t row = 0, head_stride = 0, tokens = 0, heads = 0;
  int head_dim = 0;
  const std::int32_t* pos_h = nullptr;
  const std::int32_t* pos_w = nullptr;
  double theta = 10000.0;
};
void rotary_2d_f32(const Rotary2dF32& args, void* stream);

// Groups of `group_floats` floats: gather dst[g] = src[index[g]], scatter dst[index[g]] = src[g],
// g < groups. An index outside [0, groups) is skipped (no out-of-range access).
void gather_groups_f32(const float* src, float* dst, const std::int32_t* index, std::int64_t groups,
                       std::int64_t group_floats, void* stream);
void scatter_groups_f32(const float* src, float* dst, const std::int32_t* index, std::int64_t groups,
                        std::int64_t group_floats, void* stream);

// Device-to-device copy of `bytes` bytes (cudaMemcpyAsync on the stream).
void copy_device(void* dst, const void* src, std::size_t bytes, void* stream);

}  // namespace encbench::kernels::cuda
