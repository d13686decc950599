// libFuzzer target: OpenAI request bodies (chat and completions) through parsing and validation,
// images included, with the options `encbench serve` uses for qwen3-vl-8b. The first byte picks
// the endpoint. Property: a request or an ApiException with a 4xx status; parsing never throws
// anything else (the HTTP layer would answer that with a 500).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "harness/server/api_error.hpp"
#include "harness/server/openai_request.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace encbench::server;
  if (size == 0) return 0;
  const Endpoint endpoint = (data[0] & 1) ? Endpoint::completions : Endpoint::chat_completions;
  const std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);
  RequestParseOptions options;
  options.served_model_name = "qwen3-vl-8b";
  options.geometry = encbench::vision::vision_geometry_for("qwen3-vl-8b");
  options.limit_images_per_prompt = 4;
  options.max_model_len = 32768;
  options.max_num_encoder_input_tokens = 16384;
  options.image_policy.max_image_pixels = 4'000'000;
  try {
    const GenerationRequest request = parse_generation_request(endpoint, body, options);
    if (request.max_tokens < 1 || request.prompt_tokens() < 0) __builtin_trap();
  } catch (const ApiException& e) {
    if (e.error().status < 400 || e.error().status > 499) __builtin_trap();
  }
  return 0;
}
