#pragma once
// Rows of a parquet file as JSON objects, shaped as the `datasets` library / pyarrow see them:
// a struct column is an object, a LIST column (3-level lists, and legacy repeated fields) an
// array, a byte array a string when annotated UTF8/STRING (else JSON binary), a null where the
// definition levels say so. Only the rows asked for are built: a row group none of them is in
// is never read, and pages are read from the file one at a time, so memory follows the rows in
// use and the largest page, not the file.
//
// What is read: data pages v1 and v2, PLAIN, PLAIN_DICTIONARY and RLE_DICTIONARY values, RLE
// levels, codecs UNCOMPRESSED, SNAPPY, GZIP and ZSTD, any number of row groups. Anything else
// (another encoding or codec, a MAP column, encryption, a column chunk in another file), a
// truncated or corrupt file: encbench::InvalidInput in one line naming the file and, where one
// is at fault, the column and what was expected.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace encbench::parquet {

// A leaf column as the schema declares it, for callers checking a layout before reading.
struct ParquetLeafInfo {
  std::string path;  // dotted: images.list.element.bytes
  std::int32_t physical_type = 0;  // PhysicalType
  bool text = false;               // BYTE_ARRAY annotated as text
};

class ParquetFile {
 public:
  // Reads and checks the footer (sizes against the file's before any allocation).
  explicit ParquetFile(std::filesystem::path path);
  ~ParquetFile();
  ParquetFile(ParquetFile&&) noexcept;
  ParquetFile& operator=(ParquetFile&&) noexcept;

  const std::filesystem::path& path() const { return path_; }
  std::int64_t num_rows() const;
  std::size_t num_row_groups() const;
  std::vector<std::string> column_names() const;  // the top-level columns, in schema order
  std::vector<ParquetLeafInfo> leaves() const;

  // The rows at `rows` (ascending, distinct, each < num_rows()) with only the top-level
  // `columns` (names column_names() has), as JSON objects in the order of `rows`.
  std::vector<nlohmann::json> read_rows(const std::vector<std::int64_t>& rows, const std::vector<std::string>& columns) const;

 private:
  struct Footer;
  std::filesystem::path path_;
  std::unique_ptr<Footer> footer_;
};

}  // namespace encbench::parquet
