// Attention kernels vs the fp64 reference: every head_dim, segment layout, ISA path and pool.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "kernels/attention.hpp"
#include "kernels/cost.hpp"
#include "tests/kernels/test_support.hpp"

namespace encbench::kernels::test {
namespace {

constexpr double kTolerance = 1e-5;

struct Layout {
  std::string name;
  std::vector<std::int32_t> lens;
  int heads, kv_heads;
};

std::vector<Layout> layouts() {
  const bool small = sanitized();
  std::vector<Layout> out;
  out.push_back({"one_segment", {small ? 100 : 300}, 4, 4});
  out.push_back({"unequal_with_len1", {1, 17, 64, 3, 130, 1, 45, 2}, 4, 4});
  out.push_back({"windows64", std::vector<std::int32_t>(small ? 3 : 6, 64), 4, 4});
  out.push_back({"gqa", {33, 1, 97, 16}, 8, 2});
  out.push_back({"mqa", {40, 7}, 4, 1});
  return out;
}

struct Problem {
  Layout layout;
  int head_dim;
  std::int64_t tokens;
  std::vector<std::int32_t> cu;
  std::vector<float> q, k, v, ref;
  float scale;
};

Problem make_problem(const Layout& layout, int head_dim, unsigned seed) {
  Problem p{layout, head_dim, 0, {0}, {}, {}, {}, {}, 1.0f / std::sqrt(static_cast<float>(head_dim))};
  for (auto len : layout.lens) p.cu.push_back(p.cu.back() + len);
  p.tokens = p.cu.back();
  p.q = random_vector(p.tokens * layout.heads * head_dim, seed);
  p.k = random_vector(p.tokens * layout.kv_heads * head_dim, seed + 1);
  p.v = random_vector(p.tokens * layout.kv_heads * head_dim, seed + 2);
  p.ref = poisoned(p.q.size());
  VarlenAttentionArgs a = {};
  a.q = p.q.data(), a.k = p.k.data(), a.v = p.v.data(), a.out = p.ref.data();
  a.cu_seqlens = p.cu.data();
  a.num_segments = static_cast<std::int64_t>(layout.lens.size());
  a.total_tokens = p.tokens;
  a.num_heads = layout.heads, a.num_kv_heads = layout.kv_heads, a.head_dim = head_dim;
  a.scale = p.scale;
  SerialPool serial;
  attention_reference(a, serial);
  EXPECT_EQ(count_nan(p.ref), 0u);
  return p;
}

VarlenAttentionArgs varlen_args(const Problem& p, float* out) {
  VarlenAttentionArgs a;
  a.q = p.q.data(), a.k = p.k.data(), a.v = p.v.data(), a.out = out;
  a.cu_seqlens = p.cu.data();
  a.num_segments = static_cast<std::int64_t>(p.layout.lens.size());
  a.total_tokens = p.tokens;
  a.num_heads = p.layout.heads, a.num_kv_heads = p.layout.kv_heads, a.head_dim = p.head_dim;
  a.scale = p.scale;
  return a;
}

std::vector<float> pad_heads(const std::vector<float>& x, int d, int d_pad) {
  const std::size_t rows = x.size() / d;
  std::vector<float> out(rows * d_pad, 0.0f);
  for (std::size_t r = 0; r < rows; ++r)
    std::copy(x.begin() + r * d, x.begin() + (r + 1) * d, out.begin() + r * d_pad);
  return out;
}

class AttentionVsReference : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(AttentionVsReference, FastKernelsMatchOnEveryIsaAndPool) {
  const int head_dim = std::get<0>(GetParam());
  const Layout layout = layouts()[std::get<1>(GetParam())];
  const Problem p = make_problem(layout, head_dim, 1000u + head_dim + 17u * std::get<1>(GetParam()));
  SerialPool serial;
  TestThreadPool threads(3);
  // The default tiling plus a small one, so multi-block online softmax and many query blocks run
  // even on short segments.
  std::vector<AttentionTiling> tilings = {{}, {16, 32}, {40, 48}};
  if (sanitized()) tilings.pop_back();  // ~10x slower there; the small tiling still covers it
  for (Isa isa : available_isas()) {
    for (WorkerPool* pool : std::vector<WorkerPool*>{&serial, &threads}) {
      for (const AttentionTiling& tiling : tilings) {
        SCOPED_TRACE(std::string(to_string(isa)) + " workers=" + std::to_string(pool->num_workers()) +
                     " block_q=" + std::to_string(tiling.block_q) +
                     " block_kv=" + std::to_string(tiling.block_kv));
        // fused_varlen: native head_dim, unpadded output.
        std::vector<float> out = poisoned(p.ref.size());
        Workspace ws;
        fused_varlen(varlen_args(p, out.data()), *pool, isa, &ws, tiling);
        EXPECT_EQ(count_nan(out), 0u) << "output not fully written";
        EXPECT_LT(rel_frobenius(out, p.ref), kTolerance);

        // flash_unpad: zero-padded inputs (NPU rule), host lengths, padded output.
        const int dp = npu_padded_head_dim(head_dim);
        const auto qp = pad_heads(p.q, head_dim, dp), kp = pad_heads(p.k, head_dim, dp),
                   vp = pad_heads(p.v, head_dim, dp);
        std::vector<float> outp = poisoned(qp.size());
        FlashUnpadArgs u;
        u.q = qp.data(), u.k = kp.data(), u.v = vp.data(), u.out = outp.data();
        u.seq_lens = layout.lens.data();
        u.num_segments = static_cast<std::int64_t>(layout.lens.size());
        u.total_tokens = p.tokens;
        u.num_heads = layout.heads, u.num_kv_heads = layout.kv_heads;
        u.head_dim_padded = dp, u.head_dim = head_dim, u.scale = p.scale;
        u.sizes = {qp.size(), kp.size(), vp.size(), outp.size()};
        flash_unpad(u, *pool, isa, nullptr, tiling);
        EXPECT_EQ(count_nan(outp), 0u) << "padded output not fully written";
        std::vector<float> unpadded(p.ref.size());
        bool padding_zero = true;
        for (std::size_t r = 0; r < outp.size() / dp; ++r) {
          for (int d = 0; d < dp; ++d) {
            if (d < head_dim) unpadded[r * head_dim + d] = outp[r * dp + d];
            else padding_zero = padding_zero && outp[r * dp + d] == 0.0f;
          }
        }
        EXPECT_TRUE(padding_zero) << "padded output columns must be exactly 0";
        EXPECT_LT(rel_frobenius(unpadded, p.ref), kTolerance) << "padding invariance";
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(HeadDimsAndLayouts, AttentionVsReference,
                         ::testing::Combine(::testing::Values(64, 72, 80, 128),
                                            ::testing::Range(0, 5)),
                         [](const auto& info) {
                           return "d" + std::to_string(std::get<0>(info.param)) + "_" +
                                  layouts()[std::get<1>(info.param)].name;
                         });

TEST(AttentionReference, MatchesHandComputedTwoTokenCase) {
  // One head, d=1: q=[1,2], k=[1,-1], v=[10,20], scale 1. Row 0: scores (1,-1) -> softmax
  // weights (e/(e+1/e)); row 1: scores (2,-2).
  const std::vector<float> q{1, 2}, k{1, -1}, v{10, 20};
  std::vector<float> out(2);
  const std::vector<std::int32_t> cu{0, 2};
  VarlenAttentionArgs a;
  a.q = q.data(), a.k = k.data(), a.v = v.data(), a.out = out.data(), a.cu_seqlens = cu.data();
  a.num_segments = 1, a.total_tokens = 2, a.num_heads = 1, a.num_kv_heads = 1, a.head_dim = 1;
  a.scale = 1.0f;
  SerialPool pool;
  attention_reference(a, pool);
  const double w0 = std::exp(1.0) / (std::exp(1.0) + std::exp(-1.0));
  const double w1 = std::exp(2.0) / (std::exp(2.0) + std::exp(-2.0));
  EXPECT_NEAR(out[0], 10 * w0 + 20 * (1 - w0), 1e-5);
  EXPECT_NEAR(out[1], 10 * w1 + 20 * (1 - w1), 1e-5);
}

TEST(AttentionFast, LargeScoresDoNotOverflowOrGoDenormal) {
  // Scores of hundreds: exp must be taken relative to the running max, and tiny probabilities
  // clamp instead of producing NaN/denormals.
  Layout layout{"big", {70}, 2, 2};
  Problem p = make_problem(layout, 64, 7);
  for (auto& x : p.q) x *= 30.0f;
  VarlenAttentionArgs a = varlen_args(p, p.ref.data());
  SerialPool serial;
  attention_reference(a, serial);
  for (Isa isa : available_isas()) {
    std::vector<float> out = poisoned(p.ref.size());
    fused_varlen(varlen_args(p, out.data()), serial, isa, nullptr, {16, 32});
    EXPECT_EQ(count_nan(out), 0u) << to_string(isa);
    EXPECT_LT(rel_frobenius(out, p.ref), kTolerance) << to_string(isa);
  }
}

TEST(AttentionFast, EmptySegmentsAndNoTokens) {
  const std::vector<std::int32_t> cu{0, 0, 5, 5};
  Layout layout{"x", {5}, 2, 2};
  Problem p = make_problem(layout, 16, 3);
  VarlenAttentionArgs a = varlen_args(p, nullptr);
  std::vector<float> out = poisoned(p.ref.size());
  a.out = out.data();
  a.cu_seqlens = cu.data();
  a.num_segments = 3;
  SerialPool pool;
  fused_varlen(a, pool);
  EXPECT_LT(rel_frobenius(out, p.ref), kTolerance);
  // No tokens at all: nothing to do, null data pointers allowed.
  const std::vector<std::int32_t> cu0{0};
  VarlenAttentionArgs z;
  z.cu_seqlens = cu0.data(), z.num_segments = 0, z.total_tokens = 0;
  z.num_heads = 2, z.num_kv_heads = 1, z.head_dim = 8, z.scale = 1;
  EXPECT_NO_THROW(fused_varlen(z, pool));
}

TEST(AttentionFast, IsaNamesRoundTripAndBestIsAvailable) {
  for (Isa isa : {Isa::best, Isa::portable, Isa::avx2, Isa::avx512})
    EXPECT_EQ(isa_from_string(to_string(isa)), isa);
  EXPECT_TRUE(isa_available(detect_best_isa()));
  EXPECT_NE(resolve_isa(Isa::best), Isa::best);
  expect_invalid([] { isa_from_string("sse9"); }, "unknown ISA");
}

TEST(AttentionCost, FlopsFollowTheIssueFormula) {
  const std::vector<std::int32_t> lens{64, 64, 1};
  const Cost c = attention_cost(lens.data(), 3, 16, 16, 80);
  EXPECT_DOUBLE_EQ(c.flops, 4.0 * (64 * 64 * 2 + 1) * 16 * 80);
  const std::vector<std::int32_t> cu{0, 64, 128, 129};
  EXPECT_DOUBLE_EQ(attention_cost_cu(cu.data(), 3, 16, 16, 80).flops, c.flops);
  EXPECT_DOUBLE_EQ(c.bytes, 4.0 * 129 * 80 * (2 * 16 + 2 * 16));
  EXPECT_EQ(npu_padded_head_dim(80), 128);
  EXPECT_EQ(npu_padded_head_dim(72), 128);
  EXPECT_EQ(npu_padded_head_dim(64), 64);
  EXPECT_EQ(npu_padded_head_dim(128), 128);
}

// ---- bad input ------------------------------------------------------------------------------

class AttentionBadInput : public ::testing::Test {
 protected:
  void SetUp() override {
    p = make_problem(Layout{"bad", {3, 5}, 4, 2}, 8, 11);
    out = poisoned(p.ref.size());
  }
  VarlenAttentionArgs args() { return varlen_args(p, out.data()); }
  // Runs all three varlen entry points (reference and fused take the same args).
  template <class Mutate>
  void expect_all(Mutate mutate, const std::string& needle) {
    SerialPool pool;
    VarlenAttentionArgs a = args();
    mutate(a);
    expect_invalid([&] { fused_varlen(a, pool); }, needle);
    expect_invalid([&] { attention_reference(a, pool); }, needle);
    EXPECT_EQ(count_nan(out), out.size()) << "nothing may be written on bad input";
  }
  Problem p;
  std::vector<float> out;
};

TEST_F(AttentionBadInput, CuSeqlensNotStartingAtZero) {
  const std::vector<std::int32_t> cu{1, 3, 8};
  expect_all([&](auto& a) { a.cu_seqlens = cu.data(); }, "start at 0");
}

TEST_F(AttentionBadInput, CuSeqlensDecreasing) {
  const std::vector<std::int32_t> cu{0, 6, 5, 8};
  expect_all([&](auto& a) { a.cu_seqlens = cu.data(), a.num_segments = 3; }, "decreases");
}

TEST_F(AttentionBadInput, CuSeqlensNotEndingAtTotal) {
  const std::vector<std::int32_t> cu{0, 3, 7};
  expect_all([&](auto& a) { a.cu_seqlens = cu.data(); }, "end at total_tokens");
}

TEST_F(AttentionBadInput, HeadDimZero) {
  expect_all([](auto& a) { a.head_dim = 0; }, "head_dim");
}

TEST_F(AttentionBadInput, HeadsNotMultipleOfKvHeads) {
  expect_all([](auto& a) { a.num_heads = 3; }, "multiple of num_kv_heads");
  expect_all([](auto& a) { a.num_kv_heads = 0; }, "num_kv_heads");
}

TEST_F(AttentionBadInput, NullPointers) {
  expect_all([](auto& a) { a.q = nullptr; }, "q is null");
  expect_all([](auto& a) { a.k = nullptr; }, "k is null");
  expect_all([](auto& a) { a.v = nullptr; }, "v is null");
  expect_all([](auto& a) { a.out = nullptr; }, "out is null");
  expect_all([](auto& a) { a.cu_seqlens = nullptr; }, "cu_seqlens is null");
}

TEST_F(AttentionBadInput, MismatchedShapes) {
  expect_all([&](auto& a) { a.sizes.q = p.q.size() - 1; }, "q has");
  expect_all([&](auto& a) { a.sizes.k = p.q.size(); }, "k has");  // k has kv_heads, not heads
  expect_all([&](auto& a) { a.total_tokens = -1; }, "total_tokens");
  expect_all([](auto& a) { a.scale = std::nanf(""); }, "scale");
}

TEST_F(AttentionBadInput, FlashUnpadLengthsAndShapes) {
  SerialPool pool;
  FlashUnpadArgs u;
  u.q = p.q.data(), u.k = p.k.data(), u.v = p.v.data(), u.out = out.data();
  u.seq_lens = p.layout.lens.data();
  u.num_segments = 2, u.total_tokens = p.tokens, u.num_heads = 4, u.num_kv_heads = 2;
  u.head_dim_padded = 8, u.head_dim = 8, u.scale = 0.3f;
  EXPECT_NO_THROW(flash_unpad(u, pool));
  out = poisoned(out.size());
  auto bad = u;
  bad.total_tokens = p.tokens + 1;
  expect_invalid([&] { flash_unpad(bad, pool); }, "sum to");
  bad = u;
  const std::vector<std::int32_t> neg{-1, 9};
  bad.seq_lens = neg.data();
  expect_invalid([&] { flash_unpad(bad, pool); }, "negative");
  bad = u;
  bad.head_dim = 9;
  expect_invalid([&] { flash_unpad(bad, pool); }, "head_dim");
  bad = u;
  bad.head_dim_padded = 0;
  expect_invalid([&] { flash_unpad(bad, pool); }, "head_dim");
  bad = u;
  bad.num_heads = 5;
  expect_invalid([&] { flash_unpad(bad, pool); }, "multiple of num_kv_heads");
  bad = u;
  bad.seq_lens = nullptr;
  expect_invalid([&] { flash_unpad(bad, pool); }, "seq_lens is null");
  bad = u;
  bad.sizes.out = 3;
  expect_invalid([&] { flash_unpad(bad, pool); }, "out has");
  EXPECT_EQ(count_nan(out), out.size());
  expect_invalid([&] { resolve_tiling({-1, 0}, 80); }, "tiling");
}

}  // namespace
}  // namespace encbench::kernels::test
