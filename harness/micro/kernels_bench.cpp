// Attention and GEMM kernels in encbench-micro: GFLOP/s (4 * sum(len^2) * heads * head_dim for
// attention, 2mnk for GEMM) and the fraction of the fp32 FMA peak measured on this machine at
// startup with the same loop as `encbench peak` (reported in the benchmark context).
#include <benchmark/benchmark.h>
#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "harness/core/clock.hpp"
#include "harness/micro/blis_sgemm.hpp"
#include "harness/micro/gemm_anchor.hpp"
#include "harness/micro/registry.hpp"
#include "harness/tuning/tile_selection.hpp"
#include "kernels/attention.hpp"
#include "kernels/blocking.hpp"
#include "kernels/cost.hpp"
#include "kernels/ops.hpp"
#include "kernels/peak.hpp"
#include "kernels/thread_pool.hpp"
#include "kernels/tuning.hpp"

namespace encbench::micro {
namespace {

using namespace encbench::kernels;

constexpr int kHeads = 16;

struct AttnLayout {
  const char* name;
  std::vector<std::int32_t> lens;
};

std::vector<AttnLayout> attention_layouts() {
  return {
      {"1x1024", {1024}},
      {"1x4096", {4096}},
      {"16x64_windows", std::vector<std::int32_t>(16, 64)},
      // Qwen2.5-VL, one 448x448 image: 32x32 = 1024 patches; full-attention layers see one
      // segment, window layers 16 windows of 8x8 patches. Same shapes as the two above, named
      // for the model so results can be looked up by what they stand for.
      {"qwen25vl_448_full", {1024}},
      {"qwen25vl_448_window", std::vector<std::int32_t>(16, 64)},
  };
}

std::vector<float> random_floats(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

std::int64_t cpu_clock_ns(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}
std::int64_t thread_cpu_ns() { return cpu_clock_ns(CLOCK_THREAD_CPUTIME_ID); }
std::int64_t process_cpu_ns() { return cpu_clock_ns(CLOCK_PROCESS_CPUTIME_ID); }

// The two "100%" figures measured at startup: the wall-clock rate of the whole pool (what an idle
// machine gives) and the per-core rate while running (robust when other processes load the
// machine, which the 2-core CI/dev hosts often are).
struct Peak {
  double pool_gflops = 0;
  double core_gflops = 0;
};

// Brackets the timed loop with the process CPU clock: FLOPs per CPU-second actually spent,
// against the per-core peak, is the efficiency figure that survives a loaded machine.
class CpuMeter {
 public:
  CpuMeter() : start_(process_cpu_ns()) {}
  double seconds() const { return static_cast<double>(process_cpu_ns() - start_) / 1e9; }

 private:
  std::int64_t start_;
};

enum class AttnKernel { reference, flash_unpad, fused_varlen };

const char* kernel_name(AttnKernel k) {
  switch (k) {
    case AttnKernel::reference: return "reference";
    case AttnKernel::flash_unpad: return "flash_unpad";
    case AttnKernel::fused_varlen: return "fused_varlen";
  }
  return "?";
}

void set_rate_counters(benchmark::State& state, double flops_per_iteration, const Peak& peak,
                       double cpu_seconds) {
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops_per_iteration / 1e9, benchmark::Counter::kIsIterationInvariantRate);
  if (peak.pool_gflops > 0)
    state.counters["peak_fraction"] = benchmark::Counter(
        flops_per_iteration / 1e9 / peak.pool_gflops, benchmark::Counter::kIsIterationInvariantRate);
  const double total_gflop = flops_per_iteration * static_cast<double>(state.iterations()) / 1e9;
  if (cpu_seconds > 0) {
    state.counters["gflop_per_core_s"] = total_gflop / cpu_seconds;
    if (peak.core_gflops > 0)
      state.counters["core_peak_fraction"] = total_gflop / cpu_seconds / peak.core_gflops;
  }
}

void run_attention(benchmark::State& state, AttnKernel kernel, int head_dim, AttnLayout layout,
                   unsigned threads, Peak peak) {
  ThreadPool pool(threads);
  Workspace workspace;
  std::vector<std::int32_t> cu{0};
  for (auto len : layout.lens) cu.push_back(cu.back() + len);
  const std::int64_t tokens = cu.back();
  const auto segments = static_cast<std::int64_t>(layout.lens.size());
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  const int width = kernel == AttnKernel::flash_unpad ? npu_padded_head_dim(head_dim) : head_dim;
  // flash_unpad gets zero-padded tensors, as the NPU path pads them before the call.
  auto make = [&](unsigned seed) {
    std::vector<float> x = random_floats(static_cast<std::size_t>(tokens) * kHeads * head_dim, seed);
    if (width == head_dim) return x;
    std::vector<float> padded(static_cast<std::size_t>(tokens) * kHeads * width, 0.0f);
    for (std::int64_t r = 0; r < tokens * kHeads; ++r)
      std::copy(x.begin() + r * head_dim, x.begin() + (r + 1) * head_dim, padded.begin() + r * width);
    return padded;
  };
  const auto q = make(1), k = make(2), v = make(3);
  std::vector<float> out(q.size());
  VarlenAttentionArgs va;
  va.q = q.data(), va.k = k.data(), va.v = v.data(), va.out = out.data();
  va.cu_seqlens = cu.data(), va.num_segments = segments, va.total_tokens = tokens;
  va.num_heads = kHeads, va.num_kv_heads = kHeads, va.head_dim = head_dim, va.scale = scale;
  FlashUnpadArgs ua;
  ua.q = q.data(), ua.k = k.data(), ua.v = v.data(), ua.out = out.data();
  ua.seq_lens = layout.lens.data(), ua.num_segments = segments, ua.total_tokens = tokens;
  ua.num_heads = kHeads, ua.num_kv_heads = kHeads, ua.head_dim_padded = width;
  ua.head_dim = head_dim, ua.scale = scale;
  const AttentionTiling tiling{static_cast<int>(state.range(0)), static_cast<int>(state.range(1))};
  const CpuMeter cpu;
  for (auto _ : state) {
    switch (kernel) {
      case AttnKernel::reference: attention_reference(va, pool); break;
      case AttnKernel::flash_unpad: flash_unpad(ua, pool, Isa::best, &workspace, tiling); break;
      case AttnKernel::fused_varlen: fused_varlen(va, pool, Isa::best, &workspace, tiling); break;
    }
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  const double cpu_seconds = cpu.seconds();
  const Cost cost = attention_cost(layout.lens.data(), segments, kHeads, kHeads, head_dim);
  set_rate_counters(state, cost.flops, peak, cpu_seconds);
  state.counters["head_dim_computed"] = width;
  state.counters["threads"] = threads;
  const AttentionTiling used = resolve_tiling(tiling, width);
  state.counters["block_q"] = used.block_q;
  state.counters["block_kv"] = used.block_kv;
}

void run_gemm(benchmark::State& state, std::int64_t m, std::int64_t n, std::int64_t k,
              unsigned threads, Peak peak) {
  // kernels/gemm_blocking: this case's KC / MC / nb for the process, the chosen ones afterwards.
  const TileChoice chosen = process_tiles();
  if (state.range(0) > 0) {
    TileChoice forced = chosen;
    forced.isa = resolve_isa(Isa::best);
    forced.kc = static_cast<int>(state.range(0)), forced.mc = static_cast<int>(state.range(1));
    forced.nb = static_cast<int>(state.range(2));
    set_process_tiles(forced);
  }
  const GemmBlocking used = gemm_blocking_for(Isa::best);  // what the timed calls run with
  ThreadPool pool(threads);
  Workspace workspace;
  const auto x = random_floats(m * k, 1), w = random_floats(n * k, 2), b = random_floats(n, 3);
  std::vector<float> out(m * n);
  const GemmArgs args{x.data(), w.data(), b.data(), out.data(), m, n, k};
  const CpuMeter cpu;
  for (auto _ : state) {
    gemm(args, pool, Isa::best, &workspace);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  const double cpu_seconds = cpu.seconds();
  set_rate_counters(state, 2.0 * m * n * k, peak, cpu_seconds);
  state.counters["threads"] = threads;
  set_process_tiles(chosen);
  state.counters["kc"] = used.kc;
  state.counters["mc"] = used.mc;
  state.counters["nb"] = used.nb;
}

// Ours and the anchor library (gemm_anchor.hpp) on the same operands, alternately in one process
// (the order flips every iteration), so machine load and clock drift hit both alike: the ratios
// are the figure, the absolute rates are only as good as the machine's quietness. No bias on
// either side.
struct SideBySide {
  double ours_s = 0, anchor_s = 0, ours_cpu_s = 0, anchor_cpu_s = 0;
  std::vector<double> ratios;  // per iteration: anchor time / our time (> 1: ours is faster)
  // Per iteration, anchor CPU time / our CPU time: what a descheduled thread does not move (a
  // wall-clock pair straddling another process's time slice does), the fair figure at 1 thread.
  std::vector<double> cpu_ratios;
};

void time_one(SideBySide& r, bool ours, const std::function<void()>& call) {
  const std::int64_t cpu0 = process_cpu_ns(), t0 = encbench::now_ns();
  call();
  const double wall = static_cast<double>(encbench::now_ns() - t0) / 1e9;
  const double cpu = static_cast<double>(process_cpu_ns() - cpu0) / 1e9;
  (ours ? r.ours_s : r.anchor_s) += wall;
  (ours ? r.ours_cpu_s : r.anchor_cpu_s) += cpu;
}

double percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1) + 0.5)];
}

double relative_frobenius_diff(const std::vector<float>& a, const std::vector<float>& ref) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    num += (static_cast<double>(a[i]) - ref[i]) * (static_cast<double>(a[i]) - ref[i]);
    den += static_cast<double>(ref[i]) * ref[i];
  }
  return std::sqrt(num / den);
}

void set_side_by_side_counters(benchmark::State& state, const SideBySide& r, double gflop,
                               const Peak& peak) {
  state.counters["ours_GFLOP/s"] = gflop / r.ours_s;
  state.counters["anchor_GFLOP/s"] = gflop / r.anchor_s;
  state.counters["ratio"] = r.anchor_s / r.ours_s;
  state.counters["ratio_min"] = percentile(r.ratios, 0.0);
  state.counters["ratio_median"] = percentile(r.ratios, 0.5);
  state.counters["ratio_max"] = percentile(r.ratios, 1.0);
  state.counters["cpu_ratio"] = r.anchor_cpu_s / r.ours_cpu_s;
  state.counters["cpu_ratio_min"] = percentile(r.cpu_ratios, 0.0);
  state.counters["cpu_ratio_median"] = percentile(r.cpu_ratios, 0.5);
  if (peak.core_gflops > 0) {
    state.counters["ours_core_peak_fraction"] = gflop / r.ours_cpu_s / peak.core_gflops;
    state.counters["anchor_core_peak_fraction"] = gflop / r.anchor_cpu_s / peak.core_gflops;
  }
  if (peak.pool_gflops > 0) {
    state.counters["ours_peak_fraction"] = gflop / r.ours_s / peak.pool_gflops;
    state.counters["anchor_peak_fraction"] = gflop / r.anchor_s / peak.pool_gflops;
  }
}

void run_gemm_vs_anchor(benchmark::State& state, std::int64_t m, std::int64_t n, std::int64_t k,
                        unsigned threads, Peak peak, const GemmAnchor& anchor) {
  if (anchor.library.empty()) {
    state.SkipWithError(("no anchor library: " + anchor.unavailable).c_str());
    for (auto _ : state) {
    }
    return;
  }
  ThreadPool pool(threads);
  anchor.set_threads(threads);
  Workspace workspace;
  const auto x = random_floats(m * k, 1), w = random_floats(n * k, 2);
  std::vector<float> out(m * n), ref(m * n);
  const GemmArgs args{x.data(), w.data(), nullptr, out.data(), m, n, k};
  // Warm both (page faults, packing buffers, the library's thread team) outside the timing.
  gemm(args, pool, Isa::best, &workspace);
  anchor.sgemm_nt(x.data(), w.data(), ref.data(), m, n, k);
  SideBySide r;
  bool ours_first = true;
  for (auto _ : state) {
    const double ours0 = r.ours_s, anchor0 = r.anchor_s, ours_cpu0 = r.ours_cpu_s,
                 anchor_cpu0 = r.anchor_cpu_s;
    auto ours = [&] { gemm(args, pool, Isa::best, &workspace); };
    auto lib = [&] { anchor.sgemm_nt(x.data(), w.data(), ref.data(), m, n, k); };
    if (ours_first) time_one(r, true, ours), time_one(r, false, lib);
    else time_one(r, false, lib), time_one(r, true, ours);
    ours_first = !ours_first;
    r.ratios.push_back((r.anchor_s - anchor0) / (r.ours_s - ours0));
    r.cpu_ratios.push_back((r.anchor_cpu_s - anchor_cpu0) / (r.ours_cpu_s - ours_cpu0));
    state.SetIterationTime(r.ours_s - ours0);
    benchmark::DoNotOptimize(out.data());
    benchmark::DoNotOptimize(ref.data());
  }
  const double gflop = 2.0 * m * n * k * static_cast<double>(r.ratios.size()) / 1e9;
  set_side_by_side_counters(state, r, gflop, peak);
  state.counters["threads"] = threads;
  // Same result within fp32 reassociation: a wrong fast kernel must not look like a win.
  state.counters["rel_diff_vs_anchor"] = relative_frobenius_diff(out, ref);
}

// The machine and the choices the kernels made on it, in the benchmark context.
void add_kernel_context(unsigned threads, const GemmAnchor& anchor) {
  const Isa isa = resolve_isa(Isa::best);
  const DetectedCaches caches = detect_cache_sizes();
  benchmark::AddCustomContext("kernels_isa_forced_by_env",
                              std::getenv(kIsaEnvVar) ? std::getenv(kIsaEnvVar) : "");
  benchmark::AddCustomContext("cpu_features", describe(detect_cpu_features()));
  std::string cache_text = "L1d " + std::to_string(caches.sizes.l1d) +
                           " L2 " + std::to_string(caches.sizes.l2) +
                           " L3 " + std::to_string(caches.sizes.l3);
  if (!caches.reported) cache_text += " (defaults: not all reported)";
  benchmark::AddCustomContext("cache_sizes", cache_text);
  const GemmBlocking g = gemm_blocking_for(isa);
  benchmark::AddCustomContext(
      "gemm_tile", std::to_string(g.mr) + "x" + std::to_string(g.nr) + " kc " +
                       std::to_string(g.kc) + " mc " + std::to_string(g.mc) + " nc " +
                       std::to_string(g.nc) + " nb " + std::to_string(g.nb));
  const AttentionTiling t = resolve_tiling({}, 80);
  benchmark::AddCustomContext("attention_default_tile_d80", "block_q " + std::to_string(t.block_q) +
                                                                " block_kv " +
                                                                std::to_string(t.block_kv));
  benchmark::AddCustomContext("blis", blis_unavailable_reason().empty()
                                          ? blis_description() + ", " + std::to_string(threads) +
                                                " threads"
                                          : blis_unavailable_reason());
  benchmark::AddCustomContext("gemm_anchor", anchor.library.empty()
                                                 ? "none: " + anchor.unavailable
                                                 : anchor.library + ": " + anchor.description);
}

}  // namespace

void register_kernels_benchmarks() {
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  // Before this process starts threads of its own: OpenBLAS core types are probed in children.
  const std::shared_ptr<const GemmAnchor> anchor = choose_gemm_anchor(resolve_isa(Isa::best));
  // The tiles every case without explicit ones runs with: ENCBENCH_TILE, the calibration cache,
  // or a calibration now (harness/tuning).
  const tuning::TileSelection tiles = tuning::select_and_install_tiles(resolve_isa(Isa::best), "");
  for (const std::string& note : tiles.notes) std::fprintf(stderr, "%s\n", note.c_str());
  benchmark::AddCustomContext("kernel_tiles", tuning::describe_selection(tiles));
  // The machine's "100%": the same FMA loop as `encbench peak`, on a pool of the same size as the
  // one the kernels run on, measured once here so every case is a fraction of the same figure.
  ThreadPool peak_pool(threads);
  const PeakMeasurement all =
      measure_fma_peak(peak_pool, threads, Isa::best, 0.3, &encbench::now_ns, &thread_cpu_ns);
  const PeakMeasurement one =
      measure_fma_peak(peak_pool, 1, Isa::best, 0.2, &encbench::now_ns, &thread_cpu_ns);
  benchmark::AddCustomContext("kernels_isa", std::string(to_string(all.isa)));
  benchmark::AddCustomContext("kernels_pool_threads", std::to_string(threads));
  benchmark::AddCustomContext("fma_peak_gflops_all_threads", std::to_string(all.gflops_per_s));
  benchmark::AddCustomContext("fma_peak_gflops_1_thread", std::to_string(one.gflops_per_s));
  benchmark::AddCustomContext("fma_peak_gflops_per_core_s", std::to_string(one.gflops_per_core_s));
  const Peak peak{all.gflops_per_s, one.gflops_per_core_s};
  add_kernel_context(threads, *anchor);

  for (AttnKernel kernel : {AttnKernel::reference, AttnKernel::flash_unpad, AttnKernel::fused_varlen}) {
    for (int head_dim : {64, 72, 80, 128}) {
      for (const AttnLayout& layout : attention_layouts()) {
        // The fp64 reference is ~100x slower: only the 64-token windows (0.3 GFLOP).
        if (kernel == AttnKernel::reference && layout.lens.size() == 1) continue;
        const std::string name = std::string("kernels/attention/") + kernel_name(kernel) + "/d" +
                                 std::to_string(head_dim) + "/" + layout.name;
        auto* b = benchmark::RegisterBenchmark(
            name.c_str(), [=](benchmark::State& state) {
              run_attention(state, kernel, head_dim, layout, threads, peak);
            });
        // Args: block_q, block_kv (0 = tuned default).
        b->ArgNames({"block_q", "block_kv"})->Args({0, 0})->Unit(benchmark::kMillisecond)->UseRealTime();
        if (kernel == AttnKernel::reference) b->Iterations(1);
      }
    }
  }
  // Block-size sweep for the target case (fused_varlen, 1x4096, d80).
  {
    AttnLayout layout{"1x4096", {4096}};
    auto* b = benchmark::RegisterBenchmark(
        "kernels/attention_tiling/fused_varlen/d80/1x4096", [=](benchmark::State& state) {
          run_attention(state, AttnKernel::fused_varlen, 80, layout, threads, peak);
        });
    b->ArgNames({"block_q", "block_kv"})->Unit(benchmark::kMillisecond)->UseRealTime();
    for (int bq : {64, 128, 256})
      for (int bk : {128, 256, 512}) b->Args({bq, bk});
  }
  // Encoder projections at 1024 tokens (Qwen2.5-VL-7B vision tower: hidden 1280, MLP 3420).
  struct Shape {
    const char* name;
    std::int64_t m, n, k;
  };
  for (const Shape& s : {Shape{"qkv_1024x1280_to_3840", 1024, 3840, 1280},
                         Shape{"proj_1024x1280_to_1280", 1024, 1280, 1280},
                         Shape{"mlp_up_1024x1280_to_3420", 1024, 3420, 1280},
                         Shape{"mlp_down_1024x3420_to_1280", 1024, 1280, 3420}}) {
    benchmark::RegisterBenchmark((std::string("kernels/gemm/") + s.name).c_str(),
                                 [=](benchmark::State& state) {
                                   run_gemm(state, s.m, s.n, s.k, threads, peak);
                                 })
        ->ArgNames({"kc", "mc", "nb"})
        ->Args({0, 0, 0})
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
    // Every registered blocking (kernels/tuning.hpp) at this shape: how far the calibrated choice
    // (the kc:0/mc:0 case above, context kernel_tiles) is from the best of them.
    auto* sweep = benchmark::RegisterBenchmark(
        (std::string("kernels/gemm_blocking/") + s.name).c_str(),
        [=](benchmark::State& state) { run_gemm(state, s.m, s.n, s.k, threads, peak); });
    sweep->ArgNames({"kc", "mc", "nb"})->Unit(benchmark::kMillisecond)->UseRealTime();
    for (const GemmBlocking& b :
         gemm_blocking_candidates(resolve_isa(Isa::best), detect_cache_sizes().sizes))
      sweep->Args({b.kc, b.mc, b.nb});
    // Arg: threads of both (all cores, and 1: a single thread is what a loaded 2-core host can
    // still compare fairly). Time = our GEMM's; counters hold the anchor's and the ratios.
    benchmark::RegisterBenchmark((std::string("kernels/gemm_vs_anchor/") + s.name).c_str(),
                                 [=](benchmark::State& state) {
                                   run_gemm_vs_anchor(state, s.m, s.n, s.k,
                                                      static_cast<unsigned>(state.range(0)), peak,
                                                      *anchor);
                                 })
        ->ArgName("threads")
        ->Arg(threads)
        ->Arg(1)
        ->Unit(benchmark::kMillisecond)
        ->UseManualTime();
  }
}

}  // namespace encbench::micro
