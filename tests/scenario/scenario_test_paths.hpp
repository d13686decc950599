#pragma once
// Paths the scenario tests share: the source tree (scenarios/, profiles) and a fresh temporary
// folder per test and process.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace encbench::testpaths {

inline std::filesystem::path source_dir() {
  const char* dir = std::getenv("ENCBENCH_SOURCE_DIR");
  return dir ? std::filesystem::path(dir) : std::filesystem::current_path();
}

// /tmp/encbench-<area>-<name>-<pid>, emptied.
inline std::filesystem::path temp_dir(const std::string& area, const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("encbench-" + area + "-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace encbench::testpaths
