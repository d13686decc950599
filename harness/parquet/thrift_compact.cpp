#include "harness/parquet/thrift_compact.hpp"

#include <cstring>

namespace encbench::parquet {

namespace {
constexpr int kMaxDepth = 64;  // parquet's footer nests a handful of structs; a deeper one is corrupt
}

std::uint8_t ThriftCompactReader::byte() {
  if (pos_ >= end_) throw ThriftCompactError("thrift: truncated (ran past the end after " + std::to_string(consumed()) + " bytes)");
  return *pos_++;
}

std::uint64_t ThriftCompactReader::varint() {
  std::uint64_t value = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    const std::uint8_t b = byte();
    value |= static_cast<std::uint64_t>(b & 0x7F) << shift;
    if ((b & 0x80) == 0) return value;
  }
  throw ThriftCompactError("thrift: a varint longer than 10 bytes");
}

void ThriftCompactReader::enter() {
  if (++depth_ > kMaxDepth) throw ThriftCompactError("thrift: structs nested deeper than " + std::to_string(kMaxDepth));
}

std::int32_t ThriftCompactReader::read_i32() {
  const std::int64_t v = zigzag(varint());
  if (v < INT32_MIN || v > INT32_MAX) throw ThriftCompactError("thrift: an i32 out of range");
  return static_cast<std::int32_t>(v);
}

std::int64_t ThriftCompactReader::read_i64() { return zigzag(varint()); }

double ThriftCompactReader::read_double() {
  if (end_ - pos_ < 8) throw ThriftCompactError("thrift: truncated double");
  double d = 0;
  std::memcpy(&d, pos_, 8);  // little-endian in the compact protocol, as on the hosts we build for
  pos_ += 8;
  return d;
}

bool ThriftCompactReader::read_bool(ThriftType type) {
  if (type == ThriftType::bool_true) return true;
  if (type == ThriftType::bool_false) return false;
  return byte() == 1;  // a list element
}

std::string ThriftCompactReader::read_binary() {
  const std::uint64_t n = varint();
  if (n > static_cast<std::uint64_t>(end_ - pos_))
    throw ThriftCompactError("thrift: a string of " + std::to_string(n) + " bytes with " + std::to_string(end_ - pos_) + " left");
  std::string s(reinterpret_cast<const char*>(pos_), static_cast<std::size_t>(n));
  pos_ += n;
  return s;
}

ThriftListHeader ThriftCompactReader::read_list_header() {
  const std::uint8_t header = byte();
  ThriftListHeader list;
  list.element_type = static_cast<ThriftType>(header & 0x0F);
  std::uint64_t size = header >> 4;
  if (size == 15) size = varint();
  // Every element takes at least one byte (a bool element too), so a larger count is corrupt.
  if (size > static_cast<std::uint64_t>(end_ - pos_))
    throw ThriftCompactError("thrift: a list of " + std::to_string(size) + " elements with " + std::to_string(end_ - pos_) + " bytes left");
  list.size = static_cast<std::size_t>(size);
  return list;
}

void ThriftCompactReader::skip_element(ThriftType type) {
  if (type == ThriftType::bool_true || type == ThriftType::bool_false) byte();
  else skip(type);
}

void ThriftCompactReader::skip(ThriftType type) {
  switch (type) {
    case ThriftType::bool_true:
    case ThriftType::bool_false: return;
    case ThriftType::byte: byte(); return;
    case ThriftType::i16:
    case ThriftType::i32:
    case ThriftType::i64: varint(); return;
    case ThriftType::dbl: read_double(); return;
    case ThriftType::binary: {
      const std::uint64_t n = varint();
      if (n > static_cast<std::uint64_t>(end_ - pos_)) throw ThriftCompactError("thrift: truncated binary");
      pos_ += n;
      return;
    }
    case ThriftType::list:
    case ThriftType::set: {
      const ThriftListHeader list = read_list_header();
      enter();
      for (std::size_t i = 0; i < list.size; ++i) skip_element(list.element_type);
      leave();
      return;
    }
    case ThriftType::map: {
      const std::uint64_t n = varint();
      if (n == 0) return;
      if (n > static_cast<std::uint64_t>(end_ - pos_)) throw ThriftCompactError("thrift: a map larger than the bytes left");
      const std::uint8_t kv = byte();
      enter();
      for (std::uint64_t i = 0; i < n; ++i) {
        skip_element(static_cast<ThriftType>(kv >> 4));
        skip_element(static_cast<ThriftType>(kv & 0x0F));
      }
      leave();
      return;
    }
    case ThriftType::structure: read_struct([this](std::int16_t, ThriftType t) { skip(t); }); return;
    default: throw ThriftCompactError("thrift: unknown type " + std::to_string(static_cast<int>(type)));
  }
}

}  // namespace encbench::parquet
