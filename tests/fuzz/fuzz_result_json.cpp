// libFuzzer target: the result readers of encbench compare/report/history (reports/result.*),
// through load_result as the CLI calls it: read_json_file (plain or gzip, the lenient NaN/Infinity
// retry), kind detection and parsing of every kind (encbench, vllm bench serve, Google
// Benchmark, ...). The input is an in-memory file. Property: a RunResult or an InvalidInput with
// a message; nothing else escapes. The same bytes also go to the gate-file reader (`compare
// --gate FILE`, reports::load_gate), whose files are JSON documents users write.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "harness/core/error.hpp"
#include "reports/compare.hpp"
#include "reports/result.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const int fd = memfd_create("fuzz_result", 0);
  if (fd < 0) __builtin_trap();
  if (size > 0 && write(fd, data, size) != static_cast<ssize_t>(size)) __builtin_trap();
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  try {
    (void)encbench::reports::load_result(path);
  } catch (const encbench::InvalidInput& e) {
    if (std::string_view(e.what()).empty()) __builtin_trap();
  }
  try {
    (void)encbench::reports::load_gate(path);
  } catch (const encbench::InvalidInput& e) {
    if (std::string_view(e.what()).empty()) __builtin_trap();
  }
  close(fd);
  return 0;
}
