// The CUDA Device/Stream/Event implementation (see cuda_device.hpp for the semantics).
#include "harness/device_cuda/cuda_device.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "harness/core/clock.hpp"
#include "harness/core/error.hpp"
#include "harness/device_cuda/cuda_memory.hpp"
#include "harness/device_cuda/cupti_session.hpp"
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/cuda_kernels.hpp"

namespace encbench::device {
namespace {

using timeline::DeviceOp;
using timeline::HostSpanKind;
using timeline::ScopedHostSpan;

// What one captured graph node was, so a replay's activity records get the op's name and layer.
struct NodeTemplate {
  std::string name;
  int layer = -1;
  OpCategory category = OpCategory::kernel;
  OpCost cost;
};
using NodeTemplates = std::vector<NodeTemplate>;

// An op submitted while recording, waiting for its CUPTI records.
struct PendingOp {
  DeviceOp op;
  std::shared_ptr<const NodeTemplates> graph_nodes;  // set for graph replays
};

class CudaDeviceImpl;

class CudaEvent final : public Event {
 public:
  CudaEvent(int ordinal, timeline::Recorder* recorder, cudaStream_t stream)
      : ordinal_(ordinal), recorder_(recorder) {
    ENCBENCH_CUDA_CHECK(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming));
    ENCBENCH_CUDA_CHECK(cudaEventRecord(event_, stream));
  }
  ~CudaEvent() override { cudaEventDestroy(event_); }
  cudaEvent_t native() const { return event_; }

  bool query() const override {
    if (completed_ns_ != 0) return true;
    cudaSetDevice(ordinal_);
    const cudaError_t status = cudaEventQuery(event_);
    if (status == cudaSuccess) {
      completed_ns_ = now_ns();
      return true;
    }
    (void)cudaGetLastError();  // cudaErrorNotReady
    return false;
  }
  void synchronize() override {
    if (completed_ns_ != 0) return;
    ScopedHostSpan span(recorder_, "event_synchronize", HostSpanKind::wait);
    cudaSetDevice(ordinal_);
    ENCBENCH_CUDA_CHECK(cudaEventSynchronize(event_));
    completed_ns_ = now_ns();
  }
  // The host time the completion was first observed (query/synchronize): an upper bound of the
  // device completion; the CUPTI timeline has the exact end of the ops before the event.
  Nanos completed_ns() const override {
    query();
    return completed_ns_;
  }

 private:
  int ordinal_;
  timeline::Recorder* recorder_;
  cudaEvent_t event_ = nullptr;
  mutable Nanos completed_ns_ = 0;
};

class CudaStream;

class CudaGraph final : public CapturedGraph {
 public:
  CudaGraph(CudaStream& stream, cudaGraph_t graph, NodeTemplates nodes, std::size_t ops);
  ~CudaGraph() override {
    if (exec_) cudaGraphExecDestroy(exec_);
    if (graph_) cudaGraphDestroy(graph_);
  }
  void replay(std::string_view label) override;
  std::size_t node_count() const override { return nodes_->size(); }
  std::size_t captured_ops() const override { return ops_; }

 private:
  CudaStream& stream_;
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
  std::shared_ptr<const NodeTemplates> nodes_;
  std::size_t ops_ = 0;
};

class CudaDeviceImpl final : public Device {
 public:
  CudaDeviceImpl(const DeviceOptions& options, int ordinal);
  ~CudaDeviceImpl() override;

  const DeviceInfo& info() const override { return info_; }
  Stream& default_stream() override;
  Stream& create_stream(std::string name) override;
  Allocator& allocator() override { return *allocator_; }
  timeline::Recorder& recorder() override { return recorder_; }
  void synchronize() override;
  timeline::Timeline collect_timeline() override;

  int ordinal() const { return ordinal_; }
  bool recording() const { return cupti_ != nullptr && recorder_.enabled(); }
  cupti::Session* cupti() const { return cupti_.get(); }
  cuda_backend::PinnedPool& pinned() { return pinned_; }
  void add_pending(PendingOp op) {
    std::lock_guard lock(pending_mutex_);
    pending_.push_back(std::move(op));
  }

 private:
  DeviceOptions options_;
  int ordinal_;
  DeviceInfo info_;
  timeline::Recorder recorder_;
  std::shared_ptr<cupti::Session> cupti_;
  cuda_backend::PinnedPool pinned_;
  std::unique_ptr<cuda_backend::CudaAllocator> allocator_;
  std::mutex pending_mutex_;
  std::vector<PendingOp> pending_;
  std::mutex streams_mutex_;
  std::vector<std::unique_ptr<CudaStream>> streams_;  // destroyed first
};

class CudaStream final : public Stream, public GraphStream {
 public:
  CudaStream(CudaDeviceImpl& device, int index, std::string name)
      : device_(device), index_(index), name_(std::move(name)) {
    cudaSetDevice(device_.ordinal());
    // Non-blocking: never serialised with the legacy default stream, and capturable.
    ENCBENCH_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  }
  ~CudaStream() override {
    cudaStreamSynchronize(stream_);
    cudaStreamDestroy(stream_);
  }
  cudaStream_t native() const { return stream_; }

  int index() const override { return index_; }
  const std::string& name() const override { return name_; }

  void launch(KernelLaunch op) override {
    require(static_cast<bool>(op.native_body),
            "kernel '" + op.name + "' has no native_body: the cuda device runs only native kernels "
            "(KernelLaunch::native_body); CPU bodies run on --device cpu");
    if (capturing_) {
      capture_op(op.name, op.layer, OpCategory::kernel, op.cost, [&] { op.native_body(stream_); });
      return;
    }
    submit(op.name, OpCategory::kernel, op.layer, op.cost, nullptr, [&] { op.native_body(stream_); });
  }

  void copy_h2d(const Buffer& dst, std::size_t dst_offset, const void* src, std::size_t bytes,
                std::string_view label, int layer) override {
    require(!capturing_, "copy_h2d during a graph capture: write the graph's input buffers before replay");
    check_range(dst, dst_offset, bytes, "copy_h2d");
    require(src != nullptr || bytes == 0, "copy_h2d: null source");
    if (bytes == 0) return;
    const OpCost cost{0, static_cast<double>(bytes)};
    submit(std::string(label), OpCategory::memcpy_h2d, layer, cost, nullptr, [&] {
      cuda_backend::PinnedPool::Block* staging = device_.pinned().acquire(bytes);
      std::memcpy(staging->data, src, bytes);  // the caller may reuse src at once
      ENCBENCH_CUDA_CHECK(cudaMemcpyAsync(static_cast<char*>(dst.data()) + dst_offset, staging->data,
                                          bytes, cudaMemcpyHostToDevice, stream_));
      device_.pinned().release_after(staging, stream_);
    });
  }

  void copy_d2h(void* dst, const Buffer& src, std::size_t src_offset, std::size_t bytes,
                std::string_view label, int layer) override {
    require(!capturing_, "copy_d2h during a graph capture: a device-to-host read cannot be captured");
    check_range(src, src_offset, bytes, "copy_d2h");
    require(dst != nullptr || bytes == 0, "copy_d2h: null destination");
    if (bytes == 0) return;
    const OpCost cost{0, static_cast<double>(bytes)};
    cuda_backend::PinnedPool::Block* staging = device_.pinned().acquire(bytes);
    const std::uint64_t id = submit(std::string(label), OpCategory::memcpy_d2h, layer, cost, nullptr, [&] {
      ENCBENCH_CUDA_CHECK(cudaMemcpyAsync(staging->data, static_cast<const char*>(src.data()) + src_offset,
                                          bytes, cudaMemcpyDeviceToHost, stream_));
    });
    {
      ScopedHostSpan wait(&device_.recorder(), std::string(label), HostSpanKind::wait, layer, id);
      ENCBENCH_CUDA_CHECK(cudaStreamSynchronize(stream_));
    }
    std::memcpy(dst, staging->data, bytes);
    device_.pinned().release_now(staging);
  }

  void memset(const Buffer& dst, int value, std::size_t bytes, std::string_view label, int layer) override {
    check_range(dst, 0, bytes, "memset");
    if (bytes == 0) return;
    const OpCost cost{0, static_cast<double>(bytes)};
    auto enqueue = [&] { ENCBENCH_CUDA_CHECK(cudaMemsetAsync(dst.data(), value, bytes, stream_)); };
    if (capturing_) {
      capture_op(std::string(label), layer, OpCategory::memset, cost, enqueue);
      return;
    }
    submit(std::string(label), OpCategory::memset, layer, cost, nullptr, enqueue);
  }

  void synchronize(std::string_view reason) override {
    require(!capturing_, "synchronize during a graph capture");
    const Nanos submit_ns = now_ns();
    const std::uint64_t id = device_.recorder().enabled() ? device_.recorder().next_op_id() : 0;
    {
      ScopedHostSpan wait(&device_.recorder(), std::string(reason), HostSpanKind::wait, -1, id);
      cudaSetDevice(device_.ordinal());
      ENCBENCH_CUDA_CHECK(cudaStreamSynchronize(stream_));
    }
    if (device_.recorder().enabled()) {
      DeviceOp marker;  // zero-length: marks where the host caught up, occupies no device time
      marker.id = id;
      marker.name = std::string(reason);
      marker.category = OpCategory::sync;
      marker.stream = index_;
      marker.submit_ns = submit_ns;
      marker.start_ns = marker.end_ns = now_ns();
      marker.host_thread = device_.recorder().thread_id();
      device_.recorder().record(std::move(marker));
    }
  }

  std::shared_ptr<Event> record_event() override {
    cudaSetDevice(device_.ordinal());
    return std::make_shared<CudaEvent>(device_.ordinal(), &device_.recorder(), stream_);
  }

  void wait_event(const std::shared_ptr<Event>& event) override {
    auto* cuda_event = dynamic_cast<CudaEvent*>(event.get());
    require(cuda_event != nullptr, "wait_event: the event does not come from a cuda stream");
    ENCBENCH_CUDA_CHECK(cudaStreamWaitEvent(stream_, cuda_event->native(), 0));
  }

  // ---- GraphStream --------------------------------------------------------------------------
  void begin_capture() override {
    require(!capturing_, "begin_capture: the stream is already capturing");
    cudaSetDevice(device_.ordinal());
    // Relaxed: the kernels' cudaFuncSetAttribute and cuBLAS's lazy workspace allocation are
    // "potentially unsafe" calls that the stricter modes reject mid-capture; the real hazards
    // (copies that need the host, synchronize) are refused by this stream itself.
    ENCBENCH_CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeRelaxed));
    capturing_ = true;
    capture_nodes_.clear();
    capture_ops_ = 0;
  }

  std::unique_ptr<CapturedGraph> end_capture() override {
    require(capturing_, "end_capture without begin_capture");
    capturing_ = false;
    cudaGraph_t graph = nullptr;
    ENCBENCH_CUDA_CHECK(cudaStreamEndCapture(stream_, &graph));
    return std::make_unique<CudaGraph>(*this, graph, std::move(capture_nodes_), capture_ops_);
  }

  bool capturing() const override { return capturing_; }

  // Enqueues `enqueue` as one recorded op; returns its id (0 when not recording).
  template <class Enqueue>
  std::uint64_t submit(std::string name, OpCategory category, int layer, OpCost cost,
                       std::shared_ptr<const NodeTemplates> graph_nodes, Enqueue&& enqueue) {
    cudaSetDevice(device_.ordinal());
    if (!device_.recording()) {
      enqueue();
      return 0;
    }
    timeline::Recorder& recorder = device_.recorder();
    PendingOp pending;
    pending.op.id = recorder.next_op_id();
    pending.op.name = name;
    pending.op.category = category;
    pending.op.stream = index_;
    pending.op.layer = layer;
    pending.op.host_thread = recorder.thread_id();
    pending.op.flops = cost.flops;
    pending.op.bytes = cost.bytes;
    pending.graph_nodes = std::move(graph_nodes);
    pending.op.submit_ns = now_ns();
    {
      ScopedHostSpan api(&recorder, std::move(name), HostSpanKind::api, layer, pending.op.id);
      device_.cupti()->push(pending.op.id);
      try {
        enqueue();
      } catch (...) {
        device_.cupti()->pop();
        throw;
      }
      device_.cupti()->pop();
    }
    const std::uint64_t id = pending.op.id;
    device_.add_pending(std::move(pending));
    return id;
  }

 private:
  // Records what a launch/memset adds to the graph being captured (node count before/after), so
  // replays can name each node's activity record.
  template <class Enqueue>
  void capture_op(std::string name, int layer, OpCategory category, OpCost cost, Enqueue&& enqueue) {
    ScopedHostSpan api(&device_.recorder(), name + " (capture)", HostSpanKind::api, layer);
    const std::size_t before = captured_node_count();
    enqueue();
    const std::size_t added = captured_node_count() - before;
    for (std::size_t i = 0; i < added; ++i) capture_nodes_.push_back({name, layer, category, cost});
    ++capture_ops_;
  }

  std::size_t captured_node_count() {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    cudaGraph_t graph = nullptr;
    ENCBENCH_CUDA_CHECK(cudaStreamGetCaptureInfo(stream_, &status, nullptr, &graph));
    if (status != cudaStreamCaptureStatusActive || graph == nullptr)
      throw kernels::cuda::CudaError("graph capture was invalidated (an op did something not capturable)");
    std::size_t count = 0;
    ENCBENCH_CUDA_CHECK(cudaGraphGetNodes(graph, nullptr, &count));
    return count;
  }

  static void check_range(const Buffer& buffer, std::size_t offset, std::size_t bytes, const char* op) {
    require(static_cast<bool>(buffer) || bytes == 0, std::string(op) + ": empty buffer");
    require(offset <= buffer.bytes() && bytes <= buffer.bytes() - offset,
            std::string(op) + ": range [" + std::to_string(offset) + ", +" + std::to_string(bytes) +
                ") outside a buffer of " + std::to_string(buffer.bytes()) + " bytes");
  }

  friend class CudaGraph;
  CudaDeviceImpl& device_;
  int index_;
  std::string name_;
  cudaStream_t stream_ = nullptr;
  bool capturing_ = false;
  NodeTemplates capture_nodes_;
  std::size_t capture_ops_ = 0;
};

CudaGraph::CudaGraph(CudaStream& stream, cudaGraph_t graph, NodeTemplates nodes, std::size_t ops)
    : stream_(stream), graph_(graph), nodes_(std::make_shared<const NodeTemplates>(std::move(nodes))), ops_(ops) {
  ENCBENCH_CUDA_CHECK(cudaGraphInstantiate(&exec_, graph_, 0));
}

void CudaGraph::replay(std::string_view label) {
  require(!stream_.capturing_, "graph replay on a stream that is capturing");
  stream_.submit(std::string(label), OpCategory::kernel, -1, OpCost{}, nodes_,
                 [&] { ENCBENCH_CUDA_CHECK(cudaGraphLaunch(exec_, stream_.stream_)); });
}

// ---- device -----------------------------------------------------------------------------------

CudaDeviceImpl::CudaDeviceImpl(const DeviceOptions& options, int ordinal)
    : options_(options), ordinal_(ordinal) {
  ENCBENCH_CUDA_CHECK(cudaSetDevice(ordinal_));
  cudaDeviceProp prop{};
  ENCBENCH_CUDA_CHECK(cudaGetDeviceProperties(&prop, ordinal_));
  info_.kind = "cuda:" + std::to_string(ordinal_);
  info_.name = std::string(prop.name) + " (sm_" + std::to_string(prop.major) + std::to_string(prop.minor) +
               ", " + std::to_string(prop.multiProcessorCount) + " SMs)";
  info_.modelled = false;
  info_.computes_results = true;
  info_.host_visible_memory = false;
  info_.device_threads = 0;
  int mem_clock_khz = 0, bus_bits = 0;
  if (cudaDeviceGetAttribute(&mem_clock_khz, cudaDevAttrMemoryClockRate, ordinal_) == cudaSuccess &&
      cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, ordinal_) == cudaSuccess)
    info_.mem_bytes_per_s = 2.0 * mem_clock_khz * 1e3 * bus_bits / 8;  // datasheet-style peak
  (void)cudaGetLastError();
  recorder_.set_enabled(options.record);
  if (options.record) {
    try {
      cupti_ = cupti::Session::acquire();
    } catch (const std::exception& e) {
      throw std::runtime_error(std::string("cuda device: cannot record a timeline (") + e.what() +
                               "); is another profiler attached? Run without recording to skip CUPTI");
    }
  }
  allocator_ = std::make_unique<cuda_backend::CudaAllocator>(options.alloc_mode, ordinal_, &recorder_);
  streams_.push_back(std::make_unique<CudaStream>(*this, 0, "stream 0"));
}

CudaDeviceImpl::~CudaDeviceImpl() {
  cudaSetDevice(ordinal_);
  cudaDeviceSynchronize();
  streams_.clear();
}

Stream& CudaDeviceImpl::default_stream() { return *streams_.front(); }

Stream& CudaDeviceImpl::create_stream(std::string name) {
  std::lock_guard lock(streams_mutex_);
  const int index = static_cast<int>(streams_.size());
  streams_.push_back(std::make_unique<CudaStream>(*this, index, std::move(name)));
  return *streams_.back();
}

void CudaDeviceImpl::synchronize() {
  ScopedHostSpan wait(&recorder_, "device_synchronize", HostSpanKind::wait);
  cudaSetDevice(ordinal_);
  ENCBENCH_CUDA_CHECK(cudaDeviceSynchronize());
}

timeline::Timeline CudaDeviceImpl::collect_timeline() {
  std::vector<timeline::StreamTrack> tracks;
  {
    std::lock_guard lock(streams_mutex_);
    for (const auto& s : streams_) tracks.push_back({s->index(), s->name()});
  }
  if (cupti_) {
    cudaSetDevice(ordinal_);
    ENCBENCH_CUDA_CHECK(cudaDeviceSynchronize());
    cupti::Drained drained = cupti_->flush_and_drain();
    const ClockCalibration clock = cupti_->calibration();
    std::vector<PendingOp> pending;
    {
      std::lock_guard lock(pending_mutex_);
      pending.swap(pending_);
    }
    std::unordered_map<std::uint64_t, std::size_t> index_of_op;
    for (std::size_t i = 0; i < pending.size(); ++i) index_of_op[pending[i].op.id] = i;
    std::vector<std::vector<const cupti::ActivityRecord*>> records(pending.size());
    for (const auto& record : drained.activities) {
      const auto ext = drained.external_of_correlation.find(record.correlation);
      if (ext == drained.external_of_correlation.end()) continue;
      const auto op = index_of_op.find(ext->second);
      if (op != index_of_op.end()) records[op->second].push_back(&record);
    }
    // Submit = when the first runtime call of the op was entered (exact, from CUPTI).
    std::vector<Nanos> api_start(pending.size(), 0);
    for (const auto& call : drained.api_calls) {
      const auto ext = drained.external_of_correlation.find(call.correlation);
      if (ext == drained.external_of_correlation.end()) continue;
      const auto op = index_of_op.find(ext->second);
      if (op == index_of_op.end()) continue;
      const Nanos start = clock.to_host(call.start);
      Nanos& first = api_start[op->second];
      if (first == 0 || start < first) first = start;
    }
    for (std::size_t i = 0; i < pending.size(); ++i) {
      auto& recs = records[i];
      if (recs.empty()) continue;  // nothing reached the device (e.g. an empty native_body)
      std::sort(recs.begin(), recs.end(), [](auto* a, auto* b) { return a->start < b->start; });
      DeviceOp op = pending[i].op;
      if (api_start[i] != 0 && api_start[i] >= op.submit_ns) op.submit_ns = api_start[i];
      const auto& nodes = pending[i].graph_nodes;
      if (!nodes) {
        op.start_ns = clock.to_host(recs.front()->start);
        Nanos end = 0;
        for (auto* r : recs) end = std::max(end, clock.to_host(r->end));
        op.end_ns = end;
        recorder_.record(std::move(op));
        continue;
      }
      // Graph replay: one DeviceOp per node, in execution order (one-stream capture is a chain).
      const bool named = nodes->size() == recs.size();
      for (std::size_t n = 0; n < recs.size(); ++n) {
        DeviceOp node = op;
        node.id = n == 0 ? op.id : recorder_.next_op_id();
        if (named) {
          node.name = (*nodes)[n].name;
          node.layer = (*nodes)[n].layer;
          node.category = (*nodes)[n].category;
          node.flops = (*nodes)[n].cost.flops;
          node.bytes = (*nodes)[n].cost.bytes;
        } else {
          node.name = op.name + ": " + (recs[n]->kind == cupti::ActivityKind::kernel ? recs[n]->name : "memset");
        }
        node.start_ns = clock.to_host(recs[n]->start);
        node.end_ns = clock.to_host(recs[n]->end);
        recorder_.record(std::move(node));
      }
    }
  }
  return recorder_.collect(info_.kind, false, std::move(tracks));
}

}  // namespace

GraphStream* as_graph_stream(Stream& stream) { return dynamic_cast<CudaStream*>(&stream); }

void* native_stream_handle(Stream& stream) {
  auto* cuda_stream = dynamic_cast<CudaStream*>(&stream);
  return cuda_stream ? static_cast<void*>(cuda_stream->native()) : nullptr;
}

std::unique_ptr<Device> make_cuda_device(const DeviceOptions& options, int device_index) {
  require(device_index >= 0, "cuda device index must be >= 0");
  std::string reason;
  const int count = kernels::cuda::device_count(&reason);
  require(count > 0, "no CUDA device (" + reason + "); use --device cpu or --device sim:<profile>");
  require(device_index < count, "device spec '" + options.spec + "': only " + std::to_string(count) +
                                    " CUDA device(s) present (cuda:0 .. cuda:" + std::to_string(count - 1) + ")");
  return std::make_unique<CudaDeviceImpl>(options, device_index);
}

std::unique_ptr<Device> make_cuda_device(const DeviceOptions& options) {
  return make_cuda_device(options, parse_cuda_ordinal(options.spec));
}

}  // namespace encbench::device
