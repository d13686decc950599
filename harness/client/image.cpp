#include "harness/client/image.hpp"

#include <stb/stb_image.h>
#include <stb/stb_image_write.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>

#include "harness/core/error.hpp"

namespace encbench::client {

namespace {
constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

void append_bytes(void* context, void* data, int size) {
  static_cast<std::string*>(context)->append(static_cast<const char*>(data), static_cast<std::size_t>(size));
}
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

bool base64_decode(std::string_view text, std::string& out) {
  std::array<int, 256> value{};
  value.fill(-1);
  for (int k = 0; k < 64; ++k) value[static_cast<unsigned char>(kAlphabet[k])] = k;
  value['-'] = 62;  // URL-safe alphabet too
  value['_'] = 63;
  out.clear();
  out.reserve(text.size() / 4 * 3);
  unsigned acc = 0;
  int bits = 0;
  for (char c : text) {
    if (c == '=' ) break;
    if (c == '\n' || c == '\r' || c == ' ' || c == '\t') continue;
    const int v = value[static_cast<unsigned char>(c)];
    if (v < 0) return false;
    acc = (acc << 6) | static_cast<unsigned>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  return true;
}

RgbImage decode_image(std::string_view bytes, const std::string& what) {
  int w = 0, h = 0, channels = 0;
  std::unique_ptr<stbi_uc, void (*)(void*)> pixels(
      stbi_load_from_memory(reinterpret_cast<const stbi_uc*>(bytes.data()), static_cast<int>(bytes.size()), &w, &h,
                            &channels, 0),
      stbi_image_free);
  if (!pixels) {
    throw InvalidInput("cannot decode image " + what + ": " +
                       (stbi_failure_reason() ? stbi_failure_reason() : "unknown format"));
  }
  // vllm's convert_image_mode(img, "RGB"): RGBA is composited on white (rgba_to_rgb, PIL's
  // paste with the alpha mask); other modes convert directly (gray replicated, LA's alpha dropped).
  RgbImage image{w, h, {}};
  const std::size_t n = static_cast<std::size_t>(w) * h;
  image.rgb.resize(n * 3);
  const stbi_uc* src = pixels.get();
  for (std::size_t i = 0; i < n; ++i) {
    const stbi_uc* px = src + i * static_cast<std::size_t>(channels);
    for (int c = 0; c < 3; ++c) {
      std::uint8_t v = channels >= 3 ? px[c] : px[0];
      if (channels == 4) {
        const unsigned a = px[3];
        const unsigned tmp = v * a + 255u * (255u - a) + 128u;  // PIL's BLEND rounding
        v = static_cast<std::uint8_t>((tmp + (tmp >> 8)) >> 8);
      }
      image.rgb[i * 3 + static_cast<std::size_t>(c)] = v;
    }
  }
  return image;
}

std::string encode_jpeg(const RgbImage& image, int quality) {
  std::string out;
  stbi_write_jpg_to_func(append_bytes, &out, image.width, image.height, 3, image.rgb.data(), quality);
  return out;
}

std::string encode_png(const RgbImage& image) {
  std::string out;
  stbi_write_png_to_func(append_bytes, &out, image.width, image.height, 3, image.rgb.data(), image.width * 3);
  return out;
}

std::string jpeg_data_url(std::string_view jpeg_bytes) {
  return "data:image/jpeg;base64," + base64_encode(jpeg_bytes);
}

RgbImage synthetic_image(int width, int height, std::uint64_t seed) {
  RgbImage image{width, height, std::vector<std::uint8_t>(static_cast<std::size_t>(width) * height * 3)};
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
  RgbImage image{width, height, std::vector<std::uint8_t>(static_cast<std::size_t>(width) * height * 3)};
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
