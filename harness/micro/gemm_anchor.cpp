#include "harness/micro/gemm_anchor.hpp"

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "harness/micro/blis_sgemm.hpp"
#include "harness/micro/openblas_sgemm.hpp"

namespace encbench::micro {
namespace {

using kernels::Isa;

// OpenBLAS's names for its x86-64 kernel sets worth trying here: the AVX-512 ones first (one
// matches a Skylake-SP..Emerald Rapids server), then the AVX2 ones (a Zen 4 runs either).
// A name the library does not offer loads its default instead, and is reported as not offered.
std::vector<std::string> openblas_candidates(Isa resolved) {
  if (resolved == Isa::avx512) return {"SkylakeX", "Cooperlake", "SapphireRapids", "Zen", "Haswell"};
  return {"Haswell", "Zen"};
}

std::string format_gflops(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

// "default=Cooperlake 95.1, SkylakeX 96.3, SapphireRapids not offered, ..." (GFLOP per core-s).
std::string describe_probes(const std::vector<OpenblasCoreProbe>& probes) {
  std::string s;
  for (const OpenblasCoreProbe& p : probes) {
    if (!s.empty()) s += ", ";
    s += p.requested.empty() ? "default=" + p.loaded : p.requested;
    if (!p.failure.empty()) s += " failed (" + p.failure + ")";
    else if (!p.offered) s += " not offered";
    else s += " " + format_gflops(p.gflops_per_core_s);
  }
  return s;
}

std::shared_ptr<GemmAnchor> blis_anchor() {
  auto a = std::make_shared<GemmAnchor>();
  if (const std::string why = blis_unavailable_reason(); !why.empty()) {
    a->unavailable = why;
    return a;
  }
  a->library = "BLIS";
  a->description = blis_description();
  a->set_threads = &blis_set_threads;
  a->sgemm_nt = &blis_sgemm_nt;
  return a;
}

std::shared_ptr<GemmAnchor> openblas_anchor(Isa resolved) {
  auto a = std::make_shared<GemmAnchor>();
  std::string core_type, how;
  if (const char* forced = std::getenv("OPENBLAS_CORETYPE"); forced && *forced) {
    core_type = forced;
    how = "OPENBLAS_CORETYPE=" + core_type + " from the environment";
  } else {
    const auto probes = probe_openblas_core_types(kOpenblasPath, openblas_candidates(resolved));
    core_type = fastest_core_type(probes, 0.05);
    how = "fastest at start of: " + describe_probes(probes) + " GFLOP per core-s, 1 thread; a later one must beat an earlier by 5 %";
  }
  auto lib = std::make_shared<const OpenblasSgemm>(kOpenblasPath, core_type);
  if (!lib->error().empty()) {
    a->unavailable = lib->error();
    return a;
  }
  a->library = "OpenBLAS";
  a->description = lib->config() + ", core " + lib->core_name() + " (" + how + ")";
  a->set_threads = [lib](unsigned t) { lib->set_threads(t); };
  a->sgemm_nt = [lib](const float* x, const float* w, float* out, std::int64_t m, std::int64_t n,
                      std::int64_t k) { lib->sgemm_nt(x, w, out, m, n, k); };
  return a;
}

}  // namespace

std::shared_ptr<const GemmAnchor> choose_gemm_anchor(Isa resolved) {
  if (resolved == Isa::avx512) {
    auto openblas = openblas_anchor(resolved);
    if (!openblas->library.empty()) return openblas;
    // No OpenBLAS: BLIS, named as what it is (on most AVX-512 CPUs its AVX2 kernels).
    auto blis = blis_anchor();
    if (!blis->library.empty())
      blis->description += " (OpenBLAS unavailable: " + openblas->unavailable + ")";
    return blis;
  }
  auto blis = blis_anchor();
  if (!blis->library.empty()) return blis;
  auto openblas = openblas_anchor(resolved);
  if (openblas->library.empty())
    openblas->unavailable = blis->unavailable + "; " + openblas->unavailable;
  return openblas;
}

}  // namespace encbench::micro
