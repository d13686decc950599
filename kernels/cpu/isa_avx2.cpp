// AVX2 + FMA path. Compiled with -mavx2 -mfma (this file only); entered only after CPUID says
// the CPU has them (kernels/isa.cpp).
#include <immintrin.h>

#include "kernels/cpu/simd_impl.hpp"
#include "kernels/cpu/transpose_avx.hpp"

namespace encbench::kernels::detail {
namespace {

struct VecAvx2 {
  using reg = __m256;
  static constexpr int W = 8;
  // Q.K^T 4 x 3 and P.V 4 x 3: 12 accumulators + 3 vectors + 1 broadcast of the 16 ymm, 7 loads
  // per 12 FMAs (4 x 2 and 2 x 4 were 6 per 8 and ran at 0.65 of the FMA peak at d80).
  static constexpr int QK_R = 4, QK_KC = 3;
  // GEMM 6 x 16: 12 accumulators + 2 B vectors + 1 broadcast of the 16 ymm (BLIS Haswell/Zen).
  static constexpr bool kHasTranspose = true;
  static void transpose8x8(const float* s, std::size_t ls, float* d, std::size_t ld) {
    detail::transpose8x8(s, ls, d, ld);
  }
  static void transpose4x4(const float* s, std::size_t ls, float* d, std::size_t ld) {
    detail::transpose4x4(s, ls, d, ld);
  }
  static constexpr int GEMM_MR = 6, GEMM_NRV = 2;
  static constexpr int ACC = 12, PV_NCMAX = 3;
  static constexpr int SM_ROWS = 4;
  static constexpr int FMA_ACC = 12;
  static reg zero() { return _mm256_setzero_ps(); }
  static reg load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, reg v) { _mm256_storeu_ps(p, v); }
  static reg set1(float x) { return _mm256_set1_ps(x); }
  static reg fma(reg a, reg b, reg c) { return _mm256_fmadd_ps(a, b, c); }
  static reg mul(reg a, reg b) { return _mm256_mul_ps(a, b); }
  static reg add(reg a, reg b) { return _mm256_add_ps(a, b); }
  static reg max(reg a, reg b) { return _mm256_max_ps(a, b); }
  static float reduce_max(reg v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
    return _mm_cvtss_f32(m);
  }
  static float reduce_add(reg v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
  }
  static float first(reg v) { return _mm256_cvtss_f32(v); }
  // 2^x for x <= 0, clamped at -125 so the result is never denormal. Rounding by adding
  // 1.5 * 2^23 + 127: the sum's low mantissa bits are n + 127 (in [2, 127]), shifted into the
  // exponent field they are 2^n; 4 instructions where round + cvt + add + shift took 5.
  static reg exp2_nonpositive(reg x) {
    const reg shifter = _mm256_set1_ps(12582912.0f + 127.0f);
    x = _mm256_max_ps(x, _mm256_set1_ps(-125.0f));
    const reg t = _mm256_add_ps(x, shifter);
    const reg f = _mm256_sub_ps(x, _mm256_sub_ps(t, shifter));
    const reg scale = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_castps_si256(t), 23));
    return _mm256_mul_ps(exp2_poly<VecAvx2>(f), scale);
  }
};

}  // namespace

const IsaOps& isa_ops_avx2() { return Impl<VecAvx2>::ops(); }

}  // namespace encbench::kernels::detail
