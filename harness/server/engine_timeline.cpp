#include "harness/server/engine_timeline.hpp"

#include <algorithm>
#include <cstdio>
#include <string>

#include "harness/core/clock_anchor.hpp"

namespace encbench::server {
namespace {

nlohmann::json step_json(const EngineStepRecord& s) {
  nlohmann::json idle = nlohmann::json::object();
  for (const auto& [cls, ns] : s.encoder_idle_ns_by_class) idle[cls] = ns;
  return {{"step", s.step},
          {"start_ns", s.start_ns},
          {"end_ns", s.end_ns},
          {"encoder_start_ns", s.encoder_start_ns},
          {"encoder_end_ns", s.encoder_end_ns},
          {"encoder_device_busy_ns", s.encoder_device_busy_ns},
          {"encoder_device_idle_ns", s.encoder_device_idle_ns},
          {"encoder_idle_ns_by_class", idle},
          {"encoder_host_extra_ns", s.encoder_host_extra_ns},
          {"lm_start_ns", s.lm_start_ns},
          {"lm_end_ns", s.lm_end_ns},
          {"sequences", s.sequences},
          {"images", s.images},
          {"planned_start_ns", s.planned_start_ns},
          {"planned_encoder_ns", s.planned_encoder_ns},
          {"planned_lm_ns", s.planned_lm_ns}};
}

std::string hex64(std::uint64_t value) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(value));
  return text;
}

nlohmann::json request_json(const EngineRequestRecord& r) {
  return {{"client_request_id", r.client_request_id},
          {"response_id", r.response_id},
          {"arrival_ns", r.arrival_ns},
          {"submitted_ns", r.submitted_ns},
          {"first_scheduled_ns", r.first_scheduled_ns},
          {"encoder_step", r.encoder_step},
          {"first_token_ns", r.first_token_ns},
          // Hex: a JSON number loses a 64-bit hash's low bits in most readers.
          {"content_hash", hex64(r.content_hash)},
          {"image_hash", hex64(r.image_hash)}};
}

}  // namespace

EngineTimelineRecorder::EngineTimelineRecorder(std::size_t max_steps, std::size_t max_requests)
    : max_steps_(std::max<std::size_t>(1, max_steps)), max_requests_(std::max<std::size_t>(1, max_requests)) {}

void EngineTimelineRecorder::start() {
  std::lock_guard lock(mutex_);
  steps_.clear();
  requests_.clear();
  steps_dropped_ = requests_dropped_ = 0;
  active_.store(true, std::memory_order_relaxed);
}

void EngineTimelineRecorder::record_step(EngineStepRecord step) {
  std::lock_guard lock(mutex_);
  if (!active_.load(std::memory_order_relaxed)) return;
  if (steps_.size() >= max_steps_) {
    ++steps_dropped_;
    return;
  }
  steps_.push_back(std::move(step));
}

void EngineTimelineRecorder::record_request(EngineRequestRecord request) {
  std::lock_guard lock(mutex_);
  if (!active_.load(std::memory_order_relaxed)) return;
  if (requests_.size() >= max_requests_) {
    ++requests_dropped_;
    return;
  }
  requests_.push_back(std::move(request));
}

nlohmann::json EngineTimelineRecorder::to_json_locked() const {
  nlohmann::json steps = nlohmann::json::array(), requests = nlohmann::json::array();
  for (const auto& s : steps_) steps.push_back(step_json(s));
  for (const auto& r : requests_) requests.push_back(request_json(r));
  // Both clocks read together: a client on another host maps steady times through system_ns.
  const ClockAnchor clock = clock_anchor_now();
  return {{"schema", "encbench-engine-timeline"},
          {"version", kEngineTimelineVersion},
          {"clock", {{"steady_ns", clock.steady_ns}, {"system_ns", clock.system_ns}, {"boot_id", clock.boot_id}}},
          {"max_steps", max_steps_},
          {"max_requests", max_requests_},
          {"steps_dropped", steps_dropped_},
          {"requests_dropped", requests_dropped_},
          {"steps", std::move(steps)},
          {"requests", std::move(requests)}};
}

nlohmann::json EngineTimelineRecorder::stop_and_take_json() {
  std::lock_guard lock(mutex_);
  active_.store(false, std::memory_order_relaxed);
  nlohmann::json out = to_json_locked();
  steps_ = {};
  requests_ = {};
  return out;
}

}  // namespace encbench::server
