// Portable path: plain C++ over 8-lane arrays; the compiler vectorises what it can for the
// baseline target. Always available; the oracle for the SIMD paths is still the fp64 reference.
#include "kernels/cpu/simd_impl.hpp"

namespace encbench::kernels::detail {
namespace {

struct VecPortable {
  struct reg {
    float v[8];
  };
  static constexpr int W = 8;
  static constexpr int QK_R = 4, QK_KC = 1;
  static constexpr bool kHasTranspose = false;
  static void transpose8x8(const float*, std::size_t, float*, std::size_t) {}
  static void transpose4x4(const float*, std::size_t, float*, std::size_t) {}
  static constexpr int GEMM_MR = 4, GEMM_NRV = 2;
  static constexpr int ACC = 8, PV_NCMAX = 2;
  static constexpr int SM_ROWS = 1;
  static constexpr int FMA_ACC = 8;
  static reg zero() { return set1(0.0f); }
  static reg load(const float* p) {
    reg r;
    for (int i = 0; i < W; ++i) r.v[i] = p[i];
    return r;
  }
  static void store(float* p, reg a) {
    for (int i = 0; i < W; ++i) p[i] = a.v[i];
  }
  static reg set1(float x) {
    reg r;
    for (int i = 0; i < W; ++i) r.v[i] = x;
    return r;
  }
  static reg fma(reg a, reg b, reg c) {
    for (int i = 0; i < W; ++i) c.v[i] = a.v[i] * b.v[i] + c.v[i];
    return c;
  }
  static reg mul(reg a, reg b) {
    for (int i = 0; i < W; ++i) a.v[i] *= b.v[i];
    return a;
  }
  static reg add(reg a, reg b) {
    for (int i = 0; i < W; ++i) a.v[i] += b.v[i];
    return a;
  }
  static reg max(reg a, reg b) {
    for (int i = 0; i < W; ++i) a.v[i] = a.v[i] > b.v[i] ? a.v[i] : b.v[i];
    return a;
  }
  static float reduce_max(reg a) {
    float m = a.v[0];
    for (int i = 1; i < W; ++i) m = a.v[i] > m ? a.v[i] : m;
    return m;
  }
  static float reduce_add(reg a) {
    float s = 0.0f;
    for (int i = 0; i < W; ++i) s += a.v[i];
    return s;
  }
  static float first(reg a) { return a.v[0]; }
  static reg exp2_nonpositive(reg x) {
    reg n, f;
    for (int i = 0; i < W; ++i) {
      float xi = x.v[i] < -125.0f ? -125.0f : x.v[i];
      n.v[i] = __builtin_nearbyintf(xi);
      f.v[i] = xi - n.v[i];
    }
    reg p = exp2_poly<VecPortable>(f);
    for (int i = 0; i < W; ++i) p.v[i] = __builtin_ldexpf(p.v[i], static_cast<int>(n.v[i]));
    return p;
  }
};

}  // namespace

const IsaOps& isa_ops_portable() { return Impl<VecPortable>::ops(); }

}  // namespace encbench::kernels::detail
