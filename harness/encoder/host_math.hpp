#pragma once
// Host compute used by the encoder's device ops and by the reference path: plain functions over
// raw fp32 pointers, parallel over a kernels::WorkerPool. GEMM goes to the kernels library; the
// rest are small ops whose layout needs (strided padded heads, merged-token groups, segment ids
// in any token order) the kernels library does not cover. Checked in tests/encoder against the
// kernels library's own implementations where both exist.
#include <cstddef>
#include <cstdint>
#include <span>

#include "kernels/worker_pool.hpp"

namespace encbench::encoder::math {

// nn.Linear: C[M,N] = A[M,K] * W[N,K]^T (+ bias[N] when non-null), row-major; runs the kernels
// library's blocked SIMD GEMM.
void linear(kernels::WorkerPool& pool, const float* a, const float* w, const float* bias, float* c,
            std::size_t m, std::size_t k, std::size_t n);

// out = x (+) y elementwise (out may alias x).
void add(kernels::WorkerPool& pool, const float* x, const float* y, float* out, std::size_t count);

// Per-row LayerNorm (gamma, beta) or RMSNorm (gamma); every Qwen-VL vision norm uses eps 1e-6.
inline constexpr double kNormEps = 1e-6;
void layer_norm(kernels::WorkerPool& pool, const float* x, const float* gamma, const float* beta,
                float* out, std::size_t rows, std::size_t dim, double eps = kNormEps);
void rms_norm(kernels::WorkerPool& pool, const float* x, const float* gamma, float* out,
              std::size_t rows, std::size_t dim, double eps = kNormEps);

void quick_gelu(kernels::WorkerPool& pool, float* x, std::size_t count);
void gelu_tanh(kernels::WorkerPool& pool, float* x, std::size_t count);
// nn.GELU() (exact, erf): the patch mergers' activation.
void gelu_erf(kernels::WorkerPool& pool, float* x, std::size_t count);
// out[i] = silu(gate[i]) * up[i]; gate and up are the two halves of rows of width 2*inner.
void silu_mul(kernels::WorkerPool& pool, const float* gate_up, float* out, std::size_t rows,
              std::size_t inner);

// Copies head slices: dst[t, h, 0:d] = src[t*src_row + src_off + h*src_head + 0:d], zero-filling
// dst lanes [d, dst_head) (pad). Used for split-heads, pad and unpad (slice) ops.
void copy_heads(kernels::WorkerPool& pool, const float* src, std::size_t src_row,
                std::size_t src_off, std::size_t src_head, float* dst, std::size_t dst_row,
                std::size_t dst_head, std::size_t tokens, std::size_t heads, std::size_t d);

// Qwen2-VL vision 2D rotary, in place on x[t, h, 0:head_dim] (row stride `row`, head stride
// `head_stride`): angles for lanes [0, D/4) from pos_h, [D/4, D/2) from pos_w, theta 10000,
// rotate_half over the first head_dim lanes.
inline constexpr double kRotaryTheta = 10000.0;
void rotary_2d(kernels::WorkerPool& pool, float* x, std::size_t row, std::size_t head_stride,
               std::size_t tokens, std::size_t heads, std::size_t head_dim,
               const std::int32_t* pos_h, const std::int32_t* pos_w, double theta = kRotaryTheta);

// The reference: fp64 accumulation, plain softmax, token i attends to every token j with
// segment[j] == segment[i] (any token order). q/k/v/out are [T, H, dim].
void attention_reference(kernels::WorkerPool& pool, const float* q, const float* k, const float* v,
                         float* out, std::size_t tokens, std::size_t heads, std::size_t dim,
                         std::span<const std::int32_t> segment, double scale);

// Rows gather/scatter by merged-token index (groups of `unit` rows): dst[i] = src[index[i]]
// (gather) or dst[index[i]] = src[i] (scatter).
void gather_groups(kernels::WorkerPool& pool, const float* src, float* dst, const std::int32_t* index,
                   std::size_t groups, std::size_t unit, std::size_t row);
void scatter_groups(kernels::WorkerPool& pool, const float* src, float* dst, const std::int32_t* index,
                    std::size_t groups, std::size_t unit, std::size_t row);

}  // namespace encbench::encoder::math
