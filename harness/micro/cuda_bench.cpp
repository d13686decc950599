// CUDA kernels in encbench-micro (built only with ENCBENCH_HAVE_CUDA): fused_varlen and
// flash_unpad attention on the encoder's real shapes, each on the WMMA kernel and on the mma.sync
// kernel (`*_mma`, 64 queries per block; `fused_varlen_mma128`: 128), timed with CUDA events around a batch of
// launches (manual time), reported as TFLOP/s with 4 * sum(len^2) * heads * head_dim FLOPs.
// Without a GPU the cases are not registered (one line on stderr says why). scripts/gpu-verify.sh compares these
// times with torch's scaled_dot_product_attention (flash backend) on the same shapes.
#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "harness/micro/registry.hpp"
#include "kernels/cuda/cuda_kernels.hpp"

namespace encbench::micro {
namespace {

namespace kc = kernels::cuda;

struct Shape {
  std::string name;  // also the key gpu-verify.sh uses to find the torch timing
  int heads;
  int head_dim;
  std::vector<std::int32_t> lens;
};

std::vector<std::int32_t> windows(int tokens, int window) {
  std::vector<std::int32_t> lens(tokens / window, window);
  if (tokens % window) lens.push_back(tokens % window);
  return lens;
}

// Qwen2.5-VL-7B: 16 heads x 80; Qwen3-VL-8B: 16 heads x 72. 448x448 -> 32x32 = 1024 patches;
// 1280x720 -> smart_resize 1288x728 -> 92x52 = 4784 patches; windows of 8x8 patches = 64.
std::vector<Shape> shapes() {
  return {
      {"qwen25vl_448_full", 16, 80, {1024}},
      {"qwen25vl_4x448_full", 16, 80, {1024, 1024, 1024, 1024}},
      {"qwen25vl_1280x720_full", 16, 80, {4784}},
      {"qwen25vl_1280x720_window", 16, 80, windows(4784, 64)},
      {"qwen3vl_1280x720_full", 16, 72, {4784}},
      {"qwen3vl_4x1280x720_full", 16, 72, {4784, 4784, 4784, 4784}},
      {"d64_4096_full", 16, 64, {4096}},
      {"d128_4096_full", 16, 128, {4096}},
  };
}

double attention_flops(const Shape& s) {
  double flops = 0;
  for (auto len : s.lens) flops += 4.0 * len * len * s.heads * s.head_dim;
  return flops;
}

bool check(benchmark::State& state, cudaError_t status, const char* what) {
  if (status == cudaSuccess) return true;
  state.SkipWithError((std::string(what) + ": " + cudaGetErrorString(status)).c_str());
  return false;
}

enum class Variant { fused_varlen, flash_unpad, fused_varlen_mma, fused_varlen_mma128, flash_unpad_mma };

bool is_unpad(Variant v) { return v == Variant::flash_unpad || v == Variant::flash_unpad_mma; }

// Enqueues one attention of `variant` (the unpad variants take the 64-row work list).
void launch_variant(Variant variant, const kc::AttentionTensors& t, const Shape& shape, const void* cu_dev,
                    const void* work_dev, int work_tiles) {
  const auto* cu = static_cast<const std::int32_t*>(cu_dev);
  const auto* work = static_cast<const std::int32_t*>(work_dev);
  const int segments = static_cast<int>(shape.lens.size());
  switch (variant) {
    case Variant::fused_varlen: return kc::fused_varlen_attention(t, cu, segments, nullptr);
    case Variant::fused_varlen_mma: return kc::fused_varlen_attention_mma(t, cu, segments, nullptr, 64);
    case Variant::fused_varlen_mma128: return kc::fused_varlen_attention_mma(t, cu, segments, nullptr, 128);
    case Variant::flash_unpad: return kc::flash_unpad_attention(t, shape.head_dim, work, work_tiles, nullptr);
    case Variant::flash_unpad_mma:
      return kc::flash_unpad_attention_mma(t, shape.head_dim, work, work_tiles, nullptr, 64);
  }
}

// Normal random q/k/v values. One draw serves every rotating input set: set s starts s*d values
// further in (whole head-dim rows, so flash-unpad's zero columns stay in place); a draw per set
// cost ~1 s of host time per large case, most of a short GPU lease with three kernels per shape.
std::vector<float> draw_inputs(const Shape& shape, Variant variant, int d, std::size_t count) {
  std::vector<float> host(count);
  std::mt19937 rng(1);
  std::normal_distribution<float> dist(0.f, 1.f);
  for (std::size_t i = 0; i < host.size(); ++i) {
    // Padded head-dim columns of flash-unpad stay zero, as after pad_last_dim.
    host[i] = (is_unpad(variant) && static_cast<int>(i % d) >= shape.head_dim) ? 0.f : dist(rng);
  }
  return host;
}

void run_attention(benchmark::State& state, const Shape& shape, Variant variant) {
  std::string why;
  if (kc::device_count(&why) == 0) {
    state.SkipWithError(("no CUDA device: " + why).c_str());
    return;
  }
  std::vector<std::int32_t> cu{0};
  for (auto l : shape.lens) cu.push_back(cu.back() + l);
  const std::int32_t total = cu.back();
  const int d = is_unpad(variant) ? 128 : shape.head_dim;
  const std::size_t n = static_cast<std::size_t>(total) * shape.heads * d;
  // Four rotating input sets so repeated launches do not only measure L2.
  constexpr int kSets = 4;
  void* qkv[kSets] = {};
  void *out = nullptr, *cu_dev = nullptr, *work_dev = nullptr, *f32 = nullptr;
  auto release = [&] {
    for (void* p : qkv) cudaFree(p);
    cudaFree(out);
    cudaFree(cu_dev);
    cudaFree(work_dev);
    cudaFree(f32);
  };
  if (!check(state, cudaMalloc(&out, n * 2), "cudaMalloc") ||
      !check(state, cudaMalloc(&f32, 3 * n * 4), "cudaMalloc") ||
      !check(state, cudaMalloc(&cu_dev, cu.size() * 4), "cudaMalloc")) {
    release();
    return;
  }
  const auto host = draw_inputs(shape, variant, d, 3 * n + (kSets - 1) * static_cast<std::size_t>(d));
  for (int set = 0; set < kSets; ++set) {
    if (!check(state, cudaMalloc(&qkv[set], 3 * n * 2), "cudaMalloc") ||
        !check(state, cudaMemcpy(f32, host.data() + set * d, 3 * n * 4, cudaMemcpyHostToDevice), "cudaMemcpy")) {
      release();
      return;
    }
    kc::convert_from_f32(kc::DType::bf16, static_cast<float*>(f32), static_cast<std::int64_t>(3 * n), qkv[set], nullptr);
  }
  cudaMemcpy(cu_dev, cu.data(), cu.size() * 4, cudaMemcpyHostToDevice);
  const auto work = kc::build_unpad_work_list(shape.lens.data(), static_cast<int>(shape.lens.size()));
  if (is_unpad(variant)) {
    cudaMalloc(&work_dev, work.size() * 4);
    cudaMemcpy(work_dev, work.data(), work.size() * 4, cudaMemcpyHostToDevice);
  }
  // A launch error (or a fault of an earlier launch, which CUDA reports at the next one) becomes this
  // case's error instead of an exception that would end the run and lose the JSON of every case.
  auto launch = [&](int set) {
    kc::AttentionTensors t;
    t.dtype = kc::DType::bf16;
    t.q = qkv[set];
    t.k = static_cast<char*>(qkv[set]) + n * 2;
    t.v = static_cast<char*>(qkv[set]) + 2 * n * 2;
    t.out = out;
    t.total_tokens = total;
    t.num_heads = shape.heads;
    t.head_dim = d;
    try {
      launch_variant(variant, t, shape, cu_dev, work_dev, static_cast<int>(work.size() / 3));
      return true;
    } catch (const std::exception& e) {
      state.SkipWithError(e.what());
      return false;
    }
  };
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  bool ok = true;
  for (int i = 0; i < 3 && ok; ++i) ok = launch(i % kSets);  // warm-up: module load, attribute setup
  if (!ok || !check(state, cudaDeviceSynchronize(), "warm-up")) {
    release();
    return;
  }
  constexpr int kBatch = 20;
  for (auto _ : state) {
    cudaEventRecord(start);
    for (int i = 0; i < kBatch && ok; ++i) ok = launch(i % kSets);
    cudaEventRecord(stop);
    if (!ok || !check(state, cudaEventSynchronize(stop), "attention")) break;
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    state.SetIterationTime(ms / 1e3 / kBatch);
  }
  const double flops = attention_flops(shape);
  state.counters["TFLOP/s"] = benchmark::Counter(flops / 1e12, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["tokens"] = total;
  state.counters["segments"] = static_cast<double>(shape.lens.size());
  state.SetLabel(kc::device_description(0));
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  release();
}

}  // namespace

void register_cuda_benchmarks() {
  std::string why;
  if (kc::device_count(&why) == 0) {  // one line instead of a column of errors on CPU machines
    std::fprintf(stderr, "encbench-micro: CUDA cases not registered (no CUDA device: %s)\n", why.c_str());
    return;
  }
  const std::pair<const char*, Variant> varlen[] = {{"cuda/fused_varlen/", Variant::fused_varlen},
                                                    {"cuda/fused_varlen_mma/", Variant::fused_varlen_mma},
                                                    {"cuda/fused_varlen_mma128/", Variant::fused_varlen_mma128}};
  const std::pair<const char*, Variant> unpad[] = {{"cuda/flash_unpad/", Variant::flash_unpad},
                                                   {"cuda/flash_unpad_mma/", Variant::flash_unpad_mma}};
  auto add = [](const std::string& name, const Shape& shape, Variant variant) {
    benchmark::RegisterBenchmark(name.c_str(), [shape, variant](benchmark::State& st) { run_attention(st, shape, variant); })
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
  };
  for (const auto& shape : shapes()) {
    for (const auto& [prefix, variant] : varlen) add(prefix + shape.name, shape, variant);
    if (shape.head_dim == 80)
      for (const auto& [prefix, variant] : unpad) add(prefix + shape.name, shape, variant);
  }
}

}  // namespace encbench::micro
