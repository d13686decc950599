// Writes the image seed corpus (tests/fuzz/corpus/fuzz_image_decode/) and the reproducers the
// server test sends (tests/server/image_reproducers_test.cpp reads the same files). Not built by
// CMake; the committed files are its output. Regenerate with:
//   g++ -std=c++20 -I. tests/fuzz/make_image_seeds.cpp harness/imaging/*.cpp \
//     $(pkg-config --cflags --libs libturbojpeg libpng libwebp) -lz -o /tmp/make_image_seeds
//   /tmp/make_image_seeds tests/fuzz/corpus/fuzz_image_decode
// Names: ok-* decode (the server answers 200), bad-* must be refused (4xx).
#include <turbojpeg.h>
#include <webp/encode.h>
#include <zlib.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "harness/imaging/decode.hpp"

namespace {

namespace fs = std::filesystem;
using Bytes = std::string;

void save(const fs::path& dir, const std::string& name, const Bytes& bytes) {
  std::ofstream(dir / name, std::ios::binary) << bytes;
}

std::vector<std::uint8_t> pattern(int w, int h, int channels) {
  std::vector<std::uint8_t> px(static_cast<std::size_t>(w * h * channels));
  for (std::size_t i = 0; i < px.size(); ++i) px[i] = static_cast<std::uint8_t>((i * 37) % 251);
  return px;
}

void put32(Bytes& out, std::uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<char>((v >> s) & 0xFF));
}

void chunk(Bytes& png, const std::string& type, const Bytes& data) {
  put32(png, static_cast<std::uint32_t>(data.size()));
  const Bytes body = type + data;
  png += body;
  put32(png, static_cast<std::uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(body.data()), static_cast<uInt>(body.size()))));
}

// A PNG from its parts: IHDR fields, optional PLTE/tRNS, raw scanlines (filter byte included).
Bytes handmade_png(std::uint32_t w, std::uint32_t h, int depth, int color, int interlace, const Bytes& plte,
                   const Bytes& trns, const Bytes& raw) {
  Bytes png = "\x89PNG\r\n\x1A\n";
  Bytes ihdr;
  put32(ihdr, w);
  put32(ihdr, h);
  ihdr += {static_cast<char>(depth), static_cast<char>(color), 0, 0, static_cast<char>(interlace)};
  chunk(png, "IHDR", ihdr);
  if (!plte.empty()) chunk(png, "PLTE", plte);
  if (!trns.empty()) chunk(png, "tRNS", trns);
  uLongf size = compressBound(static_cast<uLong>(raw.size()));
  Bytes z(size, '\0');
  compress(reinterpret_cast<Bytef*>(z.data()), &size, reinterpret_cast<const Bytef*>(raw.data()), static_cast<uLong>(raw.size()));
  z.resize(size);
  chunk(png, "IDAT", z);
  chunk(png, "IEND", "");
  return png;
}

Bytes jpeg(int w, int h, int pixel_format, int subsampling, int flags) {
  tjhandle tj = tjInitCompress();
  const int channels = tjPixelSize[pixel_format];
  const auto px = pattern(w, h, channels);
  unsigned char* out = nullptr;
  unsigned long size = 0;
  tjCompress2(tj, px.data(), w, 0, h, pixel_format, &out, &size, subsampling, 75, flags);
  Bytes bytes(reinterpret_cast<char*>(out), size);
  tjFree(out);
  tjDestroy(tj);
  return bytes;
}

Bytes webp(int w, int h, bool lossless_rgba) {
  std::uint8_t* out = nullptr;
  const auto px = pattern(w, h, lossless_rgba ? 4 : 3);
  const std::size_t size = lossless_rgba ? WebPEncodeLosslessRGBA(px.data(), w, h, w * 4, &out)
                                         : WebPEncodeRGB(px.data(), w, h, w * 3, 75, &out);
  Bytes bytes(reinterpret_cast<char*>(out), size);
  WebPFree(out);
  return bytes;
}

void write_images(const fs::path& dir) {
  using namespace encbench::imaging;
  const auto rgb = pattern(16, 12, 3);
  const Bytes base_jpeg = jpeg(16, 12, TJPF_RGB, TJSAMP_420, 0);
  save(dir, "ok-rgb-420.jpg", base_jpeg);
  save(dir, "ok-gray.jpg", jpeg(9, 7, TJPF_GRAY, TJSAMP_GRAY, 0));
  save(dir, "ok-progressive-444.jpg", jpeg(17, 5, TJPF_RGB, TJSAMP_444, TJFLAG_PROGRESSIVE));
  save(dir, "ok-cmyk.jpg", jpeg(8, 8, TJPF_CMYK, TJSAMP_444, 0));
  const Bytes big_jpeg = jpeg(96, 64, TJPF_RGB, TJSAMP_420, 0);  // cut inside its scan
  save(dir, "bad-truncated.jpg", big_jpeg.substr(0, big_jpeg.size() * 3 / 4));
  save(dir, "bad-header-only.jpg", base_jpeg.substr(0, 200));
  Bytes huge_jpeg = base_jpeg;  // SOF0 claims 65000x65000: refused from the header
  const std::size_t sof = huge_jpeg.find("\xFF\xC0");
  if (sof != Bytes::npos) huge_jpeg.replace(sof + 5, 4, "\xFD\xE8\xFD\xE8");
  save(dir, "bad-oversized-65000x65000.jpg", huge_jpeg);

  const Bytes base_png = encode_png(rgb.data(), 16, 12, 3);
  save(dir, "ok-rgb.png", base_png);
  save(dir, "ok-rgba.png", encode_png(pattern(5, 4, 4).data(), 5, 4, 4));
  save(dir, "ok-gray.png", encode_png(pattern(6, 3, 1).data(), 6, 3, 1));
  // Palette with transparency, 2 bits per pixel: 4x2 pixels, one filter byte per row.
  save(dir, "ok-palette-trns.png",
       handmade_png(4, 2, 2, 3, 0, Bytes("\xFF\0\0\0\xFF\0\0\0\xFF\x10\x20\x30", 12), Bytes("\x00\x80", 2),
                    Bytes("\0\x1B\0\xE4", 4)));
  // 16-bit RGB, Adam7 interlaced 3x3: each pass's rows, filter byte 0 (7 passes, some empty).
  Bytes raw16;
  const int pass_rows[7] = {1, 0, 0, 1, 1, 2, 1};  // rows per pass for a 3x3 image
  const int pass_cols[7] = {1, 0, 0, 1, 2, 1, 3};
  for (int p = 0; p < 7; ++p)
    for (int r = 0; r < pass_rows[p] && pass_cols[p] > 0; ++r) {
      raw16 += '\0';
      raw16 += Bytes(static_cast<std::size_t>(pass_cols[p]) * 6, '\x7F');
    }
  save(dir, "ok-16bit-interlaced.png", handmade_png(3, 3, 16, 2, 1, "", "", raw16));
  save(dir, "bad-truncated.png", base_png.substr(0, base_png.size() / 2));
  save(dir, "bad-bad-crc.png", [&] { Bytes b = base_png; b[29] ^= 0x55; return b; }());
  // Decompression bomb: IHDR declares 100000x100000 (10^10 pixels, 30 GB of RGB), data is tiny.
  save(dir, "bad-bomb-100000x100000.png", handmade_png(100000, 100000, 8, 2, 0, "", "", Bytes(64, '\0')));

  const Bytes lossy = webp(16, 12, false);
  save(dir, "ok-lossy.webp", lossy);
  save(dir, "ok-lossless-rgba.webp", webp(7, 5, true));
  save(dir, "bad-truncated.webp", lossy.substr(0, lossy.size() / 2));
  Bytes big_webp = lossy;  // VP8 frame header claims 16383x16383 (14-bit fields): over the limit
  const std::size_t vp8 = big_webp.find("\x9D\x01\x2A");
  if (vp8 != Bytes::npos) big_webp.replace(vp8 + 3, 4, "\xFF\x3F\xFF\x3F");
  save(dir, "bad-oversized-16383x16383.webp", big_webp);

  // Formats that are refused. The 55-byte 16-bit PNM the fuzzer found (stb_image overflowed the heap
  // on it): P6, maxval 65535, 4x4 pixels that need 96 bytes, 42 given.
  save(dir, "bad-pnm-16bit-55-bytes.ppm", "P6\n4 4\n65535\n" + Bytes(42, '\x41'));
  save(dir, "bad-pgm-16bit.pgm", "P5 2 2 1023\n" + Bytes(3, '\x03'));
  // 1x1 GIF89a.
  save(dir, "bad-1x1.gif", Bytes("GIF89a\1\0\1\0\x80\0\0\0\0\0\xFF\xFF\xFF!\xF9\4\1\0\0\0\0,\0\0\0\0\1\0\1\0\0\2\2D\1\0;", 43));
  save(dir, "bad-2x1.bmp", Bytes("BM\x3E\0\0\0\0\0\0\0\x36\0\0\0\x28\0\0\0\2\0\0\0\1\0\0\0\1\0\x18\0\0\0\0\0\x08\0\0\0"
                                 "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\xFF\0\0\xFF\0\0", 62));
  save(dir, "bad-psd-header.psd", Bytes("8BPS\0\1\0\0\0\0\0\0\0\3\0\0\0\1\0\0\0\1\0\x08\0\3", 26));
  save(dir, "bad-hdr-header.hdr", "#?RADIANCE\nFORMAT=32-bit_rle_rgbe\n\n-Y 1 +X 1\n\x80\x80\x80\x80");
  save(dir, "bad-empty.bin", "");
  save(dir, "bad-text.txt", "definitely not an image");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_image_seeds DIR\n");
    return 2;
  }
  fs::create_directories(argv[1]);
  write_images(argv[1]);
  return 0;
}
