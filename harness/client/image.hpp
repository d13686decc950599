#pragma once
// Image helpers for request building: decode (JPEG, PNG, WebP via harness/imaging) to RGB,
// JPEG/PNG encode (libjpeg-turbo, libpng),
// base64, data URLs, and deterministic synthetic images. All of it runs before the timed run.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "harness/imaging/decode.hpp"

namespace encbench::client {

// The decoder's image (info.width, info.height, rgb: width*height*3, row-major): one RGB image
// type for the server and the client. Synthetic images have info.format unknown.
using imaging::RgbImage;

std::string base64_encode(std::string_view bytes);

// Decodes JPEG/PNG/WebP to 8-bit RGB as vLLM's convert("RGB") (RGBA on white, other alpha dropped,
// grey expanded). Throws InvalidInput with `what` in the message for any other format, an image
// over max_pixels (refused from its header) or corrupt data.
inline constexpr std::int64_t kMaxDecodePixels = 50'000'000;  // the server's default limit
RgbImage decode_image(std::string_view bytes, const std::string& what,
                      std::int64_t max_pixels = kMaxDecodePixels);
std::string encode_jpeg(const RgbImage& image, int quality = 75);  // PIL's default quality
std::string encode_png(const RgbImage& image);

std::string jpeg_data_url(std::string_view jpeg_bytes);  // "data:image/jpeg;base64,..."

// Gradient background with a few shapes; the same (size, seed) gives the same pixels.
RgbImage synthetic_image(int width, int height, std::uint64_t seed);
// Uniform random pixels (vllm's random-mm images), deterministic from the seed.
RgbImage noise_image(int width, int height, std::uint64_t seed);

}  // namespace encbench::client
