// libFuzzer target: harness/imaging's decoders (JPEG, PNG, WebP, and the refusal of every other
// format) on raw bytes, as the server and the client call them. Property: either a DecodeError or
// an image whose buffer matches its header; never a crash, leak or out-of-bounds access.
#include <cstddef>
#include <cstdint>

#include "harness/imaging/decode.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace encbench::imaging;
  // A lower pixel limit than the server's keeps each execution fast; the limit check itself is
  // the same code.
  const Limits limits{4'000'000};
  try {
    const RgbImage image = decode_rgb(data, size, limits);
    const auto expected = static_cast<std::size_t>(image.info.width) * static_cast<std::size_t>(image.info.height) * 3;
    if (image.rgb.size() != expected || image.info.format == Format::unknown) __builtin_trap();
  } catch (const DecodeError&) {
  }
  return 0;
}
