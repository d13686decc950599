// libFuzzer target: an image_url as the server reads it (data: URL, media type, strict base64,
// then the decoders), and the client's lenient base64. Property: the server answers with an
// ApiException of status 400 or a decoded size; nothing else escapes.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "harness/client/image.hpp"
#include "harness/core/base64.hpp"
#include "harness/server/api_error.hpp"
#include "harness/server/image_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace encbench;
  const std::string_view url(reinterpret_cast<const char*>(data), size);
  server::ImagePolicy policy;  // no file:// directory: the fuzzer must not read local files
  policy.max_image_pixels = 4'000'000;
  try {
    const server::DecodedImage image = server::load_image_from_url(url, policy);
    if (image.width <= 0 || image.height <= 0) __builtin_trap();
  } catch (const server::ApiException& e) {
    if (e.error().status != 400 || e.error().message.empty()) __builtin_trap();
  }
  std::string decoded;
  if (base64_decode(url, Base64Form::lenient, decoded) && decoded.size() > size) __builtin_trap();
  return 0;
}
