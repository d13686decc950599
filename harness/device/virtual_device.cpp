#include "harness/device/virtual_device.hpp"

#include <algorithm>
#include <cstring>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "harness/core/error.hpp"
#include "harness/core/instrument.hpp"
#include "harness/device/allocator.hpp"
#include "harness/timeline/event_rules.hpp"
#include "kernels/thread_pool.hpp"

namespace encbench::device {

using timeline::DeviceOp;
using timeline::HostSpanKind;
using timeline::OpCategory;
namespace rules = timeline::rules;  // the discrete-event rules trace replay shares

namespace {

// Virtual host time: the value at the last checkpoint plus what `cpu_clock` (the owning thread's
// CPU time when host time is measured; a constant otherwise) has advanced since. A checkpoint is
// taken on entry to and exit from every device call, so the simulator's own work between the two
// is not host time.
class VirtualHostClock {
 public:
  explicit VirtualHostClock(std::function<Nanos()> cpu_clock)
      : cpu_clock_(std::move(cpu_clock)),
        owner_(std::this_thread::get_id()),
        cpu_mark_(cpu_clock_()) {}

  Nanos now() const {
    const std::lock_guard lock(mutex_);
    return host_ns_ + cpu_since_mark_locked();
  }
  // Entry to a device call: host time catches up with the thread's CPU time.
  Nanos enter() {
    const std::lock_guard lock(mutex_);
    host_ns_ += cpu_since_mark_locked();
    owner_ = std::this_thread::get_id();
    cpu_mark_ = cpu_clock_();
    return host_ns_;
  }
  // Exit from a device call: what the simulator spent since enter() is not host time.
  void leave() {
    const std::lock_guard lock(mutex_);
    owner_ = std::this_thread::get_id();
    cpu_mark_ = cpu_clock_();
  }
  Nanos host() const {
    const std::lock_guard lock(mutex_);
    return host_ns_;
  }
  void add(Nanos duration) {
    const std::lock_guard lock(mutex_);
    host_ns_ += std::max<Nanos>(duration, 0);
  }
  void advance_to(Nanos at) {
    const std::lock_guard lock(mutex_);
    host_ns_ = std::max(host_ns_, at);
  }

 private:
  Nanos cpu_since_mark_locked() const {
    // Another thread's CPU clock says nothing about this one's: it starts from its next call.
    if (std::this_thread::get_id() != owner_) return 0;
    return std::max<Nanos>(cpu_clock_() - cpu_mark_, 0);
  }

  std::function<Nanos()> cpu_clock_;
  mutable std::mutex mutex_;
  std::thread::id owner_;
  Nanos cpu_mark_ = 0;
  // Starts at 1 ms, not 0: 0 means "not yet" for event completion times.
  Nanos host_ns_ = 1'000'000;
};

// Enter/leave a device call around a scope.
// The simulator's own bookkeeping (clock, queue model, recorder) is not the host code under
// measurement: encbench-instr's instruction counts exclude it (pause_ is declared first, so it
// pauses before enter() and resumes after leave()).
class DeviceCall {
 public:
  explicit DeviceCall(VirtualHostClock& clock) : clock_(clock), entered_at_(clock.enter()) {}
  ~DeviceCall() { clock_.leave(); }
  DeviceCall(const DeviceCall&) = delete;
  DeviceCall& operator=(const DeviceCall&) = delete;
  Nanos entered_at() const { return entered_at_; }

 private:
  instrument::Paused pause_;
  VirtualHostClock& clock_;
  Nanos entered_at_;
};

struct VirtualShared {
  DeviceOptions options;
  SimProfile profile;
  timeline::Recorder recorder;
  VirtualHostClock clock;
  std::unique_ptr<kernels::ThreadPool> pool;  // verify only: kernel bodies
  std::mutex call_mutex;                   // serialises device calls
  std::exception_ptr error;                // first failed body; rethrown at the next host wait

  // The per-class host costs charged: the host model's (HostTime::model), else zero (measured:
  // the CPU time holds the host work; none: launch overhead only).
  HostModel host_costs;

  VirtualShared(const DeviceOptions& opts, SimProfile p)
      : options(opts), profile(std::move(p)), clock(host_clock_of(opts)), host_costs(host_costs_of(opts)) {
    if (options.verify) pool = std::make_unique<kernels::ThreadPool>(options.device_threads);
  }
  static std::function<Nanos()> host_clock_of(const DeviceOptions& opts) {
    if (opts.host_time != HostTime::measured) return [] { return Nanos{0}; };  // no machine clock read
    return opts.host_cpu_clock ? opts.host_cpu_clock : std::function<Nanos()>(thread_cpu_ns);
  }
  static HostModel host_costs_of(const DeviceOptions& opts) {
    if (opts.host_time == HostTime::model) {
      require(opts.host_model != nullptr, "virtual clock: host time 'model' needs a host model");
      return *opts.host_model;
    }
    return zero_host_model(std::string(to_string(opts.host_time)), "host time " + std::string(to_string(opts.host_time)));
  }
  Nanos cost(HostOpClass op_class) const { return host_costs.cost(op_class); }
  bool materialized() const { return options.verify; }
  Nanos wakeup() const { return static_cast<Nanos>(profile.host_wakeup_ns.value); }

  void run_payload(const std::function<void()>& payload) {
    try {
      payload();
    } catch (...) {
      if (!error) error = std::current_exception();
    }
  }
  void rethrow_pending_error() {
    if (error) std::rethrow_exception(std::exchange(error, nullptr));
  }
};

class VirtualEvent final : public Event {
 public:
  VirtualEvent(VirtualShared& shared, Nanos completes_at) : shared_(shared), completes_at_(completes_at) {}
  bool query() const override { return completes_at_ <= shared_.clock.now(); }
  void synchronize() override {
    const std::lock_guard lock(shared_.call_mutex);
    const DeviceCall call(shared_.clock);
    shared_.clock.add(shared_.cost(HostOpClass::stream_sync));
    const Nanos wait_start = shared_.clock.host();
    shared_.clock.advance_to(rules::host_after_wait_ns(wait_start, completes_at_, shared_.wakeup()));
    if (shared_.recorder.enabled()) {
      shared_.recorder.record_host_span("event_synchronize", HostSpanKind::wait, wait_start, shared_.clock.host());
    }
  }
  Nanos completed_ns() const override { return query() ? completes_at_ : 0; }
  Nanos completes_at() const { return completes_at_; }

 private:
  VirtualShared& shared_;
  Nanos completes_at_;
};

class VirtualStream final : public Stream {
 public:
  VirtualStream(VirtualShared& shared, int index, std::string name)
      : shared_(shared), index_(index), name_(std::move(name)) {}

  int index() const override { return index_; }
  const std::string& name() const override { return name_; }

  void launch(KernelLaunch launch) override {
    const std::lock_guard lock(shared_.call_mutex);
    const DeviceCall call(shared_.clock);
    DeviceOp op = make_op(std::move(launch.name), OpCategory::kernel, launch.layer);
    op.flops = launch.cost.flops;
    op.bytes = launch.cost.bytes;
    if (launch.body && shared_.pool) shared_.run_payload([&] { launch.body(*shared_.pool); });
    submit(std::move(op), call.entered_at(), HostOpClass::kernel_launch);
  }

  void copy_h2d(const Buffer& dst, std::size_t dst_offset, const void* src, std::size_t bytes,
                std::string_view label, int layer) override {
    check_buffer_range(dst, dst_offset, bytes, "copy_h2d", label);
    // Without tensor memory the bytes are never read: a null source is fine there.
    require(src != nullptr || bytes == 0 || !shared_.materialized(),
            "copy_h2d '" + std::string(label) + "': null source");
    const std::lock_guard lock(shared_.call_mutex);
    const DeviceCall call(shared_.clock);
    DeviceOp op = make_op(std::string(label), OpCategory::memcpy_h2d, layer);
    op.bytes = static_cast<double>(bytes);
    if (shared_.materialized() && bytes > 0) std::memcpy(static_cast<std::byte*>(dst.data()) + dst_offset, src, bytes);
    submit(std::move(op), call.entered_at(), HostOpClass::h2d_copy);
  }

  void copy_d2h(void* dst, const Buffer& src, std::size_t src_offset, std::size_t bytes,
                std::string_view label, int layer) override {
    check_buffer_range(src, src_offset, bytes, "copy_d2h", label);
    require(dst != nullptr || bytes == 0, "copy_d2h '" + std::string(label) + "': null destination");
    const std::lock_guard lock(shared_.call_mutex);
    const DeviceCall call(shared_.clock);
    DeviceOp op = make_op(std::string(label), OpCategory::memcpy_d2h, layer);
    op.bytes = static_cast<double>(bytes);
    if (bytes > 0) {
      if (shared_.materialized()) std::memcpy(dst, static_cast<const std::byte*>(src.data()) + src_offset, bytes);
      else std::memset(dst, 0, bytes);  // no device memory behind the buffer: deterministic zeros
    }
    const std::uint64_t op_id = op.id;
    const Nanos end = submit(std::move(op), call.entered_at(), HostOpClass::d2h_copy);
    host_wait(std::string(label), layer, op_id, end);
  }

  void memset(const Buffer& dst, int value, std::size_t bytes, std::string_view label, int layer) override {
    check_buffer_range(dst, 0, bytes, "memset", label);
    const std::lock_guard lock(shared_.call_mutex);
    const DeviceCall call(shared_.clock);
    DeviceOp op = make_op(std::string(label), OpCategory::memset, layer);
    op.bytes = static_cast<double>(bytes);
    if (shared_.materialized() && bytes > 0) std::memset(dst.data(), value, bytes);
    submit(std::move(op), call.entered_at(), HostOpClass::memset);
  }

  void synchronize(std::string_view reason) override {
    const std::lock_guard lock(shared_.call_mutex);
    const DeviceCall call(shared_.clock);
    synchronize_locked(reason);
  }

  // Caller holds the call lock and is inside a DeviceCall.
  void synchronize_locked(std::string_view reason) {
    DeviceOp op = make_op(std::string(reason), OpCategory::sync, -1);
    const std::uint64_t op_id = op.id;
    // No api span: the wait span that follows is the whole story of a synchronize (it starts
    // after the host part of the call).
    shared_.clock.add(shared_.cost(HostOpClass::stream_sync));
    const Nanos end = submit(std::move(op), shared_.clock.host(), std::nullopt);
    host_wait(std::string(reason), -1, op_id, end);
  }

  std::shared_ptr<Event> record_event() override {
    const std::lock_guard lock(shared_.call_mutex);
    const DeviceCall call(shared_.clock);
    shared_.clock.add(shared_.cost(HostOpClass::event_record));
    const Nanos at = rules::event_completes_ns(shared_.clock.host(), ready_ns_);
    record_api_span("record_event", call.entered_at(), -1, 0);
    return std::make_shared<VirtualEvent>(shared_, at);
  }

  void wait_event(const std::shared_ptr<Event>& event) override {
    auto virtual_event = std::dynamic_pointer_cast<VirtualEvent>(event);
    require(virtual_event != nullptr, "wait_event: the event does not come from this device");
    const std::lock_guard lock(shared_.call_mutex);
    const DeviceCall call(shared_.clock);
    shared_.clock.add(shared_.cost(HostOpClass::event_wait));
    ready_ns_ = std::max(ready_ns_, virtual_event->completes_at());
    record_api_span("wait_event", call.entered_at(), -1, 0);
  }

 private:
  DeviceOp make_op(std::string name, OpCategory category, int layer) {
    DeviceOp op;
    op.id = shared_.recorder.next_op_id();
    op.name = std::move(name);
    op.category = category;
    op.layer = layer;
    op.stream = index_;
    return op;
  }

  // Places the op on the virtual timeline: the host spends the launch overhead and the host
  // model's cost of the call's class (device ops only: a sync marker has neither), then the op
  // starts when both host and stream are ready. Returns its end.
  Nanos submit(DeviceOp op, Nanos api_start, std::optional<HostOpClass> call_class) {
    const bool device_op = call_class.has_value();
    if (device_op) shared_.clock.add(shared_.options.launch_overhead_ns + shared_.cost(*call_class));
    const Nanos submit_at = shared_.clock.host();
    op.submit_ns = submit_at;
    op.start_ns = rules::op_start_ns(submit_at, ready_ns_);
    op.end_ns = op.start_ns + op_duration_ns(shared_.profile, op.name, op.category, op.flops, op.bytes);
    ready_ns_ = op.end_ns;
    const Nanos end = op.end_ns;
    if (shared_.recorder.enabled()) {
      op.host_thread = shared_.recorder.thread_id();
      if (device_op) record_api_span(op.name, api_start, op.layer, op.id);
      shared_.recorder.record(std::move(op));
    }
    return end;
  }

  void record_api_span(const std::string& name, Nanos api_start, int layer, std::uint64_t op_id) {
    if (!shared_.recorder.enabled()) return;
    shared_.recorder.record_host_span(name, HostSpanKind::api, api_start, shared_.clock.host(), layer, op_id);
  }

  // The host blocks until `end`; a real host notices completion after its wake-up latency.
  void host_wait(std::string span_name, int layer, std::uint64_t op_id, Nanos end) {
    const Nanos wait_start = shared_.clock.host();
    shared_.clock.advance_to(rules::host_after_wait_ns(wait_start, end, shared_.wakeup()));
    if (shared_.recorder.enabled()) {
      shared_.recorder.record_host_span(std::move(span_name), HostSpanKind::wait, wait_start, shared_.clock.host(),
                                        layer, op_id);
    }
    shared_.rethrow_pending_error();
  }

  VirtualShared& shared_;
  const int index_;
  const std::string name_;
  Nanos ready_ns_ = 0;  // when the last op on this stream ends
};

class VirtualSimDevice final : public Device {
 public:
  VirtualSimDevice(const DeviceOptions& options, DeviceInfo info, SimProfile profile)
      : info_(std::move(info)), shared_(std::make_unique<VirtualShared>(options, std::move(profile))) {
    info_.device_threads = shared_->pool ? shared_->pool->num_workers() : 0;
    info_.host_time = std::string(to_string(options.host_time));
    if (options.host_time == HostTime::model) info_.host_model = shared_->host_costs.name;
    shared_->recorder.set_enabled(options.record);
    VirtualShared* shared = shared_.get();
    shared_->recorder.set_clock([shared] { return shared->clock.now(); });
    AllocatorOptions allocator_options;
    allocator_options.mode = options.alloc_mode;
    allocator_options.progress = nullptr;  // every op is done in program order: releases are immediate
    allocator_options.materialize = shared_->materialized();
    allocator_options.budget_bytes = info_.memory_budget_bytes;
    allocator_options.recorder = &shared_->recorder;
    allocator_ = make_allocator(allocator_options);
    streams_.push_back(std::make_unique<VirtualStream>(*shared_, 0, "default"));
  }

  const DeviceInfo& info() const override { return info_; }
  Stream& default_stream() override { return *streams_.front(); }
  Stream& create_stream(std::string name) override {
    const std::lock_guard lock(shared_->call_mutex);
    const int index = static_cast<int>(streams_.size());
    if (name.empty()) name = "stream " + std::to_string(index);
    streams_.push_back(std::make_unique<VirtualStream>(*shared_, index, std::move(name)));
    return *streams_.back();
  }
  Allocator& allocator() override { return *allocator_; }
  timeline::Recorder& recorder() override { return shared_->recorder; }
  // Not a device call: no checkpoint of the CPU clock (measured host time keeps counting the
  // step's CPU time, and adds 0 here); the clock locks itself.
  void host_work(HostOpClass op_class) override { shared_->clock.add(shared_->cost(op_class)); }
  const HostModel* host_model() const override {
    return shared_->options.host_time == HostTime::model ? &shared_->host_costs : nullptr;
  }
  void synchronize() override {
    const std::lock_guard lock(shared_->call_mutex);
    const DeviceCall call(shared_->clock);
    for (auto& stream : streams_) stream->synchronize_locked("device_synchronize");
  }
  timeline::Timeline collect_timeline() override {
    std::vector<timeline::StreamTrack> tracks;
    for (const auto& stream : streams_) tracks.push_back(timeline::StreamTrack{stream->index(), stream->name()});
    return shared_->recorder.collect(info_.kind, true, std::move(tracks));
  }

 private:
  DeviceInfo info_;
  std::unique_ptr<VirtualShared> shared_;
  std::unique_ptr<Allocator> allocator_;
  std::vector<std::unique_ptr<VirtualStream>> streams_;
};

}  // namespace

std::unique_ptr<Device> make_virtual_sim_device(const DeviceOptions& options, DeviceInfo info, SimProfile profile) {
  return std::make_unique<VirtualSimDevice>(options, std::move(info), std::move(profile));
}

}  // namespace encbench::device
