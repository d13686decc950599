#include "harness/micro/openblas_sgemm.hpp"

#include <dlfcn.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <strings.h>

namespace encbench::micro {
namespace {

// CBLAS enumerators (cblas.h): not included, the library is opened at run time.
constexpr int kCblasRowMajor = 101, kCblasNoTrans = 111, kCblasTrans = 112;

// Sets (or, for "", removes) OPENBLAS_CORETYPE for the library load that follows, and puts the
// caller's value back afterwards: the variable is read once, by the library's constructor.
class ScopedCoreType {
 public:
  explicit ScopedCoreType(const std::string& core_type) {
    if (const char* old = std::getenv(kVar)) had_ = true, old_ = old;
    if (core_type.empty()) ::unsetenv(kVar);
    else ::setenv(kVar, core_type.c_str(), 1);
  }
  ~ScopedCoreType() {
    if (had_) ::setenv(kVar, old_.c_str(), 1);
    else ::unsetenv(kVar);
  }
  ScopedCoreType(const ScopedCoreType&) = delete;
  ScopedCoreType& operator=(const ScopedCoreType&) = delete;

 private:
  static constexpr const char* kVar = "OPENBLAS_CORETYPE";
  bool had_ = false;
  std::string old_;
};

double thread_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

// In the child: load with the core type, time a single-thread sgemm of an encoder-like shape
// (384 x 1280 -> 1280: 1.26 GFLOP, tens of ms), print "corename gflops" to `fd`.
[[noreturn]] void run_probe_child(int fd, const std::string& path, const std::string& core_type) {
  const OpenblasSgemm lib(path, core_type);
  if (!lib.error().empty()) {
    dprintf(fd, "error %s\n", lib.error().c_str());
    _exit(1);
  }
  lib.set_threads(1);
  constexpr std::int64_t m = 384, n = 1280, k = 1280;
  std::vector<float> x(m * k, 0.5f), w(n * k, 0.25f), out(m * n);
  lib.sgemm_nt(x.data(), w.data(), out.data(), m, n, k);  // warm: pages, packing buffers
  double best = 1e30;
  for (int i = 0; i < 3; ++i) {
    const double t0 = thread_cpu_s();
    lib.sgemm_nt(x.data(), w.data(), out.data(), m, n, k);
    best = std::min(best, thread_cpu_s() - t0);
  }
  const bool correct = out[0] == static_cast<float>(k) * 0.125f;
  dprintf(fd, "%s %.3f %d\n", lib.core_name().c_str(), 2.0 * m * n * k / best / 1e9,
          correct ? 1 : 0);
  _exit(0);
}

OpenblasCoreProbe probe_one(const std::string& path, const std::string& core_type) {
  OpenblasCoreProbe probe;
  probe.requested = core_type;
  int fds[2];
  if (::pipe(fds) != 0) return probe.failure = "pipe failed", probe;
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]), ::close(fds[1]);
    return probe.failure = "fork failed", probe;
  }
  if (pid == 0) {
    ::close(fds[0]);
    run_probe_child(fds[1], path, core_type);
  }
  ::close(fds[1]);
  std::string text;
  pollfd pfd{fds[0], POLLIN, 0};
  char buf[256];
  // 10 s: a load plus four sgemm calls take well under one even on a loaded host.
  while (::poll(&pfd, 1, 10000) > 0) {
    const ssize_t got = ::read(fds[0], buf, sizeof buf);
    if (got <= 0) break;
    text.append(buf, static_cast<std::size_t>(got));
  }
  ::close(fds[0]);
  ::kill(pid, SIGKILL);  // no-op when it has exited; ends a hung child
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (WIFSIGNALED(status) && WTERMSIG(status) != SIGKILL)
    return probe.failure = std::string("killed by ") + strsignal(WTERMSIG(status)) +
                           " (the CPU lacks an instruction this core type uses)",
           probe;
  char name[64] = {0};
  double gflops = 0;
  int correct = 0;
  if (std::sscanf(text.c_str(), "%63s %lf %d", name, &gflops, &correct) != 3 ||
      std::strcmp(name, "error") == 0)
    return probe.failure = text.empty() ? "no answer from the child" : text, probe;
  probe.loaded = name;
  probe.offered = core_type.empty() || ::strcasecmp(name, core_type.c_str()) == 0;
  probe.ran = correct == 1;
  if (!probe.ran) probe.failure = "wrong sgemm result";
  probe.gflops_per_core_s = gflops;
  return probe;
}

}  // namespace

std::vector<OpenblasCoreProbe> probe_openblas_core_types(const std::string& library_path,
                                                         const std::vector<std::string>& candidates) {
  std::vector<OpenblasCoreProbe> probes{probe_one(library_path, "")};
  for (const std::string& c : candidates) probes.push_back(probe_one(library_path, c));
  return probes;
}

std::string fastest_core_type(const std::vector<OpenblasCoreProbe>& probes, double tie_margin) {
  const OpenblasCoreProbe* best = nullptr;
  for (const OpenblasCoreProbe& p : probes)
    if (p.ran && p.offered && !p.requested.empty() &&
        (!best || p.gflops_per_core_s > best->gflops_per_core_s * (1.0 + tie_margin)))
      best = &p;
  return best ? best->requested : "";
}

OpenblasSgemm::OpenblasSgemm(const std::string& library_path, const std::string& core_type) {
  {
    const ScopedCoreType scoped(core_type);
    // DEEPBIND: OpenBLAS resolves its own BLAS symbols before BLIS's, which this binary also links.
    handle_ = ::dlopen(library_path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
  }
  if (!handle_) {
    const char* why = ::dlerror();
    error_ = "cannot open " + library_path + ": " + (why ? why : "unknown error") +
             " (install Debian's libopenblas0-pthread)";
    return;
  }
  sgemm_ = reinterpret_cast<SgemmFn>(::dlsym(handle_, "cblas_sgemm"));
  set_threads_ = reinterpret_cast<void (*)(int)>(::dlsym(handle_, "openblas_set_num_threads"));
  core_name_ = reinterpret_cast<char* (*)()>(::dlsym(handle_, "openblas_get_corename"));
  config_ = reinterpret_cast<char* (*)()>(::dlsym(handle_, "openblas_get_config"));
  if (!sgemm_ || !set_threads_ || !core_name_ || !config_)
    error_ = library_path + " lacks cblas_sgemm or the openblas_* query functions";
}

OpenblasSgemm::~OpenblasSgemm() {
  // Not dlclose'd: OpenBLAS's worker threads outlive any call and would run unmapped code.
}

std::string OpenblasSgemm::core_name() const { return core_name_ ? core_name_() : ""; }
std::string OpenblasSgemm::config() const { return config_ ? config_() : ""; }
void OpenblasSgemm::set_threads(unsigned threads) const {
  if (set_threads_) set_threads_(static_cast<int>(threads));
}

void OpenblasSgemm::sgemm_nt(const float* x, const float* w, float* out, std::int64_t m,
                             std::int64_t n, std::int64_t k) const {
  sgemm_(kCblasRowMajor, kCblasNoTrans, kCblasTrans, static_cast<int>(m), static_cast<int>(n),
         static_cast<int>(k), 1.0f, x, static_cast<int>(k), w, static_cast<int>(k), 0.0f, out,
         static_cast<int>(n));
}

}  // namespace encbench::micro
