#pragma once
// A column chunk's pages decoded: decompression (Debian's libsnappy, libzstd, zlib), the
// RLE/bit-packed hybrid of levels and dictionary indices, and PLAIN values, as parquet-format's
// Encodings.md defines them. Values come out as JSON (a byte array as a string when the schema
// says UTF8/STRING/JSON, else as JSON binary). Errors are std::runtime_error saying what was
// expected; the reader adds the file and the column.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/parquet/metadata.hpp"

namespace encbench::parquet {

// The largest page accepted (compressed or not), and the most values in one page: bounds on what
// a header may make the reader allocate.
inline constexpr std::size_t kMaxPageBytes = 256u << 20;
inline constexpr std::size_t kMaxPageValues = 1u << 24;

// Decompresses `size` bytes with the column's codec into exactly `uncompressed_size` bytes.
std::string decompress_page(std::int32_t codec, const std::uint8_t* data, std::size_t size, std::size_t uncompressed_size);

// The RLE/bit-packed hybrid (Encodings.md): `count` values of `bit_width` bits from [data, data+size).
std::vector<std::uint32_t> decode_rle_hybrid(const std::uint8_t* data, std::size_t size, int bit_width, std::size_t count);

// Bits needed for values 0..max_value.
int bit_width_for(std::uint32_t max_value);

// How a leaf's values are typed, from its schema element.
struct LeafValueType {
  std::int32_t physical = 0;
  std::int32_t type_length = 0;  // FIXED_LEN_BYTE_ARRAY
  bool text = false;             // BYTE_ARRAY annotated UTF8 / STRING / JSON / ENUM
};

// PLAIN values read one at a time; skip() moves past one without building it.
class PlainValueReader {
 public:
  PlainValueReader(const std::uint8_t* data, std::size_t size, LeafValueType type) : data_(data), size_(size), type_(type) {}
  nlohmann::json next();
  void skip();

 private:
  std::size_t value_bytes();  // the next value's size in bytes (checked against what is left)
  const std::uint8_t* data_;
  std::size_t size_, pos_ = 0, bit_ = 0;
  LeafValueType type_;
};

// A dictionary page's values.
std::vector<nlohmann::json> decode_dictionary(const std::uint8_t* data, std::size_t size, std::size_t count, LeafValueType type);

}  // namespace encbench::parquet
