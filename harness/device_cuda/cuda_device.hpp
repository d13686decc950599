#pragma once
// The CUDA device backend behind harness/device/device.hpp ("cuda" or "cuda:N").
//
// Plain C++ header (no CUDA types). Built into the CUDA module libencbench-cuda.so, which
// make_device() opens for "cuda[:N]" (harness/device/cuda_module.hpp); tests/cuda link it.
//
// Semantics, the same contract as the cpu device (docs/cuda.md has the details):
//   launch      KernelLaunch::native_body(cudaStream_t as void*) is called at submit to enqueue
//               the op's kernels; KernelLaunch::body (a CPU lambda) is never run here, and a
//               launch without native_body is an InvalidInput.
//   copy_h2d    `src` is copied into pinned staging at submit, then cudaMemcpyAsync (async).
//   copy_d2h    cudaMemcpyAsync into pinned staging + cudaStreamSynchronize (a HostSpan of kind
//               wait named after the label) + host memcpy: the per-layer stall the seeds fought.
//   allocator   caching (blocks kept per rounded size and reused in stream order, like PyTorch's
//               caching allocator) or fresh (cudaMalloc/cudaFree per request; cudaFree
//               synchronizes the device, which is the point of measuring it).
//   timeline    CUPTI activity records (CONCURRENT_KERNEL, MEMCPY, MEMSET, RUNTIME,
//               EXTERNAL_CORRELATION) give exact device start/end; CUPTI's clock is set to
//               encbench::now_ns() (cuptiActivityRegisterTimestampCallback) and checked by a
//               calibration, so DeviceOps and HostSpans share one clock and the gap analysis and
//               Chrome trace of the cpu device apply unchanged. An op that launches several
//               kernels (GEMM + bias) spans from the first start to the last end.
//   graphs      GraphStream below: capture a stream's ops into a CUDA graph and replay it.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "harness/device/device.hpp"

namespace encbench::device {

// Creates the CUDA device for options.spec ("cuda" = "cuda:0", "cuda:N"). Throws InvalidInput
// "no CUDA device (...)" when no GPU/driver is present, or when N is out of range.
std::unique_ptr<Device> make_cuda_device(const DeviceOptions& options);

// The same for an already parsed ordinal: the hook make_device() forwards "cuda[:N]" to
// (through the CUDA module's entry point, harness/device_cuda/cuda_module_entry.cpp).
std::unique_ptr<Device> make_cuda_device(const DeviceOptions& options, int device_index);

// Parses "cuda" / "cuda:N" into N. Throws InvalidInput for anything else.
int parse_cuda_ordinal(std::string_view spec);

// ---- CUDA graphs ------------------------------------------------------------------------------
// A graph captured from one stream. Replaying enqueues the whole capture on that stream with one
// launch; the timeline shows one DeviceOp per captured node (named and layered after the
// KernelLaunch / memset that created it). Must not outlive its device.
class CapturedGraph {
 public:
  virtual ~CapturedGraph() = default;
  virtual void replay(std::string_view label = "graph_replay") = 0;  // asynchronous
  virtual std::size_t node_count() const = 0;
  virtual std::size_t captured_ops() const = 0;
};

// Implemented by CUDA streams. Between begin_capture() and end_capture() the stream records
// launches and memsets into a graph instead of running them; copies, synchronize and D2H reads
// are InvalidInput there (they would need the host). Per-layer sequence lengths: the graph reads
// its inputs from device buffers at replay time, so give every layer's attention a pointer to the
// buffer holding *its* lengths (e.g. one cu_seqlens buffer for full-attention layers and one for
// window layers), write those buffers with copy_h2d before each replay, and never bind one
// buffer to every layer (the bug class of vllm-ascend's graph path).
class GraphStream {
 public:
  virtual ~GraphStream() = default;
  virtual void begin_capture() = 0;
  virtual std::unique_ptr<CapturedGraph> end_capture() = 0;
  virtual bool capturing() const = 0;
};

// The stream's graph support, or nullptr for streams of other backends.
GraphStream* as_graph_stream(Stream& stream);
// The stream's cudaStream_t as void*, or nullptr for streams of other backends.
void* native_stream_handle(Stream& stream);

// ---- host-side helpers (no GPU needed; unit-tested) ---------------------------------------
// Linear map from CUPTI timestamps to now_ns(): host_ns = cupti_ns - offset_ns. Fitted from
// samples (host_before, cupti, host_after): each sample says the CUPTI reading happened inside
// [before, after]; the tightest bracket gives the offset, its half-width the uncertainty.
struct ClockSample {
  std::int64_t host_before_ns = 0;
  std::int64_t cupti_ns = 0;
  std::int64_t host_after_ns = 0;
};
struct ClockCalibration {
  std::int64_t offset_ns = 0;       // cupti - host
  std::int64_t uncertainty_ns = 0;  // half the tightest bracket
  std::int64_t to_host(std::uint64_t cupti_ns) const {
    return static_cast<std::int64_t>(cupti_ns) - offset_ns;
  }
};
// Throws InvalidInput when `samples` is empty or a sample has after < before.
ClockCalibration fit_clock_calibration(const ClockSample* samples, std::size_t count);

// Block sizes the caching allocator rounds requests up to: multiples of 512 B up to 1 MiB, then
// multiples of 2 MiB (fewer distinct sizes = more reuse; waste bounded by 2 MiB per block).
std::size_t caching_block_size(std::size_t bytes);

}  // namespace encbench::device
