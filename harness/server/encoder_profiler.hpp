#pragma once
// Server-side profiling of the encoder path between POST /start_profile and /stop_profile
// (vLLM's endpoints). While active, every encoder forward's device timeline goes into a bounded
// ring (the last `max_forwards`; older ones are dropped and counted) and its figures into running
// totals (all forwards, dropped ones included). /stop_profile writes a Chrome trace of the ring
// and a JSON summary under the profile dir and returns the summary; with an engine timeline
// recorder, the summary also carries what the engine did in the window ("engine_timeline",
// harness/server/engine_timeline.hpp).
//
// Off costs one relaxed atomic load per forward (the runner does not keep its timeline then);
// encbench-micro's scenario/profile_* cases measure it.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include <nlohmann/json.hpp>

#include "harness/core/clock.hpp"
#include "harness/server/engine_timeline.hpp"
#include "harness/server/server.hpp"
#include "harness/timeline/gaps.hpp"
#include "harness/timeline/trace_event.hpp"

namespace encbench::server {

struct ProfiledForward {
  int images = 0;
  Nanos device_busy_ns = 0;
  Nanos device_idle_ns = 0;
  std::size_t syncs = 0;
  double lateness_p99_us = 0;  // sim on the real clock: p99 op lateness of this forward
  std::uint64_t peak_device_bytes = 0;  // allocator peak in use during this forward
  std::map<timeline::GapClass, Nanos> idle_ns_by_class;
  std::map<timeline::GapClass, std::size_t> count_by_class;
  timeline::Timeline timeline;  // this forward's recording
};

class EncoderProfiler {
 public:
  // At most `max_kept` profiles (trace + summary) this profiler wrote stay in profile_dir: writing
  // one more deletes the oldest (files it did not write are never touched).
  EncoderProfiler(std::filesystem::path profile_dir, std::size_t max_forwards,
                  std::shared_ptr<EngineTimelineRecorder> engine_timeline = nullptr,
                  std::size_t max_kept = 16);

  bool active() const { return active_.load(std::memory_order_relaxed); }
  // Engine thread, only while active.
  void record(ProfiledForward forward);
  // The ProfileHandler body: start -> 200 {"status":"started"} or 409 when already running;
  // stop -> 200 summary, or 400 without a start. Never throws.
  ProfileReply handle(ProfileAction action);
  // The summary of what was recorded so far (also what stop returns, before the files).
  nlohmann::json summary() const;

 private:
  nlohmann::json summary_locked() const;
  void keep_at_most_max_kept(std::filesystem::path trace_path, std::filesystem::path summary_path);
  std::filesystem::path dir_;
  std::size_t max_kept_;
  std::deque<std::pair<std::filesystem::path, std::filesystem::path>> written_;  // oldest first
  std::size_t max_forwards_;
  std::shared_ptr<EngineTimelineRecorder> engine_timeline_;  // started and stopped with the profile
  std::atomic<bool> active_{false};
  mutable std::mutex mutex_;
  std::deque<ProfiledForward> ring_;
  std::int64_t forwards_ = 0, images_ = 0, dropped_ = 0, sessions_ = 0;
  double lateness_p99_us_max_ = 0;
  std::uint64_t peak_device_bytes_ = 0;
  Nanos busy_ns_ = 0, idle_ns_ = 0;
  std::int64_t syncs_ = 0;
  std::map<timeline::GapClass, Nanos> idle_by_class_;
  std::map<timeline::GapClass, std::int64_t> count_by_class_;
  Nanos started_ns_ = 0;
};

}  // namespace encbench::server
