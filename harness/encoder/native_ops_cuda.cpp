// Native bodies on the CUDA kernels: the CUDA module's NativeKernels (harness/encoder/
// native_ops.hpp; built only into libencbench-cuda.so and tests/cuda, never into the binary, so
// that cuBLAS is mapped only when a CUDA encoder asks for it). Each body checks nothing on the
// host beyond what the kernel entry points validate, so a bad pointer or size surfaces as
// InvalidInput at submit, before anything is enqueued.
#include <memory>
#include <utility>

#include "harness/core/error.hpp"
#include "harness/encoder/native_ops.hpp"
#include "kernels/cuda/cuda_kernels.hpp"
#include "kernels/cuda/encoder_kernels.hpp"
#include "kernels/cuda/tile_plan.hpp"

namespace encbench::encoder::native {

namespace kc = kernels::cuda;

namespace {
std::int64_t i64(std::size_t v) { return static_cast<std::int64_t>(v); }

struct Blas {
  kc::BlasHandle handle;
};

class CudaKernels final : public NativeKernels {
 public:
  // cuBLAS needs a device; the handle is made once here, outside any forward, so no GEMM body
  // ever allocates (cublasCreate would synchronize) while a forward is being measured.
  CudaKernels(bool on_cuda, bool tf32_gemms) : tf32_gemms_(tf32_gemms) {
    if (on_cuda) blas_ = std::make_unique<Blas>();
  }

  Body nothing() const override {
    return [](void*) {};
  }

  Body sequence(std::vector<Body> parts) const override {
    return [parts = std::move(parts)](void* stream) {
      for (const Body& part : parts) part(stream);
    };
  }

  Body gemm(const float* x, const float* w, const float* bias, float* out, std::size_t m, std::size_t k,
            std::size_t n) const override {
    Blas* blas = blas_.get();
    const bool tf32 = tf32_gemms_;
    return [=](void* stream) {
      require(blas != nullptr, "gemm: the encoder was not set up for a CUDA device (no cuBLAS handle)");
      kc::GemmF32Args a;
      a.x = x;
      a.w = w;
      a.bias = bias;
      a.out = out;
      a.m = i64(m);
      a.n = i64(n);
      a.k = i64(k);
      a.tf32 = tf32;  // default false (full fp32): the guard's budget goes to bf16 attention
      kc::gemm_f32(blas->handle, a, stream);
    };
  }

  Body norm(const float* x, const float* gamma, const float* beta, float* out, std::size_t rows,
            std::size_t dim, double eps) const override {
    return [=](void* stream) { kc::norm_rows_f32(x, gamma, beta, out, i64(rows), i64(dim), eps, stream); };
  }

  Body activation(NativeActivation act, float* x, std::size_t count) const override {
    const kc::Activation kind = act == NativeActivation::gelu_erf    ? kc::Activation::gelu_erf
                                : act == NativeActivation::gelu_tanh ? kc::Activation::gelu_tanh
                                                               : kc::Activation::quick_gelu;
    return [=](void* stream) { kc::activation_f32(kind, x, i64(count), stream); };
  }

  Body silu_mul(const float* gate_up, float* out, std::size_t rows, std::size_t inner) const override {
    return [=](void* stream) { kc::silu_mul_f32(gate_up, out, i64(rows), i64(inner), stream); };
  }

  Body add(const float* x, const float* y, float* out, std::size_t count) const override {
    return [=](void* stream) { kc::add_f32(x, y, out, i64(count), stream); };
  }

  Body copy_heads(const float* src, std::size_t src_row, std::size_t src_off, std::size_t src_head, float* dst,
                  std::size_t dst_row, std::size_t dst_head, std::size_t tokens, std::size_t heads,
                  std::size_t d) const override {
    kc::HeadCopyF32 c;
    c.src = src;
    c.src_row = i64(src_row);
    c.src_off = i64(src_off);
    c.src_head = i64(src_head);
    c.dst = dst;
    c.dst_row = i64(dst_row);
    c.dst_head = i64(dst_head);
    c.tokens = i64(tokens);
    c.heads = i64(heads);
    c.d = i64(d);
    return [=](void* stream) { kc::copy_heads_f32(c, stream); };
  }

  Body rotary(float* q, float* k, std::size_t row, std::size_t head_stride, std::size_t tokens, std::size_t heads,
              std::size_t head_dim, const std::int32_t* pos_h, const std::int32_t* pos_w, double theta) const override {
    kc::Rotary2dF32 a;
    a.q = q;
    a.k = k;
    a.row = i64(row);
    a.head_stride = i64(head_stride);
    a.tokens = i64(tokens);
    a.heads = i64(heads);
    a.head_dim = static_cast<int>(head_dim);
    a.pos_h = pos_h;
    a.pos_w = pos_w;
    a.theta = theta;
    return [=](void* stream) { kc::rotary_2d_f32(a, stream); };
  }

  Body gather_groups(const float* src, float* dst, const std::int32_t* index, std::size_t groups,
                     std::size_t group_floats) const override {
    return [=](void* stream) { kc::gather_groups_f32(src, dst, index, i64(groups), i64(group_floats), stream); };
  }

  Body scatter_groups(const float* src, float* dst, const std::int32_t* index, std::size_t groups,
                      std::size_t group_floats) const override {
    return [=](void* stream) { kc::scatter_groups_f32(src, dst, index, i64(groups), i64(group_floats), stream); };
  }

  Body copy(void* dst, const void* src, std::size_t bytes) const override {
    return [=](void* stream) { kc::copy_device(dst, src, bytes, stream); };
  }

  Body diff(const std::int32_t* cu, std::size_t segments, std::int32_t* lengths) const override {
    return [=](void* stream) { kc::cu_seqlens_diff(cu, static_cast<int>(segments), lengths, stream); };
  }

  Body attention(const AttentionCall& call) const override {
    return [call](void* stream) {
      const std::int64_t n = call.tokens * call.heads * call.stride;
      // The flash kernels read 16-bit q/k/v: round the fp32 activations to bf16 (the dtype vLLM runs
      // the encoder in), attend with fp32 accumulation, and widen the output back to fp32.
      kc::convert_from_f32(kc::DType::bf16, call.q, n, call.q16, stream);
      kc::convert_from_f32(kc::DType::bf16, call.k, n, call.k16, stream);
      kc::convert_from_f32(kc::DType::bf16, call.v, n, call.v16, stream);
      kc::AttentionTensors t;
      t.dtype = kc::DType::bf16;
      t.q = call.q16;
      t.k = call.k16;
      t.v = call.v16;
      t.out = call.out16;
      t.total_tokens = static_cast<std::int32_t>(call.tokens);
      t.num_heads = call.heads;
      t.head_dim = call.stride;
      t.scale = call.scale;
      // The mma.sync kernels: 3.6-3.9x the WMMA ones on an H200 and verified there against fp64
      // (docs/cuda.md); 64 queries per block, the work list's tile size (kTileRows).
      if (call.work_list) kc::flash_unpad_attention_mma(t, call.original_head_dim, call.lengths, call.count, stream, kTileRows);
      else kc::fused_varlen_attention_mma(t, call.lengths, call.count, stream, kTileRows);
      kc::convert_to_f32(kc::DType::bf16, call.out16, n, call.out, stream);
    };
  }

 private:
  static constexpr int kTileRows = Ops::kTileRows;
  std::unique_ptr<Blas> blas_;
  bool tf32_gemms_ = false;
};

}  // namespace

}  // namespace encbench::encoder::native

// The module's entry point (harness/device/cuda_module.hpp): the encoder's Ops owns the result.
extern "C" encbench::encoder::native::NativeKernels* encbench_cuda_native_kernels(bool on_cuda, bool tf32_gemms) {
  return new encbench::encoder::native::CudaKernels(on_cuda, tf32_gemms);
}
