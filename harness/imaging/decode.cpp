#include "harness/imaging/decode.hpp"

#include <cstring>
#include <memory>

#include "harness/imaging/codecs.hpp"

namespace encbench::imaging {
namespace {

bool has_prefix(const std::uint8_t* data, std::size_t size, std::string_view magic,
                std::size_t at = 0) {
  return size >= at + magic.size() && std::memcmp(data + at, magic.data(), magic.size()) == 0;
}

// Formats other decoders (stb_image, PIL) would open; named in the refusal so the sender knows
// what it sent. TGA has no magic number and stays "unrecognised".
std::string_view refused_name(const std::uint8_t* d, std::size_t n) {
  using namespace std::string_view_literals;
  if (has_prefix(d, n, "GIF87a") || has_prefix(d, n, "GIF89a")) return "GIF";
  if (has_prefix(d, n, "BM")) return "BMP";
  if (n >= 3 && d[0] == 'P' && d[1] >= '1' && d[1] <= '7' &&
      (d[2] == ' ' || d[2] == '\n' || d[2] == '\r' || d[2] == '\t' || d[2] == '#'))
    return "PNM";
  if (has_prefix(d, n, "8BPS")) return "PSD";
  if (has_prefix(d, n, "#?RADIANCE") || has_prefix(d, n, "#?RGBE")) return "HDR";
  if (has_prefix(d, n, "II*\0"sv) || has_prefix(d, n, "MM\0*"sv)) return "TIFF";
  if (has_prefix(d, n, "\x53\x80\xF6\x34")) return "PIC";
  if (has_prefix(d, n, "\0\0\1\0"sv)) return "ICO";
  if (has_prefix(d, n, "ftypavif", 4) || has_prefix(d, n, "ftypavis", 4)) return "AVIF";
  if (has_prefix(d, n, "ftypheic", 4) || has_prefix(d, n, "ftypmif1", 4)) return "HEIF";
  if (has_prefix(d, n, "\xFF\x0A") || has_prefix(d, n, "\0\0\0\x0CJXL "sv)) return "JPEG XL";
  if (has_prefix(d, n, "qoif")) return "QOI";
  return {};
}

}  // namespace

std::string_view to_string(Format format) {
  switch (format) {
    case Format::jpeg: return "JPEG";
    case Format::png: return "PNG";
    case Format::webp: return "WebP";
    case Format::unknown: break;
  }
  return "unknown";
}

Sniffed sniff(const std::uint8_t* data, std::size_t size) {
  if (has_prefix(data, size, "\xFF\xD8\xFF")) return {Format::jpeg, "JPEG"};
  if (has_prefix(data, size, "\x89PNG\r\n\x1A\n")) return {Format::png, "PNG"};
  if (has_prefix(data, size, "RIFF") && has_prefix(data, size, "WEBP", 8)) return {Format::webp, "WebP"};
  return {Format::unknown, refused_name(data, size)};
}

namespace {

// A header that declares no pixels is corrupt (libjpeg-turbo reports 0x0 for a stream cut before
// its frame header instead of failing): no caller should see a 0x0 image.
ImageInfo nonempty(const ImageInfo& info) {
  if (info.width <= 0 || info.height <= 0) detail::corrupt("image header declares an empty size");
  return info;
}

}  // namespace

ImageInfo read_info(const std::uint8_t* data, std::size_t size) {
  const Sniffed sniffed = sniff(data, size);
  switch (sniffed.format) {
    case Format::jpeg: return nonempty(detail::jpeg_info(data, size));
    case Format::png: return nonempty(detail::png_info(data, size));
    case Format::webp: return nonempty(detail::webp_info(data, size));
    case Format::unknown: break;
  }
  const std::string what = size == 0 ? std::string("image data is empty")
                           : sniffed.name.empty()
                               ? std::string("image format not recognised")
                               : "image format " + std::string(sniffed.name) + " is not accepted";
  throw DecodeError(DecodeError::Kind::unsupported_format,
                    what + "; accepted formats: " + std::string(kAcceptedFormats));
}

namespace {

void check_pixel_limit(const ImageInfo& info, const Limits& limits) {
  if (static_cast<std::int64_t>(info.width) * info.height > limits.max_pixels) {
    throw DecodeError(DecodeError::Kind::too_large,
                      "image is " + std::to_string(info.width) + "x" + std::to_string(info.height) +
                          " pixels, over the limit of " + std::to_string(limits.max_pixels) +
                          " pixels");
  }
}

}  // namespace

ImageInfo verify_decodes(const std::uint8_t* data, std::size_t size, const Limits& limits) {
  const ImageInfo info = read_info(data, size);
  check_pixel_limit(info, limits);
  if (info.format == Format::png && detail::png_verify_by_rows(data, size)) return info;
  // Default-initialised: the decoder writes every byte it needs, so no page is touched twice.
  const std::unique_ptr<std::uint8_t[]> scratch(
      new std::uint8_t[static_cast<std::size_t>(info.width) * static_cast<std::size_t>(info.height) * 4]);
  switch (info.format) {
    case Format::jpeg: detail::jpeg_decode(data, size, info, scratch.get()); break;
    case Format::png: detail::png_decode(data, size, info, scratch.get()); break;
    case Format::webp: detail::webp_decode(data, size, info, scratch.get()); break;
    case Format::unknown: detail::corrupt("unknown format");  // read_info threw already
  }
  return info;
}

RgbImage decode_rgb(const std::uint8_t* data, std::size_t size, const Limits& limits) {
  RgbImage image{read_info(data, size), {}};
  const ImageInfo& info = image.info;
  check_pixel_limit(info, limits);
  // Room for RGBA: the PNG and WebP paths decode alpha in place before compositing it away.
  image.rgb.resize(static_cast<std::size_t>(info.width) * static_cast<std::size_t>(info.height) * 4);
  switch (info.format) {
    case Format::jpeg: detail::jpeg_decode(data, size, info, image.rgb.data()); break;
    case Format::png: detail::png_decode(data, size, info, image.rgb.data()); break;
    case Format::webp: detail::webp_decode(data, size, info, image.rgb.data()); break;
    case Format::unknown: detail::corrupt("unknown format");  // read_info threw already
  }
  image.rgb.resize(static_cast<std::size_t>(info.width) * static_cast<std::size_t>(info.height) * 3);
  image.rgb.shrink_to_fit();
  return image;
}

namespace detail {

void composite_on_white(const std::uint8_t* rgba, std::size_t n, std::uint8_t* rgb) {
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint8_t* px = rgba + i * 4;
    const unsigned a = px[3];
    std::uint8_t out[3];
    for (int c = 0; c < 3; ++c) {
      const unsigned tmp = px[c] * a + 255u * (255u - a) + 128u;  // PIL's BLEND rounding
      out[c] = static_cast<std::uint8_t>((tmp + (tmp >> 8)) >> 8);
    }
    std::memcpy(rgb + i * 3, out, 3);  // i*3 <= i*4: never ahead of the pixels still to read
  }
}

}  // namespace detail
}  // namespace encbench::imaging
