#include "kernels/isa.hpp"

#include <cstdlib>
#include <string>

#include "harness/core/error.hpp"

namespace encbench::kernels {

std::string_view to_string(Isa isa) {
  switch (isa) {
    case Isa::best: return "best";
    case Isa::portable: return "portable";
    case Isa::avx2: return "avx2";
    case Isa::avx512: return "avx512";
  }
  return "unknown";
}

Isa isa_from_string(std::string_view name) {
  for (Isa isa : {Isa::best, Isa::portable, Isa::avx2, Isa::avx512})
    if (name == to_string(isa)) return isa;
  throw InvalidInput("unknown ISA '" + std::string(name) +
                     "' (expected best, portable, avx2 or avx512)");
}

CpuFeatures detect_cpu_features() {
  CpuFeatures f;
#if ENCBENCH_KERNELS_X86
  f.avx2 = __builtin_cpu_supports("avx2");
  f.fma = __builtin_cpu_supports("fma");
  f.avx512f = __builtin_cpu_supports("avx512f");
  f.avx512vl = __builtin_cpu_supports("avx512vl");
  f.avx512dq = __builtin_cpu_supports("avx512dq");
#endif
  return f;
}

std::string describe(const CpuFeatures& cpu) {
  std::string s;
  auto add = [&](bool has, const char* name) {
    if (!has) return;
    if (!s.empty()) s += ' ';
    s += name;
  };
  add(cpu.avx2, "avx2");
  add(cpu.fma, "fma");
  add(cpu.avx512f, "avx512f");
  add(cpu.avx512vl, "avx512vl");
  add(cpu.avx512dq, "avx512dq");
  return s.empty() ? "none of avx2/fma/avx512f/avx512vl/avx512dq" : s;
}

bool isa_supported(Isa isa, const CpuFeatures& cpu) {
  switch (isa) {
    case Isa::best:
    case Isa::portable: return true;
    case Isa::avx2: return cpu.avx2 && cpu.fma;
    case Isa::avx512: return cpu.avx512f && cpu.avx512vl && cpu.avx512dq && cpu.fma;
  }
  return false;
}

bool isa_available(Isa isa) { return isa_supported(isa, detect_cpu_features()); }

namespace {

Isa best_of(const CpuFeatures& cpu) {
  if (isa_supported(Isa::avx512, cpu)) return Isa::avx512;
  if (isa_supported(Isa::avx2, cpu)) return Isa::avx2;
  return Isa::portable;
}

const char* needs(Isa isa) {
  return isa == Isa::avx512 ? "avx512f, avx512vl, avx512dq and fma" : "avx2 and fma";
}

}  // namespace

Isa detect_best_isa() { return best_of(detect_cpu_features()); }

Isa resolve_isa(Isa requested, const CpuFeatures& cpu, const char* forced) {
  std::string origin = "ISA path";
  if (requested == Isa::best && forced != nullptr && *forced != '\0') {
    origin = std::string(kIsaEnvVar) + "=" + forced + ":";
    try {
      requested = isa_from_string(forced);
    } catch (const InvalidInput& e) {
      throw InvalidInput(origin + " " + e.what());
    }
  }
  if (requested == Isa::best) return best_of(cpu);
  require(isa_supported(requested, cpu),
          origin + " '" + std::string(to_string(requested)) + "' needs " + needs(requested) +
              ", but this CPU (or build) has: " + describe(cpu) + " (available: portable" +
              (isa_supported(Isa::avx2, cpu) ? ", avx2" : "") +
              (isa_supported(Isa::avx512, cpu) ? ", avx512" : "") + ")");
  return requested;
}

Isa resolve_isa(Isa requested) {
  return resolve_isa(requested, detect_cpu_features(), std::getenv(kIsaEnvVar));
}

}  // namespace encbench::kernels
