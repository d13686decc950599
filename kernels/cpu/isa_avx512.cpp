// AVX-512 path. Compiled with -mavx512f -mavx512vl -mavx512dq -mfma (this file only); entered only
// after CPUID says the CPU has them (kernels/isa.cpp).
// GCC 12 warns about its own _mm512_undefined_ps() (used inside reduce/extract intrinsics) once
// they are inlined here; the warning is about the header, not this code.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "kernels/cpu/simd_impl.hpp"
#include "kernels/cpu/transpose_avx.hpp"

namespace encbench::kernels::detail {
namespace {

struct VecAvx512 {
  using reg = __m512;
  static constexpr int W = 16;
  static constexpr int QK_R = 4, QK_KC = 4;  // 16 accumulators + 4 K vectors + 1 broadcast
  // GEMM 12 x 32: 24 accumulators + 2 B vectors + 1 broadcast of the 32 zmm (14 loads per 24 FMAs).
  static constexpr bool kHasTranspose = true;
  static void transpose8x8(const float* s, std::size_t ls, float* d, std::size_t ld) {
    detail::transpose8x8(s, ls, d, ld);
  }
  static void transpose4x4(const float* s, std::size_t ls, float* d, std::size_t ld) {
    detail::transpose4x4(s, ls, d, ld);
  }
  static constexpr int GEMM_MR = 12, GEMM_NRV = 2;
  // P.V passes of at most 5 zmm: d128 runs as 5 + 3 (4 and 8 rows, 20 and 24 accumulators), which
  // measured ~5% faster than one 8-zmm pass of 2 rows (fewer V loads per FMA).
  static constexpr int ACC = 24, PV_NCMAX = 5;
  static constexpr int SM_ROWS = 4;
  static constexpr int FMA_ACC = 16;         // 2 FMA pipes x latency 4, doubled for slack
  static reg zero() { return _mm512_setzero_ps(); }
  static reg load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, reg v) { _mm512_storeu_ps(p, v); }
  static reg set1(float x) { return _mm512_set1_ps(x); }
  static reg fma(reg a, reg b, reg c) { return _mm512_fmadd_ps(a, b, c); }
  static reg mul(reg a, reg b) { return _mm512_mul_ps(a, b); }
  static reg add(reg a, reg b) { return _mm512_add_ps(a, b); }
  static reg max(reg a, reg b) { return _mm512_max_ps(a, b); }
  static float reduce_max(reg v) { return _mm512_reduce_max_ps(v); }
  static float reduce_add(reg v) { return _mm512_reduce_add_ps(v); }
  static float first(reg v) { return _mm512_cvtss_f32(v); }
  // 2^x for x <= 0, clamped at -125 so the result is never denormal (slow on x86).
  static reg exp2_nonpositive(reg x) {
    x = _mm512_max_ps(x, _mm512_set1_ps(-125.0f));
    const reg n = _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const reg p = exp2_poly<VecAvx512>(_mm512_sub_ps(x, n));
    return _mm512_scalef_ps(p, n);
  }
};

}  // namespace

const IsaOps& isa_ops_avx512() { return Impl<VecAvx512>::ops(); }

}  // namespace encbench::kernels::detail
