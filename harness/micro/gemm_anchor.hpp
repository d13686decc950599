#pragma once
// The library GEMM that encbench's own is compared with in kernels/gemm_vs_anchor: the best one
// present for the ISA path the kernels run. On AVX2 that is BLIS (Debian's BLIS 0.9 runs its
// haswell/zen kernels there); on AVX-512 it is OpenBLAS with the core type measured fastest at
// start (Debian's BLIS 0.9 has no AVX-512 configuration for most CPUs: it would run AVX2 kernels
// and be no anchor at all).
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "kernels/isa.hpp"

namespace encbench::micro {

struct GemmAnchor {
  std::string library;      // "OpenBLAS" or "BLIS"; empty when none is present
  std::string description;  // version, kernel set or core type and how it was chosen
  std::string unavailable;  // why there is no anchor, when `library` is empty
  std::function<void(unsigned)> set_threads;
  // out[m, n] = x[m, k] w[n, k]^T, row-major, no bias.
  std::function<void(const float*, const float*, float*, std::int64_t, std::int64_t,
                     std::int64_t)>
      sgemm_nt;
};

// Chooses (and for OpenBLAS, loads) the anchor for kernels running `resolved` (not Isa::best).
// Probes OpenBLAS core types in child processes: call before this process starts threads of its
// own where it can.
std::shared_ptr<const GemmAnchor> choose_gemm_anchor(kernels::Isa resolved);

}  // namespace encbench::micro
