#include "kernels/blocking.hpp"

#include <unistd.h>

#include <algorithm>

#include "kernels/cpu/dispatch.hpp"
#include "kernels/tuning.hpp"

namespace encbench::kernels {
namespace {

std::int64_t sysconf_or(int name, std::int64_t fallback, bool& reported) {
  const long v = ::sysconf(name);
  if (v > 0) return v;
  reported = false;
  return fallback;
}

int round_down(std::int64_t x, int multiple) {
  return static_cast<int>(std::max<std::int64_t>(multiple, x / multiple * multiple));
}

}  // namespace

DetectedCaches detect_cache_sizes() {
  DetectedCaches d;
  d.reported = true;
  d.sizes.l1d = sysconf_or(_SC_LEVEL1_DCACHE_SIZE, 32 << 10, d.reported);
  d.sizes.l2 = sysconf_or(_SC_LEVEL2_CACHE_SIZE, 512 << 10, d.reported);
  d.sizes.l3 = sysconf_or(_SC_LEVEL3_CACHE_SIZE, 8 << 20, d.reported);
  return d;
}

GemmBlocking gemm_blocking(Isa resolved, const CacheSizes& caches) {
  const detail::IsaOps& ops = detail::ops_for(resolved);
  GemmBlocking b;
  b.mr = ops.gemm_mr;
  b.nr = ops.gemm_nr;
  constexpr std::int64_t f = sizeof(float);
  // KC: deep enough that the C tile's load/add/store (once per KC steps) is noise, which is what
  // limited the 128-256 that an "L1/2" rule gives here (measured, docs/kernels.md: 384 and 512
  // tie with BLIS, 128 was 0.79 of it): 384, unless L2 is so small that the KC x NR micro-panel
  // would take more than a quarter of it. The hardware prefetcher streams the micro-panel from L2.
  const std::int64_t l2 = std::clamp<std::int64_t>(caches.l2, 128 << 10, 8 << 20);
  b.kc = std::clamp(round_down(l2 / 4 / (b.nr * f), 16), 128, 384);
  // MC: the packed A block (MC x KC) is reused across all B micro-panels: half of L2.
  b.mc = std::clamp(round_down(l2 / 2 / (b.kc * f), b.mr), b.mr, 1024 / b.mr * b.mr);
  // NC: the packed B block (KC x NC) is shared by the workers through L3.
  const std::int64_t l3 = std::clamp<std::int64_t>(caches.l3, 1 << 20, 256 << 20);
  b.nc = std::clamp(round_down(l3 / 2 / (b.kc * f), b.nr), 16 * b.nr, 8192 / b.nr * b.nr);
  b.nb = b.nr;
  return b;
}

namespace {

// The cache sizes cannot change while the process runs, and reading them costs CPUID
// instructions (VM exits in a guest): once per process, not per kernel call.
const CacheSizes& machine_caches() {
  static const CacheSizes caches = detect_cache_sizes().sizes;
  return caches;
}

int pow2_floor_in(std::int64_t x, int lo, int hi) {
  int p = lo;
  while (p * 2 <= hi && p * 2 <= x) p *= 2;
  return p;
}

}  // namespace

GemmBlocking gemm_blocking_for(Isa isa) {
  const Isa resolved = resolve_isa(isa);
  GemmBlocking b = gemm_blocking(resolved, machine_caches());
  // A process-wide choice (forced or calibrated, tuning.hpp) for this path replaces KC / MC.
  const TileChoice chosen = process_tiles();
  if (chosen.isa == resolved) {
    if (chosen.kc > 0) b.kc = chosen.kc;
    if (chosen.mc > 0) b.mc = chosen.mc / b.mr * b.mr;
    if (chosen.nb > 0) b.nb = chosen.nb / b.nr * b.nr;
  }
  return b;
}

AttentionTiling attention_default_tiling(int head_dim, const CacheSizes& caches) {
  const std::int64_t d = std::max(1, head_dim);
  const auto padded = static_cast<std::int64_t>(detail::round_up(d, detail::kKeyPad));
  const std::int64_t bytes_per_row = (d + padded) * static_cast<std::int64_t>(sizeof(float));
  const std::int64_t quarter_l2 = std::max<std::int64_t>(caches.l2, 64 << 10) / 4;
  AttentionTiling t;
  t.block_kv = pow2_floor_in(quarter_l2 / bytes_per_row, 64, 256);
  t.block_q = pow2_floor_in(quarter_l2 / bytes_per_row, 64, 256);
  return t;
}

AttentionTiling attention_default_tiling(int head_dim) {
  return attention_default_tiling(head_dim, machine_caches());
}

}  // namespace encbench::kernels
