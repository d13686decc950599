#include "harness/device/queue_device.hpp"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "harness/core/error.hpp"
#include "harness/device/allocator.hpp"
#include "kernels/thread_pool.hpp"

namespace encbench::device {

using timeline::DeviceOp;
using timeline::HostSpanKind;
using timeline::Recorder;

namespace {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

}  // namespace

void wait_until_ns(Nanos deadline, Nanos spin_margin_ns) {
  for (;;) {
    const Nanos remaining = deadline - now_ns();
    if (remaining <= 0) return;
    if (remaining > spin_margin_ns) {
      std::this_thread::sleep_for(std::chrono::nanoseconds(remaining - spin_margin_ns));
    } else {
      cpu_relax();
    }
  }
}

namespace {

void spin_for_ns(Nanos duration) {
  if (duration <= 0) return;
  const Nanos deadline = now_ns() + duration;
  while (now_ns() < deadline) cpu_relax();
}

class QueueDevice;

class QueueEvent final : public Event {
 public:
  QueueEvent(Recorder* recorder, Nanos host_wakeup_ns) : recorder_(recorder), host_wakeup_ns_(host_wakeup_ns) {}

  bool query() const override {
    const std::lock_guard lock(mutex_);
    return done_;
  }

  void synchronize() override {
    const Nanos wait_start = now_ns();
    Nanos completed = 0;
    {
      std::unique_lock lock(mutex_);
      cv_.wait(lock, [this] { return done_; });
      completed = completed_ns_;
    }
    if (host_wakeup_ns_ > 0) wait_until_ns(completed + host_wakeup_ns_);
    if (recorder_->enabled()) {
      recorder_->record_host_span("event_synchronize", HostSpanKind::wait, wait_start, now_ns());
    }
  }

  Nanos completed_ns() const override {
    const std::lock_guard lock(mutex_);
    return done_ ? completed_ns_ : 0;
  }

  void complete(Nanos at) {
    {
      const std::lock_guard lock(mutex_);
      done_ = true;
      completed_ns_ = at;
    }
    cv_.notify_all();
  }

  // Device-side wait (a stream thread); returns the completion time.
  Nanos wait_completed() {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [this] { return done_; });
    return completed_ns_;
  }

 private:
  Recorder* recorder_;
  Nanos host_wakeup_ns_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
  Nanos completed_ns_ = 0;
};

struct Command {
  enum class Kind { device_op, record_event, wait_event };
  Kind kind = Kind::device_op;
  DeviceOp op;
  std::function<void(kernels::WorkerPool&)> body;  // kernels (skippable in sim)
  std::function<void()> transfer;                  // copies/memsets (always performed)
  std::shared_ptr<QueueEvent> event;
  bool host_waits = false;  // the host blocks on this command: remember its end time
  std::uint64_t seq = 0;
};

struct DeviceShared {
  DeviceOptions options;
  ExecutionModel model;
  Recorder recorder;
  kernels::ThreadPool pool;
  Nanos host_wakeup_ns = 0;

  DeviceShared(const DeviceOptions& opts, ExecutionModel m, unsigned pool_threads)
      : options(opts), model(std::move(m)), pool(pool_threads) {
    if (model.profile) host_wakeup_ns = static_cast<Nanos>(model.profile->host_wakeup_ns.value);
  }
};

class QueueStream final : public Stream {
 public:
  QueueStream(DeviceShared& shared, int index, std::string name)
      : shared_(shared), index_(index), name_(std::move(name)), thread_([this] { worker_loop(); }) {}

  ~QueueStream() override {
    begin_shutdown();
    join();
  }

  int index() const override { return index_; }
  const std::string& name() const override { return name_; }

  void launch(KernelLaunch launch) override {
    Command cmd;
    cmd.op.name = std::move(launch.name);
    cmd.op.category = timeline::OpCategory::kernel;
    cmd.op.layer = launch.layer;
    cmd.op.flops = launch.cost.flops;
    cmd.op.bytes = launch.cost.bytes;
    if (shared_.model.run_bodies) cmd.body = std::move(launch.body);
    submit(std::move(cmd), true, true);
  }

  void copy_h2d(const Buffer& dst, std::size_t dst_offset, const void* src, std::size_t bytes,
                std::string_view label, int layer) override {
    check_buffer_range(dst, dst_offset, bytes, "copy_h2d", label);
    require(src != nullptr || bytes == 0 || !shared_.model.run_bodies,
            "copy_h2d '" + std::string(label) + "': null source");
    Command cmd;
    cmd.op.name = std::string(label);
    cmd.op.category = timeline::OpCategory::memcpy_h2d;
    cmd.op.layer = layer;
    cmd.op.bytes = static_cast<double>(bytes);
    if (shared_.model.run_bodies && bytes > 0) {
      // Stage at submit so the caller may reuse `src` at once (like a pinned staging buffer).
      auto staged = std::make_shared<std::vector<std::byte>>(bytes);
      std::memcpy(staged->data(), src, bytes);
      std::byte* target = static_cast<std::byte*>(dst.data()) + dst_offset;
      cmd.transfer = [target, staged] { std::memcpy(target, staged->data(), staged->size()); };
    }
    submit(std::move(cmd), true, true);
  }

  void copy_d2h(void* dst, const Buffer& src, std::size_t src_offset, std::size_t bytes,
                std::string_view label, int layer) override {
    check_buffer_range(src, src_offset, bytes, "copy_d2h", label);
    require(dst != nullptr || bytes == 0, "copy_d2h '" + std::string(label) + "': null destination");
    Command cmd;
    cmd.op.name = std::string(label);
    cmd.op.category = timeline::OpCategory::memcpy_d2h;
    cmd.op.layer = layer;
    cmd.op.bytes = static_cast<double>(bytes);
    cmd.host_waits = true;
    if (shared_.model.run_bodies) {
      const std::byte* source = static_cast<const std::byte*>(src.data()) + src_offset;
      cmd.transfer = [dst, source, bytes] {
        if (bytes > 0) std::memcpy(dst, source, bytes);
      };
    } else if (bytes > 0) {
      std::memset(dst, 0, bytes);  // no device memory behind the buffer: deterministic zeros
    }
    const auto [seq, op_id] = submit(std::move(cmd), true, true);
    wait_for(seq, std::string(label), layer, op_id);
  }

  void memset(const Buffer& dst, int value, std::size_t bytes, std::string_view label, int layer) override {
    check_buffer_range(dst, 0, bytes, "memset", label);
    Command cmd;
    cmd.op.name = std::string(label);
    cmd.op.category = timeline::OpCategory::memset;
    cmd.op.layer = layer;
    cmd.op.bytes = static_cast<double>(bytes);
    if (shared_.model.run_bodies) {
      void* target = dst.data();
      cmd.transfer = [target, value, bytes] {
        if (bytes > 0) std::memset(target, value, bytes);
      };
    }
    submit(std::move(cmd), true, true);
  }

  void synchronize(std::string_view reason) override {
    Command cmd;
    cmd.op.name = std::string(reason);
    cmd.op.category = timeline::OpCategory::sync;
    cmd.host_waits = true;
    // No api span: the wait span that follows is the whole story of a synchronize.
    const auto [seq, op_id] = submit(std::move(cmd), false, false);
    wait_for(seq, std::string(reason), -1, op_id);
  }

  std::shared_ptr<Event> record_event() override {
    auto event = std::make_shared<QueueEvent>(&shared_.recorder, shared_.host_wakeup_ns);
    Command cmd;
    cmd.kind = Command::Kind::record_event;
    cmd.event = event;
    cmd.op.name = "record_event";
    submit(std::move(cmd), true, false);  // api span "record_event"
    return event;
  }

  void wait_event(const std::shared_ptr<Event>& event) override {
    auto queue_event = std::dynamic_pointer_cast<QueueEvent>(event);
    require(queue_event != nullptr, "wait_event: the event does not come from this device");
    Command cmd;
    cmd.kind = Command::Kind::wait_event;
    cmd.event = std::move(queue_event);
    cmd.op.name = "wait_event";
    submit(std::move(cmd), true, false);  // api span "wait_event"
  }

  // --- device side bookkeeping ---------------------------------------------------------------
  std::uint64_t submitted() const {
    const std::lock_guard lock(mutex_);
    return submitted_;
  }
  std::uint64_t completed() const {
    const std::lock_guard lock(mutex_);
    return completed_;
  }
  // Waits (without recording, without rethrowing) until everything submitted so far is done.
  void drain_quietly() {
    std::unique_lock lock(mutex_);
    const std::uint64_t target = submitted_;
    done_cv_.wait(lock, [&] { return completed_ >= target; });
  }
  void rethrow_pending_error() {
    std::exception_ptr error;
    {
      const std::lock_guard lock(mutex_);
      std::swap(error, error_);
    }
    if (error) std::rethrow_exception(error);
  }
  void begin_shutdown() {
    {
      const std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    work_cv_.notify_all();
  }
  void join() {
    if (thread_.joinable()) thread_.join();
  }

 private:
  // Puts a command on the queue; records the api span (with the launch overhead inside it when
  // `device_op` is true). Returns (sequence number, op id).
  // The api span is named after the op (its kind, api, says it is the submit).
  std::pair<std::uint64_t, std::uint64_t> submit(Command cmd, bool record_api_span, bool device_op) {
    Recorder& recorder = shared_.recorder;
    const bool recording = recorder.enabled();
    const Nanos api_start = now_ns();
    if (device_op) spin_for_ns(shared_.options.launch_overhead_ns);
    const int layer = cmd.op.layer;
    const bool api_span = recording && record_api_span;
    std::string api_name = api_span ? cmd.op.name : std::string();
    cmd.op.id = recorder.next_op_id();
    cmd.op.stream = index_;
    cmd.op.host_thread = recording ? recorder.thread_id() : 0;
    const std::uint64_t op_id = cmd.op.id;
    std::uint64_t seq = 0;
    {
      const std::lock_guard lock(mutex_);
      cmd.op.submit_ns = now_ns();
      seq = ++submitted_;
      cmd.seq = seq;
      queue_.push_back(std::move(cmd));
    }
    work_cv_.notify_one();
    if (api_span) {
      recorder.record_host_span(std::move(api_name), HostSpanKind::api, api_start, now_ns(), layer, op_id);
    }
    return {seq, op_id};
  }

  void wait_for(std::uint64_t seq, std::string span_name, int layer, std::uint64_t op_id) {
    const Nanos wait_start = now_ns();
    Nanos target_end = 0;
    {
      std::unique_lock lock(mutex_);
      done_cv_.wait(lock, [&] { return completed_ >= seq; });
      if (auto it = watched_ends_.find(seq); it != watched_ends_.end()) {
        target_end = it->second;
        watched_ends_.erase(it);
      }
    }
    // A real host notices the completion only after its wake-up latency (sim profiles model it).
    if (shared_.host_wakeup_ns > 0) wait_until_ns(target_end + shared_.host_wakeup_ns);
    if (shared_.recorder.enabled()) {
      shared_.recorder.record_host_span(std::move(span_name), HostSpanKind::wait, wait_start, now_ns(), layer,
                                        op_id);
    }
    rethrow_pending_error();
  }

  void worker_loop() {
    for (;;) {
      Command cmd;
      bool cancelled = false;
      {
        std::unique_lock lock(mutex_);
        work_cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;  // stopping and drained
        cmd = std::move(queue_.front());
        queue_.pop_front();
        cancelled = stopping_;
      }
      const std::uint64_t seq = cmd.seq;
      const bool host_waits = cmd.host_waits;
      const Nanos end = cancelled ? cancel(cmd) : execute(cmd);
      cmd = Command{};  // release captured buffers before signalling completion
      {
        const std::lock_guard lock(mutex_);
        completed_ = seq;
        if (host_waits) watched_ends_[seq] = end;
      }
      done_cv_.notify_all();
    }
  }

  // Shutting down with work pending: nothing runs, but events complete so no one hangs.
  Nanos cancel(Command& cmd) {
    if (cmd.kind == Command::Kind::record_event) cmd.event->complete(now_ns());
    return now_ns();
  }

  Nanos execute(Command& cmd) {
    const bool modelled = shared_.model.modelled;
    switch (cmd.kind) {
      case Command::Kind::record_event: {
        const Nanos at = modelled ? std::max(cmd.op.submit_ns, device_ready_ns_) : now_ns();
        cmd.event->complete(at);
        return at;
      }
      case Command::Kind::wait_event: {
        const Nanos completed_at = cmd.event->wait_completed();
        device_ready_ns_ = std::max(device_ready_ns_, completed_at);
        return now_ns();
      }
      case Command::Kind::device_op:
        break;
    }
    DeviceOp& op = cmd.op;
    if (modelled) {
      op.start_ns = std::max(op.submit_ns, device_ready_ns_);
      op.end_ns = op.start_ns + op_duration_ns(*shared_.model.profile, op.name, op.category, op.flops, op.bytes);
      run_payload(cmd);
      wait_until_ns(op.end_ns);
      // The thread may complete late (preempted, or the verify body outran the model). Later
      // ops start after the real completion, so lateness shifts the timeline of every preset
      // alike instead of only those that wait on the host; it is recorded per op.
      op.real_end_ns = now_ns();
      // The spin's own overshoot (tens of ns) is not lateness worth shifting the model for.
      device_ready_ns_ = op.real_end_ns - op.end_ns > kLatenessSlackNs ? op.real_end_ns : op.end_ns;
    } else {
      op.start_ns = std::max(now_ns(), op.submit_ns);
      run_payload(cmd);
      op.end_ns = std::max(now_ns(), op.start_ns);
      device_ready_ns_ = op.end_ns;
    }
    const Nanos end = op.end_ns;
    shared_.recorder.record(std::move(op));
    return end;
  }

  void run_payload(Command& cmd) {
    try {
      if (cmd.transfer) cmd.transfer();
      if (cmd.body) cmd.body(shared_.pool);
    } catch (...) {
      // The worker survives; the host sees the error at its next sync on this stream.
      const std::lock_guard lock(mutex_);
      if (!error_) error_ = std::current_exception();
    }
  }

  DeviceShared& shared_;
  const int index_;
  const std::string name_;

  mutable std::mutex mutex_;
  std::condition_variable work_cv_;
  std::condition_variable done_cv_;
  std::deque<Command> queue_;
  std::uint64_t submitted_ = 0;
  std::uint64_t completed_ = 0;
  std::unordered_map<std::uint64_t, Nanos> watched_ends_;
  std::exception_ptr error_;
  bool stopping_ = false;
  Nanos device_ready_ns_ = 0;  // device thread only: when the previous op ended
  std::thread thread_;         // last: starts after every member above is constructed
};

class QueueDevice final : public Device, private WorkProgress {
 public:
  QueueDevice(const DeviceOptions& options, DeviceInfo info, ExecutionModel model, unsigned pool_threads)
      : info_(std::move(info)),
        shared_(std::make_unique<DeviceShared>(options, std::move(model), pool_threads)) {
    info_.device_threads = shared_->pool.num_workers();
    shared_->recorder.set_enabled(options.record);
    AllocatorOptions allocator_options;
    allocator_options.mode = options.alloc_mode;
    allocator_options.progress = this;
    allocator_options.materialize = shared_->model.run_bodies;
    allocator_options.budget_bytes = info_.memory_budget_bytes;
    allocator_options.recorder = &shared_->recorder;
    allocator_ = make_allocator(allocator_options);
    streams_.push_back(std::make_unique<QueueStream>(*shared_, 0, "default"));
    default_stream_ = streams_.front().get();
  }

  ~QueueDevice() override {
    // Stop every stream first (pending work is dropped, events complete), then join them; only
    // then the allocator and the pool go.
    const std::vector<QueueStream*> streams = snapshot();
    for (QueueStream* stream : streams) stream->begin_shutdown();
    for (QueueStream* stream : streams) stream->join();
    allocator_.reset();
    const std::lock_guard lock(streams_mutex_);
    streams_.clear();
  }

  const DeviceInfo& info() const override { return info_; }
  Stream& default_stream() override { return *default_stream_; }

  Stream& create_stream(std::string name) override {
    const std::lock_guard lock(streams_mutex_);
    const int index = static_cast<int>(streams_.size());
    if (name.empty()) name = "stream " + std::to_string(index);
    streams_.push_back(std::make_unique<QueueStream>(*shared_, index, std::move(name)));
    return *streams_.back();
  }

  Allocator& allocator() override { return *allocator_; }
  timeline::Recorder& recorder() override { return shared_->recorder; }

  void synchronize() override {
    std::vector<QueueStream*> streams = snapshot();
    for (QueueStream* stream : streams) stream->synchronize("device_synchronize");
  }

  timeline::Timeline collect_timeline() override {
    std::vector<QueueStream*> streams = snapshot();
    std::vector<timeline::StreamTrack> tracks;
    for (QueueStream* stream : streams) {
      stream->drain_quietly();
      tracks.push_back(timeline::StreamTrack{stream->index(), stream->name()});
    }
    return shared_->recorder.collect(info_.kind, info_.modelled, std::move(tracks));
  }

 private:
  std::vector<QueueStream*> snapshot() const {
    const std::lock_guard lock(streams_mutex_);
    std::vector<QueueStream*> streams;
    for (const auto& stream : streams_) streams.push_back(stream.get());
    return streams;
  }

  std::vector<std::uint64_t> fence() const override {
    std::vector<std::uint64_t> fence;
    for (QueueStream* stream : snapshot()) fence.push_back(stream->submitted());
    return fence;
  }

  bool reached(const std::vector<std::uint64_t>& fence) const override {
    const std::vector<QueueStream*> streams = snapshot();
    for (std::size_t i = 0; i < fence.size() && i < streams.size(); ++i) {
      if (streams[i]->completed() < fence[i]) return false;
    }
    return true;
  }

  DeviceInfo info_;
  std::unique_ptr<DeviceShared> shared_;
  std::unique_ptr<Allocator> allocator_;
  mutable std::mutex streams_mutex_;
  std::vector<std::unique_ptr<QueueStream>> streams_;
  QueueStream* default_stream_ = nullptr;
};

}  // namespace

std::unique_ptr<Device> make_queue_device(const DeviceOptions& options, DeviceInfo info, ExecutionModel model) {
  const unsigned pool_threads = model.run_bodies ? options.device_threads : 1;
  return std::make_unique<QueueDevice>(options, std::move(info), std::move(model), pool_threads);
}

}  // namespace encbench::device
