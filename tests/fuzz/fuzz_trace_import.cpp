// libFuzzer target: the trace readers (Chrome / Kineto / torch_npu JSON, streamed) and the
// import that interprets them. Gzip input (the corpus holds .gz seeds) goes through the file path
// (gzip is detected by content there), via an in-memory file. Property: an ImportedTrace or an
// InvalidInput; nothing else escapes.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "harness/core/error.hpp"
#include "harness/trace_read/trace_import.hpp"

namespace {

void import_as_file(const std::uint8_t* data, std::size_t size) {
  const int fd = memfd_create("fuzz_trace", 0);
  if (fd < 0) __builtin_trap();
  if (size > 0 && write(fd, data, size) != static_cast<ssize_t>(size)) __builtin_trap();
  try {
    (void)encbench::trace::import_trace_file("/proc/self/fd/" + std::to_string(fd));
  } catch (const encbench::InvalidInput&) {
  }
  close(fd);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size >= 2 && data[0] == 0x1F && data[1] == 0x8B) {
    import_as_file(data, size);
    return 0;
  }
  try {
    (void)encbench::trace::import_trace_text(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz");
  } catch (const encbench::InvalidInput&) {
  }
  return 0;
}
