#include "harness/device/cuda_module.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <vector>

#include "harness/core/error.hpp"

namespace encbench::device {

namespace {

constexpr const char* kModuleFile = "libencbench-cuda.so";

std::vector<std::filesystem::path> module_candidates() {
  std::vector<std::filesystem::path> paths;
  if (const char* env = std::getenv("ENCBENCH_CUDA_MODULE"); env != nullptr && *env != '\0') paths.emplace_back(env);
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    paths.push_back(self.parent_path() / kModuleFile);
    paths.push_back(self.parent_path() / ".." / "lib" / kModuleFile);
  }
#ifdef ENCBENCH_CUDA_MODULE_BUILD_PATH
  paths.emplace_back(ENCBENCH_CUDA_MODULE_BUILD_PATH);
#endif
  return paths;
}

// The module's handle. A process maps a library once, whoever asks: the handle is the process's
// (never closed, as the CUDA runtime it holds cannot be unloaded safely), behind a mutex so that
// two threads making devices open it once.
struct ModuleHandle {
  std::mutex mutex;
  void* handle = nullptr;
};

ModuleHandle& module_handle() {
  static ModuleHandle module;
  return module;
}

void* open_module() {
  ModuleHandle& module = module_handle();
  const std::lock_guard<std::mutex> lock(module.mutex);
  if (module.handle != nullptr) return module.handle;
  const std::string path = cuda_module_path();
  if (path.empty()) {
    throw InvalidInput(std::string("the CUDA backend module ") + kModuleFile +
                       " was not found next to the binary (set ENCBENCH_CUDA_MODULE to its path)");
  }
  module.handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (module.handle == nullptr) {
    const char* why = dlerror();
    throw InvalidInput("cannot load the CUDA backend module " + path + ": " + (why != nullptr ? why : "unknown error"));
  }
  return module.handle;
}

}  // namespace

bool cuda_module_built() {
#ifdef ENCBENCH_CUDA_MODULE_BUILD_PATH
  return true;
#else
  return false;
#endif
}

std::string cuda_module_path() {
  for (const std::filesystem::path& p : module_candidates()) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(p, ec)) return p.lexically_normal().string();
  }
  return {};
}

void* cuda_module_symbol(const char* name) {
  if (!cuda_module_built()) {
    throw InvalidInput("encbench was not built with CUDA (reconfigure with -DENCBENCH_CUDA=ON on a machine with the "
                       "CUDA toolkit)");
  }
  // A process that links the backend itself (tests/cuda) exports the entry points.
  if (void* linked = dlsym(RTLD_DEFAULT, name); linked != nullptr) return linked;
  void* symbol = dlsym(open_module(), name);
  if (symbol == nullptr) throw InvalidInput(std::string("the CUDA backend module has no entry point ") + name);
  return symbol;
}

bool cuda_libraries_mapped() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.find("libcudart") != std::string::npos || line.find("libcublas") != std::string::npos ||
        line.find("libcupti") != std::string::npos) {
      return true;
    }
  }
  return false;
}

}  // namespace encbench::device
