#include "harness/server/encoder_profiler.hpp"

#include <algorithm>
#include <fstream>

#include "harness/core/result_json.hpp"
#include "harness/timeline/chrome_trace.hpp"

namespace encbench::server {
namespace {

ProfileReply error_reply(int status, const std::string& message) {
  const nlohmann::json body = {
      {"error", {{"message", message}, {"type", "BadRequestError"}, {"param", nullptr}, {"code", status}}}};
  return {status, body.dump()};
}

}  // namespace

EncoderProfiler::EncoderProfiler(std::filesystem::path profile_dir, std::size_t max_forwards,
                                 std::shared_ptr<EngineTimelineRecorder> engine_timeline, std::size_t max_kept)
    : dir_(std::move(profile_dir)),
      max_kept_(max_kept == 0 ? 1 : max_kept),
      max_forwards_(max_forwards == 0 ? 1 : max_forwards),
      engine_timeline_(std::move(engine_timeline)) {}

void EncoderProfiler::keep_at_most_max_kept(std::filesystem::path trace_path, std::filesystem::path summary_path) {
  written_.emplace_back(std::move(trace_path), std::move(summary_path));
  while (written_.size() > max_kept_) {
    std::error_code ignored;  // already gone: nothing to keep bounded
    std::filesystem::remove(written_.front().first, ignored);
    std::filesystem::remove(written_.front().second, ignored);
    written_.pop_front();
  }
}

void EncoderProfiler::record(ProfiledForward forward) {
  std::lock_guard lock(mutex_);
  if (!active_.load(std::memory_order_relaxed)) return;  // stopped while this forward ran
  ++forwards_;
  images_ += forward.images;
  busy_ns_ += forward.device_busy_ns;
  idle_ns_ += forward.device_idle_ns;
  syncs_ += static_cast<std::int64_t>(forward.syncs);
  lateness_p99_us_max_ = std::max(lateness_p99_us_max_, forward.lateness_p99_us);
  peak_device_bytes_ = std::max(peak_device_bytes_, forward.peak_device_bytes);
  for (const auto& [cls, ns] : forward.idle_ns_by_class) idle_by_class_[cls] += ns;
  for (const auto& [cls, n] : forward.count_by_class) count_by_class_[cls] += static_cast<std::int64_t>(n);
  if (ring_.size() == max_forwards_) {
    ring_.pop_front();
    ++dropped_;
  }
  ring_.push_back(std::move(forward));
}

nlohmann::json EncoderProfiler::summary_locked() const {
  nlohmann::json classes = nlohmann::json::object();
  for (const timeline::GapClass cls : timeline::kAllGapClasses) {
    const auto idle = idle_by_class_.find(cls);
    const auto count = count_by_class_.find(cls);
    classes[std::string(timeline::to_string(cls))] = {
        {"total_ms", ns_to_ms(idle == idle_by_class_.end() ? 0 : idle->second)},
        {"count", count == count_by_class_.end() ? 0 : count->second}};
  }
  const Nanos span = busy_ns_ + idle_ns_;
  return {{"schema", "encbench-server-profile"},
          {"version", 1},
          {"forwards", forwards_},
          {"images", images_},
          {"forwards_in_trace", ring_.size()},
          {"dropped", dropped_},
          {"max_forwards", max_forwards_},
          {"device_busy_ms", ns_to_ms(busy_ns_)},
          {"device_idle_ms", ns_to_ms(idle_ns_)},
          {"idle_pct", span > 0 ? 100.0 * static_cast<double>(idle_ns_) / static_cast<double>(span) : 0.0},
          {"syncs", syncs_},
          {"syncs_per_forward", forwards_ > 0 ? static_cast<double>(syncs_) / static_cast<double>(forwards_) : 0.0},
          {"gap_classes", classes},
          // sim on the real clock: the worst forward's p99 op lateness (0 elsewhere).
          {"lateness_p99_us_max", lateness_p99_us_max_},
          {"peak_device_memory_bytes", peak_device_bytes_},
          {"window_s", ns_to_s(now_ns() - started_ns_)}};
}

nlohmann::json EncoderProfiler::summary() const {
  std::lock_guard lock(mutex_);
  return summary_locked();
}

ProfileReply EncoderProfiler::handle(ProfileAction action) {
  try {
    std::lock_guard lock(mutex_);
    if (action == ProfileAction::start) {
      if (active_.load(std::memory_order_relaxed))
        return error_reply(409, "profiling is already running; POST /stop_profile first");
      ring_.clear();
      forwards_ = images_ = dropped_ = syncs_ = 0;
      lateness_p99_us_max_ = 0;
      peak_device_bytes_ = 0;
      busy_ns_ = idle_ns_ = 0;
      idle_by_class_.clear();
      count_by_class_.clear();
      started_ns_ = now_ns();
      ++sessions_;
      if (engine_timeline_) engine_timeline_->start();
      active_.store(true, std::memory_order_relaxed);
      return {200, nlohmann::json{{"status", "started"}, {"profile_dir", dir_.string()}}.dump()};
    }
    if (!active_.load(std::memory_order_relaxed))
      return error_reply(400, "profiling is not running; POST /start_profile first");
    active_.store(false, std::memory_order_relaxed);
    nlohmann::json summary = summary_locked();
    if (engine_timeline_) summary["engine_timeline"] = engine_timeline_->stop_and_take_json();
    // Files: a failure is reported in the reply; the server and the summary are unaffected.
    const std::string stem = "encoder-profile-" + std::to_string(sessions_);
    const std::filesystem::path trace_path = dir_ / (stem + ".trace.json");
    const std::filesystem::path summary_path = dir_ / (stem + ".json");
    try {
      std::filesystem::create_directories(dir_);
      timeline::Timeline merged;
      for (const ProfiledForward& f : ring_) {
        const timeline::Timeline& t = f.timeline;
        if (merged.streams.empty()) {
          merged.device_kind = t.device_kind;
          merged.modelled = t.modelled;
          merged.streams = t.streams;
          merged.host_threads = t.host_threads;
        }
        merged.device_ops.insert(merged.device_ops.end(), t.device_ops.begin(), t.device_ops.end());
        merged.host_spans.insert(merged.host_spans.end(), t.host_spans.begin(), t.host_spans.end());
      }
      // Op ids are unique for the device's whole life (the recorder's counter never restarts),
      // so they are kept as they are: host spans refer to them by op_id.
      timeline::write_chrome_trace(trace_path, merged);
      summary["trace_path"] = trace_path.string();
      summary["summary_path"] = summary_path.string();
      write_json_file(summary_path, summary);
      keep_at_most_max_kept(trace_path, summary_path);
    } catch (const std::exception& e) {
      summary["trace_path"] = nullptr;
      summary["error"] = "cannot write the profile under --profile-dir '" + dir_.string() + "': " + e.what();
    }
    ring_.clear();
    return {200, summary.dump()};
  } catch (const std::exception& e) {
    return error_reply(500, std::string("profiling failed: ") + e.what());
  }
}

}  // namespace encbench::server
