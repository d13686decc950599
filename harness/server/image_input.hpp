#pragma once
// Turning an `image_url` content part into a decoded image size. Only data: URLs (base64 JPEG, PNG
// or WebP, decoded by harness/imaging: libjpeg-turbo, libpng, libwebp) and, when allowed, file://
// URLs under one directory are accepted;
// http(s) URLs are rejected because the server never fetches from the network.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace encbench::server {

struct ImagePolicy {
  // file:// URLs are served only from under this directory (canonical); none when empty.
  std::optional<std::filesystem::path> allowed_local_media_path;
  std::int64_t max_image_pixels = 50'000'000;  // refuse to decode anything larger
  std::int64_t max_file_bytes = 64 << 20;      // file:// size limit
  // file:// reads give up after this long (a slow network mount); FIFOs, devices and sockets are
  // refused before any read (they could block forever).
  std::int64_t local_read_timeout_ms = 5000;
};

// Called with the header's size once its pixel count passed policy.max_image_pixels and before
// the pixels are decoded: the caller refuses an image its budget cannot take (or a request whose
// decode deadline has passed) by throwing, so that refusal never pays for a decode.
using BeforeDecode = std::function<void(int width, int height)>;

struct DecodedImage {
  int width = 0;
  int height = 0;
  int channels_in_file = 0;
  std::size_t encoded_bytes = 0;
  // The encoded bytes' identity (content_identity.hpp), vLLM's mm_hash: the same file sent twice,
  // inline or from disk, has the same one. Never 0.
  std::uint64_t mm_hash = 0;
};

// Decodes the image behind `url` fully (so truncated files are caught) and returns its size.
// Throws ApiException (400) with a message that says what is wrong and what is accepted.
DecodedImage load_image_from_url(std::string_view url, const ImagePolicy& policy,
                                 const BeforeDecode& before_decode = {});

// Decodes encoded JPEG/PNG/WebP bytes; throws ApiException (400) for any other format (named,
// with the accepted ones), an image over policy.max_image_pixels, or corrupt/truncated data.
DecodedImage decode_image_bytes(const unsigned char* data, std::size_t size,
                                const ImagePolicy& policy, const BeforeDecode& before_decode = {});

}  // namespace encbench::server
