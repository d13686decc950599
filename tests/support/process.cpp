#include "tests/support/process.hpp"

#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <iterator>

namespace encbench::testing {

std::int64_t rss_bytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  return -1;
}

CommandOutcome run_command(const std::string& command) {
  CommandOutcome r;
  FILE* p = ::popen(command.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) r.output.append(buf, n);
  const int status = ::pclose(p);
  r.rc = status == -1 ? -1 : WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

std::string shell_quote(const std::filesystem::path& path) {
  // Built with appends: GCC 12 warns falsely on "'" + std::string.
  std::string quoted;
  quoted += '\'';
  quoted += path.string();
  quoted += '\'';
  return quoted;
}

std::string read_text_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace encbench::testing
