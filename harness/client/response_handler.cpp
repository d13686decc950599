#include "harness/client/response_handler.hpp"

#include <algorithm>

#include "harness/client/chunk_json.hpp"
#include "harness/core/error.hpp"

namespace encbench::client {

const char* to_string(Backend backend) {
  return backend == Backend::openai_chat ? "openai-chat" : "openai";
}
const char* to_string(RequestMode mode) {
  return mode == RequestMode::stream ? "stream" : "non-stream";
}
Backend parse_backend(const std::string& name) {
  if (name == "openai-chat") return Backend::openai_chat;
  if (name == "openai") return Backend::openai;
  throw InvalidInput("unknown --backend '" + name + "' (supported: openai-chat, openai)");
}
RequestMode parse_request_mode(const std::string& name) {
  if (name == "stream") return RequestMode::stream;
  if (name == "non-stream") return RequestMode::non_stream;
  throw InvalidInput("unknown --request-mode '" + name + "' (supported: stream, non-stream)");
}

std::string excerpt(std::string_view text, std::size_t max_bytes) {
  std::string out;
  for (char c : text.substr(0, max_bytes)) {
    if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (static_cast<unsigned char>(c) < 0x20) out += '?';
    else out += c;
  }
  if (text.size() > max_bytes) out += "...";
  return out;
}

namespace {
constexpr std::size_t kMaxErrorBody = 512;

}  // namespace

void ResponseHandler::fail_on_limit(std::string error, const char* kind) {
  if (!stream_error_.empty()) return;
  stream_error_ = std::move(error);
  limit_kind_ = kind;
}

bool ResponseHandler::count_bytes(std::size_t bytes) {
  const std::int64_t n = static_cast<std::int64_t>(std::min<std::size_t>(bytes, INT64_MAX));
  bytes_received_ = n > INT64_MAX - bytes_received_ ? INT64_MAX : bytes_received_ + n;
  if (bytes_received_ <= limits_.max_bytes) return true;
  fail_on_limit("response_too_large: more than " + std::to_string(limits_.max_bytes) +
                    " bytes received (--max-response-bytes); the transfer was stopped",
                "response_too_large");
  return false;
}

bool ResponseHandler::on_header_bytes(std::size_t bytes) {
  return count_bytes(bytes) && limit_kind_ == nullptr;
}

void ResponseHandler::on_body(std::string_view bytes, Nanos now) {
  if (record_.headers_ns == 0) record_.headers_ns = now;
  if (!count_bytes(bytes.size())) return;
  if (record_.http_status != 200) {
    if (error_body_.size() < kMaxErrorBody)
      error_body_.append(bytes.substr(0, kMaxErrorBody - error_body_.size()));
    return;
  }
  if (mode_ == RequestMode::non_stream) {
    if (stream_error_.empty()) error_body_.append(bytes);  // within the byte bound (count_bytes)
    return;
  }
  if (!stream_error_.empty()) return;
  events_this_read_ = 0;
  if (!parser_.feed(bytes, [&](SseEvent&& e) { on_event(std::move(e), now); })) {
    if (stream_error_.empty()) stream_error_ = "malformed SSE: " + parser_.error();
  }
  record_.max_events_per_read = std::max(record_.max_events_per_read, events_this_read_);
}

void ResponseHandler::on_event(SseEvent&& event, Nanos now) {
  if (!stream_error_.empty()) return;
  ++events_this_read_;
  if (event.event_type == "error") {
    stream_error_ = "error event in stream: " + excerpt(event.data);
    return;
  }
  if (!event.has_data) return;
  ++record_.data_events;
  if (event.data == "[DONE]") {
    record_.saw_done = true;
    return;
  }
  if (record_.saw_done) return;  // nothing after [DONE] counts
  on_json_payload(event.data, now, true);
}

void ResponseHandler::on_json_payload(std::string_view payload, Nanos now, bool streamed) {
  const std::optional<ChunkFields> msg = parse_chunk_fields(payload);
  if (!msg || !msg->is_object) {
    stream_error_ = std::string(streamed ? "malformed JSON in SSE event: " : "malformed JSON body: ") +
                    excerpt(payload);
    return;
  }
  if (!streamed) {
    // A non-stream body (our extension): an error object is the answer.
    if (!msg->has_choices && msg->has_error) {
      stream_error_ = "error in body: " + msg->error_message;
      return;
    }
  }
  if (msg->has_choices) {
    if (static_cast<std::int64_t>(record_.choices_ns.size()) >= limits_.max_chunks) {
      fail_on_limit("too_many_chunks: more than " + std::to_string(limits_.max_chunks) +
                        " choices events (--max-output-chunks; " + std::to_string(record_.choices_ns.size()) +
                        " kept); the transfer was stopped",
                    "too_many_chunks");
      return;
    }
    if (record_.first_choices_ns == 0) record_.first_choices_ns = now;
    record_.last_choices_ns = now;
    record_.choices_ns.push_back(now);
    if (!msg->text.empty()) ++record_.content_chunks;
    record_.generated_text += msg->text;
    if (streamed) return;  // vllm: `elif usage` (usage beside choices is not read in a stream)
  }
  if (msg->has_usage) {
    if (msg->usage_completion_tokens) record_.usage_completion_tokens = *msg->usage_completion_tokens;
    if (msg->usage_prompt_tokens) record_.usage_prompt_tokens = *msg->usage_prompt_tokens;
    return;
  }
  if (!msg->has_choices && msg->has_error) {
    // vllm skips it (no choices, no usage); we count it.
    if (record_.error_events++ == 0) record_.first_error_event = msg->error_message;
  }
}

void ResponseHandler::on_end(Nanos now, const std::string& transport_error, const std::string& transport_kind) {
  record_.end_ns = now;
  if (record_.http_status == 200 && mode_ == RequestMode::stream && stream_error_.empty()) {
    parser_.finish([&](SseEvent&& e) { on_event(std::move(e), now); });
    if (parser_.failed() && stream_error_.empty()) stream_error_ = "malformed SSE: " + parser_.error();
  }
  if (record_.http_status == 200 && mode_ == RequestMode::non_stream && stream_error_.empty() &&
      transport_error.empty()) {
    on_json_payload(error_body_, now, false);
  }
  record_.success = false;
  record_.failure_kind.clear();
  if (!transport_error.empty()) {
    record_.error = transport_error;
    record_.failure_kind = transport_kind.empty() ? "transport_other" : transport_kind;
    if (!stream_error_.empty()) record_.error += " (after: " + stream_error_ + ")";
  } else if (record_.http_status != 200) {
    record_.error = "HTTP " + std::to_string(record_.http_status) + ": " + excerpt(error_body_);
    const int s = record_.http_status;
    record_.failure_kind = s >= 500 && s < 600 ? "http_5xx" : s >= 400 && s < 500 ? "http_4xx" : "http_other";
  } else if (!stream_error_.empty()) {
    record_.error = stream_error_;
    record_.failure_kind = limit_kind_ != nullptr ? limit_kind_ : "protocol";
    if (limit_kind_ != nullptr) {
      // Up to the byte bound of text nobody will read (vllm keeps no text of a failed request):
      // freed now, not copied into the metrics and the result.
      record_.error += " (" + std::to_string(record_.generated_text.size()) + " bytes of text dropped)";
      std::string().swap(record_.generated_text);
    }
  } else if (record_.first_choices_ns == 0) {
    // vllm's wording (sic, no space after the period), so tooling matching on it still works.
    record_.error =
        "Never received a valid chunk to calculate TTFT.This response will be marked as failed!";
    record_.failure_kind = "no_valid_chunk";
  } else {
    record_.incomplete_stream = mode_ == RequestMode::stream && !record_.saw_done;
    if (strict_ && record_.incomplete_stream) {
      record_.error = "stream ended without data: [DONE] (--strict-success)";
      record_.failure_kind = "strict_success";
    } else if (strict_ && record_.error_events > 0) {
      record_.error = "error event in stream: " + record_.first_error_event + " (--strict-success)";
      record_.failure_kind = "strict_success";
    } else {
      record_.success = true;
    }
  }
}

}  // namespace encbench::client
