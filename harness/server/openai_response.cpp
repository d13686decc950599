#include "harness/server/openai_response.hpp"

#include <nlohmann/json.hpp>

namespace encbench::server {
namespace {

std::string json_string(std::string_view text) {
  return nlohmann::json(std::string(text)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void append_usage_object(std::string& out, const Usage& usage) {
  out += R"("usage":{"prompt_tokens":)";
  out += std::to_string(usage.prompt_tokens);
  out += R"(,"total_tokens":)";
  out += std::to_string(usage.prompt_tokens + usage.completion_tokens);
  out += R"(,"completion_tokens":)";
  out += std::to_string(usage.completion_tokens);
  out += "}";
}

}  // namespace

ResponseFormatter::ResponseFormatter(Endpoint endpoint, std::string id, std::int64_t created,
                                     std::string_view model)
    : endpoint_(endpoint), id_(std::move(id)), created_(created), model_json_(json_string(model)) {
  const bool chat = endpoint_ == Endpoint::chat_completions;
  chunk_prefix_ = R"(data: {"id":)" + json_string(id_) + R"(,"object":")" +
                  (chat ? "chat.completion.chunk" : "text_completion") + R"(","created":)" +
                  std::to_string(created_) + R"(,"model":)" + model_json_ + R"(,"choices":[)";
}

void ResponseFormatter::append_role_chunk(std::string& out) const {
  if (endpoint_ != Endpoint::chat_completions) return;
  out += chunk_prefix_;
  out += R"({"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]})";
  out += "\n\n";
}

void ResponseFormatter::append_token_chunk(std::string& out, std::string_view text, bool last,
                                           FinishReason finish) const {
  // Token text is a pseudo-word (ASCII letters and a space): no JSON escaping needed.
  out += chunk_prefix_;
  if (endpoint_ == Endpoint::chat_completions) {
    out += R"({"index":0,"delta":{"content":")";
    out += text;
    out += R"("},"logprobs":null,"finish_reason":)";
  } else {
    out += R"({"index":0,"text":")";
    out += text;
    out += R"(","logprobs":null,"finish_reason":)";
  }
  if (last) {
    out += '"';
    out += to_string(finish);
    out += R"(","stop_reason":null}]})";
  } else {
    out += endpoint_ == Endpoint::chat_completions ? "null}]}" : R"(null,"stop_reason":null}]})";
  }
  out += "\n\n";
}

void ResponseFormatter::append_usage_chunk(std::string& out, const Usage& usage) const {
  out += chunk_prefix_;
  out += "],";
  append_usage_object(out, usage);
  out += "}\n\n";
}

void ResponseFormatter::append_error_event(std::string& out, std::string_view message) const {
  out += R"(data: {"error":{"message":)";
  out += json_string(message);
  out += R"(,"type":"server_error","param":null,"code":500}})";
  out += "\n\n";
}

void ResponseFormatter::append_done(std::string& out) { out += "data: [DONE]\n\n"; }

std::string ResponseFormatter::final_body(std::string_view text, FinishReason finish,
                                          const Usage& usage) const {
  const bool chat = endpoint_ == Endpoint::chat_completions;
  std::string out = R"({"id":)" + json_string(id_) + R"(,"object":")" +
                    (chat ? "chat.completion" : "text_completion") + R"(","created":)" +
                    std::to_string(created_) + R"(,"model":)" + model_json_ + R"(,"choices":[)";
  if (chat) {
    out += R"({"index":0,"message":{"role":"assistant","content":)" + json_string(text) +
           R"(},"logprobs":null,"finish_reason":")";
  } else {
    out += R"({"index":0,"text":)" + json_string(text) + R"(,"logprobs":null,"finish_reason":")";
  }
  out += to_string(finish);
  out += R"(","stop_reason":null}],)";
  append_usage_object(out, usage);
  out += "}";
  return out;
}

std::string models_list_body(std::string_view model, std::int64_t created, std::int64_t max_model_len,
                             std::string_view device) {
  nlohmann::json body = {
      {"object", "list"},
      {"data",
       {{{"id", std::string(model)},
         {"object", "model"},
         {"created", created},
         {"owned_by", "encbench"},
         {"root", std::string(model)},
         {"parent", nullptr},
         {"max_model_len", max_model_len}}}}};
  if (!device.empty()) body["data"][0]["encbench_device"] = std::string(device);
  return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace encbench::server
