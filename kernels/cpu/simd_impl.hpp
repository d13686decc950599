#pragma once
// The compute cores of every ISA path, written once over a vector-traits type V and instantiated
// by each isa_*.cpp (compiled with that ISA's -m flags). Everything here has internal linkage
// (anonymous namespace) and uses no standard-library code, see tasks.hpp for why.
//
// V provides: reg, W (fp32 lanes), zero/load/store/set1/fma/mul/add/max, reduce_max/reduce_add,
// first (lane 0), exp2_nonpositive (2^x for x <= 0, the only arguments the online softmax has:
// x - max; clamped below so results never go denormal), and the register budget:
//   QK_R x QK_KC  rows x vectors of the Q.K^T micro-tile,
//   GEMM_MR x GEMM_NRV  rows x vectors of the GEMM micro-tile (packed A and B),
//   ACC           accumulator registers for the P.V micro-tile (rows chosen per column count),
//   PV_NCMAX      the most output vectors one P.V pass keeps in registers,
//   FMA_ACC       independent accumulators of the peak loop,
//   SM_ROWS       rows the online softmax processes together (independent dependency chains).
#include <cstddef>
#include <cstdint>

#include "kernels/cpu/tasks.hpp"

namespace encbench::kernels::detail {
namespace {

constexpr float kNegInf = -__builtin_inff();

// 2^f for f in [-0.5, 0.5]: degree-5 polynomial fitted for minimax relative error (Lawson
// iteration), max relative error 1.7e-7 evaluated in fp32 (~1.4 ulp). The degree-7 Taylor series
// it replaces (6.5e-8) cost two more FMAs per vector in the softmax, ~2 % of attention's time.
template <class V>
inline typename V::reg exp2_poly(typename V::reg f) {
  auto p = V::set1(1.3264727080e-03f);
  p = V::fma(p, f, V::set1(9.6715128622e-03f));
  p = V::fma(p, f, V::set1(5.5507337456e-02f));
  p = V::fma(p, f, V::set1(2.4022242082e-01f));
  p = V::fma(p, f, V::set1(6.9314697760e-01f));
  p = V::fma(p, f, V::set1(1.0f));
  return p;
}

constexpr int imin(int a, int b) { return a < b ? a : b; }
constexpr int imax(int a, int b) { return a > b ? a : b; }

// Rows of the P.V micro-tile for nc output vectors: as many as the accumulator budget allows
// (at most 8); the row group's remainder runs as one shorter tile (AVX2 at 2 vectors: 6 + 6 + 4
// rows, 12 accumulators instead of 4 x 2 = 8).
constexpr int pv_rows_for(int acc_budget, int nc) {
  const int r = acc_budget / nc;
  return r < 1 ? 1 : imin(8, imin(r, kAttnRowGroup));
}

template <class V>
struct Impl {
  using reg = typename V::reg;
  static constexpr int W = V::W;
  static constexpr int kKeyChunk = V::QK_KC * W;  // keys per K^T panel / Q.K^T micro-tile
  static_assert(kAttnRowGroup % V::QK_R == 0, "row group must hold whole Q.K^T tiles");
  static_assert(kKeyPad % W == 0, "key padding must hold whole vectors");

  // c[r][j] (+)= sum_d a[r*lda + d] * bt[d*ldb + j] for r < R, j < KC*W.
  template <int R, int KC>
  static inline void nt_tile(const float* a, std::size_t lda, const float* bt, std::size_t ldb,
                             int kdim, float* c, std::size_t ldc) {
    reg acc[R][KC];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
      for (int k = 0; k < KC; ++k) acc[r][k] = V::zero();
    for (int d = 0; d < kdim; ++d) {
      const float* brow = bt + static_cast<std::size_t>(d) * ldb;
      reg b[KC];
#pragma GCC unroll 8
      for (int k = 0; k < KC; ++k) b[k] = V::load(brow + k * W);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        const reg av = V::set1(a[r * lda + d]);
#pragma GCC unroll 8
        for (int k = 0; k < KC; ++k) acc[r][k] = V::fma(av, b[k], acc[r][k]);
      }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
      for (int k = 0; k < KC; ++k) V::store(c + r * ldc + k * W, acc[r][k]);
  }

  // Runtime column count (1..QK_KC vectors) -> compile-time tile.
  template <int R>
  static inline void nt_tile_kc(int kc, const float* a, std::size_t lda, const float* bt,
                                std::size_t ldb, int kdim, float* c, std::size_t ldc) {
    if constexpr (V::QK_KC >= 4)
      if (kc == 4) return nt_tile<R, 4>(a, lda, bt, ldb, kdim, c, ldc);
    if constexpr (V::QK_KC >= 3)
      if (kc == 3) return nt_tile<R, 3>(a, lda, bt, ldb, kdim, c, ldc);
    if constexpr (V::QK_KC >= 2)
      if (kc == 2) return nt_tile<R, 2>(a, lda, bt, ldb, kdim, c, ldc);
    nt_tile<R, 1>(a, lda, bt, ldb, kdim, c, ldc);
  }

  // o[r][c0 + n*W ...] += sum_{key in [k0,k1)} p[r*ldp + key] * v[key*ldv + n*W ...].
  template <int R, int NC>
  static inline void pv_tile(const float* p, std::size_t ldp, int k0, int k1, const float* v,
                             std::size_t ldv, float* o, std::size_t ldo) {
    reg acc[R][NC];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
      for (int n = 0; n < NC; ++n) acc[r][n] = V::load(o + r * ldo + n * W);
    for (int key = k0; key < k1; ++key) {
      const float* vrow = v + static_cast<std::size_t>(key) * ldv;
      reg vv[NC];
#pragma GCC unroll 8
      for (int n = 0; n < NC; ++n) vv[n] = V::load(vrow + n * W);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        const reg pr = V::set1(p[r * ldp + key]);
#pragma GCC unroll 8
        for (int n = 0; n < NC; ++n) acc[r][n] = V::fma(pr, vv[n], acc[r][n]);
      }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
      for (int n = 0; n < NC; ++n) V::store(o + r * ldo + n * W, acc[r][n]);
  }

  // Output vectors of P.V pass `pass` for rows of `nvec` vectors: passes of PV_NCMAX, except
  // that a last pass under half of PV_NCMAX (AVX2 at d80: 3+3+3+1, the 1-vector pass bound by its
  // broadcasts) is avoided by splitting evenly (3+3+2+2).
  static constexpr int pv_pass_vectors(int nvec, int pass) {
    const int passes = (nvec + V::PV_NCMAX - 1) / V::PV_NCMAX;
    const int last = nvec - (passes - 1) * V::PV_NCMAX;
    if (2 * last >= V::PV_NCMAX) return imin(V::PV_NCMAX, nvec - pass * V::PV_NCMAX);
    return nvec / passes + (pass < nvec % passes ? 1 : 0);
  }

  // A whole row group (kAttnRowGroup rows) for `nc` output vectors starting at column c0.
  template <int NC>
  static inline void pv_group_nc(const float* p, std::size_t ldp, int k0, int k1, const float* v,
                                 std::size_t ldv, float* o, std::size_t ldo) {
    constexpr int R = pv_rows_for(V::ACC, NC);
    constexpr int full = kAttnRowGroup / R * R, tail = kAttnRowGroup - full;
    for (int r = 0; r < full; r += R)
      pv_tile<R, NC>(p + r * ldp, ldp, k0, k1, v, ldv, o + r * ldo, ldo);
    if constexpr (tail > 0)
      pv_tile<tail, NC>(p + full * ldp, ldp, k0, k1, v, ldv, o + full * ldo, ldo);
  }

  static inline void pv_group(int nc, const float* p, std::size_t ldp, int k0, int k1,
                              const float* v, std::size_t ldv, float* o, std::size_t ldo) {
    if constexpr (V::PV_NCMAX >= 8)
      if (nc == 8) return pv_group_nc<8>(p, ldp, k0, k1, v, ldv, o, ldo);
    if constexpr (V::PV_NCMAX >= 7)
      if (nc == 7) return pv_group_nc<7>(p, ldp, k0, k1, v, ldv, o, ldo);
    if constexpr (V::PV_NCMAX >= 6)
      if (nc == 6) return pv_group_nc<6>(p, ldp, k0, k1, v, ldv, o, ldo);
    if constexpr (V::PV_NCMAX >= 5)
      if (nc == 5) return pv_group_nc<5>(p, ldp, k0, k1, v, ldv, o, ldo);
    if constexpr (V::PV_NCMAX >= 4)
      if (nc == 4) return pv_group_nc<4>(p, ldp, k0, k1, v, ldv, o, ldo);
    if constexpr (V::PV_NCMAX >= 3)
      if (nc == 3) return pv_group_nc<3>(p, ldp, k0, k1, v, ldv, o, ldo);
    if constexpr (V::PV_NCMAX >= 2)
      if (nc == 2) return pv_group_nc<2>(p, ldp, k0, k1, v, ldv, o, ldo);
    pv_group_nc<1>(p, ldp, k0, k1, v, ldv, o, ldo);
  }

  // Online-softmax update of SM_ROWS rows: scores -> probabilities (in place, zero past n),
  // running max/sum updated, output rows rescaled when the max grew. The rows go together so
  // their serial chains (the max and sum accumulations and reductions, the scalar alpha) overlap
  // instead of running one row after another.
  static inline void softmax_rows(float* s, int lds, int n, int n_pad, float* row_max,
                                  float* row_sum, float* o, int dp) {
    constexpr int R = V::SM_ROWS;
    const int nv = n / W * W;
    reg vmax[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) vmax[r] = V::set1(kNegInf);
    for (int j = 0; j < nv; j += W)
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) vmax[r] = V::max(vmax[r], V::load(s + r * lds + j));
    float new_max[R], alpha[R];
    reg neg_max[R], vsum[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      float block_max = V::reduce_max(vmax[r]);
      for (int j = nv; j < n; ++j)
        block_max = s[r * lds + j] > block_max ? s[r * lds + j] : block_max;
      new_max[r] = row_max[r] > block_max ? row_max[r] : block_max;
      // exp2(-inf) would be fine mathematically, but -inf - -inf is NaN: the first block has
      // nothing to rescale, so alpha = 0 there.
      alpha[r] = row_max[r] == kNegInf
                     ? 0.0f
                     : V::first(V::exp2_nonpositive(V::set1(row_max[r] - new_max[r])));
      neg_max[r] = V::set1(-new_max[r]);
      vsum[r] = V::zero();
    }
    for (int j = 0; j < nv; j += W)
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        const reg p = V::exp2_nonpositive(V::add(V::load(s + r * lds + j), neg_max[r]));
        V::store(s + r * lds + j, p);
        vsum[r] = V::add(vsum[r], p);
      }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      float* srow = s + r * lds;
      float sum = V::reduce_add(vsum[r]);
      for (int j = nv; j < n; ++j) {
        srow[j] = V::first(V::exp2_nonpositive(V::set1(srow[j] - new_max[r])));
        sum += srow[j];
      }
      for (int j = n; j < n_pad; ++j) srow[j] = 0.0f;  // padded keys must contribute nothing
      // First block (row_max == -inf): the output row is still zero, nothing to rescale.
      if (alpha[r] != 1.0f && row_max[r] != kNegInf) {
        float* orow = o + static_cast<std::size_t>(r) * dp;
        const reg va = V::set1(alpha[r]);
        for (int c = 0; c < dp; c += W) V::store(orow + c, V::mul(V::load(orow + c), va));
      }
      row_sum[r] = row_sum[r] * alpha[r] + sum;
      row_max[r] = new_max[r];
    }
  }

  static inline void softmax_group(float* scores, int lds, int n, int n_pad, float* row_max,
                                   float* row_sum, float* o, int dp) {
    static_assert(kAttnRowGroup % V::SM_ROWS == 0, "row group must hold whole softmax row sets");
    for (int i = 0; i < kAttnRowGroup; i += V::SM_ROWS)
      softmax_rows(scores + static_cast<std::size_t>(i) * lds, lds, n, n_pad, row_max + i,
                   row_sum + i, o + static_cast<std::size_t>(i) * dp, dp);
  }

  static void attend_block(const AttnBlockTask& t, const AttnScratch& sc) {
    const int D = t.head_dim, Dp = t.head_dim_padded, G = kAttnRowGroup;
    const int rows_padded = (t.rows + G - 1) / G * G;
    // The block's Q rows (and, for a one-KV-block item, the output rows written soon after) are
    // strided by all heads' width: ask for all their lines at once so the misses overlap (64-token
    // windows start cold; 2 % less CPU time there, in-process A/B).
    const bool short_item = t.seq_len <= t.block_kv;
    for (int i = 0; i < t.rows; ++i)
      for (int d = 0; d < D; d += 16) {
        __builtin_prefetch(t.q + static_cast<std::size_t>(i) * t.q_row_stride + d, 0, 3);
        if (short_item)
          __builtin_prefetch(t.out + static_cast<std::size_t>(i) * t.out_row_stride + d, 1, 2);
      }
    // Q tile, pre-scaled by scale*log2(e) so scores come out in base 2; padded rows are zero.
    for (int i = 0; i < rows_padded; ++i) {
      float* dst = sc.q_tile + static_cast<std::size_t>(i) * D;
      if (i < t.rows) {
        const float* src = t.q + static_cast<std::size_t>(i) * t.q_row_stride;
        for (int d = 0; d < D; ++d) dst[d] = src[d] * t.scale_log2;
      } else {
        for (int d = 0; d < D; ++d) dst[d] = 0.0f;
      }
      float* o = sc.o_tile + static_cast<std::size_t>(i) * Dp;
      for (int c = 0; c < Dp; c += W) V::store(o + c, V::zero());
      sc.row_max[i] = kNegInf;
      sc.row_sum[i] = 0.0f;
    }

    const int lds = t.block_kv;
    constexpr int kPvKeyChunk = 64;  // V rows kept in L1 across the row sub-tiles
    for (int kb = 0; kb < t.seq_len; kb += t.block_kv) {
      const int n = imin(t.block_kv, t.seq_len - kb);
      const int n_pad = (n + kKeyPad - 1) / kKeyPad * kKeyPad;
      const float* kt = t.k_packed + static_cast<std::size_t>(kb) * D;
      const float* vp = t.v_packed + static_cast<std::size_t>(kb) * Dp;
      for (int g = 0; g < rows_padded; g += G) {
        const float* qg = sc.q_tile + static_cast<std::size_t>(g) * D;
        float* og = sc.o_tile + static_cast<std::size_t>(g) * Dp;
        // S = Q K^T for this row group, one packed K^T panel (kKeyChunk keys) at a time.
        for (int c = 0; c < n_pad; c += kKeyChunk) {
          const int width = imin(kKeyChunk, n_pad - c);
          const float* panel = kt + static_cast<std::size_t>(c) * D;
          for (int r = 0; r < G; r += V::QK_R)
            nt_tile_kc<V::QK_R>(width / W, qg + static_cast<std::size_t>(r) * D, D, panel, width,
                                D, sc.scores + static_cast<std::size_t>(r) * lds + c, lds);
        }
        softmax_group(sc.scores, lds, n, n_pad, sc.row_max + g, sc.row_sum + g, og, Dp);
        // O += P V.
        for (int k0 = 0; k0 < n_pad; k0 += kPvKeyChunk) {
          const int k1 = imin(n_pad, k0 + kPvKeyChunk);
          for (int c0 = 0, pass = 0; c0 < Dp; c0 += pv_pass_vectors(Dp / W, pass++) * W)
            pv_group(pv_pass_vectors(Dp / W, pass), sc.scores, lds, k0, k1, vp + c0, Dp, og + c0,
                     Dp);
        }
      }
    }
    // Normalise; a row whose sum is 0 (cannot happen without masking) is written as zeros.
    for (int i = 0; i < t.rows; ++i) {
      const float l = sc.row_sum[i];
      const float inv = l > 0.0f ? 1.0f / l : 0.0f;
      const float* o = sc.o_tile + static_cast<std::size_t>(i) * Dp;
      float* dst = t.out + static_cast<std::size_t>(i) * t.out_row_stride;
      for (int d = 0; d < D; ++d) dst[d] = o[d] * inv;
    }
  }

  // GEMM register tile: MR rows (broadcast from packed A) x NRV vectors (loaded from packed B).
  static constexpr int MR = V::GEMM_MR, NRV = V::GEMM_NRV, NR = NRV * W;

  // acc = A_panel[kc][MR] x B_panel[kc][NR]; then C = acc (+ bias) on the first k block, else
  // C += acc. `c` may be a full-tile scratch (edges): the caller copies the valid part.
  static inline void gemm_micro(int kc, const float* a, const float* b, float* c, std::size_t ldc,
                                const float* bias, bool first) {
    reg acc[MR][NRV];
    // The C tile is read (or written) after kc steps: ask for its lines now so the strided rows
    // (ldc apart) arrive during the FMAs instead of stalling the stores (BLIS does the same).
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) {
      __builtin_prefetch(c + r * ldc, 1, 3);
      __builtin_prefetch(c + r * ldc + NR - 1, 1, 3);
    }
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
      for (int v = 0; v < NRV; ++v) acc[r][v] = V::zero();
#pragma GCC unroll 4
    for (int d = 0; d < kc; ++d) {
      reg bv[NRV];
#pragma GCC unroll 4
      for (int v = 0; v < NRV; ++v) bv[v] = V::load(b + d * NR + v * W);
#pragma GCC unroll 16
      for (int r = 0; r < MR; ++r) {
        const reg av = V::set1(a[d * MR + r]);
#pragma GCC unroll 4
        for (int v = 0; v < NRV; ++v) acc[r][v] = V::fma(av, bv[v], acc[r][v]);
      }
    }
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
      for (int v = 0; v < NRV; ++v) {
        float* dst = c + r * ldc + v * W;
        if (!first) V::store(dst, V::add(acc[r][v], V::load(dst)));
        else if (bias) V::store(dst, V::add(acc[r][v], V::load(bias + v * W)));
        else V::store(dst, acc[r][v]);
      }
  }

  // GEMM packing: dst[d * width + j] = src[j * lds + d] for j < rows, d < kc; rows past `rows`
  // (up to width) are zero. The transposes go 8 (then 4) rows x 8 (4) columns at a time where
  // the ISA provides them (V::transpose8x8 / transpose4x4), scalar at the edges.
  static void pack_transposed(const float* src, std::size_t lds, int rows, int kc, int width,
                              float* dst) {
    int j = 0;
    if constexpr (V::kHasTranspose) {
      for (; j + 8 <= rows; j += 8) {
        int d = 0;
        for (; d + 8 <= kc; d += 8)
          V::transpose8x8(src + j * lds + d, lds, dst + d * width + j, width);
        for (; d < kc; ++d)
          for (int jj = j; jj < j + 8; ++jj) dst[d * width + jj] = src[jj * lds + d];
      }
      for (; j + 4 <= rows; j += 4) {
        int d = 0;
        for (; d + 4 <= kc; d += 4)
          V::transpose4x4(src + j * lds + d, lds, dst + d * width + j, width);
        for (; d < kc; ++d)
          for (int jj = j; jj < j + 4; ++jj) dst[d * width + jj] = src[jj * lds + d];
      }
    }
    for (int d = 0; d < kc; ++d) {
      float* out = dst + static_cast<std::size_t>(d) * width;
      for (int jj = j; jj < width; ++jj) out[jj] = jj < rows ? src[jj * lds + d] : 0.0f;
    }
  }

  // A[rows, kc] (row stride lda) as panels of MR rows, [kc][MR] each.
  static void gemm_pack_a(const float* a, std::size_t lda, int rows, int kc, float* dst) {
    for (int i0 = 0; i0 < rows; i0 += MR)
      pack_transposed(a + i0 * lda, lda, imin(MR, rows - i0), kc, MR,
                      dst + static_cast<std::size_t>(i0) * kc);
  }

  // W[cols, kc] (row stride ldw) as one panel [kc][NR] (W^T, zero columns past cols).
  static void gemm_pack_b(const float* w, std::size_t ldw, int cols, int kc, float* dst) {
    pack_transposed(w, ldw, cols, kc, NR, dst);
  }

  // The macro-kernel: every MR x NR tile of the block. Columns go in sub-blocks of `nb` (a
  // multiple of NR); within one, each A panel (MR x kc) is used against every B micro-panel of
  // the sub-block before the next. nb = NR is the classic order: one B micro-panel stays in L1
  // while the A panels (the packed A block, sized for L2) stream past it. That needs the
  // kc x NR micro-panel to fit L1: 384 x 32 floats (AVX-512) = 48 KiB does not, on a 32 or
  // 48 KiB L1. A wider nb turns the order round: the A panel (18 KiB at 12 x 384) stays in L1
  // and the sub-block's B micro-panels (kc x nb, sized for L2) stream past it.
  static void gemm_block(const GemmBlockTask& t) {
    const int nb = t.nb > 0 ? imax(NR, t.nb / NR * NR) : NR;
    for (int jb = 0; jb < t.nc; jb += nb) {
      const int jb_end = imin(t.nc, jb + nb);
      for (int i0 = 0; i0 < t.mc; i0 += MR) {
        const int rows = imin(MR, t.mc - i0);
        const float* ap = t.a_packed + static_cast<std::size_t>(i0) * t.kc;
        for (int j0 = jb; j0 < jb_end; j0 += NR)
          gemm_tile(t, ap, rows, i0, j0);
      }
    }
  }

  // One MR x NR tile of the block at (i0, j0), `rows` of it valid.
  static inline void gemm_tile(const GemmBlockTask& t, const float* ap, int rows, int i0, int j0) {
    alignas(64) float edge[MR * NR];
    alignas(64) float edge_bias[NR];
    const int cols = imin(NR, t.nc - j0);
    const float* bp = t.b_packed + static_cast<std::size_t>(j0) * t.kc;
    const float* bias = t.bias ? t.bias + j0 : nullptr;
    if (bias && cols < NR) {  // never read past the caller's bias array
      for (int j = 0; j < NR; ++j) edge_bias[j] = j < cols ? bias[j] : 0.0f;
      bias = edge_bias;
    }
    float* c = t.c + static_cast<std::size_t>(i0) * t.ldc + j0;
    if (rows == MR && cols == NR) {
      gemm_micro(t.kc, ap, bp, c, t.ldc, bias, t.first);
      return;
    }
    // Edge tile: computed whole into scratch (the packed operands are zero-padded), then the
    // valid part is stored or added.
    gemm_micro(t.kc, ap, bp, edge, NR, t.first ? bias : nullptr, true);
    for (int r = 0; r < rows; ++r)
      for (int j = 0; j < cols; ++j) {
        float* dst = c + static_cast<std::size_t>(r) * t.ldc + j;
        *dst = t.first ? edge[r * NR + j] : *dst + edge[r * NR + j];
      }
  }

  static float fma_loop(std::uint64_t iterations) {
    constexpr int N = V::FMA_ACC;
    reg acc[N];
#pragma GCC unroll 16
    for (int i = 0; i < N; ++i) acc[i] = V::set1(1.0f + 0.001f * static_cast<float>(i));
    const reg mul = V::set1(0.999999f);
    const reg add = V::set1(1e-6f);
    for (std::uint64_t it = 0; it < iterations; ++it) {
#pragma GCC unroll 16
      for (int i = 0; i < N; ++i) acc[i] = V::fma(acc[i], mul, add);
    }
    reg total = acc[0];
#pragma GCC unroll 16
    for (int i = 1; i < N; ++i) total = V::add(total, acc[i]);
    return V::reduce_add(total);
  }

  static constexpr double fma_flops_per_iteration() { return 2.0 * W * V::FMA_ACC; }

  static const IsaOps& ops() {
    static constexpr IsaOps table{&attend_block,    &gemm_block, &gemm_pack_a,
                                  &pack_transposed, &gemm_pack_b, MR,
                                  NR,               &fma_loop,   fma_flops_per_iteration(),
                                  kKeyChunk};
    return table;
  }
};

}  // namespace
}  // namespace encbench::kernels::detail
