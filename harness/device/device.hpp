#pragma once
// The device model the encoder path runs on and whose timeline we analyse.
//
// A Device owns streams (FIFO queues executed asynchronously to the host), an allocator and a
// Recorder. Every op submitted to a stream is recorded with its host submit time and its device
// start/end. A device-to-host copy first waits for everything queued before it on the stream,
// as on real accelerators: that wait is the per-layer stall the seeds fought.
//
// Backends: "cpu" (device worker threads run the kernels for real), "sim:<profile>" (durations
// from a roofline of each op's FLOPs/bytes; results and tensor memory only with verify) and,
// where built, "cuda[:N]". The sim backend runs on one of two clocks (ClockMode):
//   virtual  a discrete-event model on the host thread: host time advances by the host model's
//            cost of each device call and host-side step (host_model.hpp; or, when asked, the
//            thread's CPU time) plus the modelled launch overhead, device ops last their roofline
//            duration, a sync moves the host to the op's end + the modelled wake-up. Nothing
//            sleeps; with the host model no machine can move the result. Default of encode/ab/micro.
//   real     device threads wait out each op's modelled end in real time, so a live server sees
//            real latencies; ops record when they really completed (lateness).
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

#include "harness/core/clock.hpp"
#include "harness/device/host_model.hpp"
#include "harness/timeline/recorder.hpp"
#include "kernels/worker_pool.hpp"

namespace encbench::device {

using timeline::OpCategory;

// What an op costs, for the sim backend's roofline and for trace annotations.
class MeasuredOpTimes;  // measured_op_times.hpp

struct OpCost {
  double flops = 0;
  double bytes = 0;  // bytes read + written in device memory
};

struct DeviceInfo {
  std::string kind;               // "cpu", "sim:ascend-910b", "cuda:0" (the spec, normalised)
  std::string name;               // human-readable, e.g. "CPU, 2 device threads"
  bool modelled = false;          // op durations are modelled, not measured
  bool computes_results = true;   // false for sim without verify: buffers hold no real results
  bool host_visible_memory = true;// Buffer::data() may be dereferenced by the host
  unsigned device_threads = 0;
  double peak_flops_per_s = 0;    // 0 when unknown
  double mem_bytes_per_s = 0;     // 0 when unknown
  std::string profile_source;     // sim: where the profile's numbers come from
  std::string clock = "real";     // "real" | "virtual" (ClockMode): which clock timelines use
  // Virtual clock: where host time comes from, "model" | "measured" | "none" (HostTime); the
  // host model's name with "model". Empty on the real clock.
  std::string host_time;
  std::string host_model;
  // Tensor memory exists (Buffer::data() points at real bytes). False for sim without verify:
  // buffers are a device address and a size, and copies/memsets only take modelled time.
  bool materialized = true;
  std::uint64_t memory_budget_bytes = 0;  // 0: unlimited
  // `trace:FILE` devices: the measured op times and how many ops matched or fell back (read the
  // counts after the run). Null otherwise.
  std::shared_ptr<const MeasuredOpTimes> measured_op_times;
};

enum class ClockMode { real, virtual_time };
std::string_view to_string(ClockMode mode);        // "real" | "virtual"
ClockMode parse_clock_mode(std::string_view text); // throws InvalidInput naming the choices

enum class AllocMode { fresh, caching };
std::string_view to_string(AllocMode mode);  // "fresh" | "caching"
AllocMode parse_alloc_mode(std::string_view text);  // throws InvalidInput listing the modes

struct AllocatorStats {
  std::uint64_t requests = 0;          // allocate() calls
  std::uint64_t bytes_requested = 0;   // sum of the sizes asked for by allocate()
  std::uint64_t system_allocations = 0;// requests that reached the system allocator
  std::uint64_t cache_hits = 0;        // requests served from the cache
  std::uint64_t releases = 0;
  std::uint64_t bytes_in_use = 0;
  std::uint64_t peak_bytes_in_use = 0;
  std::uint64_t bytes_cached = 0;      // held by the cache, not in use
  // Releases that arrived while earlier device work was still queued: the block is parked until
  // that work completes (stream-ordered release), then freed (fresh) or cached (caching).
  std::uint64_t deferred_releases = 0;
  std::uint64_t bytes_pending_release = 0;
  // What the allocator holds from the system (in use rounded to its size class + cached +
  // pending): the figure a device's memory budget bounds, like torch's memory_reserved().
  std::uint64_t bytes_reserved = 0;
  std::uint64_t peak_bytes_reserved = 0;
  std::uint64_t budget_bytes = 0;       // 0: unlimited
  std::uint64_t cache_flushes = 0;      // times a request freed the cache to fit the budget
  std::uint64_t out_of_memory = 0;      // requests refused (OutOfDeviceMemory)
  std::uint64_t bytes_trimmed = 0;      // cached bytes returned by trim()
};

// A request that does not fit the device's memory budget even after the allocator returned its
// cached blocks and tried again (what PyTorch's caching allocator does before raising OOM).
class OutOfDeviceMemory : public std::runtime_error {
 public:
  OutOfDeviceMemory(std::size_t requested_bytes, std::uint64_t reserved_bytes, std::uint64_t budget_bytes);
  std::size_t requested;
  std::uint64_t reserved;
  std::uint64_t budget;
};

class Allocator;

// Move-only handle to device memory; returns it to its allocator when destroyed.
class Buffer {
 public:
  Buffer() = default;
  Buffer(Buffer&& other) noexcept;
  Buffer& operator=(Buffer&& other) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer();

  void* data() const { return data_; }
  std::size_t bytes() const { return bytes_; }
  explicit operator bool() const { return data_ != nullptr; }
  template <class T>
  T* as() const { return static_cast<T*>(data_); }
  template <class T>
  std::size_t count() const { return bytes_ / sizeof(T); }

 private:
  friend class Allocator;
  Buffer(Allocator* owner, void* data, std::size_t bytes) : owner_(owner), data_(data), bytes_(bytes) {}
  void reset();
  Allocator* owner_ = nullptr;
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

class Allocator {
 public:
  virtual ~Allocator() = default;
  // Throws InvalidInput for a zero-byte or absurd request; std::bad_alloc when out of memory.
  virtual Buffer allocate(std::size_t bytes) = 0;
  virtual AllocatorStats stats() const = 0;
  virtual AllocMode mode() const = 0;
  // Returns cached (free, not in use) blocks to the system until at most `keep_bytes` stay
  // cached; returns the bytes released. A fresh allocator caches nothing and returns 0.
  virtual std::size_t trim(std::size_t keep_bytes) = 0;
  // Starts a new peak window: peak_bytes_in_use / peak_bytes_reserved restart from the current
  // values (a forward's peak, not the process's).
  virtual void reset_peaks() = 0;

 protected:
  friend class Buffer;
  virtual void release(void* data, std::size_t bytes) noexcept = 0;
  Buffer wrap(void* data, std::size_t bytes) { return Buffer(this, data, bytes); }
};

// A kernel submitted to a stream. `body` does the real computation on the device's worker pool;
// a device that does not compute results (sim without verify) skips it.
// `native_body` (optional) enqueues the op's work on a native accelerator stream: the CUDA
// backend calls it at submit with the stream's cudaStream_t as `void*` (e.g. a call into
// kernels/cuda/cuda_kernels.hpp); it must only enqueue, never synchronize. The cpu and sim
// backends ignore it, and the CUDA backend ignores `body` (a CPU lambda cannot run there).
struct KernelLaunch {
  std::string name;
  OpCost cost;
  int layer = -1;
  std::function<void(kernels::WorkerPool&)> body;
  std::function<void(void* native_stream)> native_body;
};

// Completion marker recorded on a stream.
class Event {
 public:
  virtual ~Event() = default;
  virtual bool query() const = 0;         // completed?
  virtual void synchronize() = 0;         // host blocks until completed (recorded as a wait span)
  virtual Nanos completed_ns() const = 0; // device time it completed, 0 if not yet
};

class Stream {
 public:
  virtual ~Stream() = default;
  virtual int index() const = 0;
  virtual const std::string& name() const = 0;

  virtual void launch(KernelLaunch op) = 0;  // asynchronous
  // Asynchronous; `src` is staged at submit so the caller may reuse it at once.
  virtual void copy_h2d(const Buffer& dst, std::size_t dst_offset, const void* src,
                        std::size_t bytes, std::string_view label, int layer = -1) = 0;
  // Blocks the host until all earlier work on this stream and the copy itself are done.
  virtual void copy_d2h(void* dst, const Buffer& src, std::size_t src_offset, std::size_t bytes,
                        std::string_view label, int layer = -1) = 0;
  virtual void memset(const Buffer& dst, int value, std::size_t bytes, std::string_view label,
                      int layer = -1) = 0;
  // Host blocks until every op queued so far has finished (recorded as a wait span and a
  // `sync` device marker).
  virtual void synchronize(std::string_view reason = "synchronize") = 0;
  virtual std::shared_ptr<Event> record_event() = 0;
  // Later ops on this stream wait until `event` completes (device-side; the host does not block).
  virtual void wait_event(const std::shared_ptr<Event>& event) = 0;
};

struct DeviceOptions {
  std::string spec = "cpu";           // "cpu" | "sim:<profile or path.json>" | "cuda[:N]"
  unsigned device_threads = 0;        // kernel pool size; 0 = all cores
  AllocMode alloc_mode = AllocMode::caching;
  bool verify = false;                // sim: also compute real results on the CPU
  bool record = true;                 // record the timeline
  Nanos launch_overhead_ns = 0;       // host work added to every op submit (eager dispatch model)
  std::filesystem::path profiles_dir; // where sim profiles live (default: scenarios/devices)
  // trace: devices: the kernel-name map (op_name_map.hpp). Empty: <profiles_dir>/op-maps/
  // op-name-map.json when it exists, else no map (kernels the trace names differently fall back).
  std::filesystem::path op_map;
  ClockMode clock = ClockMode::real;  // virtual_time: sim only (InvalidInput elsewhere)
  // Bound on what the allocator holds (bytes_reserved). 0: the sim profile's memory size, or
  // unlimited on cpu.
  std::uint64_t memory_budget_bytes = 0;
  // Virtual clock only: where host time comes from (host_model.hpp). model: `host_model`'s cost
  // per device call and per host_work() step, no CPU clock read; measured: the thread's CPU time
  // between device calls (host_cpu_clock); none: launch_overhead_ns only.
  HostTime host_time = HostTime::model;
  // The host model of HostTime::model; null: kDefaultHostModel from <profiles_dir>/host-models.
  std::shared_ptr<const HostModel> host_model;
  // HostTime::measured only: the host CPU clock (default thread_cpu_ns). Tests pass a scripted
  // one to make host time exact.
  std::function<Nanos()> host_cpu_clock;
};

class Device {
 public:
  virtual ~Device() = default;
  virtual const DeviceInfo& info() const = 0;
  virtual Stream& default_stream() = 0;
  virtual Stream& create_stream(std::string name) = 0;  // owned by the device
  virtual Allocator& allocator() = 0;
  virtual timeline::Recorder& recorder() = 0;
  virtual void synchronize() = 0;  // every stream
  // The host clock this device's timeline uses (virtual time on a virtual-clock sim device).
  Nanos host_now_ns() { return recorder().now(); }
  // Host-side work of the caller (not a device call) of this class has just run: a virtual clock
  // with a host model advances host time by the class's cost; every other device does nothing
  // (the work took its real time, or the measured CPU time already holds it).
  virtual void host_work(HostOpClass op_class) { (void)op_class; }
  // The host model a virtual clock charges (null elsewhere, and for measured / none host time).
  virtual const HostModel* host_model() const { return nullptr; }
  // Collects the recording so far into a Timeline (device kind, modelled flag, stream tracks).
  virtual timeline::Timeline collect_timeline() = 0;
};

// InvalidInput unless [offset, offset + bytes) lies inside a non-empty `buffer`; `what` is the
// stream call ("copy_h2d") and `label` the op's name, both named in the message.
void check_buffer_range(const Buffer& buffer, std::size_t offset, std::size_t bytes, std::string_view what,
                        std::string_view label);

// A parsed DeviceOptions::spec.
struct DeviceSpec {
  enum class Backend { cpu, sim, cuda };
  Backend backend = Backend::cpu;
  std::string profile;  // sim: profile name or path to a profile JSON (trace: empty = the trace's own)
  std::string trace_file;  // trace:FILE[@PROFILE]: op times from this measured trace, sim otherwise
  int cuda_index = 0;   // cuda: device ordinal
};
// Throws InvalidInput for anything but "cpu", "sim:<profile>", "trace:<file>[@<profile>]", "cuda"
// or "cuda:<N>".
DeviceSpec parse_device_spec(std::string_view spec);

// The sim profile a spec runs on: "ascend-910b" for sim:ascend-910b, the named or the trace's
// own profile for trace:FILE[@PROFILE] (the latter reads the trace), "" for cpu and cuda.
std::string sim_profile_name(std::string_view spec);

// Creates a device from its spec. Throws InvalidInput for an unknown spec or profile, with the
// list of known ones.
std::unique_ptr<Device> make_device(const DeviceOptions& options);

}  // namespace encbench::device
