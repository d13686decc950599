#include "harness/parquet/pages.hpp"

#include <snappy-c.h>
#include <zlib.h>
#include <zstd.h>

#include <cstring>
#include <stdexcept>

namespace encbench::parquet {

namespace {

std::string inflate_gzip(const std::uint8_t* data, std::size_t size, std::size_t uncompressed_size) {
  std::string out(uncompressed_size + 1, '\0');  // one spare byte shows a page longer than its header says
  z_stream stream{};
  // 32 + MAX_WBITS: a gzip (RFC 1952, parquet-format's GZIP) or zlib header, detected
  if (inflateInit2(&stream, 32 + MAX_WBITS) != Z_OK) throw std::runtime_error("zlib: inflateInit2 failed");
  stream.next_in = const_cast<Bytef*>(data);
  stream.avail_in = static_cast<uInt>(size);
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  const int rc = inflate(&stream, Z_FINISH);
  const std::size_t produced = out.size() - stream.avail_out;
  inflateEnd(&stream);
  if (rc != Z_STREAM_END && produced <= uncompressed_size)
    throw std::runtime_error("GZIP page is corrupt or truncated (zlib " + std::to_string(rc) + ")");
  if (produced != uncompressed_size)
    throw std::runtime_error("GZIP page inflates to " + std::string(produced > uncompressed_size ? "more than " : "") +
                             std::to_string(produced) + " bytes, its header says " + std::to_string(uncompressed_size));
  out.resize(uncompressed_size);
  return out;
}

std::string uncompress_snappy(const std::uint8_t* data, std::size_t size, std::size_t uncompressed_size) {
  std::size_t length = 0;
  const char* in = reinterpret_cast<const char*>(data);
  if (snappy_uncompressed_length(in, size, &length) != SNAPPY_OK || length != uncompressed_size)
    throw std::runtime_error("SNAPPY page is corrupt or its length differs from the header's " + std::to_string(uncompressed_size));
  std::string out(length, '\0');
  if (snappy_uncompress(in, size, out.data(), &length) != SNAPPY_OK || length != uncompressed_size)
    throw std::runtime_error("SNAPPY page is corrupt");
  return out;
}

std::string decompress_zstd(const std::uint8_t* data, std::size_t size, std::size_t uncompressed_size) {
  const unsigned long long content = ZSTD_getFrameContentSize(data, size);
  if (content == ZSTD_CONTENTSIZE_ERROR || (content != ZSTD_CONTENTSIZE_UNKNOWN && content != uncompressed_size))
    throw std::runtime_error("ZSTD page is corrupt or its size differs from the header's " + std::to_string(uncompressed_size));
  std::string out(uncompressed_size, '\0');
  const std::size_t got = ZSTD_decompress(out.data(), out.size(), data, size);
  if (ZSTD_isError(got) || got != uncompressed_size)
    throw std::runtime_error(std::string("ZSTD page is corrupt: ") + (ZSTD_isError(got) ? ZSTD_getErrorName(got) : "short"));
  return out;
}

}  // namespace

std::string decompress_page(std::int32_t codec, const std::uint8_t* data, std::size_t size, std::size_t uncompressed_size) {
  if (uncompressed_size > kMaxPageBytes)
    throw std::runtime_error("a page of " + std::to_string(uncompressed_size) + " bytes (at most " + std::to_string(kMaxPageBytes) + ")");
  switch (static_cast<Codec>(codec)) {
    case Codec::uncompressed:
      if (size != uncompressed_size) throw std::runtime_error("an UNCOMPRESSED page whose two sizes differ");
      return std::string(reinterpret_cast<const char*>(data), size);
    // Deflate expands at most about 1032:1 and snappy about 22:1 (a 3-byte copy of 64 bytes): a
    // header claiming more is refused before its buffer is allocated. ZSTD's frame states its size.
    case Codec::snappy:
      if (uncompressed_size > size * 32 + 64) throw std::runtime_error("a SNAPPY page claiming " + std::to_string(uncompressed_size) + " bytes from " + std::to_string(size));
      return uncompress_snappy(data, size, uncompressed_size);
    case Codec::gzip:
      if (uncompressed_size > size * 1032 + 1024) throw std::runtime_error("a GZIP page claiming " + std::to_string(uncompressed_size) + " bytes from " + std::to_string(size));
      return inflate_gzip(data, size, uncompressed_size);
    case Codec::zstd: return decompress_zstd(data, size, uncompressed_size);
    default:
      throw std::runtime_error(std::string("compression codec ") + codec_name(codec) +
                               " is not supported (expected UNCOMPRESSED, SNAPPY, GZIP or ZSTD)");
  }
}

int bit_width_for(std::uint32_t max_value) {
  int width = 0;
  while (max_value > 0) {
    ++width;
    max_value >>= 1;
  }
  return width;
}

std::vector<std::uint32_t> decode_rle_hybrid(const std::uint8_t* data, std::size_t size, int bit_width, std::size_t count) {
  if (bit_width < 0 || bit_width > 32) throw std::runtime_error("RLE bit width " + std::to_string(bit_width));
  if (count > kMaxPageValues) throw std::runtime_error("more than " + std::to_string(kMaxPageValues) + " values in a page");
  std::vector<std::uint32_t> out;
  out.reserve(count);
  std::size_t pos = 0;
  const std::size_t value_bytes = (static_cast<std::size_t>(bit_width) + 7) / 8;
  while (out.size() < count) {
    std::uint64_t header = 0;
    for (int shift = 0;; shift += 7) {
      if (pos >= size || shift > 35) throw std::runtime_error("RLE levels/indices truncated");
      header |= static_cast<std::uint64_t>(data[pos] & 0x7F) << shift;
      if ((data[pos++] & 0x80) == 0) break;
    }
    if (header & 1) {  // bit-packed: (header >> 1) groups of 8 values, LSB first
      const std::uint64_t values = (header >> 1) * 8;
      const std::uint64_t bytes = (header >> 1) * static_cast<std::uint64_t>(bit_width);
      if (bytes > size - pos) throw std::runtime_error("RLE bit-packed run truncated");
      for (std::uint64_t v = 0; v < values && out.size() < count; ++v) {
        std::uint32_t value = 0;
        for (int b = 0; b < bit_width; ++b) {
          const std::uint64_t bit = v * static_cast<std::uint64_t>(bit_width) + static_cast<std::uint64_t>(b);
          value |= static_cast<std::uint32_t>((data[pos + bit / 8] >> (bit % 8)) & 1u) << b;
        }
        out.push_back(value);
      }
      pos += static_cast<std::size_t>(bytes);
    } else {  // a run: (header >> 1) copies of one value in value_bytes bytes
      const std::uint64_t run = header >> 1;
      if (value_bytes > size - pos) throw std::runtime_error("RLE run truncated");
      std::uint32_t value = 0;
      for (std::size_t b = 0; b < value_bytes; ++b) value |= static_cast<std::uint32_t>(data[pos + b]) << (8 * b);
      pos += value_bytes;
      if (run == 0) throw std::runtime_error("RLE run of length 0");
      const std::size_t take = static_cast<std::size_t>(std::min<std::uint64_t>(run, count - out.size()));
      out.insert(out.end(), take, value);
    }
  }
  return out;
}

std::size_t PlainValueReader::value_bytes() {
  const std::size_t left = size_ - pos_;
  std::size_t n = 0;
  switch (static_cast<PhysicalType>(type_.physical)) {
    case PhysicalType::int32:
    case PhysicalType::float32: n = 4; break;
    case PhysicalType::int64:
    case PhysicalType::float64: n = 8; break;
    case PhysicalType::int96: n = 12; break;
    case PhysicalType::fixed_len_byte_array:
      if (type_.type_length <= 0) throw std::runtime_error("FIXED_LEN_BYTE_ARRAY without a positive type_length");
      n = static_cast<std::size_t>(type_.type_length);
      break;
    case PhysicalType::byte_array: {
      if (left < 4) throw std::runtime_error("PLAIN BYTE_ARRAY length truncated");
      std::uint32_t length = 0;
      std::memcpy(&length, data_ + pos_, 4);
      if (length > left - 4) throw std::runtime_error("PLAIN BYTE_ARRAY of " + std::to_string(length) + " bytes with " + std::to_string(left - 4) + " left");
      return 4 + static_cast<std::size_t>(length);
    }
    default: throw std::runtime_error("physical type " + std::to_string(type_.physical));
  }
  if (n > left) throw std::runtime_error(std::string("PLAIN ") + physical_type_name(type_.physical) + " values truncated");
  return n;
}

void PlainValueReader::skip() {
  if (static_cast<PhysicalType>(type_.physical) == PhysicalType::boolean) {
    if (bit_ / 8 >= size_) throw std::runtime_error("PLAIN BOOLEAN values truncated");
    ++bit_;
    return;
  }
  pos_ += value_bytes();
}

nlohmann::json PlainValueReader::next() {
  const auto* p = data_ + pos_;
  switch (static_cast<PhysicalType>(type_.physical)) {
    case PhysicalType::boolean: {
      if (bit_ / 8 >= size_) throw std::runtime_error("PLAIN BOOLEAN values truncated");
      const bool v = (data_[bit_ / 8] >> (bit_ % 8)) & 1;
      ++bit_;
      return v;
    }
    case PhysicalType::int32: { std::int32_t v; pos_ += value_bytes(); std::memcpy(&v, p, 4); return v; }
    case PhysicalType::int64: { std::int64_t v; pos_ += value_bytes(); std::memcpy(&v, p, 8); return v; }
    case PhysicalType::float32: { float v; pos_ += value_bytes(); std::memcpy(&v, p, 4); return v; }
    case PhysicalType::float64: { double v; pos_ += value_bytes(); std::memcpy(&v, p, 8); return v; }
    case PhysicalType::byte_array: {
      const std::size_t n = value_bytes();
      pos_ += n;
      if (type_.text) return std::string(reinterpret_cast<const char*>(p + 4), n - 4);
      return nlohmann::json::binary(std::vector<std::uint8_t>(p + 4, p + n));
    }
    default: {
      const std::size_t n = value_bytes();
      pos_ += n;
      return nlohmann::json::binary(std::vector<std::uint8_t>(p, p + n));
    }
  }
}

std::vector<nlohmann::json> decode_dictionary(const std::uint8_t* data, std::size_t size, std::size_t count, LeafValueType type) {
  // Every PLAIN value takes at least one bit (booleans) or one byte, so a larger count is corrupt.
  if (count > size * 8 || count > kMaxPageValues) throw std::runtime_error("a dictionary of " + std::to_string(count) + " values in " + std::to_string(size) + " bytes");
  PlainValueReader reader(data, size, type);
  std::vector<nlohmann::json> values;
  values.reserve(count);
  for (std::size_t i = 0; i < count; ++i) values.push_back(reader.next());
  return values;
}

}  // namespace encbench::parquet
