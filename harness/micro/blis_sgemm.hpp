#pragma once
// BLIS's sgemm behind a small interface, so the GEMM comparison builds (and reports itself
// skipped) where BLIS is absent. ENCBENCH_HAVE_BLIS is set by cmake/EncbenchBlis.cmake.
#include <cstdint>
#include <string>

namespace encbench::micro {

// Empty when BLIS is linked; else why the comparison cannot run.
std::string blis_unavailable_reason();
// "BLIS <version>, config <name>, sgemm MRxNR kc mc nc" of the linked library: the configuration
// BLIS picked from CPUID, or the one BLIS_ARCH_TYPE forced (BLIS 0.9 reads it as a number: 0 skx,
// 3 haswell, 6 zen3; a name parses as 0, i.e. skx).
std::string blis_description();
// BLIS's thread count for the following calls.
void blis_set_threads(unsigned threads);
// out[m, n] = x[m, k] w[n, k]^T (nn.Linear layout, row-major), as encbench::kernels::gemm
// without bias.
void blis_sgemm_nt(const float* x, const float* w, float* out, std::int64_t m, std::int64_t n,
                   std::int64_t k);

}  // namespace encbench::micro
