#pragma once
// Low-overhead recording of device ops and host spans.
//
// Each thread appends to its own buffer (no lock on the hot path after a thread's first record);
// collect() merges and sorts them once, after the run. Recording never analyses.
//
// Threading contract: record()/thread_id()/name_thread() may be called from any number of
// threads at once. collect() and clear() must not run while other threads are still recording
// into this recorder (call them after the run, once the device has been synchronised): the
// per-thread buffers are deliberately unsynchronised so that recording costs one vector append.
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "harness/timeline/trace_event.hpp"

namespace encbench::timeline {

class Recorder {
 public:
  Recorder();
  ~Recorder();
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  void set_enabled(bool enabled) { enabled_.store(enabled, std::memory_order_relaxed); }
  bool enabled() const { return enabled_.load(std::memory_order_relaxed); }

  // The host clock host spans are stamped with: encbench::now_ns() unless a device with a
  // virtual clock installs its own (set before recording starts; not thread-safe to change).
  void set_clock(std::function<Nanos()> clock) { clock_ = std::move(clock); }
  Nanos now() const { return clock_ ? clock_() : now_ns(); }

  std::uint64_t next_op_id() { return next_op_id_.fetch_add(1, std::memory_order_relaxed); }
  // Small dense id of the calling thread, stable for the recorder's life.
  std::uint32_t thread_id();
  void name_thread(std::string name);  // names the calling thread's track

  void record(DeviceOp op);
  void record(HostSpan span);
  // Records a host span [start_ns, end_ns) of the calling thread (fills `thread`).
  void record_host_span(std::string name, HostSpanKind kind, Nanos start_ns, Nanos end_ns,
                        int layer = -1, std::uint64_t op_id = 0);

  // Merges every thread's buffer into one sorted Timeline and empties the buffers.
  // Host threads listed are those that recorded a host span or submitted a device op.
  Timeline collect(std::string device_kind, bool modelled, std::vector<StreamTrack> streams);
  void clear();
  std::uint64_t instance_id() const { return instance_id_; }

 private:
  struct ThreadBuffer;
  ThreadBuffer& local_buffer();

  std::function<Nanos()> clock_;
  std::atomic<bool> enabled_{true};
  std::atomic<std::uint64_t> next_op_id_{1};
  std::uint64_t instance_id_;
  std::mutex registry_mutex_;
  std::vector<std::unique_ptr<ThreadBuffer>> buffers_;
};

// Records a host span for its scope: ScopedHostSpan span(rec, "build seq_lens", HostSpanKind::work, layer);
class ScopedHostSpan {
 public:
  ScopedHostSpan(Recorder* recorder, std::string name, HostSpanKind kind, int layer = -1,
                 std::uint64_t op_id = 0);
  ~ScopedHostSpan();
  ScopedHostSpan(const ScopedHostSpan&) = delete;
  ScopedHostSpan& operator=(const ScopedHostSpan&) = delete;

 private:
  Recorder* recorder_;
  HostSpan span_;
};

}  // namespace encbench::timeline
