#pragma once
// OpenAI-compatible response bodies and SSE events, in vLLM's exact shape:
//   chat stream:  role chunk {"delta":{"role":"assistant","content":""}}, one chunk per token
//                 {"delta":{"content":" word"}}, finish_reason on the last token's chunk, then
//                 (stream_options.include_usage) a chunk with "choices":[] and "usage", then
//                 "data: [DONE]".
//   completions:  one {"text":" word"} chunk per token (no role chunk), same ending.
// Chunks are assembled from precomputed fragments: the hot path formats no JSON objects.
#include <cstdint>
#include <string>
#include <string_view>

#include "harness/server/engine_core_thread.hpp"
#include "harness/server/openai_request.hpp"

namespace encbench::server {

struct Usage {
  std::int64_t prompt_tokens = 0;
  std::int64_t completion_tokens = 0;
};

class ResponseFormatter {
 public:
  ResponseFormatter(Endpoint endpoint, std::string id, std::int64_t created, std::string_view model);

  const std::string& id() const { return id_; }
  // Appends complete SSE events ("data: ...\n\n") to `out`.
  void append_role_chunk(std::string& out) const;  // chat only; no-op for completions
  void append_token_chunk(std::string& out, std::string_view text, bool last,
                          FinishReason finish) const;
  void append_usage_chunk(std::string& out, const Usage& usage) const;
  void append_error_event(std::string& out, std::string_view message) const;
  static void append_done(std::string& out);
  // Whole non-streaming body.
  std::string final_body(std::string_view text, FinishReason finish, const Usage& usage) const;

 private:
  Endpoint endpoint_;
  std::string id_;
  std::int64_t created_ = 0;
  std::string model_json_;   // the model name as a JSON string literal
  std::string chunk_prefix_; // data: {"id":..,"object":..,"created":..,"model":..,"choices":[
};

// `device` ("" = not said) goes in as "encbench_device", so a client can record what the server ran on.
std::string models_list_body(std::string_view model, std::int64_t created, std::int64_t max_model_len,
                             std::string_view device = {});

}  // namespace encbench::server
