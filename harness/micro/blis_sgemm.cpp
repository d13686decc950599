#include "harness/micro/blis_sgemm.hpp"

#if ENCBENCH_HAVE_BLIS
#include <blis.h>

#include <cstdlib>
#endif

namespace encbench::micro {

#if ENCBENCH_HAVE_BLIS

std::string blis_unavailable_reason() { return ""; }

std::string blis_description() {
  bli_init();
  // The sgemm register tile and cache blocking of the configuration that runs: they tell which
  // kernel set ran (zen3/haswell: 6x16 ymm; skx: 32x12 zmm) even where BLIS_ARCH_TYPE forced one.
  cntx_t* cntx = bli_gks_query_cntx();
  auto blk = [&](bszid_t id) {
    return std::to_string(bli_cntx_get_blksz_def_dt(BLIS_FLOAT, id, cntx));
  };
  const char* forced = std::getenv("BLIS_ARCH_TYPE");
  return std::string("BLIS ") + bli_info_get_version_str() + ", config " +
         bli_arch_string(bli_arch_query_id()) +
         (forced ? std::string(" (BLIS_ARCH_TYPE=") + forced + ")" : "") +
         ", sgemm " + blk(BLIS_MR) + "x" + blk(BLIS_NR) + " kc " + blk(BLIS_KC) + " mc " +
         blk(BLIS_MC) + " nc " + blk(BLIS_NC);
}

void blis_set_threads(unsigned threads) { bli_thread_set_num_threads(static_cast<dim_t>(threads)); }

void blis_sgemm_nt(const float* x, const float* w, float* out, std::int64_t m, std::int64_t n,
                   std::int64_t k) {
  float one = 1.0f, zero = 0.0f;
  // Row-major C[m,n] = X[m,k] W[n,k]^T: row strides k / k / n, column stride 1.
  bli_sgemm(BLIS_NO_TRANSPOSE, BLIS_TRANSPOSE, m, n, k, &one, const_cast<float*>(x), k, 1,
            const_cast<float*>(w), k, 1, &zero, out, n, 1);
}

#else

std::string blis_unavailable_reason() {
  return "built without BLIS (install libblis-dev and re-run cmake)";
}
std::string blis_description() { return "none"; }
void blis_set_threads(unsigned) {}
void blis_sgemm_nt(const float*, const float*, float*, std::int64_t, std::int64_t, std::int64_t) {}

#endif

}  // namespace encbench::micro
