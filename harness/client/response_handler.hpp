#pragma once
// Interprets one response (SSE stream or single JSON body) into a RequestRecord, with vllm's
// rules (vllm/benchmarks/lib/endpoint_request_func.py @ 02cfb534): the first event whose
// `choices` is non-empty ends TTFT; every later one adds an ITL entry and moves the latency end;
// `usage` is read only from events without choices; events with neither (a mid-stream
// data: {"error": ...}) are skipped. A 200 stream with at least one choices event succeeds, with
// or without data: [DONE]. Malformed JSON, a typed `event: error` (vllm's json.loads fails on it),
// a transport error or a non-200 status fail the request. The skipped error events and the
// missing [DONE] are counted on the record; `strict` (--strict-success) fails those requests.
#include <string>
#include <string_view>

#include "harness/client/records.hpp"
#include "harness/client/sse_parser.hpp"

namespace encbench::client {

// What one response may cost: bytes received (headers + body) and choices events
// kept. Past either, the request fails with failure kind response_too_large / too_many_chunks
// and the transfer is stopped, so a server that never stops cannot exhaust the client.
struct ResponseLimits {
  std::int64_t max_bytes = std::int64_t{256} << 20;
  std::int64_t max_chunks = 1'000'000;
};

class ResponseHandler {
 public:
  ResponseHandler(Backend backend, RequestMode mode, RequestRecord& record, bool strict = false,
                  ResponseLimits limits = {})
      : backend_(backend), mode_(mode), strict_(strict), limits_(limits), record_(record) {}

  // Header bytes received; false once the response is over its byte bound (stop reading).
  bool on_header_bytes(std::size_t bytes);
  // Body bytes received at `now` (one timestamp per network read, applied to every event that
  // read completes).
  void on_body(std::string_view bytes, Nanos now);
  // The transfer ended (curl finished, with any result). Sets success / error on the record.
  // `transport_error` is "" when curl reported no error; `transport_kind` names its failure kind
  // (transport_failure_kind()). Every failure gets a non-empty error and a failure kind.
  void on_end(Nanos now, const std::string& transport_error, const std::string& transport_kind = "transport_other");

  bool failed() const { return !stream_error_.empty(); }
  std::int64_t bytes_received() const { return bytes_received_; }

 private:
  void on_event(SseEvent&& event, Nanos now);
  void on_json_payload(std::string_view payload, Nanos now, bool streamed);
  bool count_bytes(std::size_t bytes);
  void fail_on_limit(std::string error, const char* kind);

  Backend backend_;
  RequestMode mode_;
  bool strict_;
  ResponseLimits limits_;
  std::int64_t bytes_received_ = 0;
  const char* limit_kind_ = nullptr;  // set when a ResponseLimits bound ended the response
  RequestRecord& record_;
  SseParser parser_;
  std::string error_body_;      // start of a non-200 body, or the whole non-stream body
  std::string stream_error_;    // first protocol error (kept; later events are ignored)
  std::int64_t events_this_read_ = 0;
};

// First `max_bytes` of text, with control characters made visible, for error messages.
std::string excerpt(std::string_view text, std::size_t max_bytes = 200);

}  // namespace encbench::client
