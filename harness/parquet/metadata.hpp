#pragma once
// A parquet file's footer (FileMetaData) and page headers, as parquet-format's parquet.thrift
// defines them: only the fields a row reader needs, each read by its field id, the rest skipped.
// Every count and size is checked against the bytes it claims to describe before use.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace encbench::parquet {

// parquet.thrift's enums, by their wire values.
enum class PhysicalType : std::int32_t { boolean = 0, int32 = 1, int64 = 2, int96 = 3, float32 = 4, float64 = 5, byte_array = 6, fixed_len_byte_array = 7 };
enum class Repetition : std::int32_t { required = 0, optional = 1, repeated = 2 };
enum class Codec : std::int32_t { uncompressed = 0, snappy = 1, gzip = 2, lzo = 3, brotli = 4, lz4 = 5, zstd = 6, lz4_raw = 7 };
enum class PageType : std::int32_t { data_page = 0, index_page = 1, dictionary_page = 2, data_page_v2 = 3 };
enum class Encoding : std::int32_t { plain = 0, plain_dictionary = 2, rle = 3, bit_packed = 4, delta_binary_packed = 5,
                                     delta_length_byte_array = 6, delta_byte_array = 7, rle_dictionary = 8, byte_stream_split = 9 };

const char* codec_name(std::int32_t codec);
const char* encoding_name(std::int32_t encoding);
const char* physical_type_name(std::int32_t type);

struct ParquetSchemaElement {
  std::string name;
  std::optional<std::int32_t> type;  // set on leaves (PhysicalType)
  std::int32_t type_length = 0;
  Repetition repetition = Repetition::required;
  std::int32_t num_children = 0;
  std::optional<std::int32_t> converted_type;  // UTF8 = 0, MAP = 1, MAP_KEY_VALUE = 2, LIST = 3, JSON = 19
  bool logical_string = false, logical_list = false, logical_map = false;
};

struct ParquetColumnChunk {
  std::int32_t type = 0;
  std::vector<std::string> path;
  std::int32_t codec = 0;
  std::int64_t num_values = 0;
  std::int64_t total_compressed_size = 0;
  std::int64_t data_page_offset = -1;
  std::optional<std::int64_t> dictionary_page_offset;
  bool external_file = false;  // ColumnChunk.file_path: the data sits in another file (unsupported)
};

struct ParquetRowGroup {
  std::int64_t num_rows = 0;
  std::vector<ParquetColumnChunk> columns;
};

struct ParquetFileMetadata {
  std::int64_t num_rows = 0;
  std::vector<ParquetSchemaElement> schema;  // depth-first, the root first
  std::vector<ParquetRowGroup> row_groups;
};

// Parses the footer; ThriftCompactError or std::runtime_error on corrupt bytes.
ParquetFileMetadata parse_file_metadata(const std::uint8_t* data, std::size_t size);

struct ParquetPageHeader {
  PageType type = PageType::data_page;
  std::int32_t uncompressed_size = 0, compressed_size = 0;
  std::int32_t num_values = 0;          // data page v1/v2 and dictionary page
  std::int32_t encoding = 0;
  std::int32_t num_rows = 0;            // v2 only
  std::int32_t definition_levels_bytes = 0, repetition_levels_bytes = 0;  // v2 only: stored uncompressed
  bool is_compressed = true;            // v2 only
  std::size_t header_bytes = 0;         // the header's own length
};

// Parses one page header from the bytes at hand (which may run past it).
ParquetPageHeader parse_page_header(const std::uint8_t* data, std::size_t size);

}  // namespace encbench::parquet
