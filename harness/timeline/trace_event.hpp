#pragma once
// Plain records of what happened on the host and the device. Recording fills them; analysis
// (gaps.hpp) and export (chrome_trace.hpp) read them. All times: ns on encbench::now_ns().
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "harness/core/clock.hpp"

namespace encbench::timeline {

enum class OpCategory : std::uint8_t { kernel, memcpy_d2h, memcpy_h2d, memset, sync };
std::string_view to_string(OpCategory category);  // "kernel", "memcpy_d2h", ...
// Inverse of to_string; nullopt for an unknown name.
std::optional<OpCategory> op_category_from_string(std::string_view text);

// One operation executed by a device stream: the submit/start/end triple.
struct DeviceOp {
  std::uint64_t id = 0;          // unique within a recording; also the flow id in traces
  std::string name;              // "qkv_proj", "attention", "seq_lens_d2h"
  OpCategory category = OpCategory::kernel;
  int stream = 0;                // stream index on its device
  int layer = -1;                // encoder layer, -1 when not layer-specific
  Nanos submit_ns = 0;           // host called the API
  Nanos start_ns = 0;            // device began executing
  Nanos end_ns = 0;              // device finished
  std::uint32_t host_thread = 0; // recorder thread id of the submitting thread
  double flops = 0;              // cost annotations (0 when unknown)
  double bytes = 0;
  // sim device on the real clock: when the device thread really completed the op (>= end_ns;
  // the difference is lateness, the machine failing to keep up with the model). 0 otherwise.
  Nanos real_end_ns = 0;
};

enum class HostSpanKind : std::uint8_t {
  api,   // time inside a device API call (launch, copy submit, allocation)
  wait,  // host blocked on the device (D2H copy, synchronize, event wait)
  work,  // named host work (building seq_lens, pad decision, scale computation, ...)
};
std::string_view to_string(HostSpanKind kind);  // "api", "wait", "work"
std::optional<HostSpanKind> host_span_kind_from_string(std::string_view text);

struct HostSpan {
  std::string name;
  HostSpanKind kind = HostSpanKind::work;
  std::uint32_t thread = 0;
  Nanos start_ns = 0;
  Nanos end_ns = 0;
  int layer = -1;
  std::uint64_t op_id = 0;  // device op this span concerns (0: none)
};

struct StreamTrack {
  int stream = 0;
  std::string name;
};

struct HostThreadTrack {
  std::uint32_t thread = 0;
  std::string name;
};

// A stream held on the device by a wait for another stream (torch_npu's EVENT_WAIT_SQE task on
// the waiting stream): not busy, and not the host's doing. Only traces that show it have it.
struct StreamWait {
  int stream = 0;
  Nanos start_ns = 0;
  Nanos end_ns = 0;
};

// A merged recording. Device ops sorted by start_ns, host spans by start_ns.
struct Timeline {
  std::string device_kind;  // "cpu", "sim:ascend-910b", "cuda:0"
  bool modelled = false;    // device durations come from a cost model (sim backend)
  std::vector<StreamTrack> streams;
  std::vector<HostThreadTrack> host_threads;
  std::vector<DeviceOp> device_ops;
  std::vector<HostSpan> host_spans;
  std::vector<StreamWait> stream_waits;  // sorted by stream, then start_ns
};

}  // namespace encbench::timeline
