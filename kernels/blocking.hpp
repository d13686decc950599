#pragma once
// Block sizes of the packed GEMM and the attention tiles, derived from the cache sizes the machine
// reports (sysconf, which glibc fills from CPUID on x86), so a machine with a different cache
// hierarchy gets its own blocking instead of constants tuned on one host.
#include <cstdint>

#include "kernels/attention.hpp"
#include "kernels/isa.hpp"

namespace encbench::kernels {

struct CacheSizes {
  std::int64_t l1d = 0;  // bytes per core
  std::int64_t l2 = 0;   // bytes per core
  std::int64_t l3 = 0;   // bytes (shared)
};

// What this machine reports; a level the OS does not report (0 or -1) gets a conservative
// default (32 KiB / 512 KiB / 8 MiB), flagged in `reported`.
struct DetectedCaches {
  CacheSizes sizes;
  bool reported = false;  // all three levels came from the OS
};
DetectedCaches detect_cache_sizes();

// Goto/BLIS blocking: an MR x NR register tile; the KC x NR micro-panel of B takes half of L1,
// the MC x KC block of A half of L2, the KC x NC block of B half of L3.
struct GemmBlocking {
  int mr = 0, nr = 0;   // register tile of the ISA path
  int kc = 0, mc = 0, nc = 0;
  // Columns per sub-block of the macro-kernel (a multiple of NR): NR = one B micro-panel against
  // every A panel (the classic order, the default); wider = each A panel against a kc x nb
  // L2-resident slice of B (the A panel in L1: for tiles whose B micro-panel exceeds L1).
  int nb = 0;
};
GemmBlocking gemm_blocking(Isa resolved, const CacheSizes& caches);
// The blocking gemm() uses on this machine for `isa` (best resolved as gemm resolves it): the
// cache-size default, with KC / MC replaced by the process-wide choice for that path
// (tuning.hpp: forced or calibrated) when one is installed.
GemmBlocking gemm_blocking_for(Isa isa);

// Attention default: block_kv keys such that the packed K and V block (block_kv x (D + Dp)
// floats, re-read by every row group of the query block) takes at most a quarter of L2, and
// block_q rows such that the Q and O tiles (block_q x (D + Dp)) take at most another quarter;
// powers of two in [64, 256]. 1 MiB L2 at d80 -> 256 x 256, which measured at or above every
// registered tile of kernels/attention_tiling on both ISAs (docs/kernels.md).
AttentionTiling attention_default_tiling(int head_dim, const CacheSizes& caches);
// The same for this machine's caches (read once per process).
AttentionTiling attention_default_tiling(int head_dim);

}  // namespace encbench::kernels
