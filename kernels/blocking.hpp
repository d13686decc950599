#pragma once
// Block sizes of the packed GEMM and the attention tiles, derived from the cache sizes the machine
// reports (sysconf, which glibc fills from CPUID on x86), so a machine with a different cache
// hierarchy gets its own blocking instead of constants tuned on one host.
#include <cstdint>

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
};
GemmBlocking gemm_blocking(Isa resolved, const CacheSizes& caches);
// The blocking gemm() uses on this machine for `isa` (best resolved as gemm resolves it).
GemmBlocking gemm_blocking_for(Isa isa);

}  // namespace encbench::kernels
