#pragma once
// Image decoding for bytes nobody vouches for (request bodies, user files, datasets). Only JPEG
// (libjpeg-turbo's TurboJPEG API), PNG (libpng with user limits) and WebP (libwebp) are decoded:
// libraries that are fuzzed continuously (OSS-Fuzz) and that vLLM's PIL uses for the same formats.
// Every other container is refused with an error that names it and the accepted formats.
//
// The header is read first and the pixel limit checked before any pixel buffer is allocated, so a
// small file that claims a huge size costs nothing. The result follows vLLM's
// `Image.open(...)` + convert("RGB"): no EXIF orientation is applied (vLLM does not call
// exif_transpose), RGBA is composited on white (vLLM's rgba_to_rgb), other alpha is dropped and
// grey is replicated.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace encbench::imaging {

enum class Format { jpeg, png, webp, unknown };
std::string_view to_string(Format format);  // "JPEG", "PNG", "WebP", "unknown"

// Said in every refusal of a format, so a client learns what to send instead.
inline constexpr std::string_view kAcceptedFormats = "JPEG, PNG and WebP";

struct Limits {
  std::int64_t max_pixels = 50'000'000;  // width * height; refused before allocating
};

struct ImageInfo {
  Format format = Format::unknown;
  int width = 0;
  int height = 0;
  int channels_in_file = 0;  // 1 grey, 2 grey+alpha, 3 colour, 4 colour+alpha (or CMYK)
};

struct RgbImage {
  ImageInfo info;
  std::vector<std::uint8_t> rgb;  // width * height * 3, row-major
};

class DecodeError : public std::runtime_error {
 public:
  enum class Kind { unsupported_format, too_large, corrupt };
  DecodeError(Kind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  Kind kind() const { return kind_; }

 private:
  Kind kind_;
};

// What the magic bytes say. `name` is set for refused formats we recognise ("GIF", "PNM", ...)
// so the error can say what was sent; empty when nothing is recognised.
struct Sniffed {
  Format format = Format::unknown;
  std::string_view name;
};
Sniffed sniff(const std::uint8_t* data, std::size_t size);

// Header only: format, size and channels. Throws DecodeError (unsupported_format or corrupt).
ImageInfo read_info(const std::uint8_t* data, std::size_t size);

// Full decode to 8-bit RGB. Throws DecodeError: unsupported_format, too_large (over
// limits.max_pixels, said before allocating), corrupt (truncated or malformed data).
RgbImage decode_rgb(const std::uint8_t* data, std::size_t size, const Limits& limits);

// Decodes in full only to prove that the data decodes (truncated or corrupt data throws as in
// decode_rgb) and returns the header's info; the pixels are dropped. For callers that need the
// size and the verdict, not the pixels (the server). Peak memory: one row for a non-interlaced
// PNG, else width * height * 4 bytes, written by the decoder and never zero-filled or copied
// (decode_rgb peaks at 7 bytes per pixel: its zeroed RGBA buffer and the RGB copy it shrinks to).
ImageInfo verify_decodes(const std::uint8_t* data, std::size_t size, const Limits& limits);

// Encoders for the project's own images (datasets, tests): JPEG from RGB at PIL's default quality
// (75) and subsampling; PNG from grey (1), RGB (3) or RGBA (4) pixels. Throw std::runtime_error.
std::string encode_jpeg(const std::uint8_t* rgb, int width, int height, int quality = 75);
std::string encode_png(const std::uint8_t* pixels, int width, int height, int channels = 3);

}  // namespace encbench::imaging
