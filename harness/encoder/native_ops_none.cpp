// Native bodies in a build without the CUDA toolkit: no device can run one, so every factory
// returns an empty Body (a CUDA device is never created here; see native_ops_cuda.cpp).
#include "harness/encoder/native_ops.hpp"

namespace encbench::encoder::native {

struct Ops::Blas {};

Ops::Ops(bool on_cuda, bool enabled, bool tf32_gemms) { (void)on_cuda, (void)enabled, (void)tf32_gemms; }  // enabled_ stays false
Ops::~Ops() = default;
bool Ops::built() { return false; }

Body Ops::nothing() const { return {}; }
Body Ops::sequence(std::vector<Body>) const { return {}; }
Body Ops::gemm(const float*, const float*, const float*, float*, std::size_t, std::size_t, std::size_t) const {
  return {};
}
Body Ops::norm(const float*, const float*, const float*, float*, std::size_t, std::size_t, double) const { return {}; }
Body Ops::activation(NativeActivation, float*, std::size_t) const { return {}; }
Body Ops::silu_mul(const float*, float*, std::size_t, std::size_t) const { return {}; }
Body Ops::add(const float*, const float*, float*, std::size_t) const { return {}; }
Body Ops::copy_heads(const float*, std::size_t, std::size_t, std::size_t, float*, std::size_t, std::size_t,
                     std::size_t, std::size_t, std::size_t) const {
  return {};
}
Body Ops::rotary(float*, float*, std::size_t, std::size_t, std::size_t, std::size_t, std::size_t, const std::int32_t*,
                 const std::int32_t*, double) const {
  return {};
}
Body Ops::gather_groups(const float*, float*, const std::int32_t*, std::size_t, std::size_t) const { return {}; }
Body Ops::scatter_groups(const float*, float*, const std::int32_t*, std::size_t, std::size_t) const { return {}; }
Body Ops::copy(void*, const void*, std::size_t) const { return {}; }
Body Ops::diff(const std::int32_t*, std::size_t, std::int32_t*) const { return {}; }
Body Ops::attention(const AttentionCall&) const { return {}; }
std::vector<std::int32_t> Ops::unpad_work_list(const std::vector<std::int32_t>&) { return {}; }

}  // namespace encbench::encoder::native
