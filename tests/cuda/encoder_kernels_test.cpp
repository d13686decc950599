// The encoder's fp32 CUDA kernels (kernels/cuda/encoder_kernels.hpp) against fp64 computations on
// the host written here from the formulas (not host_math.cpp), on random inputs with odd sizes so
// every grid-stride tail and every non-multiple-of-32 row is exercised. GPU only (skips without).
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "tests/cuda/require_gpu.hpp"
#include "harness/core/error.hpp"
#include "kernels/cuda/cuda_kernels.hpp"
#include "kernels/cuda/encoder_kernels.hpp"

namespace encbench {
namespace {

namespace kc = kernels::cuda;


// A device copy of host values, freed at scope exit (tests only).
template <class T>
struct Dev {
  T* ptr = nullptr;
  std::size_t n = 0;
  explicit Dev(const std::vector<T>& host) : n(host.size()) {
    EXPECT_EQ(cudaMalloc(&ptr, std::max<std::size_t>(n, 1) * sizeof(T)), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(ptr, host.data(), n * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  }
  ~Dev() { cudaFree(ptr); }
  Dev(const Dev&) = delete;
  Dev& operator=(const Dev&) = delete;
  std::vector<T> read() const {
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    std::vector<T> host(n);
    EXPECT_EQ(cudaMemcpy(host.data(), ptr, n * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
    return host;
  }
};

std::vector<float> randoms(std::size_t n, float bound, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-bound, bound);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// Largest |got - want| / (|want| + floor) over all elements; `floor` keeps fp32 rounding of values
// near zero (cancellation in 1 + erf(x), a norm's + beta) from dominating.
double max_rel(const std::vector<float>& got, const std::vector<double>& want, double floor = 1e-2) {
  EXPECT_EQ(got.size(), want.size());
  double worst = 0;
  for (std::size_t i = 0; i < got.size() && i < want.size(); ++i)
    worst = std::max(worst, std::abs(got[i] - want[i]) / (std::abs(want[i]) + floor));
  return worst;
}

// ||got - want|| / ||want||: the accuracy guard's measure.
double rel_l2(const std::vector<float>& got, const std::vector<double>& want) {
  EXPECT_EQ(got.size(), want.size());
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < got.size() && i < want.size(); ++i) {
    diff += (got[i] - want[i]) * (got[i] - want[i]);
    norm += want[i] * want[i];
  }
  return std::sqrt(diff / norm);
}

TEST(EncoderKernels, GemmF32MatchesFp64WithBiasAndOddShapes) {
  REQUIRE_GPU();
  kc::BlasHandle blas;
  for (const auto& [m, k, n] : {std::tuple{67, 129, 93}, std::tuple{1, 3, 1}, std::tuple{300, 1280, 77}}) {
    const auto x = randoms(static_cast<std::size_t>(m) * k, 1.f, 1);
    const auto w = randoms(static_cast<std::size_t>(n) * k, 1.f, 2);
    const auto b = randoms(static_cast<std::size_t>(n), 1.f, 3);
    Dev<float> dx(x), dw(w), db(b), dout(std::vector<float>(static_cast<std::size_t>(m) * n, NAN));
    kc::GemmF32Args a;
    a.x = dx.ptr;
    a.w = dw.ptr;
    a.bias = db.ptr;
    a.out = dout.ptr;
    a.m = m;
    a.n = n;
    a.k = k;
    kc::gemm_f32(blas, a, nullptr);
    std::vector<double> want(static_cast<std::size_t>(m) * n);
    for (int r = 0; r < m; ++r)
      for (int c = 0; c < n; ++c) {
        double acc = b[c];
        for (int i = 0; i < k; ++i) acc += static_cast<double>(x[r * k + i]) * w[c * k + i];
        want[static_cast<std::size_t>(r) * n + c] = acc;
      }
    // Full fp32 products (no TF32): ~1e-7 relative; TF32's 10-bit inputs would give ~3e-4.
    EXPECT_LT(rel_l2(dout.read(), want), 2e-5) << m << "x" << k << "x" << n;
  }
}

TEST(EncoderKernels, NormsMatchFp64OnOddRows) {
  REQUIRE_GPU();
  const int rows = 37, dim = 1283;
  auto x = randoms(static_cast<std::size_t>(rows) * dim, 2.f, 4);
  for (int i = 0; i < dim; ++i) x[i] += 5.f;  // a row with a large mean: the two-pass variance
  const auto gamma = randoms(dim, 1.f, 5), beta = randoms(dim, 1.f, 6);
  Dev<float> dx(x), dg(gamma), db(beta), dout(std::vector<float>(x.size(), NAN));
  for (const bool rms : {false, true}) {
    kc::norm_rows_f32(dx.ptr, dg.ptr, rms ? nullptr : db.ptr, dout.ptr, rows, dim, 1e-6, nullptr);
    std::vector<double> want(x.size());
    for (int r = 0; r < rows; ++r) {
      const float* xr = &x[static_cast<std::size_t>(r) * dim];
      double mean = 0, sq = 0;
      for (int i = 0; i < dim; ++i) mean += xr[i];
      mean /= dim;
      for (int i = 0; i < dim; ++i) sq += rms ? double(xr[i]) * xr[i] : (xr[i] - mean) * (xr[i] - mean);
      const double inv = 1.0 / std::sqrt(sq / dim + 1e-6);
      for (int i = 0; i < dim; ++i)
        want[static_cast<std::size_t>(r) * dim + i] =
            rms ? xr[i] * inv * gamma[i] : (xr[i] - mean) * inv * gamma[i] + beta[i];
    }
    EXPECT_LT(rel_l2(dout.read(), want), 1e-5) << (rms ? "rms" : "layer");
    EXPECT_LT(max_rel(dout.read(), want), 1e-4) << (rms ? "rms" : "layer");
  }
}

TEST(EncoderKernels, ActivationsSiluMulAndAddMatchFp64) {
  REQUIRE_GPU();
  const std::size_t n = 100'003;  // not a multiple of the block size
  const auto x = randoms(n, 6.f, 7);
  using Act = kc::Activation;
  for (const Act act : {Act::gelu_erf, Act::gelu_tanh, Act::quick_gelu}) {
    Dev<float> dx(x);
    kc::activation_f32(act, dx.ptr, static_cast<std::int64_t>(n), nullptr);
    std::vector<double> want(n);
    for (std::size_t i = 0; i < n; ++i) {
      const double v = x[i];
      want[i] = act == Act::gelu_erf    ? 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)))
                : act == Act::gelu_tanh ? 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)))
                                        : v / (1 + std::exp(-1.702 * v));
    }
    EXPECT_LT(max_rel(dx.read(), want), 1e-4) << static_cast<int>(act);
  }
  const std::int64_t rows = 33, inner = 77;
  const auto gu = randoms(static_cast<std::size_t>(rows * 2 * inner), 4.f, 8);
  Dev<float> dgu(gu), dout(std::vector<float>(static_cast<std::size_t>(rows * inner), NAN));
  kc::silu_mul_f32(dgu.ptr, dout.ptr, rows, inner, nullptr);
  std::vector<double> want(static_cast<std::size_t>(rows * inner));
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < inner; ++c) {
      const double g = gu[r * 2 * inner + c], u = gu[r * 2 * inner + inner + c];
      want[r * inner + c] = g / (1 + std::exp(-g)) * u;
    }
  EXPECT_LT(max_rel(dout.read(), want), 1e-5);
  const auto y = randoms(n, 3.f, 9);
  Dev<float> dx(x), dy(y);
  kc::add_f32(dx.ptr, dy.ptr, dx.ptr, static_cast<std::int64_t>(n), nullptr);  // in place, as the residual
  std::vector<double> sum(n);
  for (std::size_t i = 0; i < n; ++i) sum[i] = double(x[i]) + y[i];
  EXPECT_LT(max_rel(dx.read(), sum), 1e-6);
}

TEST(EncoderKernels, CopyHeadsPadsUnpadsAndSplits) {
  REQUIRE_GPU();
  const std::int64_t T = 37, H = 3, D = 72, Dp = 128;
  // split: a fused [T, 3*H*D] row, part 1 (k) into [T, H, D]; then pad k to 128; then unpad.
  const auto fused = randoms(static_cast<std::size_t>(T * 3 * H * D), 1.f, 10);
  Dev<float> dfused(fused), dk(std::vector<float>(static_cast<std::size_t>(T * H * D), NAN)),
      dpad(std::vector<float>(static_cast<std::size_t>(T * H * Dp), NAN)),
      dback(std::vector<float>(static_cast<std::size_t>(T * H * D), NAN));
  kc::HeadCopyF32 split{dfused.ptr, 3 * H * D, H * D, D, dk.ptr, H * D, D, T, H, D};
  kc::copy_heads_f32(split, nullptr);
  kc::HeadCopyF32 pad{dk.ptr, H * D, 0, D, dpad.ptr, H * Dp, Dp, T, H, D};
  kc::copy_heads_f32(pad, nullptr);
  kc::HeadCopyF32 unpad{dpad.ptr, H * Dp, 0, Dp, dback.ptr, H * D, D, T, H, D};
  kc::copy_heads_f32(unpad, nullptr);
  const auto k = dk.read(), padded = dpad.read(), back = dback.read();
  for (std::int64_t t = 0; t < T; ++t)
    for (std::int64_t h = 0; h < H; ++h)
      for (std::int64_t c = 0; c < Dp; ++c) {
        const float src = c < D ? fused[t * 3 * H * D + H * D + h * D + c] : 0.f;
        ASSERT_EQ(padded[t * H * Dp + h * Dp + c], src) << t << " " << h << " " << c;
        if (c < D) {
          ASSERT_EQ(k[t * H * D + h * D + c], src);
          ASSERT_EQ(back[t * H * D + h * D + c], src);
        }
      }
}

TEST(EncoderKernels, Rotary2dMatchesFp64OnAPaddedLayout) {
  REQUIRE_GPU();
  const std::int64_t T = 37, H = 3, D = 72, stride = 128;
  const auto q = randoms(static_cast<std::size_t>(T * H * stride), 1.f, 11);
  const auto k = randoms(q.size(), 1.f, 12);
  std::vector<std::int32_t> ph(T), pw(T);
  for (std::int64_t t = 0; t < T; ++t) {
    ph[t] = static_cast<std::int32_t>(t / 7);
    pw[t] = static_cast<std::int32_t>(t % 7 + 30);
  }
  Dev<float> dq(q), dk(k);
  Dev<std::int32_t> dph(ph), dpw(pw);
  kc::Rotary2dF32 a;
  a.q = dq.ptr;
  a.k = dk.ptr;
  a.row = H * stride;
  a.head_stride = stride;
  a.tokens = T;
  a.heads = H;
  a.head_dim = static_cast<int>(D);
  a.pos_h = dph.ptr;
  a.pos_w = dpw.ptr;
  kc::rotary_2d_f32(a, nullptr);
  for (const auto& [in, dev] : {std::pair{&q, &dq}, std::pair{&k, &dk}}) {
    std::vector<double> want(in->begin(), in->end());  // lanes >= D untouched
    const std::int64_t half = D / 2, quarter = D / 4;
    for (std::int64_t t = 0; t < T; ++t)
      for (std::int64_t h = 0; h < H; ++h)
        for (std::int64_t i = 0; i < half; ++i) {
          const std::int64_t j = i < quarter ? i : i - quarter;
          const double angle = (i < quarter ? ph[t] : pw[t]) * std::pow(10000.0, -2.0 * j / half);
          const std::size_t base = static_cast<std::size_t>(t * H * stride + h * stride);
          const double x1 = (*in)[base + i], x2 = (*in)[base + i + half];
          want[base + i] = x1 * std::cos(angle) - x2 * std::sin(angle);
          want[base + i + half] = x2 * std::cos(angle) + x1 * std::sin(angle);
        }
    EXPECT_LT(max_rel(dev->read(), want), 1e-4);
  }
}

TEST(EncoderKernels, GatherAndScatterGroupsArePermutationsAndSkipBadIndices) {
  REQUIRE_GPU();
  const std::int64_t groups = 13, gf = 4 * 37;
  const std::vector<std::int32_t> index{3, 0, 12, 7, 1, 2, 4, 5, 6, 8, 9, 11, 10};
  const auto src = randoms(static_cast<std::size_t>(groups * gf), 1.f, 13);
  Dev<float> dsrc(src), dgath(std::vector<float>(src.size(), NAN)), dback(std::vector<float>(src.size(), NAN));
  Dev<std::int32_t> didx(index);
  kc::gather_groups_f32(dsrc.ptr, dgath.ptr, didx.ptr, groups, gf, nullptr);
  kc::scatter_groups_f32(dgath.ptr, dback.ptr, didx.ptr, groups, gf, nullptr);
  const auto gathered = dgath.read(), back = dback.read();
  for (std::int64_t g = 0; g < groups; ++g)
    for (std::int64_t e = 0; e < gf; ++e) ASSERT_EQ(gathered[g * gf + e], src[index[g] * gf + e]);
  EXPECT_EQ(back, src);  // scatter undoes gather
  // An out-of-range index leaves its group unwritten instead of reading outside the buffer.
  Dev<std::int32_t> dbad(std::vector<std::int32_t>{0, 99, -1});
  Dev<float> dout(std::vector<float>(static_cast<std::size_t>(3 * gf), 7.f));
  kc::gather_groups_f32(dsrc.ptr, dout.ptr, dbad.ptr, 3, gf, nullptr);
  const auto out = dout.read();
  EXPECT_EQ(out[0], src[0]);
  EXPECT_EQ(out[static_cast<std::size_t>(gf)], 7.f);
  EXPECT_EQ(out[static_cast<std::size_t>(2 * gf)], 7.f);
}

TEST(EncoderKernels, DeviceCopyAndArgumentChecks) {
  REQUIRE_GPU();
  const auto src = randoms(1001, 1.f, 14);
  Dev<float> dsrc(src), ddst(std::vector<float>(src.size(), 0.f));
  kc::copy_device(ddst.ptr, dsrc.ptr, src.size() * 4, nullptr);
  EXPECT_EQ(ddst.read(), src);
  EXPECT_THROW(kc::norm_rows_f32(dsrc.ptr, nullptr, nullptr, ddst.ptr, 1, 8, 1e-6, nullptr), InvalidInput);
  kc::HeadCopyF32 too_wide{dsrc.ptr, 8, 0, 8, ddst.ptr, 8, 4, 1, 1, 8};  // d > dst_head
  EXPECT_THROW(kc::copy_heads_f32(too_wide, nullptr), InvalidInput);
}

}  // namespace
}  // namespace encbench
