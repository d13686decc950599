// Ops forwards to the CUDA module's kernels (native_ops_cuda.cpp) when it has them; otherwise
// every factory returns an empty Body. The module is opened only for an encoder on a CUDA device
// or one asked to build bodies (EncoderConfig::native_bodies).
#include "harness/encoder/native_ops.hpp"

#include <utility>

#include "harness/device/cuda_module.hpp"
#include "kernels/cuda/tile_plan.hpp"

namespace encbench::encoder::native {

static_assert(Ops::kTileRows == kernels::cuda::kAttentionBlockM, "the work list's tile size is the kernel's");

namespace {
using MakeKernels = NativeKernels* (*)(bool on_cuda, bool tf32_gemms);
}  // namespace

Ops::Ops(bool on_cuda, bool enabled, bool tf32_gemms) {
  if ((!on_cuda && !enabled) || !built()) return;
  const auto make = reinterpret_cast<MakeKernels>(device::cuda_module_symbol("encbench_cuda_native_kernels"));
  kernels_.reset(make(on_cuda, tf32_gemms));
}
Ops::~Ops() = default;

bool Ops::built() { return device::cuda_module_built(); }

Body Ops::nothing() const { return kernels_ ? kernels_->nothing() : Body{}; }
Body Ops::sequence(std::vector<Body> parts) const { return kernels_ ? kernels_->sequence(std::move(parts)) : Body{}; }
Body Ops::gemm(const float* x, const float* w, const float* bias, float* out, std::size_t m, std::size_t k,
               std::size_t n) const {
  return kernels_ ? kernels_->gemm(x, w, bias, out, m, k, n) : Body{};
}
Body Ops::norm(const float* x, const float* gamma, const float* beta, float* out, std::size_t rows, std::size_t dim,
               double eps) const {
  return kernels_ ? kernels_->norm(x, gamma, beta, out, rows, dim, eps) : Body{};
}
Body Ops::activation(NativeActivation act, float* x, std::size_t count) const {
  return kernels_ ? kernels_->activation(act, x, count) : Body{};
}
Body Ops::silu_mul(const float* gate_up, float* out, std::size_t rows, std::size_t inner) const {
  return kernels_ ? kernels_->silu_mul(gate_up, out, rows, inner) : Body{};
}
Body Ops::add(const float* x, const float* y, float* out, std::size_t count) const {
  return kernels_ ? kernels_->add(x, y, out, count) : Body{};
}
Body Ops::copy_heads(const float* src, std::size_t src_row, std::size_t src_off, std::size_t src_head, float* dst,
                     std::size_t dst_row, std::size_t dst_head, std::size_t tokens, std::size_t heads,
                     std::size_t d) const {
  return kernels_ ? kernels_->copy_heads(src, src_row, src_off, src_head, dst, dst_row, dst_head, tokens, heads, d)
                  : Body{};
}
Body Ops::rotary(float* q, float* k, std::size_t row, std::size_t head_stride, std::size_t tokens, std::size_t heads,
                 std::size_t head_dim, const std::int32_t* pos_h, const std::int32_t* pos_w, double theta) const {
  return kernels_ ? kernels_->rotary(q, k, row, head_stride, tokens, heads, head_dim, pos_h, pos_w, theta) : Body{};
}
Body Ops::gather_groups(const float* src, float* dst, const std::int32_t* index, std::size_t groups,
                        std::size_t group_floats) const {
  return kernels_ ? kernels_->gather_groups(src, dst, index, groups, group_floats) : Body{};
}
Body Ops::scatter_groups(const float* src, float* dst, const std::int32_t* index, std::size_t groups,
                         std::size_t group_floats) const {
  return kernels_ ? kernels_->scatter_groups(src, dst, index, groups, group_floats) : Body{};
}
Body Ops::copy(void* dst, const void* src, std::size_t bytes) const {
  return kernels_ ? kernels_->copy(dst, src, bytes) : Body{};
}
Body Ops::diff(const std::int32_t* cu, std::size_t segments, std::int32_t* lengths) const {
  return kernels_ ? kernels_->diff(cu, segments, lengths) : Body{};
}
Body Ops::attention(const AttentionCall& call) const { return kernels_ ? kernels_->attention(call) : Body{}; }

std::vector<std::int32_t> Ops::unpad_work_list(const std::vector<std::int32_t>& lengths) {
  return kernels::cuda::build_unpad_work_list(lengths.data(), static_cast<int>(lengths.size()), kTileRows);
}

}  // namespace encbench::encoder::native
