// PNG through libpng's low-level API, so that its limits can be set: image side, ancillary chunk
// count and chunk allocation (a zTXt/iCCP bomb cannot inflate past it). libpng reports errors by
// longjmp; each setjmp lives in a small function with no C++ object that needs destroying
// (jumping over a destructor is undefined), and the RAII owner of the libpng structs sits in the
// caller.
#include <png.h>

#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "harness/imaging/codecs.hpp"

namespace encbench::imaging::detail {
namespace {

constexpr png_uint_32 kMaxSide = 1u << 20;           // per side; the pixel limit is checked after
constexpr png_uint_32 kMaxAncillaryChunks = 256;     // text, sPLT, unknown chunks kept in memory
constexpr png_alloc_size_t kMaxChunkBytes = 8u << 20;  // any one chunk's (decompressed) data

struct PngSource {
  const std::uint8_t* data;
  std::size_t size;
  std::size_t offset;
  char message[256];
};

void on_error(png_structp png, png_const_charp message) {
  auto* source = static_cast<PngSource*>(png_get_error_ptr(png));
  std::snprintf(source->message, sizeof source->message, "%s", message ? message : "libpng error");
  png_longjmp(png, 1);
}

void on_warning(png_structp, png_const_charp) {}  // benign (unknown chunks, bad sRGB): as PIL

void on_read(png_structp png, png_bytep out, png_size_t length) {
  auto* source = static_cast<PngSource*>(png_get_io_ptr(png));
  if (length > source->size - source->offset) png_error(png, "PNG data is truncated");
  std::memcpy(out, source->data + source->offset, length);
  source->offset += length;
}

class PngReader {
 public:
  PngReader(const std::uint8_t* data, std::size_t size) : source_{data, size, 0, {}} {
    png_ = png_create_read_struct(PNG_LIBPNG_VER_STRING, &source_, on_error, on_warning);
    if (png_) info_ = png_create_info_struct(png_);
    if (!png_ || !info_) throw std::bad_alloc();
    png_set_read_fn(png_, &source_, on_read);
    png_set_user_limits(png_, kMaxSide, kMaxSide);
    png_set_chunk_cache_max(png_, kMaxAncillaryChunks);
    png_set_chunk_malloc_max(png_, kMaxChunkBytes);
  }
  ~PngReader() { png_destroy_read_struct(&png_, &info_, nullptr); }
  PngReader(const PngReader&) = delete;
  PngReader& operator=(const PngReader&) = delete;

  png_structp png() const { return png_; }
  png_infop info() const { return info_; }
  std::string message() const { return source_.message; }

 private:
  PngSource source_;
  png_structp png_ = nullptr;
  png_infop info_ = nullptr;
};

// Reads IHDR..IDAT and sets the transforms to 8-bit RGB, plus alpha only for colour+alpha files
// (the one mode vLLM composites on white; PIL's convert("RGB") drops the rest). False on error.
bool read_header(png_structp png, png_infop info, bool decode, int* channels_in_file) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_read_info(png, info);
  const int color = png_get_color_type(png, info);
  *channels_in_file = png_get_channels(png, info) + (color == PNG_COLOR_TYPE_PALETTE ? 2 : 0);
  if (!decode) return true;
  png_set_strip_16(png);
  png_set_packing(png);
  if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (color == PNG_COLOR_TYPE_GRAY || color == PNG_COLOR_TYPE_GRAY_ALPHA) {
    png_set_expand_gray_1_2_4_to_8(png);
    png_set_gray_to_rgb(png);
  }
  // Expansion turns tRNS into alpha; stripping it keeps RGB for every type but RGBA, as PIL's
  // convert("RGB") of modes P, L, LA and RGB with transparency does.
  if (color != PNG_COLOR_TYPE_RGB_ALPHA) png_set_strip_alpha(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  return true;
}

// One row at a time into `row` (each row overwrites the last). False on a libpng error.
bool read_rows_into_one(png_structp png, png_uint_32 height, png_bytep row) {
  if (setjmp(png_jmpbuf(png))) return false;
  for (png_uint_32 y = 0; y < height; ++y) png_read_row(png, row, nullptr);
  return true;
}

bool read_rows(png_structp png, png_bytepp rows) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_read_image(png, rows);
  return true;
}

// Walks the chunk list before libpng sees it: a chunk that declares more bytes than the file
// holds is refused here. libpng sizes (and zeroes) some buffers from the declared length before
// it reads the data: a 134-byte file made it clear gigabytes (found by fuzz_image_decode).
void check_chunk_lengths(const std::uint8_t* data, std::size_t size) {
  std::size_t offset = 8;  // after the signature
  while (offset + 8 <= size) {
    const std::uint32_t length = (std::uint32_t{data[offset]} << 24) | (std::uint32_t{data[offset + 1]} << 16) |
                                 (std::uint32_t{data[offset + 2]} << 8) | std::uint32_t{data[offset + 3]};
    if (std::uint64_t{length} + 12 > size - offset)
      corrupt("PNG chunk declares " + std::to_string(length) + " bytes, only " +
              std::to_string(size - offset) + " left (truncated or corrupt)");
    if (std::memcmp(data + offset + 4, "IEND", 4) == 0) return;
    offset += std::size_t{length} + 12;  // length, type, data, CRC
  }
}

}  // namespace

ImageInfo png_info(const std::uint8_t* data, std::size_t size) {
  check_chunk_lengths(data, size);
  PngReader reader(data, size);
  int channels = 0;
  if (!read_header(reader.png(), reader.info(), false, &channels))
    corrupt("invalid PNG header: " + reader.message());
  return ImageInfo{Format::png, static_cast<int>(png_get_image_width(reader.png(), reader.info())),
                   static_cast<int>(png_get_image_height(reader.png(), reader.info())), channels};
}

void png_decode(const std::uint8_t* data, std::size_t size, const ImageInfo& info, std::uint8_t* rgb) {
  PngReader reader(data, size);
  int channels = 0;
  if (!read_header(reader.png(), reader.info(), true, &channels))
    corrupt("invalid PNG header: " + reader.message());
  const std::size_t row_bytes = png_get_rowbytes(reader.png(), reader.info());
  const std::size_t width = static_cast<std::size_t>(info.width);
  const bool rgba = row_bytes == width * 4;
  if (row_bytes != width * 3 && !rgba) corrupt("unexpected PNG row layout");
  std::vector<png_bytep> rows(static_cast<std::size_t>(info.height));
  for (std::size_t y = 0; y < rows.size(); ++y) rows[y] = rgb + y * row_bytes;
  // Data after the last row (IEND, trailing chunks) is not read: PIL does not need it either.
  if (!read_rows(reader.png(), rows.data())) corrupt("could not decode PNG: " + reader.message());
  if (rgba) composite_on_white(rgb, width * rows.size(), rgb);
}

bool png_verify_by_rows(const std::uint8_t* data, std::size_t size) {
  PngReader reader(data, size);
  int channels = 0;
  if (!read_header(reader.png(), reader.info(), true, &channels))
    corrupt("invalid PNG header: " + reader.message());
  if (png_get_interlace_type(reader.png(), reader.info()) != PNG_INTERLACE_NONE) return false;
  std::vector<png_byte> row(png_get_rowbytes(reader.png(), reader.info()));
  if (!read_rows_into_one(reader.png(), png_get_image_height(reader.png(), reader.info()), row.data()))
    corrupt("could not decode PNG: " + reader.message());
  return true;
}

}  // namespace encbench::imaging::detail

namespace encbench::imaging {

std::string encode_png(const std::uint8_t* pixels, int width, int height, int channels) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  image.width = static_cast<png_uint_32>(width);
  image.height = static_cast<png_uint_32>(height);
  image.format = channels == 4 ? PNG_FORMAT_RGBA : channels == 1 ? PNG_FORMAT_GRAY : PNG_FORMAT_RGB;
  png_alloc_size_t size = 0;
  if (!png_image_write_get_memory_size(image, size, 0, pixels, 0, nullptr))
    throw std::runtime_error(std::string("PNG encode failed: ") + image.message);
  std::string out(size, '\0');
  if (!png_image_write_to_memory(&image, out.data(), &size, 0, pixels, 0, nullptr))
    throw std::runtime_error(std::string("PNG encode failed: ") + image.message);
  out.resize(size);
  return out;
}

}  // namespace encbench::imaging
