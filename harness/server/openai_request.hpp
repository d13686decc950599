#pragma once
// Parsing and validating OpenAI-compatible request bodies (/v1/chat/completions and
// /v1/completions) into plain data for the engine. Every failure is an ApiException with the
// status the OpenAI API uses (400 bad field, 404 unknown model).
//
// Token counts: images are exact for the model's geometry (patches / merge^2); text uses a
// documented approximation, since the server ships no tokenizer:
//   text tokens of a string        = ceil(utf8_bytes / 4)                 (at least 1 if non-empty)
//   chat prompt tokens             = sum over messages (4 + text tokens + images * (2 + image tokens))
//                                    + 3 (assistant turn prefix)
//   completions prompt tokens      = text tokens of the prompt, or the length of a token-id list
// The constants mirror a ChatML template: <|im_start|>role\n ... <|im_end|>\n around a message and
// <|vision_start|> ... <|vision_end|> around an image.
#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "harness/core/clock.hpp"
#include "harness/server/image_input.hpp"
#include "harness/vision/vision_geometry.hpp"

namespace encbench::server {

enum class Endpoint { chat_completions, completions };

inline constexpr std::int64_t kChatTokensPerMessage = 4;
inline constexpr std::int64_t kChatAssistantPrefixTokens = 3;
inline constexpr std::int64_t kImageWrapperTokens = 2;
std::int64_t approx_text_tokens(std::string_view text);

struct RequestParseOptions {
  std::string served_model_name;          // the only model this server answers to
  vision::VisionGeometry geometry;
  int limit_images_per_prompt = 16;
  std::int64_t max_model_len = 32768;
  // vLLM's encoder budget (--max-num-encoder-input-tokens): the most multimodal tokens one engine
  // step may encode. An image that needs more is a 400 (an image is encoded whole in one step, so
  // it could never run); images that together need more are encoded over steps. 0 = no limit.
  std::int64_t max_num_encoder_input_tokens = 0;
  ImagePolicy image_policy;
};

struct ImageInput {
  int width = 0;
  int height = 0;
  vision::GridTHW grid;
  std::int64_t tokens = 0;                // patches / merge^2
  std::uint64_t mm_hash = 0;              // its encoded bytes' identity (DecodedImage::mm_hash)
};

struct GenerationRequest {
  Endpoint endpoint = Endpoint::chat_completions;
  std::string model;
  bool stream = false;
  bool include_usage = false;             // stream_options.include_usage
  bool ignore_eos = false;
  std::int64_t max_tokens = 0;            // resolved: explicit, else max_model_len - prompt
  std::optional<std::int64_t> seed;
  std::int64_t text_tokens = 0;           // approximate, template overhead included
  std::int64_t image_tokens = 0;          // exact for the geometry
  std::vector<ImageInput> images;
  std::uint64_t body_hash = 0;            // FNV-1a of the body: seeds the stop length
  // The prompt's identity as vLLM's content caches see it (content_identity.hpp): the endpoint,
  // each message's role and text and each image's mm_hash, in order; not max_tokens, seed or
  // other sampling fields. Equal for two requests with the same text and images. Never 0.
  std::uint64_t prompt_hash = 0;
  // Its images' identity, images_identity of their mm_hashes (0 without images): the engine
  // timeline records it. The processor and encoder caches key each image on its own mm_hash
  // (ImageInput::mm_hash).
  std::uint64_t image_hash = 0;
  std::int64_t prompt_tokens() const { return text_tokens + image_tokens; }
};

// How one parse may spend its time: the server parses text-only requests on a lane of their own,
// so that they never wait behind image decodes, and bounds each image request's decoding.
struct ParseContext {
  // false (the text lane): an image part throws ImagesNeedDecodeLane before anything of it is
  // decoded, and the server parses the request again on the image lane.
  bool images_allowed = true;
  // now_ns() after which no further image is decoded (503 decode_timeout); 0 = none.
  Nanos decode_deadline_ns = 0;
};

// Not an error: the request holds an image and was parsed on the text lane.
class ImagesNeedDecodeLane : public std::exception {
 public:
  const char* what() const noexcept override { return "the request holds images"; }
};

// Parses and validates; decodes every image (the budget checked from each image's header
// first). Throws ApiException, or ImagesNeedDecodeLane (context.images_allowed false).
GenerationRequest parse_generation_request(Endpoint endpoint, std::string_view body,
                                           const RequestParseOptions& options,
                                           const ParseContext& context = {});

}  // namespace encbench::server
