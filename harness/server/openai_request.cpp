#include "harness/server/openai_request.hpp"

#include <nlohmann/json.hpp>

#include <cmath>

#include "harness/core/error.hpp"
#include "harness/server/api_error.hpp"
#include "harness/server/content_identity.hpp"

namespace encbench::server {
namespace {

using nlohmann::json;

constexpr int kMaxJsonDepth = 64;

// Rejects absurd nesting before parsing, so no input can exhaust the stack anywhere later.
bool nesting_within(std::string_view body, int max_depth) {
  int depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (const char c : body) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '[' || c == '{') {
      if (++depth > max_depth) return false;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return true;
}

std::uint64_t fnv1a(std::string_view bytes) {
  std::uint64_t hash = 1469598103934665603ull;
  for (const char c : bytes) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 1099511628211ull;
  }
  return hash;
}

const char* type_name(const json& value) { return value.type_name(); }

// Client-supplied counts are summed with a check: no input can overflow a token total (the sums
// stay far below INT64_MAX with sane limits, but a check is cheaper than a proof).
void add_tokens(std::int64_t& total, std::int64_t add, const char* param) {
  if (add < 0 || __builtin_add_overflow(total, add, &total))
    throw bad_request("the request's token count is out of range", param, "invalid_value");
}

ApiException wrong_type(const std::string& field, const char* expected, const json& value) {
  return bad_request("'" + field + "' must be " + expected + ", got " + type_name(value), field,
                     "invalid_type");
}

// Optional typed fields: absent or null -> nullopt; wrong type -> 400.
std::optional<bool> optional_bool(const json& body, const char* field) {
  const auto it = body.find(field);
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_boolean()) throw wrong_type(field, "a boolean", *it);
  return it->get<bool>();
}

std::optional<std::int64_t> optional_int(const json& body, const char* field) {
  const auto it = body.find(field);
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (it->is_number_integer()) return it->get<std::int64_t>();
  if (it->is_number_unsigned()) {
    const auto value = it->get<std::uint64_t>();
    if (value > static_cast<std::uint64_t>(INT64_MAX))
      throw bad_request(std::string("'") + field + "' is out of range", field, "invalid_value");
    return static_cast<std::int64_t>(value);
  }
  if (it->is_number_float()) {
    const double value = it->get<double>();
    // JSON has one number type; 16.0 is an integer to most clients. Range first: converting an
    // out-of-range double to an integer is undefined behaviour.
    if (value >= -9e15 && value <= 9e15 && value == std::trunc(value)) return static_cast<std::int64_t>(value);
    if (value == std::trunc(value))
      throw bad_request(std::string("'") + field + "' is out of range", field, "invalid_value");
  }
  throw wrong_type(field, "an integer", *it);
}

void check_optional_number(const json& body, const char* field) {
  const auto it = body.find(field);
  if (it != body.end() && !it->is_null() && !it->is_number())
    throw wrong_type(field, "a number", *it);
}

std::string model_field(const json& body, const RequestParseOptions& options) {
  const auto it = body.find("model");
  // vLLM serves its one model when the field is omitted; so do we.
  if (it == body.end() || it->is_null()) return options.served_model_name;
  if (!it->is_string()) throw wrong_type("model", "a string", *it);
  std::string model = it->get<std::string>();
  if (model != options.served_model_name) {
    throw ApiException(ApiError{404, "invalid_request_error",
                                "The model `" + model + "` does not exist.", "model",
                                "model_not_found"});
  }
  return model;
}

std::string image_url_of(const json& part) {
  const auto it = part.find("image_url");
  if (it == part.end()) throw bad_request("image_url part is missing 'image_url'", "messages", "missing_field");
  if (it->is_string()) return it->get<std::string>();
  if (!it->is_object()) throw wrong_type("image_url", "an object with 'url'", *it);
  const auto url_it = it->find("url");
  if (url_it == it->end() || !url_it->is_string())
    throw bad_request("image_url.url must be a string", "messages", "invalid_type");
  return url_it->get<std::string>();
}

// Seeds that keep a role, a text and a token list with the same bytes apart in a prompt's identity.
constexpr std::uint64_t kRoleSeed = 1, kTextSeed = 2, kTokenIdsSeed = 3;

void add_to_identity(GenerationRequest& request, std::uint64_t part) {
  request.prompt_hash = combine_identity(request.prompt_hash, part);
}

struct PromptCounter {
  const RequestParseOptions& options;
  GenerationRequest& request;
  const ParseContext& context;

  // An image's grid and tokens from its size, with the encoder budget checked (per image and
  // for the request so far). Called from the image's header, before its pixels are decoded.
  ImageInput plan_image(int width, int height) const {
    if (context.decode_deadline_ns > 0 && now_ns() > context.decode_deadline_ns) {
      throw ApiException(ApiError{503, "server_error",
                                  "the request's images were not decoded within the server's decode deadline "
                                  "(--decode-timeout-s); retry later",
                                  "", "decode_timeout"});
    }
    ImageInput image;
    image.width = width;
    image.height = height;
    try {
      image.grid = vision::image_grid(options.geometry, height, width);
    } catch (const InvalidInput& e) {
      throw bad_request(std::string("image cannot be processed: ") + e.what(), "messages", "invalid_image");
    }
    image.tokens = vision::image_token_count(options.geometry, image.grid);
    const std::int64_t budget = options.max_num_encoder_input_tokens;
    if (budget > 0 && image.tokens > budget) {
      // vLLM's wording (vllm/v1/engine/processor.py, _validate_model_input); the remedy is ours.
      throw bad_request("The decoder prompt contains a(n) image item with length " +
                            std::to_string(image.tokens) +
                            ", which exceeds the pre-allocated encoder cache size " + std::to_string(budget) +
                            ". Please reduce the input size or increase the encoder cache size by setting "
                            "--max-num-encoder-input-tokens at startup.",
                        "messages", "mm_item_too_large");
    }
    // Images together may exceed the budget: the scheduler encodes them one by one over steps, as
    // vLLM does; only one larger than a step's budget could never run (above).
    std::int64_t total = request.image_tokens;
    add_tokens(total, image.tokens, "messages");
    return image;
  }

  void add_image(const json& part) {
    const std::string url = image_url_of(part);
    if (static_cast<int>(request.images.size()) >= options.limit_images_per_prompt) {
      throw bad_request("At most " + std::to_string(options.limit_images_per_prompt) +
                            " image(s) may be provided in one prompt (--limit-mm-per-prompt).",
                        "messages", "too_many_images");
    }
    if (!context.images_allowed) throw ImagesNeedDecodeLane();
    std::optional<ImageInput> planned;
    const DecodedImage decoded = load_image_from_url(
        url, options.image_policy, [&](int width, int height) { planned = plan_image(width, height); });
    ImageInput image = planned ? *planned : plan_image(decoded.width, decoded.height);
    image.mm_hash = decoded.mm_hash;
    add_to_identity(request, image.mm_hash);
    add_tokens(request.image_tokens, image.tokens, "messages");
    add_tokens(request.text_tokens, kImageWrapperTokens, "messages");
    request.images.push_back(image);
  }

  void add_text(const std::string& text) {
    add_tokens(request.text_tokens, approx_text_tokens(text), "messages");
    add_to_identity(request, content_hash64(text, kTextSeed));
  }

  void add_content(const json& content) {
    if (content.is_null()) return;
    if (content.is_string()) {
      add_text(content.get_ref<const std::string&>());
      return;
    }
    if (!content.is_array())
      throw bad_request("message content must be a string or an array of content parts, got " +
                            std::string(type_name(content)),
                        "messages", "invalid_type");
    for (const json& part : content) {
      if (!part.is_object()) throw bad_request("content part must be an object", "messages", "invalid_type");
      const auto type_it = part.find("type");
      if (type_it == part.end() || !type_it->is_string())
        throw bad_request("content part needs a string 'type'", "messages", "missing_field");
      const std::string& type = type_it->get_ref<const std::string&>();
      if (type == "text") {
        const auto text_it = part.find("text");
        if (text_it == part.end() || !text_it->is_string())
          throw bad_request("text content part needs a string 'text'", "messages", "missing_field");
        add_text(text_it->get_ref<const std::string&>());
      } else if (type == "image_url") {
        add_image(part);
      } else {
        throw bad_request("unsupported content part type '" + type +
                              "' (supported: text, image_url)",
                          "messages", "unsupported_content");
      }
    }
  }
};

void parse_chat_messages(const json& body, const RequestParseOptions& options, const ParseContext& context,
                         GenerationRequest& request) {
  const auto it = body.find("messages");
  if (it == body.end()) throw bad_request("'messages' is required", "messages", "missing_field");
  if (!it->is_array()) throw wrong_type("messages", "an array", *it);
  if (it->empty()) throw bad_request("'messages' must not be empty", "messages", "invalid_value");
  PromptCounter counter{options, request, context};
  for (const json& message : *it) {
    if (!message.is_object()) throw bad_request("each message must be an object", "messages", "invalid_type");
    const auto role = message.find("role");
    if (role == message.end() || !role->is_string())
      throw bad_request("each message needs a string 'role'", "messages", "missing_field");
    const std::string& role_name = role->get_ref<const std::string&>();
    if (role_name != "system" && role_name != "user" && role_name != "assistant" &&
        role_name != "tool" && role_name != "developer")
      throw bad_request("unknown message role '" + role_name + "'", "messages", "invalid_value");
    const auto content = message.find("content");
    if (content == message.end() && role_name != "assistant")
      throw bad_request("message with role '" + role_name + "' needs 'content'", "messages", "missing_field");
    add_tokens(request.text_tokens, kChatTokensPerMessage, "messages");
    add_to_identity(request, content_hash64(role_name, kRoleSeed));
    if (content != message.end()) counter.add_content(*content);
  }
  add_tokens(request.text_tokens, kChatAssistantPrefixTokens, "messages");
}

void parse_completion_prompt(const json& body, GenerationRequest& request) {
  const auto it = body.find("prompt");
  if (it == body.end()) throw bad_request("'prompt' is required", "prompt", "missing_field");
  const json* text = it->is_string() ? &*it : nullptr;
  if (it->is_array() && it->size() == 1 && it->front().is_string()) text = &it->front();
  if (text) {
    request.text_tokens = approx_text_tokens(text->get_ref<const std::string&>());
    add_to_identity(request, content_hash64(text->get_ref<const std::string&>(), kTextSeed));
    return;
  }
  if (it->is_array()) {
    bool all_ints = !it->empty();
    for (const json& token : *it) all_ints = all_ints && token.is_number_integer();
    if (all_ints) {
      request.text_tokens = static_cast<std::int64_t>(it->size());
      std::uint64_t ids = kTokenIdsSeed;
      for (const json& token : *it) ids = combine_identity(ids, token.get<std::uint64_t>());
      add_to_identity(request, ids);
      return;
    }
    throw bad_request("'prompt' must be a string, a list of one string or a list of token ids "
                      "(batched prompts are not supported)",
                      "prompt", "invalid_value");
  }
  throw wrong_type("prompt", "a string or an array", *it);
}

}  // namespace

std::int64_t approx_text_tokens(std::string_view text) {
  return static_cast<std::int64_t>((text.size() + 3) / 4);
}

GenerationRequest parse_generation_request(Endpoint endpoint, std::string_view body_text,
                                           const RequestParseOptions& options, const ParseContext& context) {
  if (!nesting_within(body_text, kMaxJsonDepth))
    throw bad_request("request JSON is nested deeper than " + std::to_string(kMaxJsonDepth) + " levels",
                      "", "invalid_json");
  json body;
  try {
    body = json::parse(body_text);
  } catch (const json::exception& e) {
    // parse_error and also out_of_range: nlohmann throws that for a number beyond double
    // ("max_tokens": 1e400); found by tests/fuzz/fuzz_openai_request, it was a 500.
    throw bad_request(std::string("request body is not valid JSON: ") + e.what(), "", "invalid_json");
  }
  if (!body.is_object()) throw bad_request("request body must be a JSON object", "", "invalid_json");

  GenerationRequest request;
  request.endpoint = endpoint;
  // The endpoint starts the identity: a chat prompt and a completion of the same text differ in
  // their template tokens.
  request.prompt_hash = endpoint == Endpoint::chat_completions ? 1 : 2;
  request.body_hash = fnv1a(body_text);
  request.model = model_field(body, options);

  if (const auto n = optional_int(body, "n"); n && *n != 1)
    throw bad_request("only n=1 is supported, got n=" + std::to_string(*n), "n", "invalid_value");
  if (const auto best_of = optional_int(body, "best_of"); best_of && *best_of != 1)
    throw bad_request("only best_of=1 is supported", "best_of", "invalid_value");
  request.stream = optional_bool(body, "stream").value_or(false);
  if (const auto it = body.find("stream_options"); it != body.end() && !it->is_null()) {
    if (!it->is_object()) throw wrong_type("stream_options", "an object", *it);
    if (!request.stream)
      throw bad_request("Stream options can only be defined when `stream=True`.", "stream_options",
                        "invalid_value");
    request.include_usage = optional_bool(*it, "include_usage").value_or(false);
  }
  request.ignore_eos = optional_bool(body, "ignore_eos").value_or(false);
  request.seed = optional_int(body, "seed");
  for (const char* field : {"temperature", "top_p", "top_k", "min_p", "presence_penalty",
                            "frequency_penalty", "repetition_penalty"})
    check_optional_number(body, field);

  std::optional<std::int64_t> max_tokens = optional_int(body, "max_completion_tokens");
  const char* max_field = "max_completion_tokens";
  if (!max_tokens) {
    max_tokens = optional_int(body, "max_tokens");
    max_field = "max_tokens";
  }
  if (max_tokens && *max_tokens < 1)
    throw bad_request(std::string("'") + max_field + "' must be at least 1", max_field, "invalid_value");

  if (endpoint == Endpoint::chat_completions) parse_chat_messages(body, options, context, request);
  else parse_completion_prompt(body, request);
  request.prompt_hash = nonzero_identity(request.prompt_hash);
  std::vector<std::uint64_t> mm_hashes;
  for (const ImageInput& image : request.images) mm_hashes.push_back(image.mm_hash);
  request.image_hash = images_identity(mm_hashes);

  std::int64_t prompt = request.text_tokens;
  add_tokens(prompt, request.image_tokens, "messages");
  // vLLM's wording for both checks (vllm/v1/engine/processor.py and the OpenAI serving layer).
  // The prompt is checked first, so max_model_len - prompt cannot overflow and the max_tokens
  // check needs no addition at all (max_tokens = 2^63-1 is an ordinary 400).
  if (prompt >= options.max_model_len) {
    throw bad_request("The decoder prompt (length " + std::to_string(prompt) +
                          ") is longer than the maximum model length of " +
                          std::to_string(options.max_model_len) +
                          ". Make sure that `max_model_len` is no smaller than the number of text tokens "
                          "plus multimodal tokens. For image inputs, the number of image tokens depends on "
                          "the number of images, and possibly their aspect ratios as well.",
                      "messages", "context_length_exceeded");
  }
  if (max_tokens && *max_tokens > options.max_model_len - prompt) {
    throw bad_request("'max_tokens' or 'max_completion_tokens' is too large: " + std::to_string(*max_tokens) +
                          ". This model's maximum context length is " + std::to_string(options.max_model_len) +
                          " tokens and your request has " + std::to_string(prompt) + " input tokens (" +
                          std::to_string(*max_tokens) + " > " + std::to_string(options.max_model_len) +
                          " - " + std::to_string(prompt) + ").",
                      max_field, "context_length_exceeded");
  }
  request.max_tokens = max_tokens.value_or(options.max_model_len - prompt);
  return request;
}

std::string error_body(const ApiError& error) {
  json body = {{"error",
                {{"message", error.message},
                 {"type", error.type},
                 {"param", error.param.empty() ? json(nullptr) : json(error.param)},
                 {"code", error.code.empty() ? json(nullptr) : json(error.code)}}}};
  return body.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace encbench::server
