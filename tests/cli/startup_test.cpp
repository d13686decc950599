// Start-up footprint of the real binary: the CUDA libraries (libcudart, libcublas/libcublasLt,
// libcupti) are mapped only when a CUDA device is asked for (harness/device/cuda_module.hpp), so
// `--version` and an idle `serve` on the sim device never map them, in a build with CUDA as in one
// without; and `--device cuda` where it cannot work is one line on stderr, exit 2.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

#include <gtest/gtest.h>

namespace {

namespace fs = std::filesystem;

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

bool maps_cuda(const std::string& text) {
  return text.find("libcudart") != std::string::npos || text.find("libcublas") != std::string::npos ||
         text.find("libcupti") != std::string::npos;
}

struct Outcome {
  int status = -1;
  std::string out, err;
};

// Runs `env ENV encbench ARGS` with stdout and stderr apart.
Outcome encbench(const std::string& env, const std::string& args) {
  const fs::path err = fs::temp_directory_path() / ("encbench-startup-stderr-" + std::to_string(::getpid()));
  const std::string cmd = "env " + env + " timeout 60 " + ENCBENCH_BINARY + " " + args + " 2>" + err.string();
  Outcome o;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return o;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) o.out.append(buf, n);
  const int rc = ::pclose(p);
  o.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  o.err = read_file(err);
  fs::remove(err);
  return o;
}

std::size_t lines_in(const std::string& text) {
  std::size_t n = 0;
  for (char c : text) n += c == '\n' ? 1 : 0;
  return n + (!text.empty() && text.back() != '\n' ? 1 : 0);
}

// The dynamic loader's own account of every library it maps (LD_DEBUG=libs, on stderr), dlopen
// included: no ldd, no guess from the binary's NEEDED list.
TEST(Startup, VersionMapsNoCudaLibrary) {
  const Outcome o = encbench("LD_DEBUG=libs", "--version");
  EXPECT_EQ(o.status, 0) << o.err;
  EXPECT_NE(o.out.find("0."), std::string::npos) << o.out;
  EXPECT_NE(o.err.find("libc.so.6"), std::string::npos) << "LD_DEBUG was not honoured:\n" << o.err.substr(0, 500);
  EXPECT_FALSE(maps_cuda(o.err)) << o.err;
}

// An idle server on the default sim device: nothing CUDA in its maps, and its RSS under 60 MiB
// (172 MB, 62 MB of it libcublasLt, when the CUDA libraries were linked into the binary).
TEST(Startup, IdleServeOnSimMapsNoCudaLibraryAndStaysSmall) {
  const fs::path log = fs::temp_directory_path() / ("encbench-startup-serve-" + std::to_string(::getpid()));
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::FILE* f = std::freopen(log.c_str(), "w", stdout);
    (void)f;
    ::dup2(::fileno(stdout), 2);
    ::execl(ENCBENCH_BINARY, ENCBENCH_BINARY, "serve", "--port", "0", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  bool listening = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!listening && std::chrono::steady_clock::now() < deadline) {
    listening = read_file(log).find("listening") != std::string::npos;
    if (!listening) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const std::string proc = "/proc/" + std::to_string(pid);
  const std::string maps = read_file(proc + "/maps");
  const std::string status = read_file(proc + "/status");
  ::kill(pid, SIGTERM);
  int wstatus = 0;
  ::waitpid(pid, &wstatus, 0);
  const std::string output = read_file(log);
  fs::remove(log);
  ASSERT_TRUE(listening) << output;
  EXPECT_NE(maps.find("libc.so.6"), std::string::npos);  // the maps were read
  EXPECT_FALSE(maps_cuda(maps)) << "CUDA libraries mapped by an idle sim server";
  const auto at = status.find("VmRSS:");
  ASSERT_NE(at, std::string::npos) << status;
  const double rss_mib = std::stod(status.substr(at + 6)) / 1024.0;
  EXPECT_GT(rss_mib, 1.0);
#if !defined(ENCBENCH_SANITIZED)
  // The bound is the product's (an idle server under 60 MB); a sanitizer build's shadow memory and
  // allocator quarantine are not, so there only the CUDA check above applies.
  EXPECT_LT(rss_mib, 60.0) << "idle serve on sim: " << rss_mib << " MiB";
#endif
}

// `--device cuda` where no CUDA device can be made: one line, nothing on stdout, exit 2. Without
// CUDA in the build it says so; with it (and no GPU or driver here) the module loads and the
// runtime's own reason is given; a module that cannot be loaded names the file and the loader's
// reason.
TEST(Startup, CudaDeviceThatCannotBeMadeIsOneLine) {
  const std::string args = "encode --device cuda --image 64x64 --model tiny-qwen2.5-vl";
  const Outcome o = encbench("", args);
  EXPECT_EQ(o.status, 2) << o.err;
  EXPECT_EQ(o.out, "");
  EXPECT_EQ(lines_in(o.err), 1u) << o.err;
#ifdef ENCBENCH_BUILT_WITH_CUDA
  const bool no_gpu = o.err.find("no CUDA device") != std::string::npos;
  if (!no_gpu) GTEST_SKIP() << "a CUDA device exists here: " << o.err;
  const Outcome broken = encbench("ENCBENCH_CUDA_MODULE=/etc/hostname", args);
  EXPECT_EQ(broken.status, 2) << broken.err;
  EXPECT_EQ(lines_in(broken.err), 1u) << broken.err;
  EXPECT_NE(broken.err.find("device 'cuda': cannot load the CUDA backend module /etc/hostname: "), std::string::npos)
      << broken.err;
#else
  EXPECT_NE(o.err.find("device 'cuda': encbench was not built with CUDA"), std::string::npos) << o.err;
#endif
}

}  // namespace
