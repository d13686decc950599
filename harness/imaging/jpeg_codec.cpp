// JPEG through libjpeg-turbo's TurboJPEG API. Warnings are not failures (PIL opens JPEGs with
// extraneous bytes too) except the ones that mean the data ended early: PIL refuses a truncated
// JPEG ("image file is truncated"), and so do we. Progressive scans are capped
// (TJFLAG_LIMITSCANS) so a file of thousands of tiny scans cannot burn CPU.
#include <turbojpeg.h>

#include <cctype>
#include <memory>
#include <string>

#include "harness/imaging/codecs.hpp"

namespace encbench::imaging::detail {
namespace {

struct TjDeleter {
  void operator()(void* handle) const { tjDestroy(handle); }
};
using TjHandle = std::unique_ptr<void, TjDeleter>;

TjHandle make_handle(bool compress) {
  TjHandle handle(compress ? tjInitCompress() : tjInitDecompress());
  if (!handle) throw std::runtime_error(std::string("TurboJPEG: ") + tjGetErrorStr2(nullptr));
  return handle;
}

unsigned long checked_size(std::size_t size) {
  if (size > 0x7FFFFFFFu) corrupt("JPEG data is larger than 2 GiB");
  return static_cast<unsigned long>(size);
}

bool means_truncated(std::string message) {
  for (char& c : message) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return message.find("premature end") != std::string::npos;
}

// CMYK as stored -> RGB the way PIL's convert does ((255 - C) * (255 - K) / 255, rounded).
void cmyk_to_rgb(std::uint8_t* pixels, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint8_t* px = pixels + i * 4;
    const unsigned k = 255u - px[3];
    std::uint8_t out[3];
    for (int c = 0; c < 3; ++c) out[c] = static_cast<std::uint8_t>(((255u - px[c]) * k + 127u) / 255u);
    for (int c = 0; c < 3; ++c) pixels[i * 3 + static_cast<std::size_t>(c)] = out[c];
  }
}

}  // namespace

ImageInfo jpeg_info(const std::uint8_t* data, std::size_t size) {
  TjHandle handle = make_handle(false);
  int width = 0, height = 0, subsampling = 0, colorspace = 0;
  if (tjDecompressHeader3(handle.get(), data, checked_size(size), &width, &height, &subsampling,
                          &colorspace) != 0)
    corrupt(std::string("invalid JPEG header: ") + tjGetErrorStr2(handle.get()));
  const int channels = colorspace == TJCS_GRAY ? 1 : (colorspace == TJCS_CMYK || colorspace == TJCS_YCCK) ? 4 : 3;
  return ImageInfo{Format::jpeg, width, height, channels};
}

void jpeg_decode(const std::uint8_t* data, std::size_t size, const ImageInfo& info, std::uint8_t* rgb) {
  TjHandle handle = make_handle(false);
  // TurboJPEG converts CMYK/YCCK only to CMYK; the RGB step is ours.
  const bool cmyk = info.channels_in_file == 4;
  const int flags = TJFLAG_LIMITSCANS;
  if (tjDecompress2(handle.get(), data, checked_size(size), rgb, info.width, 0, info.height,
                    cmyk ? TJPF_CMYK : TJPF_RGB, flags) != 0) {
    const std::string message = tjGetErrorStr2(handle.get());
    if (tjGetErrorCode(handle.get()) != TJERR_WARNING || means_truncated(message))
      corrupt("could not decode JPEG: " + message);
  }
  if (cmyk) cmyk_to_rgb(rgb, static_cast<std::size_t>(info.width) * static_cast<std::size_t>(info.height));
}

}  // namespace encbench::imaging::detail

namespace encbench::imaging {

std::string encode_jpeg(const std::uint8_t* rgb, int width, int height, int quality) {
  detail::TjHandle handle = detail::make_handle(true);
  unsigned char* out = nullptr;
  unsigned long out_size = 0;
  // 4:2:0 like PIL's default for quality < 90 (and the JPEGs cameras and browsers send).
  if (tjCompress2(handle.get(), rgb, width, 0, height, TJPF_RGB, &out, &out_size, TJSAMP_420, quality,
                  TJFLAG_ACCURATEDCT) != 0) {
    tjFree(out);
    throw std::runtime_error(std::string("JPEG encode failed: ") + tjGetErrorStr2(handle.get()));
  }
  std::string bytes(reinterpret_cast<const char*>(out), out_size);
  tjFree(out);
  return bytes;
}

}  // namespace encbench::imaging
