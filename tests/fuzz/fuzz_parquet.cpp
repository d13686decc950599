// libFuzzer target: a parquet file as `bench serve --dataset-path FILE.parquet` reads it
// (harness/parquet/reader.cpp): the footer's Thrift compact protocol, the schema tree, page
// headers, SNAPPY/GZIP/ZSTD pages, RLE levels and dictionary indices, PLAIN values, and the
// assembly of nested rows. The input is the whole file, in memory. Property: every row of every
// column (at most the first 256 rows) as JSON objects, or an InvalidInput with a message; nothing
// else escapes, and no allocation follows a size the bytes do not back (ASan's allocator limits).
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "harness/core/error.hpp"
#include "harness/parquet/reader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const int fd = memfd_create("fuzz_parquet", 0);
  if (fd < 0) __builtin_trap();
  if (size > 0 && write(fd, data, size) != static_cast<ssize_t>(size)) __builtin_trap();
  try {
    const encbench::parquet::ParquetFile file("/proc/self/fd/" + std::to_string(fd));
    std::vector<std::int64_t> rows;
    for (std::int64_t r = 0; r < file.num_rows() && r < 256; ++r) rows.push_back(r);
    const auto got = file.read_rows(rows, file.column_names());
    if (got.size() != rows.size()) __builtin_trap();
    for (const auto& row : got)
      if (!row.is_object() && !row.is_null()) __builtin_trap();
  } catch (const encbench::InvalidInput& e) {
    if (std::string_view(e.what()).empty()) __builtin_trap();
  }
  close(fd);
  return 0;
}
