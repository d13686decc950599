#pragma once
// What the engine did, step by step and request by request, while profiling is on (between POST
// /start_profile and /stop_profile): plain timestamps on this process's steady clock, nothing
// derived. The client aligns them with its own records and decomposes each request's TTFT
// (harness/client/server_timeline.hpp, harness/scenario/timeline_page.hpp); the server only
// records, so the analysis can change without touching the serving path.
//
// Memory is bounded: the first `max_steps` steps and `max_requests` requests of a session are
// kept; later ones are counted as dropped (the first ones, so that every kept request's encoder
// step is kept too while the step cap is not reached).
//
// The /stop_profile answer carries to_json() as "engine_timeline" (schema
// "encbench-engine-timeline", version 1; fields in docs/scenario.md).
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/core/clock.hpp"

namespace encbench::server {

inline constexpr int kEngineTimelineVersion = 1;

// One engine step. The encoder part is [encoder_start_ns, encoder_end_ns] (the hook's wall time;
// both equal when the step encoded nothing) plus the modelled host work encoder_host_extra_ns
// that the engine waits out after it (pre-processing, and the post-forward work the forward's
// queued device work did not cover: serving/step_timing.hpp); the LM part is the rest of the step,
// [lm_start_ns, lm_end_ns] = [encoder_end_ns + encoder_host_extra_ns, end_ns].
struct EngineStepRecord {
  std::int64_t step = 0;  // the engine's step number (server lifetime), referred to by requests
  Nanos start_ns = 0, end_ns = 0;
  Nanos encoder_start_ns = 0, encoder_end_ns = 0;
  Nanos encoder_device_busy_ns = 0, encoder_device_idle_ns = 0, encoder_host_extra_ns = 0;
  std::map<std::string, Nanos> encoder_idle_ns_by_class;  // gap class -> device idle ns
  Nanos lm_start_ns = 0, lm_end_ns = 0;
  std::int64_t sequences = 0, images = 0;
  // The planned schedule (engine_core_thread.hpp): the step's start and its two parts as
  // serving::step_timing gave them; end_ns - (planned_start_ns + planned_encoder_ns +
  // planned_lm_ns) is how late the real clock delivered it.
  Nanos planned_start_ns = 0, planned_encoder_ns = 0, planned_lm_ns = 0;
};

// One request, recorded when its first token is emitted.
struct EngineRequestRecord {
  std::string client_request_id;  // the request's x-request-id header ("" when absent)
  std::string response_id;        // the `id` of its response ("chatcmpl-...")
  Nanos arrival_ns = 0;           // its HTTP header was read
  Nanos submitted_ns = 0;         // parsed, images decoded, handed to the engine
  Nanos first_scheduled_ns = 0;   // start of the first step that scheduled it
  std::int64_t encoder_step = -1; // step that encoded its images (-1: none)
  Nanos first_token_ns = 0;       // end of the step that emitted its first token
  std::uint64_t content_hash = 0; // its prompt's identity, as the scheduler got it (0: none)
  std::uint64_t image_hash = 0;   // its images' identity, as the scheduler got it (0: none)
};

class EngineTimelineRecorder {
 public:
  EngineTimelineRecorder(std::size_t max_steps, std::size_t max_requests);

  bool active() const { return active_.load(std::memory_order_relaxed); }
  void start();  // clears the previous session
  // Stops and returns the session: clock anchors, caps, dropped counts, steps, requests.
  nlohmann::json stop_and_take_json();

  // Engine thread; ignored while inactive.
  void record_step(EngineStepRecord step);
  void record_request(EngineRequestRecord request);

 private:
  nlohmann::json to_json_locked() const;
  std::size_t max_steps_, max_requests_;
  std::atomic<bool> active_{false};
  mutable std::mutex mutex_;
  std::vector<EngineStepRecord> steps_;
  std::vector<EngineRequestRecord> requests_;
  std::int64_t steps_dropped_ = 0, requests_dropped_ = 0;
};

}  // namespace encbench::server
