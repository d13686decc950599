// Encoder ops (GEMM, pad/unpad, layout copy, rotary, gather/scatter, norms, activations) vs
// simple fp64 references written here.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <vector>

#include "kernels/cost.hpp"
#include "kernels/ops.hpp"
#include "tests/kernels/test_support.hpp"

namespace encbench::kernels::test {
namespace {

struct GemmShape {
  std::int64_t m, n, k;
  bool bias;
};

TEST(Gemm, MatchesFp64ReferenceOnEveryIsaAndPool) {
  const std::vector<GemmShape> shapes = {
      {37, 100, 70, true}, {5, 64, 1, false}, {1, 3, 200, true}, {64, 130, 96, false},
      {sanitized() ? 20 : 96, 200, 160, true}};
  for (const auto& s : shapes) expect_gemm_matches_reference(s.m, s.n, s.k, s.bias, 1, "");
  // The reference itself on a hand case: [1 2] . [[3 4],[5 6]]^T + [1, -1] = [12, 16].
  const std::vector<float> x{1, 2}, w{3, 4, 5, 6}, b{1, -1};
  std::vector<float> out(2);
  gemm_reference({x.data(), w.data(), b.data(), out.data(), 1, 2, 2});
  EXPECT_FLOAT_EQ(out[0], 12);
  EXPECT_FLOAT_EQ(out[1], 16);
}

TEST(Gemm, BadInput) {
  SerialPool pool;
  std::vector<float> x(4, 1), w(4, 1), out(4);
  expect_invalid([&] { gemm({x.data(), w.data(), nullptr, out.data(), 2, 2, 0}, pool); }, "k > 0");
  expect_invalid([&] { gemm({nullptr, w.data(), nullptr, out.data(), 2, 2, 2}, pool); }, "x is null");
  expect_invalid([&] { gemm({x.data(), nullptr, nullptr, out.data(), 2, 2, 2}, pool); }, "w is null");
  expect_invalid([&] { gemm({x.data(), w.data(), nullptr, nullptr, 2, 2, 2}, pool); }, "out is null");
  EXPECT_DOUBLE_EQ(gemm_cost(1024, 3840, 1280, false).flops, 2.0 * 1024 * 3840 * 1280);
}

TEST(PadUnpad, RoundTripAndZeroFill) {
  TestThreadPool pool(2);
  const std::int64_t rows = 1000;
  const auto x = random_vector(rows * 80, 5);
  std::vector<float> padded = poisoned(rows * 128), back = poisoned(rows * 80);
  pad_last_dim(x.data(), rows, 80, 128, padded.data(), pool);
  unpad_last_dim(padded.data(), rows, 128, 80, back.data(), pool);
  EXPECT_EQ(back, x);
  for (std::int64_t r = 0; r < rows; ++r)
    for (int d = 0; d < 128; ++d)
      ASSERT_EQ(padded[r * 128 + d], d < 80 ? x[r * 80 + d] : 0.0f);
  expect_invalid([&] { pad_last_dim(x.data(), rows, 130, 128, padded.data(), pool); }, "d <= d_pad");
  expect_invalid([&] { unpad_last_dim(nullptr, rows, 128, 80, back.data(), pool); }, "src is null");
}

TEST(PadUnpad, StackedQkvEqualsThreeSeparatePads) {
  TestThreadPool pool(3);
  const std::int64_t tokens = 50, heads = 4, kv_heads = 2;
  const auto q = random_vector(tokens * heads * 72, 1), k = random_vector(tokens * kv_heads * 72, 2),
             v = random_vector(tokens * kv_heads * 72, 3);
  std::vector<float> qo = poisoned(tokens * heads * 128), ko = poisoned(tokens * kv_heads * 128),
                     vo = poisoned(tokens * kv_heads * 128);
  QkvPadArgs a{q.data(), k.data(), v.data(), qo.data(), ko.data(), vo.data(),
               tokens * heads, tokens * kv_heads, 72, 128};
  pad_qkv_last_dim(a, pool);
  std::vector<float> qe(qo.size()), ke(ko.size()), ve(vo.size());
  SerialPool serial;
  pad_last_dim(q.data(), tokens * heads, 72, 128, qe.data(), serial);
  pad_last_dim(k.data(), tokens * kv_heads, 72, 128, ke.data(), serial);
  pad_last_dim(v.data(), tokens * kv_heads, 72, 128, ve.data(), serial);
  EXPECT_EQ(qo, qe);
  EXPECT_EQ(ko, ke);
  EXPECT_EQ(vo, ve);
  a.k_out = nullptr;
  expect_invalid([&] { pad_qkv_last_dim(a, pool); }, "k_out is null");
}

TEST(LayoutCopy, SplitsFusedQkvAndTransposes) {
  TestThreadPool pool(2);
  const std::int64_t T = 33, H = 4, D = 16;
  const auto qkv = random_vector(T * 3 * H * D, 9);  // [T, 3, H, D]
  for (int which = 0; which < 3; ++which) {
    std::vector<float> out = poisoned(T * H * D);
    LayoutCopyArgs a;
    a.src = qkv.data() + which * H * D, a.dst = out.data(), a.rank = 3;
    a.sizes[0] = T, a.sizes[1] = H, a.sizes[2] = D;
    a.src_strides[0] = 3 * H * D, a.src_strides[1] = D, a.src_strides[2] = 1;
    layout_copy(a, pool);
    for (std::int64_t t = 0; t < T; ++t)
      for (std::int64_t i = 0; i < H * D; ++i)
        ASSERT_EQ(out[t * H * D + i], qkv[(t * 3 + which) * H * D + i]);
  }
  // [T, H, D] -> [H, T, D] (heads first), a stride-permuted copy.
  const auto x = random_vector(T * H * D, 4);
  std::vector<float> y = poisoned(x.size());
  LayoutCopyArgs a;
  a.src = x.data(), a.dst = y.data(), a.rank = 3;
  a.sizes[0] = H, a.sizes[1] = T, a.sizes[2] = D;
  a.src_strides[0] = D, a.src_strides[1] = H * D, a.src_strides[2] = 1;
  layout_copy(a, pool);
  for (std::int64_t h = 0; h < H; ++h)
    for (std::int64_t t = 0; t < T; ++t)
      for (std::int64_t d = 0; d < D; ++d) ASSERT_EQ(y[(h * T + t) * D + d], x[(t * H + h) * D + d]);
  a.rank = 5;
  expect_invalid([&] { layout_copy(a, pool); }, "rank");
}

TEST(CuSeqlensDiff, LengthsAndValidation) {
  const std::vector<std::int32_t> cu{0, 64, 64, 100, 1124};
  std::vector<std::int32_t> lens(4, -7);
  cu_seqlens_diff(cu.data(), 4, lens.data(), 1124);
  EXPECT_EQ(lens, (std::vector<std::int32_t>{64, 0, 36, 1024}));
  const std::vector<std::int32_t> dec{0, 5, 4}, start{2, 5};
  expect_invalid([&] { cu_seqlens_diff(dec.data(), 2, lens.data()); }, "decreases");
  expect_invalid([&] { cu_seqlens_diff(start.data(), 1, lens.data()); }, "start at 0");
  expect_invalid([&] { cu_seqlens_diff(cu.data(), 4, lens.data(), 1000); }, "end at total_tokens");
}

TEST(Rotary, MatchesQwenVisionFormulaInDouble) {
  TestThreadPool pool(2);
  const std::int64_t T = 40;
  const int Hq = 3, Hk = 1;
  for (int D : {64, 72, 80, 128}) {
    std::vector<std::int32_t> ph(T), pw(T);
    for (std::int64_t t = 0; t < T; ++t) ph[t] = static_cast<std::int32_t>(t / 8), pw[t] = static_cast<std::int32_t>(t % 8);
    std::vector<float> cosv = poisoned(T * D), sinv = poisoned(T * D);
    vision_rotary_tables(ph.data(), pw.data(), T, D, 10000.0f, cosv.data(), sinv.data());
    const auto q0 = random_vector(T * Hq * D, 1), k0 = random_vector(T * Hk * D, 2);
    auto q = q0, k = k0;
    rotary_vision(q.data(), k.data(), T, Hq, Hk, D, cosv.data(), sinv.data(), pool);
    // Independent double-precision version of apply_rotary_pos_emb_vision.
    const int dim = D / 2, nf = dim / 2;
    auto expect_rotated = [&](const std::vector<float>& x0, const std::vector<float>& x, int H) {
      std::vector<float> ref(x0.size());
      for (std::int64_t t = 0; t < T; ++t) {
        std::vector<double> angle(D);
        for (int i = 0; i < nf; ++i) {
          const double inv = 1.0 / std::pow(10000.0, 2.0 * i / dim);
          angle[i] = angle[dim + i] = ph[t] * inv;
          angle[nf + i] = angle[dim + nf + i] = pw[t] * inv;
        }
        for (int h = 0; h < H; ++h) {
          const float* xr = x0.data() + (t * H + h) * D;
          for (int d = 0; d < D; ++d) {
            const double rot = d < D / 2 ? -xr[d + D / 2] : xr[d - D / 2];
            ref[(t * H + h) * D + d] = static_cast<float>(xr[d] * std::cos(angle[d]) + rot * std::sin(angle[d]));
          }
        }
      }
      EXPECT_LT(rel_frobenius(x, ref), 1e-5) << "D=" << D;
    };
    expect_rotated(q0, q, Hq);
    expect_rotated(k0, k, Hk);
  }
  std::vector<float> c(8), s(8);
  std::vector<std::int32_t> p(1);
  expect_invalid([&] { vision_rotary_tables(p.data(), p.data(), 1, 6, 10000.0f, c.data(), s.data()); },
                 "multiple of 4");
  expect_invalid([&] { rotary_vision(c.data(), nullptr, 1, 1, 1, 8, c.data(), s.data(), *std::make_unique<SerialPool>()); },
                 "k is null");
}

TEST(GatherScatter, PermutationRoundTrip) {
  TestThreadPool pool(3);
  const std::int64_t rows = 300, width = 40;
  const auto x = random_vector(rows * width, 8);
  std::vector<std::int64_t> index(rows);
  for (std::int64_t i = 0; i < rows; ++i) index[i] = (i * 7 + 3) % rows;  // 7 coprime with 300
  std::vector<float> g = poisoned(x.size()), back = poisoned(x.size());
  gather_rows(x.data(), rows, width, index.data(), rows, g.data(), pool);
  for (std::int64_t i = 0; i < rows; ++i) ASSERT_EQ(g[i * width + 5], x[index[i] * width + 5]);
  scatter_rows(g.data(), rows, width, index.data(), back.data(), rows, pool);
  EXPECT_EQ(back, x);
  index[10] = rows;
  expect_invalid([&] { gather_rows(x.data(), rows, width, index.data(), rows, g.data(), pool); }, "outside");
  expect_invalid([&] { scatter_rows(g.data(), rows, width, index.data(), back.data(), rows, pool); }, "outside");
}

TEST(Norms, LayerNormAndRmsNormMatchDouble) {
  TestThreadPool pool(2);
  const std::int64_t rows = 70;
  const int d = 1280;
  const auto x = random_vector(rows * d, 1, 3.0f), g = random_vector(d, 2), b = random_vector(d, 3);
  std::vector<float> ln = poisoned(x.size()), rms = poisoned(x.size()), ln_ref(x.size()), rms_ref(x.size());
  layernorm(x.data(), rows, d, g.data(), b.data(), 1e-6f, ln.data(), pool);
  rmsnorm(x.data(), rows, d, g.data(), 1e-6f, rms.data(), pool);
  for (std::int64_t r = 0; r < rows; ++r) {
    double mean = 0, sq = 0;
    for (int i = 0; i < d; ++i) mean += x[r * d + i], sq += static_cast<double>(x[r * d + i]) * x[r * d + i];
    mean /= d;
    double var = 0;
    for (int i = 0; i < d; ++i) var += (x[r * d + i] - mean) * (x[r * d + i] - mean);
    var /= d;
    for (int i = 0; i < d; ++i) {
      ln_ref[r * d + i] = static_cast<float>((x[r * d + i] - mean) / std::sqrt(var + 1e-6) * g[i] + b[i]);
      rms_ref[r * d + i] = static_cast<float>(x[r * d + i] / std::sqrt(sq / d + 1e-6) * g[i]);
    }
  }
  EXPECT_LT(rel_frobenius(ln, ln_ref), 1e-5);
  EXPECT_LT(rel_frobenius(rms, rms_ref), 1e-5);
  expect_invalid([&] { layernorm(x.data(), rows, 0, g.data(), b.data(), 1e-6f, ln.data(), pool); }, "d > 0");
  expect_invalid([&] { rmsnorm(x.data(), rows, d, nullptr, 1e-6f, rms.data(), pool); }, "gamma is null");
}

TEST(Activations, MatchDouble) {
  TestThreadPool pool(2);
  const std::int64_t n = 50000;
  const auto x = random_vector(n, 1, 3.0f), y = random_vector(n, 2);
  std::vector<float> out = poisoned(n), ref(n);
  auto check = [&](auto op, auto formula, const char* name) {
    out = poisoned(n);
    op();
    for (std::int64_t i = 0; i < n; ++i) ref[i] = static_cast<float>(formula(static_cast<double>(x[i]), static_cast<double>(y[i])));
    EXPECT_LT(rel_frobenius(out, ref), 1e-5) << name;
  };
  check([&] { residual_add(x.data(), y.data(), n, out.data(), pool); },
        [](double a, double b) { return a + b; }, "residual_add");
  check([&] { quick_gelu(x.data(), n, out.data(), pool); },
        [](double a, double) { return a / (1 + std::exp(-1.702 * a)); }, "quick_gelu");
  check([&] { gelu_tanh(x.data(), n, out.data(), pool); },
        [](double a, double) { return 0.5 * a * (1 + std::tanh(std::sqrt(2 / M_PI) * (a + 0.044715 * a * a * a))); },
        "gelu_tanh");
  check([&] { silu_mul(x.data(), y.data(), n, out.data(), pool); },
        [](double a, double b) { return a / (1 + std::exp(-a)) * b; }, "silu_mul");
  // Fused gate_up rows: [rows, 2d] with gate = x, up = y interleaved per row.
  const int d = 100;
  const std::int64_t rows = n / d;
  std::vector<float> gu(rows * 2 * d);
  for (std::int64_t r = 0; r < rows; ++r)
    for (int i = 0; i < d; ++i) gu[r * 2 * d + i] = x[r * d + i], gu[r * 2 * d + d + i] = y[r * d + i];
  check([&] { silu_and_mul_rows(gu.data(), rows, d, out.data(), pool); },
        [](double a, double b) { return a / (1 + std::exp(-a)) * b; }, "silu_and_mul_rows");
  expect_invalid([&] { quick_gelu(nullptr, n, out.data(), pool); }, "x is null");
  expect_invalid([&] { residual_add(x.data(), y.data(), -1, out.data(), pool); }, "n must be");
}

}  // namespace
}  // namespace encbench::kernels::test
