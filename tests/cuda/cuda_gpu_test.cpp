// Tests that need a GPU: kernels against fp64 CPU references, device semantics, the CUPTI
// timeline and graph replay with per-layer lengths. Every test skips with a message when no CUDA
// device is present (CI compiles them; scripts/gpu-verify.sh runs them on a GPU).
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tests/cuda/require_gpu.hpp"
#include "harness/core/error.hpp"
#include "harness/device_cuda/cuda_device.hpp"
#include "harness/timeline/gaps.hpp"
#include "kernels/cuda/cuda_kernels.hpp"

namespace encbench {
namespace {

namespace kc = kernels::cuda;


#define CUDA_OK(call) ASSERT_EQ((call), cudaSuccess) << #call
// For helpers that return a value: a failed call is recorded and the result is then meaningless.
#define CUDA_OK_OR(call) EXPECT_EQ((call), cudaSuccess) << #call

// Device allocation freed at scope exit (tests only).
struct DeviceMem {
  void* ptr = nullptr;
  explicit DeviceMem(std::size_t bytes) { EXPECT_EQ(cudaMalloc(&ptr, bytes), cudaSuccess); }
  ~DeviceMem() { cudaFree(ptr); }
  template <class T> T* as() const { return static_cast<T*>(ptr); }
};

// Uploads fp32 values, rounds them to `dtype` on the device, and returns the rounded values as
// the host sees them (the reference must use exactly what the kernel reads).
std::vector<float> upload_rounded(kc::DType dtype, const std::vector<float>& values, void* dst16) {
  DeviceMem f32(values.size() * 4);
  EXPECT_EQ(cudaMemcpy(f32.ptr, values.data(), values.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);
  kc::convert_from_f32(dtype, f32.as<float>(), static_cast<std::int64_t>(values.size()), dst16, nullptr);
  kc::convert_to_f32(dtype, dst16, static_cast<std::int64_t>(values.size()), f32.as<float>(), nullptr);
  std::vector<float> rounded(values.size());
  EXPECT_EQ(cudaMemcpy(rounded.data(), f32.ptr, values.size() * 4, cudaMemcpyDeviceToHost), cudaSuccess);
  return rounded;
}

std::vector<float> download_f32(kc::DType dtype, const void* src16, std::size_t n) {
  DeviceMem f32(n * 4);
  kc::convert_to_f32(dtype, src16, static_cast<std::int64_t>(n), f32.as<float>(), nullptr);
  std::vector<float> out(n);
  EXPECT_EQ(cudaMemcpy(out.data(), f32.ptr, n * 4, cudaMemcpyDeviceToHost), cudaSuccess);
  return out;
}

// q, k and v as views into one fused 16-bit qkv [T, 3, H, D] (token stride 3*H*D), as the
// encoder's qkv projection lays them out: the kernels must read them without a copy.
kc::AttentionTensors fused_qkv_views(kc::DType dtype, char* qkv, void* out, std::int32_t total, int heads, int d) {
  kc::AttentionTensors t;
  t.dtype = dtype;
  t.q = qkv;
  t.k = qkv + heads * d * 2;
  t.v = qkv + 2 * heads * d * 2;
  t.q_stride = t.k_stride = t.v_stride = 3LL * heads * d;
  t.out = out;
  t.total_tokens = total;
  t.num_heads = heads;
  t.head_dim = d;
  return t;
}

std::vector<float> random_values(std::size_t n, unsigned seed, float scale = 1.f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// fp64 varlen attention on [T, H, D] views with token strides (elements).
std::vector<double> attention_fp64(const std::vector<float>& q, const std::vector<float>& k,
                                   const std::vector<float>& v, std::int64_t stride,
                                   const std::vector<std::int32_t>& cu, int heads, int d, int scale_dim) {
  const std::int32_t total = cu.back();
  std::vector<double> out(static_cast<std::size_t>(total) * heads * d, 0.0);
  const double scale = 1.0 / std::sqrt(static_cast<double>(scale_dim));
  std::vector<double> p;
  for (std::size_t s = 0; s + 1 < cu.size(); ++s) {
    for (int h = 0; h < heads; ++h) {
      for (std::int32_t i = cu[s]; i < cu[s + 1]; ++i) {
        p.assign(static_cast<std::size_t>(cu[s + 1] - cu[s]), 0.0);
        double mx = -1e300;
        for (std::int32_t j = cu[s]; j < cu[s + 1]; ++j) {
          double dot = 0;
          for (int c = 0; c < d; ++c) dot += double(q[i * stride + h * d + c]) * k[j * stride + h * d + c];
          p[j - cu[s]] = dot * scale;
          mx = std::max(mx, p[j - cu[s]]);
        }
        double sum = 0;
        for (auto& x : p) sum += (x = std::exp(x - mx));
        for (std::int32_t j = cu[s]; j < cu[s + 1]; ++j)
          for (int c = 0; c < d; ++c)
            out[(static_cast<std::size_t>(i) * heads + h) * d + c] += p[j - cu[s]] / sum * v[j * stride + h * d + c];
      }
    }
  }
  return out;
}

double relative_error(const std::vector<float>& got, const std::vector<double>& ref) {
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    if (!std::isfinite(got[i])) return INFINITY;
    diff += (got[i] - ref[i]) * (got[i] - ref[i]);
    norm += ref[i] * ref[i];
  }
  return std::sqrt(diff / norm);
}

struct AttentionCase {
  kc::DType dtype;
  int head_dim;
};

class FusedVarlen : public ::testing::TestWithParam<AttentionCase> {};

// q, k, v are views into one fused qkv [T, 3, H, D] (the projection's output layout), lengths
// mix windows (64), full images (>64, not multiples of 64) and an empty padded tail.
TEST_P(FusedVarlen, MatchesFp64Reference) {
  REQUIRE_GPU();
  const auto [dtype, d] = GetParam();
  const int heads = 4;
  const std::vector<std::int32_t> lens{64, 1, 200, 64, 130, 0, 17};
  std::vector<std::int32_t> cu{0};
  for (auto l : lens) cu.push_back(cu.back() + l);
  cu.push_back(cu.back());  // capacity entry: an empty segment
  const std::int32_t total = cu.back();
  const std::int64_t stride = 3LL * heads * d;
  const auto host_qkv = random_values(static_cast<std::size_t>(total) * stride, 42 + d);
  DeviceMem qkv(host_qkv.size() * 2), out(static_cast<std::size_t>(total) * heads * d * 2),
      cu_dev(cu.size() * 4);
  const auto rounded = upload_rounded(dtype, host_qkv, qkv.ptr);
  CUDA_OK(cudaMemcpy(cu_dev.ptr, cu.data(), cu.size() * 4, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemset(out.ptr, 0xff, static_cast<std::size_t>(total) * heads * d * 2));  // poison: NaN

  kc::AttentionTensors t = fused_qkv_views(dtype, qkv.as<char>(), out.ptr, total, heads, d);
  kc::fused_varlen_attention(t, cu_dev.as<std::int32_t>(), static_cast<int>(cu.size()) - 1, nullptr);
  CUDA_OK(cudaDeviceSynchronize());

  std::vector<float> q(rounded), k(rounded.begin() + heads * d, rounded.end()),
      v(rounded.begin() + 2 * heads * d, rounded.end());
  k.resize(rounded.size());
  v.resize(rounded.size());
  const auto ref = attention_fp64(q, k, v, stride, cu, heads, d, d);
  const auto got = download_f32(dtype, out.ptr, ref.size());
  const double err = relative_error(got, ref);
  EXPECT_LT(err, dtype == kc::DType::bf16 ? 1e-2 : 2e-3) << "head_dim " << d << " " << kc::to_string(dtype);
}

INSTANTIATE_TEST_SUITE_P(HeadDims, FusedVarlen,
                         ::testing::Values(AttentionCase{kc::DType::bf16, 64}, AttentionCase{kc::DType::bf16, 72},
                                           AttentionCase{kc::DType::bf16, 80}, AttentionCase{kc::DType::bf16, 128},
                                           AttentionCase{kc::DType::fp16, 72}, AttentionCase{kc::DType::fp16, 80}));

// fp64 attention on views into fused qkv [T, 3, H, D] (token stride `stride`), the same math
// as attention_fp64 but spread over all cores by query token (interleaved, so the long segment's
// costly rows are shared out): the 4784-token segment below takes tens of seconds serially.
std::vector<double> attention_fp64_parallel(const std::vector<float>& qkv, std::int64_t stride,
                                            const std::vector<std::int32_t>& cu, int heads, int d) {
  const std::int32_t total = cu.back();
  std::vector<double> out(static_cast<std::size_t>(total) * heads * d, 0.0);
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  auto at = [&](std::int64_t t, int which, int h, int c) { return double(qkv[t * stride + (which * heads + h) * d + c]); };
  auto one_row = [&](std::int32_t i, int h, std::vector<double>& p) {
    const auto seg = std::upper_bound(cu.begin(), cu.end(), i) - cu.begin() - 1;  // cu[seg] <= i < cu[seg+1]
    const std::int32_t begin = cu[seg], end = cu[seg + 1];
    p.assign(static_cast<std::size_t>(end - begin), 0.0);
    double mx = -1e300, sum = 0;
    for (std::int32_t j = begin; j < end; ++j) {
      double dot = 0;
      for (int c = 0; c < d; ++c) dot += at(i, 0, h, c) * at(j, 1, h, c);
      mx = std::max(mx, p[j - begin] = dot * scale);
    }
    for (auto& x : p) sum += (x = std::exp(x - mx));
    for (std::int32_t j = begin; j < end; ++j)
      for (int c = 0; c < d; ++c) out[(static_cast<std::size_t>(i) * heads + h) * d + c] += p[j - begin] / sum * at(j, 2, h, c);
  };
  const int workers = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w)
    threads.emplace_back([&, w] {
      std::vector<double> p;
      for (std::int64_t r = w; r < static_cast<std::int64_t>(total) * heads; r += workers)
        one_row(static_cast<std::int32_t>(r / heads), static_cast<int>(r % heads), p);
    });
  for (auto& t : threads) t.join();
  return out;
}

struct MmaCase {
  kc::DType dtype;
  int head_dim;
  int queries_per_block;
};

class FusedVarlenMma : public ::testing::TestWithParam<MmaCase> {};

// The mma kernel on q/k/v views into fused qkv [T, 3, H, D]. Lengths hit every tail case of the
// 64-row Q and 64-key K/V tiles (1, 15, 63, 64, 65, 127), an empty segment in the middle, a long
// image (4784: 75 key steps, so both K/V buffers are reused many times) and an empty capacity
// entry. Inputs have std 2 so scores spread over ~+-12 and the running max moves often. The
// output starts as NaN: any element the kernel misses fails the finite check.
TEST_P(FusedVarlenMma, MatchesFp64ReferenceAndTheWmmaKernel) {
  REQUIRE_GPU();
  const auto [dtype, d, block] = GetParam();
  const int heads = 2;
  const std::vector<std::int32_t> lens{1, 15, 63, 64, 65, 0, 127, 4784};
  std::vector<std::int32_t> cu{0};
  for (auto l : lens) cu.push_back(cu.back() + l);
  cu.push_back(cu.back());  // capacity entry: an empty segment
  const std::int32_t total = cu.back();
  const std::int64_t stride = 3LL * heads * d;
  const std::size_t n_out = static_cast<std::size_t>(total) * heads * d;
  const auto host_qkv = random_values(static_cast<std::size_t>(total) * stride, 7 + d + block, 2.f);
  DeviceMem qkv(host_qkv.size() * 2), out(n_out * 2), out_wmma(n_out * 2), cu_dev(cu.size() * 4);
  const auto rounded = upload_rounded(dtype, host_qkv, qkv.ptr);
  CUDA_OK(cudaMemcpy(cu_dev.ptr, cu.data(), cu.size() * 4, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemset(out.ptr, 0xff, n_out * 2));  // poison: NaN in bf16 and fp16
  CUDA_OK(cudaMemset(out_wmma.ptr, 0xff, n_out * 2));

  kc::AttentionTensors t = fused_qkv_views(dtype, qkv.as<char>(), out.ptr, total, heads, d);
  const int segments = static_cast<int>(cu.size()) - 1;
  kc::fused_varlen_attention_mma(t, cu_dev.as<std::int32_t>(), segments, nullptr, block);
  t.out = out_wmma.ptr;
  kc::fused_varlen_attention(t, cu_dev.as<std::int32_t>(), segments, nullptr);
  CUDA_OK(cudaDeviceSynchronize());

  const auto got = download_f32(dtype, out.ptr, n_out);
  std::size_t not_finite = 0;
  for (float x : got) not_finite += std::isfinite(x) ? 0 : 1;
  EXPECT_EQ(not_finite, 0u) << "elements left unwritten (NaN poison) or overflowed";
  const auto ref = attention_fp64_parallel(rounded, stride, cu, heads, d);
  const double tolerance = dtype == kc::DType::bf16 ? 1e-2 : 2e-3;
  const double err = relative_error(got, ref);
  EXPECT_LT(err, tolerance) << "head_dim " << d << " " << kc::to_string(dtype) << " block " << block;
  EXPECT_GT(err, 0.0) << "bit-identical to fp64 would mean the reference is not independent";
  const auto wmma = download_f32(dtype, out_wmma.ptr, n_out);
  std::vector<double> wmma_as_ref(wmma.begin(), wmma.end());
  EXPECT_LT(relative_error(got, wmma_as_ref), tolerance) << "mma and WMMA kernels disagree";
}

INSTANTIATE_TEST_SUITE_P(HeadDims, FusedVarlenMma,
                         ::testing::Values(MmaCase{kc::DType::bf16, 64, 64}, MmaCase{kc::DType::bf16, 72, 64},
                                           MmaCase{kc::DType::bf16, 80, 64}, MmaCase{kc::DType::bf16, 128, 64},
                                           MmaCase{kc::DType::fp16, 72, 64}, MmaCase{kc::DType::fp16, 80, 64},
                                           MmaCase{kc::DType::bf16, 80, 128}, MmaCase{kc::DType::bf16, 128, 128}),
                         [](const ::testing::TestParamInfo<MmaCase>& info) {  // e.g. bf16_d80_q64
                           return std::string(kc::to_string(info.param.dtype)) + "_d" +
                                  std::to_string(info.param.head_dim) + "_q" +
                                  std::to_string(info.param.queries_per_block);
                         });

// flash-unpad on q/k/v padded 80 -> 128 in device memory, through the WMMA or the mma kernel;
// returns the relative error against the fp64 reference on the unpadded inputs.
double flash_unpad_error(bool use_mma) {
  const int heads = 2, d = 80, dp = 128;
  const std::vector<std::int32_t> lens{100, 64, 33};
  std::vector<std::int32_t> cu{0};
  for (auto l : lens) cu.push_back(cu.back() + l);
  const std::int32_t total = cu.back();
  const std::size_t n = static_cast<std::size_t>(total) * heads * d, np = static_cast<std::size_t>(total) * heads * dp;
  DeviceMem q(n * 2), k(n * 2), v(n * 2), qp(np * 2), kp(np * 2), vp(np * 2), outp(np * 2), out(n * 2);
  const auto hq = upload_rounded(kc::DType::bf16, random_values(n, 1), q.ptr);
  const auto hk = upload_rounded(kc::DType::bf16, random_values(n, 2), k.ptr);
  const auto hv = upload_rounded(kc::DType::bf16, random_values(n, 3), v.ptr);
  const std::int64_t rows = static_cast<std::int64_t>(total) * heads;
  kc::pad_last_dim(q.ptr, rows, d, dp, qp.ptr, nullptr);
  kc::pad_last_dim(k.ptr, rows, d, dp, kp.ptr, nullptr);
  kc::pad_last_dim(v.ptr, rows, d, dp, vp.ptr, nullptr);
  const auto work = kc::build_unpad_work_list(lens.data(), static_cast<int>(lens.size()));
  DeviceMem work_dev(work.size() * 4);
  CUDA_OK_OR(cudaMemcpy(work_dev.ptr, work.data(), work.size() * 4, cudaMemcpyHostToDevice));
  kc::AttentionTensors t;
  t.q = qp.ptr;
  t.k = kp.ptr;
  t.v = vp.ptr;
  t.out = outp.ptr;
  t.total_tokens = total;
  t.num_heads = heads;
  t.head_dim = dp;
  CUDA_OK_OR(cudaMemset(outp.ptr, 0xff, np * 2));  // poison: NaN wherever nothing is written
  if (use_mma)
    kc::flash_unpad_attention_mma(t, d, work_dev.as<std::int32_t>(), static_cast<int>(work.size() / 3), nullptr);
  else
    kc::flash_unpad_attention(t, d, work_dev.as<std::int32_t>(), static_cast<int>(work.size() / 3), nullptr);
  kc::unpad_last_dim(outp.ptr, rows, dp, d, out.ptr, nullptr);
  CUDA_OK_OR(cudaDeviceSynchronize());
  const auto ref = attention_fp64(hq, hk, hv, static_cast<std::int64_t>(heads) * d, cu, heads, d, d);
  return relative_error(download_f32(kc::DType::bf16, out.ptr, n), ref);
}

TEST(FlashUnpad, PaddedTo128MatchesReferenceWithOriginalScale) {
  REQUIRE_GPU();
  EXPECT_LT(flash_unpad_error(false), 1e-2);
}

TEST(FlashUnpadMma, PaddedTo128MatchesReferenceWithOriginalScale) {
  REQUIRE_GPU();
  EXPECT_LT(flash_unpad_error(true), 1e-2);
}

TEST(SimpleKernels, RotaryLayoutDiffAndGemmMatchReferences) {
  REQUIRE_GPU();
  const kc::DType dt = kc::DType::fp16;
  // rotary on [T, H, D]
  const int t = 37, h = 3, d = 80;
  const std::size_t n = static_cast<std::size_t>(t) * h * d;
  DeviceMem x(n * 2), cs(static_cast<std::size_t>(t) * d * 4), sn(static_cast<std::size_t>(t) * d * 4);
  const auto hx = upload_rounded(dt, random_values(n, 9), x.ptr);
  const auto hc = random_values(static_cast<std::size_t>(t) * d, 10), hs = random_values(static_cast<std::size_t>(t) * d, 11);
  CUDA_OK(cudaMemcpy(cs.ptr, hc.data(), hc.size() * 4, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(sn.ptr, hs.data(), hs.size() * 4, cudaMemcpyHostToDevice));
  kc::rotary_vision(dt, x.ptr, nullptr, t, h, 0, d, cs.as<float>(), sn.as<float>(), nullptr);
  std::vector<double> ref(n);
  for (int i = 0; i < t; ++i)
    for (int j = 0; j < h; ++j)
      for (int c = 0; c < d; ++c) {
        const float* row = &hx[(static_cast<std::size_t>(i) * h + j) * d];
        const double rot = c < d / 2 ? -row[c + d / 2] : row[c - d / 2];
        ref[(static_cast<std::size_t>(i) * h + j) * d + c] = row[c] * double(hc[i * d + c]) + rot * hs[i * d + c];
      }
  EXPECT_LT(relative_error(download_f32(dt, x.ptr, n), ref), 2e-3);

  // layout copy: [T, H, D] -> [H, T, D]
  DeviceMem y(n * 2);
  kc::LayoutCopy copy;
  copy.src = x.ptr;
  copy.dst = y.ptr;
  copy.rank = 3;
  copy.sizes[0] = h; copy.sizes[1] = t; copy.sizes[2] = d;
  copy.src_strides[0] = d; copy.src_strides[1] = static_cast<std::int64_t>(h) * d; copy.src_strides[2] = 1;
  kc::layout_copy(copy, nullptr);
  const auto xs = download_f32(dt, x.ptr, n), ys = download_f32(dt, y.ptr, n);
  for (int j = 0; j < h; ++j)
    for (int i = 0; i < t; ++i)
      for (int c = 0; c < d; ++c)
        ASSERT_EQ(ys[(static_cast<std::size_t>(j) * t + i) * d + c], xs[(static_cast<std::size_t>(i) * h + j) * d + c]);

  // diff of cu_seqlens
  const std::vector<std::int32_t> cu{0, 64, 64, 200, 1024};
  DeviceMem cu_dev(cu.size() * 4), lens(cu.size() * 4);
  CUDA_OK(cudaMemcpy(cu_dev.ptr, cu.data(), cu.size() * 4, cudaMemcpyHostToDevice));
  kc::cu_seqlens_diff(cu_dev.as<std::int32_t>(), 4, lens.as<std::int32_t>(), nullptr);
  std::vector<std::int32_t> got(4);
  CUDA_OK(cudaMemcpy(got.data(), lens.ptr, 16, cudaMemcpyDeviceToHost));
  EXPECT_EQ(got, (std::vector<std::int32_t>{64, 0, 136, 824}));

  // GEMM + bias (nn.Linear)
  const int m = 70, nn = 48, kk = 96;
  DeviceMem a(m * kk * 2), w(nn * kk * 2), b(nn * 2), o(m * nn * 2);
  const auto ha = upload_rounded(kc::DType::bf16, random_values(m * kk, 20), a.ptr);
  const auto hw = upload_rounded(kc::DType::bf16, random_values(nn * kk, 21), w.ptr);
  const auto hb = upload_rounded(kc::DType::bf16, random_values(nn, 22), b.ptr);
  kc::BlasHandle blas;
  kc::gemm(blas, {kc::DType::bf16, a.ptr, w.ptr, b.ptr, o.ptr, m, nn, kk}, nullptr);
  std::vector<double> gref(m * nn);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < nn; ++j) {
      double acc = hb[j];
      for (int c = 0; c < kk; ++c) acc += double(ha[i * kk + c]) * hw[j * kk + c];
      gref[i * nn + j] = acc;
    }
  EXPECT_LT(relative_error(download_f32(kc::DType::bf16, o.ptr, m * nn), gref), 1e-2);
}

device::DeviceOptions cuda_options(device::AllocMode mode = device::AllocMode::caching) {
  device::DeviceOptions options;
  options.spec = "cuda:0";
  options.alloc_mode = mode;
  return options;
}

TEST(CudaDeviceSemantics, CopiesAllocatorModesAndErrors) {
  REQUIRE_GPU();
  for (auto mode : {device::AllocMode::caching, device::AllocMode::fresh}) {
    auto dev = device::make_cuda_device(cuda_options(mode));
    EXPECT_EQ(dev->info().kind, "cuda:0");
    EXPECT_FALSE(dev->info().host_visible_memory);
    auto& stream = dev->default_stream();
    std::vector<int> src(1000), back(1000, -1);
    for (int i = 0; i < 1000; ++i) src[i] = i * 7;
    for (int round = 0; round < 3; ++round) {
      device::Buffer buffer = dev->allocator().allocate(src.size() * sizeof(int));
      stream.copy_h2d(buffer, 0, src.data(), src.size() * sizeof(int), "upload");
      std::fill(src.begin(), src.end(), 0);  // staged at submit: reuse is allowed at once
      stream.copy_d2h(back.data(), buffer, 0, back.size() * sizeof(int), "readback");
      for (int i = 0; i < 1000; ++i) ASSERT_EQ(back[i], i * 7);
      for (int i = 0; i < 1000; ++i) src[i] = i * 7;
    }
    const auto stats = dev->allocator().stats();
    EXPECT_EQ(stats.requests, 3u);
    if (mode == device::AllocMode::caching) {
      EXPECT_EQ(stats.system_allocations, 1u);
      EXPECT_EQ(stats.cache_hits, 2u);
    } else {
      EXPECT_EQ(stats.system_allocations, 3u);
      EXPECT_EQ(stats.cache_hits, 0u);
    }
    device::KernelLaunch cpu_only;
    cpu_only.name = "cpu_only";
    cpu_only.body = [](kernels::WorkerPool&) {};
    EXPECT_THROW(stream.launch(cpu_only), InvalidInput);
    device::Buffer small = dev->allocator().allocate(16);
    EXPECT_THROW(stream.copy_d2h(back.data(), small, 8, 16, "out of range"), InvalidInput);
  }
}

TEST(CudaTimeline, CuptiRecordsAreOrderedOnTheHostClockAndD2hWaitIsVisible) {
  REQUIRE_GPU();
  auto dev = device::make_cuda_device(cuda_options());
  auto& stream = dev->default_stream();
  const std::size_t bytes = 64 << 20;
  device::Buffer a = dev->allocator().allocate(bytes), b = dev->allocator().allocate(bytes);
  const Nanos begin = now_ns();
  for (int layer = 0; layer < 4; ++layer) {
    device::KernelLaunch op;
    op.name = "copy_kernel";
    op.layer = layer;
    op.native_body = [&](void* s) {
      ASSERT_EQ(cudaMemcpyAsync(b.data(), a.data(), bytes, cudaMemcpyDeviceToDevice, static_cast<cudaStream_t>(s)),
                cudaSuccess);
    };
    stream.launch(op);
    std::int32_t lens = 0;
    stream.copy_d2h(&lens, a, 0, sizeof(lens), "seq_lens_d2h", layer);
  }
  const Nanos end = now_ns();
  const auto timeline = dev->collect_timeline();
  std::size_t kernels = 0, d2h = 0;
  for (const auto& op : timeline.device_ops) {
    if (op.category == timeline::OpCategory::sync) continue;
    EXPECT_GE(op.start_ns, begin);
    EXPECT_LE(op.end_ns, end);
    EXPECT_LT(op.start_ns, op.end_ns) << op.name;
    EXPECT_GE(op.start_ns + 50'000, op.submit_ns) << "device start before its submit: clock mapping";
    kernels += op.name == "copy_kernel";
    d2h += op.category == timeline::OpCategory::memcpy_d2h;
  }
  EXPECT_EQ(kernels, 4u);
  EXPECT_EQ(d2h, 4u);
  for (std::size_t i = 1; i < timeline.device_ops.size(); ++i)
    EXPECT_GE(timeline.device_ops[i].start_ns, timeline.device_ops[i - 1].start_ns);
  // Each D2H wait span ends after its copy ended (the host waited for it).
  std::size_t waits = 0;
  for (const auto& span : timeline.host_spans) {
    if (span.kind != timeline::HostSpanKind::wait || span.name != "seq_lens_d2h") continue;
    ++waits;
    for (const auto& op : timeline.device_ops)
      if (op.id == span.op_id) {
        EXPECT_GE(span.end_ns + 50'000, op.end_ns);
      }
  }
  EXPECT_EQ(waits, 4u);
  const auto gaps = timeline::analyze_gaps(timeline);
  EXPECT_EQ(gaps.op_count, 8u);
  EXPECT_GT(gaps.busy_ns, 0);
}

// Two "layers" with different lengths (window: 64-token segments, full: one segment) captured
// into one graph; the replay must bind each layer's own cu_seqlens buffer, and rewriting the
// buffers between replays must change the result accordingly.
TEST(CudaGraph, ReplayBindsPerLayerLengths) {
  REQUIRE_GPU();
  auto dev = device::make_cuda_device(cuda_options());
  auto& stream = dev->default_stream();
  auto* graph_stream = device::as_graph_stream(stream);
  ASSERT_NE(graph_stream, nullptr);
  const int heads = 2, d = 80, total = 256;
  const std::size_t n = static_cast<std::size_t>(total) * heads * d;
  DeviceMem q(n * 2), k(n * 2), v(n * 2), out_window(n * 2), out_full(n * 2);
  const auto hq = upload_rounded(kc::DType::bf16, random_values(n, 31), q.ptr);
  const auto hk = upload_rounded(kc::DType::bf16, random_values(n, 32), k.ptr);
  const auto hv = upload_rounded(kc::DType::bf16, random_values(n, 33), v.ptr);
  const int capacity = 8;  // segments per buffer (padded with empty segments)
  device::Buffer cu_window = dev->allocator().allocate((capacity + 1) * 4);
  device::Buffer cu_full = dev->allocator().allocate((capacity + 1) * 4);
  auto padded = [&](std::vector<std::int32_t> cu) {
    while (static_cast<int>(cu.size()) < capacity + 1) cu.push_back(cu.back());
    return cu;
  };
  auto attention = [&](const device::Buffer& cu, void* out, int layer) {
    device::KernelLaunch op;
    op.name = "attention";
    op.layer = layer;
    op.native_body = [&, cu_ptr = cu.as<std::int32_t>(), out](void* s) {
      kc::AttentionTensors t;
      t.q = q.ptr; t.k = k.ptr; t.v = v.ptr; t.out = out;
      t.total_tokens = total; t.num_heads = heads; t.head_dim = d;
      kc::fused_varlen_attention(t, cu_ptr, capacity, s);
    };
    stream.launch(op);
  };
  graph_stream->begin_capture();
  attention(cu_window, out_window.ptr, 0);
  attention(cu_full, out_full.ptr, 1);
  auto graph = graph_stream->end_capture();
  EXPECT_EQ(graph->captured_ops(), 2u);

  const std::vector<std::vector<std::int32_t>> inputs[] = {
      {{0, 64, 128, 192, 256}, {0, 256}},  // windows vs one image
      {{0, 100, 256}, {0, 50, 256}},       // new lengths, same capture
  };
  for (const auto& set : inputs) {
    const auto w = padded(set[0]), f = padded(set[1]);
    stream.copy_h2d(cu_window, 0, w.data(), w.size() * 4, "cu_window_h2d");
    stream.copy_h2d(cu_full, 0, f.data(), f.size() * 4, "cu_full_h2d");
    graph->replay();
    dev->synchronize();
    const auto ref_w = attention_fp64(hq, hk, hv, heads * d, set[0], heads, d, d);
    const auto ref_f = attention_fp64(hq, hk, hv, heads * d, set[1], heads, d, d);
    const auto got_w = download_f32(kc::DType::bf16, out_window.ptr, n);
    const auto got_f = download_f32(kc::DType::bf16, out_full.ptr, n);
    EXPECT_LT(relative_error(got_w, ref_w), 1e-2);
    EXPECT_LT(relative_error(got_f, ref_f), 1e-2);
    // The guard's premise: binding the window lengths to the full layer is detectable.
    EXPECT_GT(relative_error(got_f, ref_w), 5e-2);
  }
  const auto timeline = dev->collect_timeline();
  std::size_t replayed_attention = 0;
  for (const auto& op : timeline.device_ops) replayed_attention += op.name == "attention";
  EXPECT_EQ(replayed_attention, 4u) << "each replay shows its captured nodes by name";
}

}  // namespace
}  // namespace encbench
