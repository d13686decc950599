#pragma once
// What each event of a raw trace is, by the layout's own lanes: the layout itself (Kineto,
// torch_npu, encbench), each event's role (device op, device sync, annotation, host span, flow),
// the device, stream and host thread it belongs to, and the kind of a host span (work, runtime
// call, wait). Pure rules on one RawTrace: no links between events, no timelines; the importer
// (trace_import.cpp) runs these rules over every event.
#include <cstdint>
#include <string_view>
#include <utility>

#include "harness/timeline/trace_event.hpp"
#include "harness/trace_read/trace_import.hpp"
#include "harness/trace_read/trace_reader.hpp"

namespace encbench::trace {

enum class EventRole : std::uint8_t { host, device_op, device_sync, device_annotation, profiler_span, flow, other };

// (pid, tid) of one host thread or device track.
using ThreadKey = std::pair<TrackKey, TrackKey>;

class TraceLanes {
 public:
  explicit TraceLanes(const RawTrace& raw);

  TraceLayout layout() const { return layout_; }
  std::string_view process_name(TrackKey pid) const;
  std::string_view thread_name(TrackKey pid, TrackKey tid) const;
  // torch_npu's HCCL lane's collectives ("Group N Communication" threads).
  bool is_collective(const RawEvent& e) const;
  // One host thread per OS thread: torch_npu puts the Python and CANN lanes of one thread in
  // different (packed) pids with the same tid; (pid << 10) | (sort_index << 5) | device.
  ThreadKey thread_key(const RawEvent& e) const;
  EventRole role_of(const RawEvent& e) const;  // flows are told apart by the caller (ph s/t/f)
  int device_of(const RawEvent& e) const;
  int stream_of(const RawEvent& e) const;
  timeline::HostSpanKind host_kind_of(const RawEvent& e) const;
  timeline::OpCategory category_of(const RawEvent& e, std::string_view name) const;
  // "GPU 0" / "NPU 1" / the encbench device kind, and the timeline's device_kind.
  void label_device(DeviceTrace& dt) const;

 private:
  std::string_view process_label(TrackKey pid) const;
  EventRole torch_npu_role(const RawEvent& e) const;
  EventRole encbench_role(const RawEvent& e) const;

  const RawTrace& raw_;
  TraceLayout layout_ = TraceLayout::kineto;
  bool kineto_npu_ = false;  // a Kineto-layout trace whose device process is "NPU" (MSPTI export)
};

// torch_npu's event wait tasks (EVENT_WAIT_SQE), any case: a stream held for another stream.
bool is_npu_event_wait(std::string_view task_type);
// Parsers of encbench's own args (its writer's names for categories and span kinds).
bool parse_encbench_category(std::string_view text, timeline::OpCategory& out);
bool parse_encbench_span_kind(std::string_view text, timeline::HostSpanKind& out);

}  // namespace encbench::trace
