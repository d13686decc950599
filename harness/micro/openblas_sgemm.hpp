#pragma once
// OpenBLAS's sgemm, opened at run time by its full path (Debian's libopenblas0-pthread installs
// it beside, not instead of, the system libblas alternative), with the core type chosen by
// measurement: OpenBLAS reads OPENBLAS_CORETYPE once, when the library loads, so each candidate is
// timed in a child process of its own and the fastest is then loaded into this one.
#include <cstdint>
#include <string>
#include <vector>

namespace encbench::micro {

// Where Debian's libopenblas0-pthread puts the library (its own directory: opening it does not
// go through, or change, the libblas.so.3 alternative).
inline constexpr const char* kOpenblasPath =
    "/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.so.0";

// One core type the library was asked for in a child process.
struct OpenblasCoreProbe {
  std::string requested;  // "" = the library's own choice (no OPENBLAS_CORETYPE)
  std::string loaded;     // what openblas_get_corename() said; differs when not offered
  bool offered = false;   // the library runs this core type (it fell back otherwise)
  bool ran = false;       // the child finished (a core type the CPU lacks dies of SIGILL)
  double gflops_per_core_s = 0;  // best of a few single-thread sgemm calls, per CPU-second
  std::string failure;           // why not ran, when not
};

// The core types worth trying for an ISA path of the kernels (the AVX-512 ones for avx512, the
// AVX2 ones otherwise), each probed in a child process; the library's default first.
std::vector<OpenblasCoreProbe> probe_openblas_core_types(const std::string& library_path,
                                                         const std::vector<std::string>& candidates);
// Fastest offered and ran; "" when none did. A later probe must beat an earlier one by more than
// `tie_margin` (relative): candidates come in order of preference (the ones matching the CPU's
// ISA first), and a few-percent edge of a one-shot probe is within a loaded host's noise.
std::string fastest_core_type(const std::vector<OpenblasCoreProbe>& probes, double tie_margin);

// The library loaded into this process with a given core type.
class OpenblasSgemm {
 public:
  // Empty `core_type` = the library's own choice. On failure `error()` says why.
  OpenblasSgemm(const std::string& library_path, const std::string& core_type);
  ~OpenblasSgemm();
  OpenblasSgemm(const OpenblasSgemm&) = delete;
  OpenblasSgemm& operator=(const OpenblasSgemm&) = delete;

  const std::string& error() const { return error_; }
  std::string core_name() const;  // openblas_get_corename()
  std::string config() const;     // openblas_get_config(): version and build options
  void set_threads(unsigned threads) const;
  // out[m, n] = x[m, k] w[n, k]^T, row-major (nn.Linear layout), no bias.
  void sgemm_nt(const float* x, const float* w, float* out, std::int64_t m, std::int64_t n,
                std::int64_t k) const;

 private:
  void* handle_ = nullptr;
  std::string error_;
  using SgemmFn = void (*)(int, int, int, int, int, int, float, const float*, int, const float*,
                           int, float, float*, int);
  SgemmFn sgemm_ = nullptr;
  void (*set_threads_)(int) = nullptr;
  char* (*core_name_)() = nullptr;
  char* (*config_)() = nullptr;
};

}  // namespace encbench::micro
