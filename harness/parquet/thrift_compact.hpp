#pragma once
// A reader of Thrift's compact protocol, the encoding of a parquet file's footer and page headers.
// Hand-written rather than libthrift's: libthrift-dev needs C++ generated from parquet.thrift by
// the thrift compiler (another build tool and generated code in the tree), and its generated
// readers allocate lists and strings at the sizes the bytes claim; here every list and string is
// bounded by the bytes left before anything is allocated, and nesting by a fixed depth.
// Errors throw ThriftCompactError with what was being read; the parquet reader adds the file.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace encbench::parquet {

class ThriftCompactError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The compact protocol's field and element types (the low nibble of a field header).
enum class ThriftType : std::uint8_t {
  stop = 0, bool_true = 1, bool_false = 2, byte = 3, i16 = 4, i32 = 5, i64 = 6, dbl = 7,
  binary = 8, list = 9, set = 10, map = 11, structure = 12
};

struct ThriftListHeader {
  ThriftType element_type = ThriftType::stop;
  std::size_t size = 0;  // at most the bytes left (each element takes at least one)
};

class ThriftCompactReader {
 public:
  ThriftCompactReader(const std::uint8_t* data, std::size_t size) : pos_(data), end_(data + size), begin_(data) {}

  // Reads one struct: calls on_field(field_id, type) for each field until the stop byte; on_field
  // reads the value with the methods below or calls skip(type).
  template <class OnField>
  void read_struct(OnField&& on_field) {
    enter();
    std::int16_t last_id = 0;
    for (;;) {
      const std::uint8_t header = byte();
      const auto type = static_cast<ThriftType>(header & 0x0F);
      if (type == ThriftType::stop) break;
      const std::uint8_t delta = header >> 4;
      const std::int16_t id = delta != 0 ? static_cast<std::int16_t>(last_id + delta) : static_cast<std::int16_t>(zigzag(varint()));
      last_id = id;
      on_field(id, type);
    }
    leave();
  }

  std::int32_t read_i32();
  std::int64_t read_i64();
  double read_double();
  bool read_bool(ThriftType type);  // a field's bool is in its type; a list element's is a byte
  std::string read_binary();
  ThriftListHeader read_list_header();
  void skip(ThriftType type);
  void skip_element(ThriftType type);  // in a list, set or map: a bool is one byte

  std::size_t consumed() const { return static_cast<std::size_t>(pos_ - begin_); }

 private:
  std::uint8_t byte();
  std::uint64_t varint();
  static std::int64_t zigzag(std::uint64_t v) { return static_cast<std::int64_t>(v >> 1) ^ -static_cast<std::int64_t>(v & 1); }
  void enter();
  void leave() { --depth_; }

  const std::uint8_t* pos_;
  const std::uint8_t* end_;
  const std::uint8_t* begin_;
  int depth_ = 0;
};

}  // namespace encbench::parquet
