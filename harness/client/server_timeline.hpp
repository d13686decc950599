#pragma once
// The engine timeline an `encbench serve` returns from POST /stop_profile
// (server_profile.engine_timeline, harness/server/engine_timeline.hpp), read back on the client's
// clock. The answer is server-controlled: parsing never throws, and anything malformed makes the
// whole timeline unavailable with a note that names the field (tests/fuzz/fuzz_chunk_json.cpp).
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/core/clock_anchor.hpp"

namespace encbench::client {

// One engine step; every time is on the client's steady clock (now_ns()).
struct ServerStep {
  std::int64_t step = 0;  // the server's step number (what requests' encoder_step refers to)
  Nanos start_ns = 0, end_ns = 0;
  Nanos encoder_start_ns = 0, encoder_end_ns = 0;
  Nanos encoder_device_busy_ns = 0, encoder_device_idle_ns = 0, encoder_host_extra_ns = 0;
  std::map<std::string, Nanos> encoder_idle_ns_by_class;
  Nanos lm_start_ns = 0, lm_end_ns = 0;
  std::int64_t sequences = 0, images = 0;
};

struct ServerRequest {
  std::string client_request_id;  // the x-request-id the client sent (RequestRecord::request_id)
  std::string response_id;
  Nanos arrival_ns = 0, submitted_ns = 0, first_scheduled_ns = 0, first_token_ns = 0;
  std::int64_t encoder_step = -1;
};

struct ServerTimeline {
  bool available = false;
  std::string note;              // why it is unavailable; else what limits it (drops), or ""
  std::string clock_alignment;   // how server times were mapped onto the client's
  Nanos offset_ns = 0;           // added to every server time
  std::int64_t steps_dropped = 0, requests_dropped = 0;
  std::vector<ServerStep> steps;
  std::vector<ServerRequest> requests;
};

// `server_profile`: the /stop_profile answer as stored in BenchResult; `client_clock`: the
// client's anchor read right after it. Never throws.
ServerTimeline parse_server_timeline(const nlohmann::json& server_profile, const ClockAnchor& client_clock) noexcept;

}  // namespace encbench::client
