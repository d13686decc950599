#pragma once
// Fixtures many tests repeated: the process's resident memory, running a command line and
// capturing its output, quoting a path for the shell, reading a file whole. Library
// encbench_test_support (tests/support/CMakeLists.txt).
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <thread>

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

// Polls `done` every 5 ms until it holds or `limit` has passed; returns its last answer. For state
// another thread reaches (a server's counters): a deadline generous for a loaded ASan box, never a
// fixed sleep standing in for synchronisation.
template <class F>
bool eventually(F done, std::chrono::seconds limit = std::chrono::seconds(60)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return done();
}

}  // namespace encbench::testing
