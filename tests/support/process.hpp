#pragma once
// Fixtures many tests repeated: the process's resident memory, running a command line and
// capturing its output, quoting a path for the shell, reading a file whole. Library
// encbench_test_support (tests/support/CMakeLists.txt).
#include <cstdint>
#include <filesystem>
#include <string>

namespace encbench::testing {

// VmRSS of this process in bytes (/proc/self/status); -1 where it cannot be read.
std::int64_t rss_bytes();

struct CommandOutcome {
  int rc = -1;         // the exit status; 128 + signal when killed; -1 when it could not start
  std::string output;  // what it wrote to stdout (append " 2>&1" to the command for stderr too)
};
// Runs `command` with /bin/sh and captures its stdout.
CommandOutcome run_command(const std::string& command);

// The path in single quotes, for a shell command line (paths with a ' are not expected in tests).
std::string shell_quote(const std::filesystem::path& path);

// The file's bytes ("" when it cannot be opened).
std::string read_text_file(const std::filesystem::path& path);

}  // namespace encbench::testing
