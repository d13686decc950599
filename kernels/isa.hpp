#pragma once
// Which SIMD code path a kernel runs. Chosen at run time from CPUID (never from compile flags of
// the whole build), so one binary runs on any x86-64 and tests can force every path.
//
// ENCBENCH_ISA=portable|avx2|avx512|best (environment) replaces what `Isa::best` resolves to in
// every kernel of the process: e.g. measure the AVX2 code on an AVX-512 machine. A path the CPU
// lacks is an InvalidInput naming what the CPU has, never an illegal-instruction crash.
#include <string>
#include <string_view>

namespace encbench::kernels {

enum class Isa {
  best,      // the fastest path this CPU supports (resolved by resolve_isa)
  portable,  // plain C++ (compiler auto-vectorisation only); always available
  avx2,      // AVX2 + FMA, 8 fp32 lanes
  avx512,    // AVX-512 F/VL/DQ + FMA, 16 fp32 lanes
};

inline constexpr const char* kIsaEnvVar = "ENCBENCH_ISA";

std::string_view to_string(Isa isa);   // "best" | "portable" | "avx2" | "avx512"
Isa isa_from_string(std::string_view name);  // throws InvalidInput for unknown names

// The CPU features the SIMD paths need, as CPUID reports them (all false off x86 or in a build
// without the per-ISA objects).
struct CpuFeatures {
  bool avx2 = false, fma = false;
  bool avx512f = false, avx512vl = false, avx512dq = false;
};
CpuFeatures detect_cpu_features();
// "avx2 fma avx512f avx512vl avx512dq" (those present), or "none of avx2/fma/avx512f/vl/dq".
std::string describe(const CpuFeatures& cpu);
bool isa_supported(Isa isa, const CpuFeatures& cpu);

// True when this CPU (CPUID) and this build (x86-64 with the per-file ISA objects) support it.
bool isa_available(Isa isa);
// The fastest available path (ignores ENCBENCH_ISA).
Isa detect_best_isa();
// `best` -> the ENCBENCH_ISA override when set, else detect_best_isa(); an explicit request (or
// override) the CPU lacks throws InvalidInput naming what the CPU has.
Isa resolve_isa(Isa requested);
// The same decision on given features and override value (null or "" = not set): testable
// without the CPU or environment at hand.
Isa resolve_isa(Isa requested, const CpuFeatures& cpu, const char* forced);

}  // namespace encbench::kernels
