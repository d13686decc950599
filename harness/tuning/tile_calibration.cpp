#include "harness/tuning/tile_calibration.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>

#include "kernels/attention.hpp"
#include "kernels/ops.hpp"
#include "kernels/thread_pool.hpp"
#include "kernels/workspace.hpp"

namespace encbench::tuning {
namespace {

using namespace encbench::kernels;

constexpr int kRounds = 2;

std::vector<float> random_floats(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// Runs each of `count` candidates once per round (a warm-up call first), keeps each one's best
// thread CPU time.
std::vector<double> best_times(std::size_t count, const std::function<void(std::size_t)>& run,
                               NanosecondClock cpu_clock) {
  std::vector<double> best(count, 1e30);
  if (count > 0) run(0);  // page faults, workspace growth
  for (int round = 0; round < kRounds; ++round)
    for (std::size_t i = 0; i < count; ++i) {
      const std::int64_t t0 = cpu_clock();
      run(i);
      best[i] = std::min(best[i], static_cast<double>(cpu_clock() - t0) / 1e9);
    }
  return best;
}

void calibrate_gemm(Isa resolved, const CacheSizes& caches, NanosecondClock cpu_clock,
                    ThreadPool& pool, CalibrationResult& r) {
  constexpr std::int64_t m = 768, n = 768, k = 1280;
  const auto x = random_floats(m * k, 1), w = random_floats(n * k, 2);
  std::vector<float> out(m * n);
  Workspace ws;
  const std::vector<GemmBlocking> candidates = gemm_blocking_candidates(resolved, caches);
  auto run = [&](std::size_t i) {
    TileChoice c;
    c.isa = resolved, c.kc = candidates[i].kc, c.mc = candidates[i].mc, c.nb = candidates[i].nb;
    set_process_tiles(c);
    gemm(GemmArgs{x.data(), w.data(), nullptr, out.data(), m, n, k}, pool, resolved, &ws);
  };
  const std::vector<double> times = best_times(candidates.size(), run, cpu_clock);
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    TileChoice c;
    c.kc = candidates[i].kc, c.mc = candidates[i].mc, c.nb = candidates[i].nb;
    r.gemm.push_back({format_tile_spec(c), times[i], 2.0 * m * n * k / times[i] / 1e9});
  }
  const GemmBlocking& best = candidates[choose_candidate(times, kDefaultTileMargin)];
  r.choice.kc = best.kc, r.choice.mc = best.mc, r.choice.nb = best.nb;
}

void calibrate_attention(Isa resolved, const CacheSizes& caches, NanosecondClock cpu_clock,
                         ThreadPool& pool, CalibrationResult& r) {
  constexpr int d = 80, tokens = 1536;
  const auto q = random_floats(std::size_t{tokens} * d, 3), k = random_floats(q.size(), 4),
             v = random_floats(q.size(), 5);
  std::vector<float> out(q.size());
  const std::int32_t cu[2] = {0, tokens};
  VarlenAttentionArgs a;
  a.q = q.data(), a.k = k.data(), a.v = v.data(), a.out = out.data();
  a.cu_seqlens = cu, a.num_segments = 1, a.total_tokens = tokens;
  a.num_heads = 1, a.num_kv_heads = 1, a.head_dim = d, a.scale = 1.0f / std::sqrt(float{d});
  Workspace ws;
  const std::vector<AttentionTiling> candidates = attention_tile_candidates(caches);
  auto run = [&](std::size_t i) { fused_varlen(a, pool, resolved, &ws, candidates[i]); };
  const std::vector<double> times = best_times(candidates.size(), run, cpu_clock);
  const double flops = 4.0 * tokens * double{tokens} * d;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    TileChoice c;
    c.attention = candidates[i];
    r.attention.push_back({format_tile_spec(c), times[i], flops / times[i] / 1e9});
  }
  r.choice.attention = candidates[choose_candidate(times, kDefaultTileMargin)];
}

}  // namespace

std::size_t choose_candidate(const std::vector<double>& best_seconds, double margin) {
  if (best_seconds.empty()) return 0;
  const auto fastest = static_cast<std::size_t>(
      std::min_element(best_seconds.begin(), best_seconds.end()) - best_seconds.begin());
  return best_seconds[0] <= best_seconds[fastest] * (1.0 + margin) ? 0 : fastest;
}

CalibrationResult calibrate_tiles(Isa resolved, const CacheSizes& caches,
                                  NanosecondClock wall_clock, NanosecondClock thread_cpu_clock) {
  const std::int64_t wall0 = wall_clock(), cpu0 = thread_cpu_clock();
  const TileChoice before = process_tiles();
  CalibrationResult r;
  r.choice.isa = resolved;
  ThreadPool pool(1);  // the caller is the only worker: its thread CPU clock sees all the work
  calibrate_gemm(resolved, caches, thread_cpu_clock, pool, r);
  set_process_tiles(before);
  calibrate_attention(resolved, caches, thread_cpu_clock, pool, r);
  r.wall_s = static_cast<double>(wall_clock() - wall0) / 1e9;
  r.cpu_s = static_cast<double>(thread_cpu_clock() - cpu0) / 1e9;
  return r;
}

}  // namespace encbench::tuning
