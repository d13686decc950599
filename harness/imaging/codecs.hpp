#pragma once
// Per-format decoders behind decode.hpp. Each reads its header without allocating pixels, and
// decodes into an RGB buffer the caller sized from that header.
#include <cstddef>
#include <cstdint>

#include "harness/imaging/decode.hpp"

namespace encbench::imaging::detail {

ImageInfo jpeg_info(const std::uint8_t* data, std::size_t size);
void jpeg_decode(const std::uint8_t* data, std::size_t size, const ImageInfo& info, std::uint8_t* rgb);

ImageInfo png_info(const std::uint8_t* data, std::size_t size);
void png_decode(const std::uint8_t* data, std::size_t size, const ImageInfo& info, std::uint8_t* rgb);
// Decodes a non-interlaced PNG one row at a time into one row of scratch, the pixels dropped;
// false (nothing decoded) for an interlaced one, which needs the whole image (png_decode).
bool png_verify_by_rows(const std::uint8_t* data, std::size_t size);

ImageInfo webp_info(const std::uint8_t* data, std::size_t size);
void webp_decode(const std::uint8_t* data, std::size_t size, const ImageInfo& info, std::uint8_t* rgb);

// vLLM's rgba_to_rgb: alpha composited on white with PIL's BLEND rounding. In place: n pixels of
// RGBA at `rgba` become n pixels of RGB at `rgb` (rgb may equal rgba; it is written behind).
void composite_on_white(const std::uint8_t* rgba, std::size_t n, std::uint8_t* rgb);

[[noreturn]] inline void corrupt(const std::string& message) {
  throw DecodeError(DecodeError::Kind::corrupt, message);
}

}  // namespace encbench::imaging::detail
