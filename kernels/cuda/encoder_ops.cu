// The fp32 kernels of the encoder's non-attention ops (encoder_kernels.hpp): norms, activations,
// residual add, head copies (split/pad/unpad), vision rotary, window gathers and the GEMM bias.
// Memory-bound next to the GEMMs and attention; written for obvious correctness: grid-stride
// loops over output elements (consecutive threads, consecutive addresses) with 64-bit indices, so
// tails and large T need no special case.
#include <cuda_runtime.h>

#include <climits>
#include <cmath>
#include <cstdint>
#include <string>

#include "harness/core/error.hpp"
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/encoder_kernels.hpp"
#include "kernels/cuda/launch_shape.cuh"

namespace encbench::kernels::cuda {
namespace {

constexpr int kNormThreads = 256;  // 8 warps per row
constexpr unsigned kMaxNormBlocks = 1u << 20;

// Sum of `v` over the block (every thread gets the total). `partial` holds one slot per warp plus
// the total; the trailing barrier lets the caller reuse it at once.
__device__ double block_sum(double v, double* partial) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    double total = 0;
    for (unsigned w = 0; w < blockDim.x / 32; ++w) total += partial[w];
    partial[32] = total;
  }
  __syncthreads();
  const double total = partial[32];
  __syncthreads();
  return total;
}

// One block per row (block-stride over rows, a uniform trip count so the barriers are safe).
__global__ void norm_rows_kernel(const float* x, const float* gamma, const float* beta, float* out,
                                 std::int64_t rows, std::int64_t dim, double eps) {
  __shared__ double partial[33];
  for (std::int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* xr = x + r * dim;
    float* o = out + r * dim;
    if (beta != nullptr) {
      double sum = 0;
      for (std::int64_t i = threadIdx.x; i < dim; i += blockDim.x) sum += xr[i];
      const double mean = block_sum(sum, partial) / static_cast<double>(dim);
      double sq = 0;
      for (std::int64_t i = threadIdx.x; i < dim; i += blockDim.x) {
        const double d = xr[i] - mean;
        sq += d * d;
      }
      const double var = block_sum(sq, partial) / static_cast<double>(dim);
      const float inv = static_cast<float>(1.0 / sqrt(var + eps));
      const float mean_f = static_cast<float>(mean);
      for (std::int64_t i = threadIdx.x; i < dim; i += blockDim.x) o[i] = (xr[i] - mean_f) * inv * gamma[i] + beta[i];
    } else {
      double sq = 0;
      for (std::int64_t i = threadIdx.x; i < dim; i += blockDim.x) sq += static_cast<double>(xr[i]) * xr[i];
      const double ms = block_sum(sq, partial) / static_cast<double>(dim);
      const float inv = static_cast<float>(1.0 / sqrt(ms + eps));
      for (std::int64_t i = threadIdx.x; i < dim; i += blockDim.x) o[i] = xr[i] * inv * gamma[i];
    }
  }
}

__global__ void activation_kernel(Activation act, float* x, std::int64_t n) {
  GRID_STRIDE(i, n) {
    const float v = x[i];
    switch (act) {
      case Activation::gelu_erf: x[i] = 0.5f * v * (1.0f + erff(v * 0.70710678118654752f)); break;
      case Activation::gelu_tanh:
        x[i] = 0.5f * v * (1.0f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)));
        break;
      case Activation::quick_gelu: x[i] = v / (1.0f + expf(-1.702f * v)); break;
    }
  }
}

__global__ void silu_mul_kernel(const float* gate_up, float* out, std::int64_t rows, std::int64_t inner) {
  GRID_STRIDE(i, rows * inner) {
    const std::int64_t r = i / inner, c = i % inner;
    const float g = gate_up[r * 2 * inner + c];
    const float u = gate_up[r * 2 * inner + inner + c];
    out[i] = g / (1.0f + expf(-g)) * u;
  }
}

__global__ void add_kernel(const float* x, const float* y, float* out, std::int64_t n) {
  GRID_STRIDE(i, n) { out[i] = x[i] + y[i]; }
}

__global__ void bias_f32_kernel(float* out, std::int64_t rows, std::int64_t cols, const float* bias) {
  GRID_STRIDE(i, rows * cols) { out[i] += bias[i % cols]; }
}

// One thread per destination lane (t, h, c) including the zero-filled pad lanes.
__global__ void copy_heads_kernel(HeadCopyF32 c) {
  const std::int64_t per_token = c.heads * c.dst_head;
  GRID_STRIDE(i, c.tokens * per_token) {
    const std::int64_t t = i / per_token, rest = i % per_token;
    const std::int64_t h = rest / c.dst_head, lane = rest % c.dst_head;
    c.dst[t * c.dst_row + h * c.dst_head + lane] =
        lane < c.d ? c.src[t * c.src_row + c.src_off + h * c.src_head + lane] : 0.0f;
  }
}

// One thread per (token, rotated lane pair): the angle once, then every head of q and k.
__global__ void rotary_2d_kernel(Rotary2dF32 a) {
  const int half = a.head_dim / 2, quarter = a.head_dim / 4;
  GRID_STRIDE(i, a.tokens * half) {
    const std::int64_t t = i / half;
    const int lane = static_cast<int>(i % half);
    const bool from_h = lane < quarter;
    const int j = from_h ? lane : lane - quarter;
    const double inv_freq = 1.0 / pow(a.theta, static_cast<double>(2 * j) / static_cast<double>(half));
    const double angle = static_cast<double>(from_h ? a.pos_h[t] : a.pos_w[t]) * inv_freq;
    const float c = static_cast<float>(cos(angle)), s = static_cast<float>(sin(angle));
    float* tensors[2] = {a.q, a.k};
    for (float* x : tensors) {
      if (x == nullptr) continue;
      for (std::int64_t h = 0; h < a.heads; ++h) {
        float* xh = x + t * a.row + h * a.head_stride;
        const float x1 = xh[lane], x2 = xh[lane + half];
        xh[lane] = x1 * c - x2 * s;
        xh[lane + half] = x2 * c + x1 * s;
      }
    }
  }
}

// gather: dst[g] = src[index[g]]; scatter: dst[index[g]] = src[g] (groups of group_floats).
template <bool kScatter>
__global__ void groups_kernel(const float* src, float* dst, const std::int32_t* index, std::int64_t groups,
                              std::int64_t group_floats) {
  GRID_STRIDE(i, groups * group_floats) {
    const std::int64_t g = i / group_floats, e = i % group_floats;
    const std::int64_t other = index[g];
    if (other < 0 || other >= groups) continue;  // a malformed index never reaches outside
    if (kScatter) dst[other * group_floats + e] = src[i];
    else dst[i] = src[other * group_floats + e];
  }
}

void require_ptr(const void* ptr, const std::string& what) {
  require(ptr != nullptr, what + " must be a device pointer");
}

}  // namespace

void add_bias_f32(float* out, std::int64_t rows, std::int64_t cols, const float* bias, void* stream) {
  require_ptr(out, "add_bias_f32: out");
  require_ptr(bias, "add_bias_f32: bias");
  require(rows >= 0 && cols > 0, "add_bias_f32: need rows >= 0 and cols > 0");
  if (rows == 0) return;
  bias_f32_kernel<<<blocks_for(rows * cols), kThreads, 0, as_stream(stream)>>>(out, rows, cols, bias);
  ENCBENCH_CUDA_CHECK_LAUNCH("add_bias_f32");
}

void norm_rows_f32(const float* x, const float* gamma, const float* beta, float* out, std::int64_t rows,
                   std::int64_t dim, double eps, void* stream) {
  require_ptr(x, "norm_rows_f32: x");
  require_ptr(gamma, "norm_rows_f32: gamma");
  require_ptr(out, "norm_rows_f32: out");
  require(rows >= 0 && dim > 0 && eps >= 0, "norm_rows_f32: need rows >= 0, dim > 0 and eps >= 0");
  if (rows == 0) return;
  const auto blocks = static_cast<unsigned>(std::min<std::int64_t>(rows, kMaxNormBlocks));
  norm_rows_kernel<<<blocks, kNormThreads, 0, as_stream(stream)>>>(x, gamma, beta, out, rows, dim, eps);
  ENCBENCH_CUDA_CHECK_LAUNCH("norm_rows_f32");
}

void activation_f32(Activation act, float* x, std::int64_t n, void* stream) {
  require_ptr(x, "activation_f32: x");
  require(n >= 0, "activation_f32: n must be >= 0");
  if (n == 0) return;
  activation_kernel<<<blocks_for(n), kThreads, 0, as_stream(stream)>>>(act, x, n);
  ENCBENCH_CUDA_CHECK_LAUNCH("activation_f32");
}

void silu_mul_f32(const float* gate_up, float* out, std::int64_t rows, std::int64_t inner, void* stream) {
  require_ptr(gate_up, "silu_mul_f32: gate_up");
  require_ptr(out, "silu_mul_f32: out");
  require(rows >= 0 && inner > 0, "silu_mul_f32: need rows >= 0 and inner > 0");
  if (rows == 0) return;
  silu_mul_kernel<<<blocks_for(rows * inner), kThreads, 0, as_stream(stream)>>>(gate_up, out, rows, inner);
  ENCBENCH_CUDA_CHECK_LAUNCH("silu_mul_f32");
}

void add_f32(const float* x, const float* y, float* out, std::int64_t n, void* stream) {
  require_ptr(x, "add_f32: x");
  require_ptr(y, "add_f32: y");
  require_ptr(out, "add_f32: out");
  require(n >= 0, "add_f32: n must be >= 0");
  if (n == 0) return;
  add_kernel<<<blocks_for(n), kThreads, 0, as_stream(stream)>>>(x, y, out, n);
  ENCBENCH_CUDA_CHECK_LAUNCH("add_f32");
}

void copy_heads_f32(const HeadCopyF32& c, void* stream) {
  require_ptr(c.src, "copy_heads_f32: src");
  require_ptr(c.dst, "copy_heads_f32: dst");
  require(c.tokens >= 0 && c.heads > 0 && c.d > 0 && c.d <= c.src_head && c.d <= c.dst_head &&
              c.src_row >= c.src_off + c.heads * c.src_head && c.dst_row >= c.heads * c.dst_head && c.src_off >= 0,
          "copy_heads_f32: need 0 < d <= src_head, dst_head and rows that hold every head");
  if (c.tokens == 0) return;
  copy_heads_kernel<<<blocks_for(c.tokens * c.heads * c.dst_head), kThreads, 0, as_stream(stream)>>>(c);
  ENCBENCH_CUDA_CHECK_LAUNCH("copy_heads_f32");
}

void rotary_2d_f32(const Rotary2dF32& a, void* stream) {
  require_ptr(a.q, "rotary_2d_f32: q");
  require_ptr(a.pos_h, "rotary_2d_f32: pos_h");
  require_ptr(a.pos_w, "rotary_2d_f32: pos_w");
  require(a.tokens >= 0 && a.heads > 0 && a.head_dim >= 4 && a.head_stride >= a.head_dim &&
              a.row >= a.heads * a.head_stride && a.theta > 0,
          "rotary_2d_f32: need head_dim >= 4, head_stride >= head_dim, row >= heads * head_stride, theta > 0");
  if (a.tokens == 0) return;
  rotary_2d_kernel<<<blocks_for(a.tokens * (a.head_dim / 2)), kThreads, 0, as_stream(stream)>>>(a);
  ENCBENCH_CUDA_CHECK_LAUNCH("rotary_2d_f32");
}

void gather_groups_f32(const float* src, float* dst, const std::int32_t* index, std::int64_t groups,
                       std::int64_t group_floats, void* stream) {
  require_ptr(src, "gather_groups_f32: src");
  require_ptr(dst, "gather_groups_f32: dst");
  require_ptr(index, "gather_groups_f32: index");
  require(groups >= 0 && group_floats > 0, "gather_groups_f32: need groups >= 0 and group_floats > 0");
  if (groups == 0) return;
  groups_kernel<false><<<blocks_for(groups * group_floats), kThreads, 0, as_stream(stream)>>>(
      src, dst, index, groups, group_floats);
  ENCBENCH_CUDA_CHECK_LAUNCH("gather_groups_f32");
}

void scatter_groups_f32(const float* src, float* dst, const std::int32_t* index, std::int64_t groups,
                        std::int64_t group_floats, void* stream) {
  require_ptr(src, "scatter_groups_f32: src");
  require_ptr(dst, "scatter_groups_f32: dst");
  require_ptr(index, "scatter_groups_f32: index");
  require(groups >= 0 && group_floats > 0, "scatter_groups_f32: need groups >= 0 and group_floats > 0");
  if (groups == 0) return;
  groups_kernel<true><<<blocks_for(groups * group_floats), kThreads, 0, as_stream(stream)>>>(
      src, dst, index, groups, group_floats);
  ENCBENCH_CUDA_CHECK_LAUNCH("scatter_groups_f32");
}

void copy_device(void* dst, const void* src, std::size_t bytes, void* stream) {
  require_ptr(dst, "copy_device: dst");
  require_ptr(src, "copy_device: src");
  if (bytes == 0) return;
  ENCBENCH_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, as_stream(stream)));
}

}  // namespace encbench::kernels::cuda
