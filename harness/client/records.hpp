#pragma once
// Plain per-request records: what the event loop observed, nothing derived. Metrics are computed
// from these afterwards, so every definition (vllm's, ours) can be rebuilt from a saved run.
#include <cstdint>
#include <string>
#include <vector>

#include "harness/core/clock.hpp"

namespace encbench::client {

enum class Backend { openai_chat, openai };           // "openai-chat" | "openai" (completions)
enum class RequestMode { stream, non_stream };        // "stream" | "non-stream"

const char* to_string(Backend backend);
const char* to_string(RequestMode mode);
Backend parse_backend(const std::string& name);          // throws InvalidInput
RequestMode parse_request_mode(const std::string& name);  // throws InvalidInput

// One request as built before the run (body and headers are final bytes).
struct PreparedRequest {
  std::size_t index = 0;              // position in the run (dataset order after shuffle)
  std::string request_id;             // sent as x-request-id
  std::string body;                   // JSON body, built before the run
  std::vector<std::string> headers;   // extra header lines ("Name: value") besides the common ones
  std::int64_t prompt_len_client = 0; // client-side prompt length (tokens with --tokenizer, else words)
  std::int64_t text_tokens = -1, vision_tokens = -1;  // the sample's split (-1: unknown)
  int output_len = 0;                 // max_completion_tokens / max_tokens sent
  std::size_t image_count = 0;
  std::size_t image_bytes = 0;        // bytes of the image data URLs in the body
  std::int64_t image_pixels = -1;     // width x height summed over the images (-1: unknown)
};

// Everything the client saw for one request. Times are absolute now_ns() values; 0 = never.
struct RequestRecord {
  std::size_t index = 0;
  std::string request_id;
  bool dispatched = false;            // handed to curl (false: never sent, e.g. interrupted)
  Nanos intended_ns = 0;              // scheduled send time (start + precomputed offset)
  Nanos arrival_ns = 0;               // when the loop released it into the client queue
  Nanos admitted_ns = 0;              // past the --max-concurrency cap (= arrival_ns without one)
  Nanos dispatch_ns = 0;              // handed to curl: vllm's start time `st`
  Nanos sent_ns = 0;                  // CURLOPT_PREREQFUNCTION: request leaving on a connection
  Nanos headers_ns = 0;               // response status line received
  Nanos first_choices_ns = 0;         // first event with non-empty `choices` (vllm's TTFT end)
  Nanos last_choices_ns = 0;          // last such event (vllm's latency end)
  Nanos end_ns = 0;                   // transfer finished (after [DONE] / body end / error)
  std::vector<Nanos> choices_ns;      // every event with non-empty choices, in order
  std::int64_t data_events = 0;       // all `data:` events (incl. usage and [DONE])
  std::int64_t content_chunks = 0;    // choices events with non-empty text
  std::int64_t max_events_per_read = 0;  // >1 means some ITL entries are read artefacts
  int http_status = 0;
  int curl_code = 0;
  int os_errno = 0;                   // CURLINFO_OS_ERRNO of a failed transfer (0: none)
  std::int64_t usage_prompt_tokens = -1;      // -1: server sent no usage
  std::int64_t usage_completion_tokens = -1;
  std::int64_t prompt_len_client = 0;
  std::string generated_text;
  bool saw_done = false;
  // vllm counts these as successes (its chat client needs only one choices event); we count
  // them apart, and --strict-success fails them.
  std::int64_t error_events = 0;      // data: {"error": ...} events without choices in a 200 stream
  std::string first_error_event;      // the first one's message
  bool incomplete_stream = false;     // 200 stream with choices that ended without data: [DONE]
  bool success = false;
  std::string error;                  // "" on success; never "" on a failure
  // "" on success, else one of: connection_refused, open_file_limit, ephemeral_ports_exhausted,
  // connect_failed, dns, connection_reset, empty_reply, truncated_response, timeout, tls,
  // transport_other, http_4xx, http_5xx, http_other, protocol, no_valid_chunk, strict_success,
  // interrupted, client_internal, response_too_large, too_many_chunks, idle_timeout.
  std::string failure_kind;

  bool operator==(const RequestRecord&) const = default;  // field by field (shard round trips)
};

}  // namespace encbench::client
