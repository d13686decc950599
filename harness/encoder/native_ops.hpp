#pragma once
// The encoder ops' native bodies (device::KernelLaunch::native_body): what each op's CPU body does,
// enqueued as CUDA kernels on the stream the CUDA backend passes in (kernels/cuda/). Every factory
// captures the op's device pointers and sizes by value, as the CPU bodies do, and the body only
// enqueues (no synchronize, no host read), so a body can also be captured into a CUDA graph.
//
// Activations stay fp32 (the layout and dtype of the cpu device's buffers); the GEMMs run in fp32
// through cuBLAS (CUBLAS_COMPUTE_32F, no TF32); only attention converts q/k/v to bf16 for the
// flash kernels and the output back to fp32.
//
// In a build without the CUDA toolkit, and off CUDA unless asked, every factory returns an empty
// Body (no device can call it).
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace encbench::encoder::native {

using Body = std::function<void(void* native_stream)>;

enum class NativeActivation { gelu_erf, gelu_tanh, quick_gelu };

// One attention launch on fp32 q/k/v/out [tokens, heads, stride] (contiguous rows of heads *
// stride), through bf16 staging buffers of the same shape.
struct AttentionCall {
  const float* q = nullptr;
  const float* k = nullptr;
  const float* v = nullptr;
  float* out = nullptr;
  void* q16 = nullptr;  // bf16 staging, each >= tokens * heads * stride * 2 bytes
  void* k16 = nullptr;
  void* v16 = nullptr;
  void* out16 = nullptr;
  std::int64_t tokens = 0;
  int heads = 0;
  int stride = 0;             // the layout's head dim (model head_dim, or 128 when padded)
  int original_head_dim = 0;  // the model's head_dim (padded lanes are zeros)
  float scale = 0;
  // true: `lengths` is flash-unpad's work list (3 int32 per tile, `count` tiles, stride 128);
  // false: `lengths` is cu_seqlens (count + 1 int32, `count` segments) for the fused kernel.
  bool work_list = false;
  const std::int32_t* lengths = nullptr;
  int count = 0;
};

// The bodies' factories, implemented on the CUDA kernels in the CUDA module (native_ops_cuda.cpp,
// entry point encbench_cuda_native_kernels; harness/device/cuda_module.hpp). Same arguments as
// Ops below.
class NativeKernels {
 public:
  virtual ~NativeKernels() = default;
  virtual Body nothing() const = 0;
  virtual Body sequence(std::vector<Body> parts) const = 0;
  virtual Body gemm(const float* x, const float* w, const float* bias, float* out, std::size_t m, std::size_t k,
                    std::size_t n) const = 0;
  virtual Body norm(const float* x, const float* gamma, const float* beta, float* out, std::size_t rows,
                    std::size_t dim, double eps) const = 0;
  virtual Body activation(NativeActivation act, float* x, std::size_t count) const = 0;
  virtual Body silu_mul(const float* gate_up, float* out, std::size_t rows, std::size_t inner) const = 0;
  virtual Body add(const float* x, const float* y, float* out, std::size_t count) const = 0;
  virtual Body copy_heads(const float* src, std::size_t src_row, std::size_t src_off, std::size_t src_head,
                          float* dst, std::size_t dst_row, std::size_t dst_head, std::size_t tokens,
                          std::size_t heads, std::size_t d) const = 0;
  virtual Body rotary(float* q, float* k, std::size_t row, std::size_t head_stride, std::size_t tokens,
                      std::size_t heads, std::size_t head_dim, const std::int32_t* pos_h, const std::int32_t* pos_w,
                      double theta) const = 0;
  virtual Body gather_groups(const float* src, float* dst, const std::int32_t* index, std::size_t groups,
                             std::size_t group_floats) const = 0;
  virtual Body scatter_groups(const float* src, float* dst, const std::int32_t* index, std::size_t groups,
                              std::size_t group_floats) const = 0;
  virtual Body copy(void* dst, const void* src, std::size_t bytes) const = 0;
  virtual Body diff(const std::int32_t* cu, std::size_t segments, std::int32_t* lengths) const = 0;
  virtual Body attention(const AttentionCall& call) const = 0;
};

class Ops {
 public:
  // on_cuda: the encoder runs on a CUDA device (the kernels get the cuBLAS handle the GEMMs use).
  // enabled: build bodies off CUDA too (tests check through the cpu device that no op lacks one).
  // Either opens the CUDA module (in a build that has one); neither: every factory returns an
  // empty Body at no cost and nothing CUDA is loaded.
  // tf32_gemms: GEMM bodies use TF32 tensor-core products (EncoderConfig::cuda_tf32_gemms).
  Ops(bool on_cuda, bool enabled, bool tf32_gemms = false);
  ~Ops();
  Ops(const Ops&) = delete;
  Ops& operator=(const Ops&) = delete;

  // Whether this build has native bodies at all (the CUDA toolkit was found: the CUDA module).
  static bool built();
  bool enabled() const { return kernels_ != nullptr; }  // factories build bodies (else they return {})

  Body nothing() const;  // an op whose CPU body is empty (cost-only): nothing to enqueue
  Body sequence(std::vector<Body> parts) const;  // several kernels as one op
  Body gemm(const float* x, const float* w, const float* bias, float* out, std::size_t m, std::size_t k,
            std::size_t n) const;
  // RMSNorm when beta is null, else LayerNorm.
  Body norm(const float* x, const float* gamma, const float* beta, float* out, std::size_t rows, std::size_t dim,
            double eps) const;
  Body activation(NativeActivation act, float* x, std::size_t count) const;
  Body silu_mul(const float* gate_up, float* out, std::size_t rows, std::size_t inner) const;
  Body add(const float* x, const float* y, float* out, std::size_t count) const;
  // host_math.hpp copy_heads, same arguments.
  Body copy_heads(const float* src, std::size_t src_row, std::size_t src_off, std::size_t src_head, float* dst,
                  std::size_t dst_row, std::size_t dst_head, std::size_t tokens, std::size_t heads,
                  std::size_t d) const;
  // host_math.hpp rotary_2d on q and k (same layout).
  Body rotary(float* q, float* k, std::size_t row, std::size_t head_stride, std::size_t tokens, std::size_t heads,
              std::size_t head_dim, const std::int32_t* pos_h, const std::int32_t* pos_w, double theta) const;
  Body gather_groups(const float* src, float* dst, const std::int32_t* index, std::size_t groups,
                     std::size_t group_floats) const;
  Body scatter_groups(const float* src, float* dst, const std::int32_t* index, std::size_t groups,
                      std::size_t group_floats) const;
  Body copy(void* dst, const void* src, std::size_t bytes) const;
  Body diff(const std::int32_t* cu, std::size_t segments, std::int32_t* lengths) const;
  Body attention(const AttentionCall& call) const;

  // flash-unpad's tile work list for host lengths (kernels/cuda/tile_plan.hpp, host code).
  static std::vector<std::int32_t> unpad_work_list(const std::vector<std::int32_t>& lengths);
  static constexpr int kTileRows = 64;  // queries per attention tile (kAttentionBlockM)

 private:
  std::unique_ptr<NativeKernels> kernels_;
};

}  // namespace encbench::encoder::native
