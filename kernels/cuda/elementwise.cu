// The simple kernels of the encoder path: pad/unpad of the head dim, layout copy (rearrange +
// contiguous), vision rotary, diff of cu_seqlens, fp32 <-> 16-bit conversion and bias add.
// Grid-stride loops: these ops are memory-bound and small next to attention and the GEMMs;
// their launch count (not their speed) is what the host-overhead toggles change.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "harness/core/error.hpp"
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/cuda_kernels.hpp"
#include "kernels/cuda/launch_shape.cuh"

namespace encbench::kernels::cuda {
namespace {

__device__ __forceinline__ float to_f(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ __forceinline__ float to_f(__half x) { return __half2float(x); }
template <class T> __device__ __forceinline__ T from_f(float x);
template <> __device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float x) { return __float2bfloat16(x); }
template <> __device__ __forceinline__ __half from_f<__half>(float x) { return __float2half(x); }

__global__ void pad_kernel(const std::uint16_t* src, std::int64_t rows, int d, int d_pad,
                           std::uint16_t* dst) {
  GRID_STRIDE(i, rows * d_pad) {
    const std::int64_t r = i / d_pad;
    const int c = static_cast<int>(i % d_pad);
    dst[i] = c < d ? src[r * d + c] : std::uint16_t{0};  // +0.0 in bf16 and fp16
  }
}

__global__ void unpad_kernel(const std::uint16_t* src, std::int64_t rows, int d_pad, int d,
                             std::uint16_t* dst) {
  GRID_STRIDE(i, rows * d) { dst[i] = src[(i / d) * d_pad + i % d]; }
}

struct CopyShape {
  std::int64_t sizes[4];
  std::int64_t src_strides[4];
};

__global__ void layout_copy_kernel(const std::uint16_t* src, std::uint16_t* dst, CopyShape shape,
                                   std::int64_t total) {
  GRID_STRIDE(i, total) {
    std::int64_t rest = i, offset = 0;
    for (int dim = 3; dim >= 0; --dim) {
      const std::int64_t idx = rest % shape.sizes[dim];
      rest /= shape.sizes[dim];
      offset += idx * shape.src_strides[dim];
    }
    dst[i] = src[offset];
  }
}

template <class T>
__global__ void rotary_kernel(T* x, std::int64_t tokens, int heads, int head_dim, const float* cos,
                              const float* sin) {
  const int half = head_dim / 2;
  GRID_STRIDE(i, tokens * heads * half) {
    const int j = static_cast<int>(i % half);
    const std::int64_t th = i / half;  // token * heads + head
    const std::int64_t t = th / heads;
    T* row = x + th * head_dim;
    const float x1 = to_f(row[j]), x2 = to_f(row[j + half]);
    const float* c = cos + t * head_dim;
    const float* s = sin + t * head_dim;
    // x*cos + rotate_half(x)*sin with rotate_half(x) = cat(-x2, x1)
    row[j] = from_f<T>(x1 * c[j] - x2 * s[j]);
    row[j + half] = from_f<T>(x2 * c[j + half] + x1 * s[j + half]);
  }
}

__global__ void diff_kernel(const std::int32_t* cu, int n, std::int32_t* lens) {
  GRID_STRIDE(i, n) { lens[i] = cu[i + 1] - cu[i]; }
}

template <class T>
__global__ void from_f32_kernel(const float* in, std::int64_t n, T* out) {
  GRID_STRIDE(i, n) { out[i] = from_f<T>(in[i]); }
}

template <class T>
__global__ void to_f32_kernel(const T* in, std::int64_t n, float* out) {
  GRID_STRIDE(i, n) { out[i] = to_f(in[i]); }
}

template <class T>
__global__ void bias_kernel(T* out, std::int64_t rows, std::int64_t cols, const T* bias) {
  GRID_STRIDE(i, rows * cols) { out[i] = from_f<T>(to_f(out[i]) + to_f(bias[i % cols])); }
}

void require_ptr(const void* ptr, const std::string& what) {
  require(ptr != nullptr, what + " must be a device pointer");
}

}  // namespace

const char* to_string(DType dtype) { return dtype == DType::bf16 ? "bf16" : "fp16"; }

void pad_last_dim(const void* src, std::int64_t rows, int d, int d_pad, void* dst, void* stream) {
  require_ptr(src, "pad_last_dim: src");
  require_ptr(dst, "pad_last_dim: dst");
  require(rows >= 0 && d > 0 && d <= d_pad, "pad_last_dim: need rows >= 0 and 0 < d <= d_pad");
  if (rows == 0) return;
  pad_kernel<<<blocks_for(rows * d_pad), kThreads, 0, as_stream(stream)>>>(
      static_cast<const std::uint16_t*>(src), rows, d, d_pad, static_cast<std::uint16_t*>(dst));
  ENCBENCH_CUDA_CHECK_LAUNCH("pad_last_dim");
}

void unpad_last_dim(const void* src, std::int64_t rows, int d_pad, int d, void* dst, void* stream) {
  require_ptr(src, "unpad_last_dim: src");
  require_ptr(dst, "unpad_last_dim: dst");
  require(rows >= 0 && d > 0 && d <= d_pad, "unpad_last_dim: need rows >= 0 and 0 < d <= d_pad");
  if (rows == 0) return;
  unpad_kernel<<<blocks_for(rows * d), kThreads, 0, as_stream(stream)>>>(
      static_cast<const std::uint16_t*>(src), rows, d_pad, d, static_cast<std::uint16_t*>(dst));
  ENCBENCH_CUDA_CHECK_LAUNCH("unpad_last_dim");
}

void layout_copy(const LayoutCopy& copy, void* stream) {
  require_ptr(copy.src, "layout_copy: src");
  require_ptr(copy.dst, "layout_copy: dst");
  require(copy.rank >= 1 && copy.rank <= 4, "layout_copy: rank must be 1..4");
  CopyShape shape{};
  std::int64_t total = 1;
  // Right-align the given dims into 4 (leading dims of size 1).
  for (int dim = 0; dim < 4; ++dim) {
    const int given = dim - (4 - copy.rank);
    shape.sizes[dim] = given >= 0 ? copy.sizes[given] : 1;
    shape.src_strides[dim] = given >= 0 ? copy.src_strides[given] : 0;
    require(shape.sizes[dim] >= 0 && shape.src_strides[dim] >= 0,
            "layout_copy: sizes and strides must be >= 0");
    total *= shape.sizes[dim];
  }
  if (total == 0) return;
  layout_copy_kernel<<<blocks_for(total), kThreads, 0, as_stream(stream)>>>(
      static_cast<const std::uint16_t*>(copy.src), static_cast<std::uint16_t*>(copy.dst), shape, total);
  ENCBENCH_CUDA_CHECK_LAUNCH("layout_copy");
}

void rotary_vision(DType dtype, void* q, void* k, std::int64_t tokens, int q_heads, int k_heads,
                   int head_dim, const float* cos, const float* sin, void* stream) {
  require_ptr(q, "rotary_vision: q");
  require_ptr(cos, "rotary_vision: cos");
  require_ptr(sin, "rotary_vision: sin");
  require(tokens >= 0 && q_heads > 0 && k_heads >= 0 && head_dim > 0 && head_dim % 2 == 0,
          "rotary_vision: need tokens >= 0, heads > 0 and an even head_dim");
  require(k == nullptr ? k_heads == 0 : k_heads > 0, "rotary_vision: k and k_heads disagree");
  if (tokens == 0) return;
  auto apply = [&](void* x, int heads) {
    const std::int64_t n = tokens * heads * (head_dim / 2);
    if (dtype == DType::bf16)
      rotary_kernel<<<blocks_for(n), kThreads, 0, as_stream(stream)>>>(
          static_cast<__nv_bfloat16*>(x), tokens, heads, head_dim, cos, sin);
    else
      rotary_kernel<<<blocks_for(n), kThreads, 0, as_stream(stream)>>>(
          static_cast<__half*>(x), tokens, heads, head_dim, cos, sin);
    ENCBENCH_CUDA_CHECK_LAUNCH("rotary_vision");
  };
  apply(q, q_heads);
  if (k != nullptr) apply(k, k_heads);
}

void cu_seqlens_diff(const std::int32_t* cu_seqlens, int num_segments, std::int32_t* lens,
                     void* stream) {
  require_ptr(cu_seqlens, "cu_seqlens_diff: cu_seqlens");
  require_ptr(lens, "cu_seqlens_diff: lens");
  require(num_segments >= 0, "cu_seqlens_diff: num_segments must be >= 0");
  if (num_segments == 0) return;
  diff_kernel<<<blocks_for(num_segments), kThreads, 0, as_stream(stream)>>>(cu_seqlens, num_segments, lens);
  ENCBENCH_CUDA_CHECK_LAUNCH("cu_seqlens_diff");
}

void convert_from_f32(DType dtype, const float* in, std::int64_t n, void* out, void* stream) {
  require_ptr(in, "convert_from_f32: in");
  require_ptr(out, "convert_from_f32: out");
  require(n >= 0, "convert_from_f32: n must be >= 0");
  if (n == 0) return;
  if (dtype == DType::bf16)
    from_f32_kernel<<<blocks_for(n), kThreads, 0, as_stream(stream)>>>(in, n, static_cast<__nv_bfloat16*>(out));
  else
    from_f32_kernel<<<blocks_for(n), kThreads, 0, as_stream(stream)>>>(in, n, static_cast<__half*>(out));
  ENCBENCH_CUDA_CHECK_LAUNCH("convert_from_f32");
}

void convert_to_f32(DType dtype, const void* in, std::int64_t n, float* out, void* stream) {
  require_ptr(in, "convert_to_f32: in");
  require_ptr(out, "convert_to_f32: out");
  require(n >= 0, "convert_to_f32: n must be >= 0");
  if (n == 0) return;
  if (dtype == DType::bf16)
    to_f32_kernel<<<blocks_for(n), kThreads, 0, as_stream(stream)>>>(static_cast<const __nv_bfloat16*>(in), n, out);
  else
    to_f32_kernel<<<blocks_for(n), kThreads, 0, as_stream(stream)>>>(static_cast<const __half*>(in), n, out);
  ENCBENCH_CUDA_CHECK_LAUNCH("convert_to_f32");
}

void add_bias(DType dtype, void* out, std::int64_t rows, std::int64_t cols, const void* bias,
              void* stream) {
  require_ptr(out, "add_bias: out");
  require_ptr(bias, "add_bias: bias");
  require(rows >= 0 && cols > 0, "add_bias: need rows >= 0 and cols > 0");
  if (rows == 0) return;
  const std::int64_t n = rows * cols;
  if (dtype == DType::bf16)
    bias_kernel<<<blocks_for(n), kThreads, 0, as_stream(stream)>>>(
        static_cast<__nv_bfloat16*>(out), rows, cols, static_cast<const __nv_bfloat16*>(bias));
  else
    bias_kernel<<<blocks_for(n), kThreads, 0, as_stream(stream)>>>(
        static_cast<__half*>(out), rows, cols, static_cast<const __half*>(bias));
  ENCBENCH_CUDA_CHECK_LAUNCH("add_bias");
}

}  // namespace encbench::kernels::cuda
