#pragma once
// CUDA kernels of the vision-encoder attention path, behind plain C++ entry points: no CUDA types
// here, streams are `void*` (a cudaStream_t), device pointers are `void*`. Any .cpp can include
// this header and link encbench_kernels_cuda without nvcc.
//
// Every entry point only *enqueues* work on `stream` (asynchronous, capturable into a CUDA graph)
// and never synchronizes. Bad arguments throw encbench::InvalidInput before anything is enqueued;
// a failed launch throws CudaError (a std::runtime_error) with the CUDA error text.
//
// Tensors are row-major 16-bit (bf16 or fp16) with fp32 accumulation inside the kernels.
// Attention tensors use the flattened TND layout of the ViT ([tokens, heads, head_dim]) with a
// token stride in elements, so q/k/v may be views into one fused qkv projection [T, 3, H, D]
// (token_stride = 3*H*D) without a copy.
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cuda/tile_plan.hpp"

namespace encbench::kernels::cuda {

enum class DType { bf16, fp16 };
const char* to_string(DType dtype);  // "bf16" | "fp16"

class CudaError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Number of CUDA devices visible to this process; 0 when there is no GPU or no driver (never
// throws). `reason` (optional) receives the CUDA error text when 0.
int device_count(std::string* reason = nullptr);
// Name and compute capability of device `ordinal`, e.g. "NVIDIA H100 80GB HBM3 (sm_90)".
std::string device_description(int ordinal);

// ---- attention ------------------------------------------------------------------------------
// Head dims compiled natively (no padding in device memory): 64, 72, 80, 128.
bool attention_head_dim_supported(int head_dim);

struct AttentionTensors {
  DType dtype = DType::bf16;
  const void* q = nullptr;  // [T, H, D] with token stride q_stride (elements)
  const void* k = nullptr;
  const void* v = nullptr;
  void* out = nullptr;      // [T, H, D] with token stride out_stride
  std::int64_t q_stride = 0, k_stride = 0, v_stride = 0, out_stride = 0;  // 0: H*D (contiguous)
  std::int32_t total_tokens = 0;
  int num_heads = 0;
  int head_dim = 0;          // storage head dim (64/72/80/128)
  float scale = 0;           // softmax scale; 0: 1/sqrt(head_dim)
};

// Fused varlen flash attention ("fused-varlen"): the sequence boundaries stay on the device
// (cu_seqlens_device, int32, num_segments + 1 entries, cu[0] = 0, cu[num_segments] =
// total_tokens); the host never reads them, so no device-to-host sync is needed. num_segments
// may be a *capacity*: trailing entries equal to total_tokens are empty segments, which lets a
// captured CUDA graph replay with new lengths written into the same buffer.
void fused_varlen_attention(const AttentionTensors& tensors, const std::int32_t* cu_seqlens_device,
                            int num_segments, void* stream);

// The flash-unpad shape ("flash-unpad", as Ascend's _npu_flash_attention_unpad): q/k/v padded to
// head dim 128 in device memory (zeros beyond original_head_dim), lengths known on the host. The
// host builds the tile work list with build_unpad_work_list(), uploads it, and passes the device
// copy here (work_tiles = list size / 3). The scale uses the original head dim.
void flash_unpad_attention(const AttentionTensors& padded_tensors, int original_head_dim,
                           const std::int32_t* work_list_device, int work_tiles, void* stream);

// Bytes of dynamic shared memory one attention block uses (reported by tests and benches).
std::size_t attention_shared_bytes(int head_dim);

// The same two contracts on a FlashAttention-2-style kernel (kernels/cuda/attention_mma.cu:
// mma.sync m16n8k16, S/P/O in registers, cp.async double-buffered K/V), verified on an H200 and
// what the encoder runs; the WMMA kernels stay as the GPU tests' second reference. queries_per_block: 64 (4 warps)
// or 128 (8 warps); flash-unpad's work list must be built with the same block_m
// (build_unpad_work_list(lens, n, queries_per_block)).
void fused_varlen_attention_mma(const AttentionTensors& tensors, const std::int32_t* cu_seqlens_device,
                                int num_segments, void* stream, int queries_per_block = 64);
void flash_unpad_attention_mma(const AttentionTensors& padded_tensors, int original_head_dim,
                               const std::int32_t* work_list_device, int work_tiles, void* stream,
                               int queries_per_block = 64);
// Dynamic shared memory of one mma block (0 for a head dim or block size that is not compiled).
std::size_t attention_mma_shared_bytes(int head_dim, int queries_per_block = 64);

// ---- simple kernels (dtype-agnostic 16-bit copies unless noted) ------------------------------
// dst[r, 0:d] = src[r, 0:d]; dst[r, d:d_pad] = 0.
void pad_last_dim(const void* src, std::int64_t rows, int d, int d_pad, void* dst, void* stream);
// dst[r, 0:d] = src[r, 0:d] for src rows of d_pad.
void unpad_last_dim(const void* src, std::int64_t rows, int d_pad, int d, void* dst, void* stream);

// Rearrange + contiguous: dst (contiguous, dims in the order given) = src viewed with sizes[i] /
// src_strides[i] (elements). Up to 4 dims; unused leading dims have size 1.
struct LayoutCopy {
  const void* src = nullptr;
  void* dst = nullptr;
  int rank = 0;
  std::int64_t sizes[4] = {0, 0, 0, 0};
  std::int64_t src_strides[4] = {0, 0, 0, 0};
};
void layout_copy(const LayoutCopy& copy, void* stream);

// Qwen2-VL vision rotary in place on q [T, q_heads, D] and k [T, k_heads, D] (k may be null):
// x = x*cos + rotate_half(x)*sin in fp32 with cos/sin fp32 tables [T, D] (see
// kernels/ops.hpp vision_rotary_tables for how they are built from (h, w) positions).
void rotary_vision(DType dtype, void* q, void* k, std::int64_t tokens, int q_heads, int k_heads,
                   int head_dim, const float* cos, const float* sin, void* stream);

// lens[i] = cu[i+1] - cu[i] (torch.diff on cu_seqlens), int32, on the device.
void cu_seqlens_diff(const std::int32_t* cu_seqlens, int num_segments, std::int32_t* lens,
                     void* stream);

// out[i] = convert(in[i]) between fp32 and 16-bit storage (test inputs, result read-back).
void convert_from_f32(DType dtype, const float* in, std::int64_t n, void* out, void* stream);
void convert_to_f32(DType dtype, const void* in, std::int64_t n, float* out, void* stream);

// out[r, c] += bias[c] (bias in the same 16-bit dtype), fp32 add.
void add_bias(DType dtype, void* out, std::int64_t rows, std::int64_t cols, const void* bias,
              void* stream);

// ---- projections through cuBLAS --------------------------------------------------------------
// One cuBLAS handle (create once per device/thread; cuBLAS handles are not thread-safe).
class BlasHandle {
 public:
  BlasHandle();  // throws CudaError without a device
  ~BlasHandle();
  BlasHandle(const BlasHandle&) = delete;
  BlasHandle& operator=(const BlasHandle&) = delete;
  void* native() const { return handle_; }  // cublasHandle_t

 private:
  void* handle_ = nullptr;
};

// nn.Linear layout: out[m, n] = sum_k x[m, k] * w[n, k] (+ bias[n]); fp32 accumulation
// (cublasGemmEx, CUBLAS_COMPUTE_32F), then a bias kernel when bias is given.
struct GemmArgs {
  DType dtype = DType::bf16;
  const void* x = nullptr;     // [m, k]
  const void* w = nullptr;     // [n, k]
  const void* bias = nullptr;  // [n] or null
  void* out = nullptr;         // [m, n]
  std::int64_t m = 0, n = 0, k = 0;
};
void gemm(BlasHandle& blas, const GemmArgs& args, void* stream);

}  // namespace encbench::kernels::cuda
