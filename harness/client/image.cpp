#include "harness/client/image.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>

#include "harness/core/error.hpp"
#include "harness/imaging/decode.hpp"

namespace encbench::client {

namespace {
constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
}  // namespace

std::string base64_encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  const auto* b = reinterpret_cast<const unsigned char*>(bytes.data());
  for (; i + 2 < bytes.size(); i += 3) {
    const unsigned v = (b[i] << 16) | (b[i + 1] << 8) | b[i + 2];
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += kAlphabet[v & 63];
  }
  if (i + 1 == bytes.size()) {
    const unsigned v = b[i] << 16;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += "==";
  } else if (i + 2 == bytes.size()) {
    const unsigned v = (b[i] << 16) | (b[i + 1] << 8);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += '=';
  }
  return out;
}

RgbImage decode_image(std::string_view bytes, const std::string& what, std::int64_t max_pixels) {
  // The same decoders as the server (harness/imaging): a user's file is untrusted input too.
  try {
    return imaging::decode_rgb(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size(),
                               imaging::Limits{max_pixels});
  } catch (const imaging::DecodeError& e) {
    throw InvalidInput("cannot decode image " + what + ": " + e.what());
  }
}

std::string encode_jpeg(const RgbImage& image, int quality) {
  return imaging::encode_jpeg(image.rgb.data(), image.info.width, image.info.height, quality);
}

std::string encode_png(const RgbImage& image) {
  return imaging::encode_png(image.rgb.data(), image.info.width, image.info.height, 3);
}

std::string jpeg_data_url(std::string_view jpeg_bytes) {
  return "data:image/jpeg;base64," + base64_encode(jpeg_bytes);
}

namespace {

// Zeroed pixels of a generated (not decoded) image.
RgbImage rgb_canvas(int width, int height) {
  RgbImage image;
  image.info.width = width;
  image.info.height = height;
  image.info.channels_in_file = 3;
  image.rgb.assign(static_cast<std::size_t>(width) * height * 3, 0);
  return image;
}

}  // namespace

RgbImage synthetic_image(int width, int height, std::uint64_t seed) {
  RgbImage image = rgb_canvas(width, height);
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> colour(0, 255);
  const int c0[3] = {colour(rng), colour(rng), colour(rng)};
  const int c1[3] = {colour(rng), colour(rng), colour(rng)};
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      const double t = (static_cast<double>(x) / std::max(1, width - 1) + static_cast<double>(y) / std::max(1, height - 1)) / 2;
      for (int c = 0; c < 3; ++c)
        image.rgb[(static_cast<std::size_t>(y) * width + x) * 3 + c] = static_cast<std::uint8_t>(c0[c] + (c1[c] - c0[c]) * t);
    }
  }
  std::uniform_int_distribution<int> shapes(2, 5);
  const int count = shapes(rng);
  for (int s = 0; s < count; ++s) {
    std::uniform_int_distribution<int> px(0, std::max(0, width - 1)), py(0, std::max(0, height - 1));
    const int cx = px(rng), cy = py(rng);
    const int radius = std::max(1, std::min(width, height) / std::uniform_int_distribution<int>(4, 10)(rng));
    const bool circle = rng() & 1;
    const std::uint8_t col[3] = {static_cast<std::uint8_t>(colour(rng)), static_cast<std::uint8_t>(colour(rng)),
                                 static_cast<std::uint8_t>(colour(rng))};
    for (int y = std::max(0, cy - radius); y < std::min(height, cy + radius); ++y) {
      for (int x = std::max(0, cx - radius); x < std::min(width, cx + radius); ++x) {
        if (circle && (x - cx) * (x - cx) + (y - cy) * (y - cy) > radius * radius) continue;
        std::memcpy(&image.rgb[(static_cast<std::size_t>(y) * width + x) * 3], col, 3);
      }
    }
  }
  return image;
}

RgbImage noise_image(int width, int height, std::uint64_t seed) {
  RgbImage image = rgb_canvas(width, height);
  std::mt19937_64 rng(seed);
  std::size_t i = 0;
  for (; i + 8 <= image.rgb.size(); i += 8) {
    const std::uint64_t v = rng();
    std::memcpy(&image.rgb[i], &v, 8);
  }
  for (; i < image.rgb.size(); ++i) image.rgb[i] = static_cast<std::uint8_t>(rng());
  return image;
}

}  // namespace encbench::client
