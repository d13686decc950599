#include "harness/timeline/recorder.hpp"

#include <algorithm>
#include <array>
#include <set>
#include <thread>
#include <utility>

namespace encbench::timeline {

struct Recorder::ThreadBuffer {
  std::uint32_t thread_id = 0;
  std::thread::id os_thread;
  std::string name;
  std::vector<DeviceOp> ops;
  std::vector<HostSpan> spans;
};

namespace {

// Unique id per Recorder for the life of the process. A recorder's address could be reused by a
// later recorder, so the thread-local cache below is keyed by this id, never by address.
std::uint64_t new_instance_id() {
  static std::atomic<std::uint64_t> next_instance_id{1};  // process-wide by design
  return next_instance_id.fetch_add(1, std::memory_order_relaxed);
}

// Per-thread cache of (recorder instance -> that thread's buffer). A few entries so that a thread
// alternating between two devices' recorders stays on the lock-free path.
struct ThreadCacheEntry {
  std::uint64_t instance_id = 0;
  void* buffer = nullptr;
};
struct ThreadCache {
  std::array<ThreadCacheEntry, 4> entries{};
  unsigned next_slot = 0;
};
thread_local ThreadCache thread_cache;  // the hot path of the recorder: no lock, no atomic

}  // namespace

Recorder::Recorder() : instance_id_(new_instance_id()) {}
Recorder::~Recorder() = default;

Recorder::ThreadBuffer& Recorder::local_buffer() {
  for (const ThreadCacheEntry& entry : thread_cache.entries) {
    if (entry.instance_id == instance_id_) return *static_cast<ThreadBuffer*>(entry.buffer);
  }
  // Slow path: once per (thread, recorder) unless the cache thrashes.
  ThreadBuffer* buffer = nullptr;
  {
    const std::lock_guard lock(registry_mutex_);
    const auto self = std::this_thread::get_id();
    for (const auto& candidate : buffers_) {
      if (candidate->os_thread == self) buffer = candidate.get();
    }
    if (buffer == nullptr) {
      auto created = std::make_unique<ThreadBuffer>();
      created->thread_id = static_cast<std::uint32_t>(buffers_.size());
      created->os_thread = self;
      created->ops.reserve(1024);
      created->spans.reserve(1024);
      buffer = created.get();
      buffers_.push_back(std::move(created));
    }
  }
  ThreadCacheEntry& slot = thread_cache.entries[thread_cache.next_slot];
  thread_cache.next_slot = (thread_cache.next_slot + 1) % thread_cache.entries.size();
  slot.instance_id = instance_id_;
  slot.buffer = buffer;
  return *buffer;
}

std::uint32_t Recorder::thread_id() { return local_buffer().thread_id; }

void Recorder::name_thread(std::string name) { local_buffer().name = std::move(name); }

void Recorder::record(DeviceOp op) {
  if (!enabled()) return;
  local_buffer().ops.push_back(std::move(op));
}

void Recorder::record(HostSpan span) {
  if (!enabled()) return;
  local_buffer().spans.push_back(std::move(span));
}

void Recorder::record_host_span(std::string name, HostSpanKind kind, Nanos start_ns, Nanos end_ns,
                                int layer, std::uint64_t op_id) {
  if (!enabled()) return;
  ThreadBuffer& buffer = local_buffer();
  buffer.spans.push_back(HostSpan{std::move(name), kind, buffer.thread_id, start_ns, end_ns, layer, op_id});
}

Timeline Recorder::collect(std::string device_kind, bool modelled, std::vector<StreamTrack> streams) {
  Timeline timeline;
  timeline.device_kind = std::move(device_kind);
  timeline.modelled = modelled;
  timeline.streams = std::move(streams);
  std::set<std::uint32_t> active_threads;
  {
    const std::lock_guard lock(registry_mutex_);
    std::size_t op_total = 0, span_total = 0;
    for (const auto& buffer : buffers_) {
      op_total += buffer->ops.size();
      span_total += buffer->spans.size();
    }
    timeline.device_ops.reserve(op_total);
    timeline.host_spans.reserve(span_total);
    for (const auto& buffer : buffers_) {
      if (!buffer->spans.empty()) active_threads.insert(buffer->thread_id);
      for (DeviceOp& op : buffer->ops) {
        active_threads.insert(op.host_thread);
        timeline.device_ops.push_back(std::move(op));
      }
      for (HostSpan& span : buffer->spans) timeline.host_spans.push_back(std::move(span));
      buffer->ops.clear();
      buffer->spans.clear();
    }
    for (const auto& buffer : buffers_) {
      if (!active_threads.contains(buffer->thread_id)) continue;
      std::string name = buffer->name.empty() ? "host thread " + std::to_string(buffer->thread_id)
                                              : buffer->name;
      timeline.host_threads.push_back(HostThreadTrack{buffer->thread_id, std::move(name)});
    }
  }
  std::stable_sort(timeline.device_ops.begin(), timeline.device_ops.end(),
                   [](const DeviceOp& a, const DeviceOp& b) {
                     if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
                     return a.id < b.id;
                   });
  std::stable_sort(timeline.host_spans.begin(), timeline.host_spans.end(),
                   [](const HostSpan& a, const HostSpan& b) {
                     if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
                     return a.end_ns > b.end_ns;  // enclosing span first, as trace viewers expect
                   });
  return timeline;
}

void Recorder::clear() {
  const std::lock_guard lock(registry_mutex_);
  for (const auto& buffer : buffers_) {
    buffer->ops.clear();
    buffer->spans.clear();
  }
}

ScopedHostSpan::ScopedHostSpan(Recorder* recorder, std::string name, HostSpanKind kind, int layer,
                               std::uint64_t op_id)
    : recorder_(recorder != nullptr && recorder->enabled() ? recorder : nullptr) {
  if (recorder_ == nullptr) return;
  span_.name = std::move(name);
  span_.kind = kind;
  span_.layer = layer;
  span_.op_id = op_id;
  span_.thread = recorder_->thread_id();
  span_.start_ns = recorder_->now();
}

ScopedHostSpan::~ScopedHostSpan() {
  if (recorder_ == nullptr) return;
  span_.end_ns = recorder_->now();
  recorder_->record(std::move(span_));
}

}  // namespace encbench::timeline
