#pragma once
// 8x8 and 4x4 fp32 transposes with 256/128-bit AVX intrinsics, for the GEMM packing of the AVX2
// and AVX-512 objects (included by each, compiled with its flags; internal linkage, see tasks.hpp).
#include <immintrin.h>

#include <cstddef>

namespace encbench::kernels::detail {
namespace {

// dst[d * ldd + j] = src[j * lds + d] for j, d < 8.
inline void transpose8x8(const float* src, std::size_t lds, float* dst, std::size_t ldd) {
  __m256 r[8], t[8];
  for (int j = 0; j < 8; ++j) r[j] = _mm256_loadu_ps(src + j * lds);
  for (int j = 0; j < 8; j += 2) {
    t[j] = _mm256_unpacklo_ps(r[j], r[j + 1]);
    t[j + 1] = _mm256_unpackhi_ps(r[j], r[j + 1]);
  }
  for (int j = 0; j < 8; j += 4) {
    r[j] = _mm256_shuffle_ps(t[j], t[j + 2], _MM_SHUFFLE(1, 0, 1, 0));
    r[j + 1] = _mm256_shuffle_ps(t[j], t[j + 2], _MM_SHUFFLE(3, 2, 3, 2));
    r[j + 2] = _mm256_shuffle_ps(t[j + 1], t[j + 3], _MM_SHUFFLE(1, 0, 1, 0));
    r[j + 3] = _mm256_shuffle_ps(t[j + 1], t[j + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  // r[0..3] hold columns 0,1,2,3 of rows 0-3 (low lane: d 0-3, high lane: d 4-7); r[4..7] rows 4-7.
  for (int q = 0; q < 4; ++q) {
    _mm256_storeu_ps(dst + q * ldd, _mm256_permute2f128_ps(r[q], r[q + 4], 0x20));
    _mm256_storeu_ps(dst + (q + 4) * ldd, _mm256_permute2f128_ps(r[q], r[q + 4], 0x31));
  }
}

// dst[d * ldd + j] = src[j * lds + d] for j, d < 4.
inline void transpose4x4(const float* src, std::size_t lds, float* dst, std::size_t ldd) {
  __m128 a = _mm_loadu_ps(src), b = _mm_loadu_ps(src + lds), c = _mm_loadu_ps(src + 2 * lds),
         d = _mm_loadu_ps(src + 3 * lds);
  _MM_TRANSPOSE4_PS(a, b, c, d);
  _mm_storeu_ps(dst, a);
  _mm_storeu_ps(dst + ldd, b);
  _mm_storeu_ps(dst + 2 * ldd, c);
  _mm_storeu_ps(dst + 3 * ldd, d);
}

}  // namespace
}  // namespace encbench::kernels::detail
