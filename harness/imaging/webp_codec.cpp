// WebP through libwebp's simple API. Animated WebP is refused: libwebp's still-image decoder
// cannot read it (PIL would take the first frame; a benchmark has no use for animations).
#include <webp/decode.h>

#include <string>

#include "harness/imaging/codecs.hpp"

namespace encbench::imaging::detail {
namespace {

std::string status_text(VP8StatusCode status) {
  switch (status) {
    case VP8_STATUS_OK: return "ok";
    case VP8_STATUS_OUT_OF_MEMORY: return "out of memory";
    case VP8_STATUS_INVALID_PARAM: return "invalid parameter";
    case VP8_STATUS_BITSTREAM_ERROR: return "bitstream error";
    case VP8_STATUS_UNSUPPORTED_FEATURE: return "unsupported feature";
    case VP8_STATUS_SUSPENDED: return "suspended";
    case VP8_STATUS_USER_ABORT: return "aborted";
    case VP8_STATUS_NOT_ENOUGH_DATA: return "not enough data (truncated)";
  }
  return "unknown error";
}

WebPBitstreamFeatures features_of(const std::uint8_t* data, std::size_t size) {
  WebPBitstreamFeatures features{};
  const VP8StatusCode status = WebPGetFeatures(data, size, &features);
  if (status != VP8_STATUS_OK) corrupt("invalid WebP header: " + status_text(status));
  if (features.has_animation) corrupt("animated WebP is not accepted; send a still image");
  return features;
}

}  // namespace

ImageInfo webp_info(const std::uint8_t* data, std::size_t size) {
  const WebPBitstreamFeatures features = features_of(data, size);
  return ImageInfo{Format::webp, features.width, features.height, features.has_alpha ? 4 : 3};
}

void webp_decode(const std::uint8_t* data, std::size_t size, const ImageInfo& info, std::uint8_t* rgb) {
  const std::size_t pixels = static_cast<std::size_t>(info.width) * static_cast<std::size_t>(info.height);
  const bool alpha = info.channels_in_file == 4;
  const int stride = info.width * (alpha ? 4 : 3);
  const std::size_t capacity = pixels * (alpha ? 4 : 3);
  const std::uint8_t* done = alpha ? WebPDecodeRGBAInto(data, size, rgb, capacity, stride)
                                   : WebPDecodeRGBInto(data, size, rgb, capacity, stride);
  if (!done) corrupt("could not decode WebP (corrupt or truncated data)");
  if (alpha) composite_on_white(rgb, pixels, rgb);
}

}  // namespace encbench::imaging::detail
