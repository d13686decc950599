#pragma once
// The discrete-event rules of the virtual-clock sim device, as plain functions of times, so that
// every model that places ops on streams (the sim device itself, and the trace replay of
// `encbench trace whatif`) applies the same rules rather than a copy of them.
//
//   device op    start = max(submit, stream ready, waited events); the stream is ready again at
//                the op's end.
//   event        completes when everything queued on its stream before it has ended:
//                max(record time, stream ready).
//   host wait    the host blocks until the awaited op ends and notices it a wake-up latency
//                later; if the op already ended, the host does not wait at all.
// Header-only and free of any device type: it depends on nothing but the clock's units, and lives
// in timeline/ because both the device (below trace/) and the trace replay use it.
#include <algorithm>

#include "harness/core/clock.hpp"

namespace encbench::timeline::rules {

// When an op can begin: its launch reached the device, the stream drained and every event the
// stream waits for completed (pass 0 when the stream waits for none).
constexpr Nanos op_start_ns(Nanos submit_ns, Nanos stream_ready_ns, Nanos waited_events_ns = 0) {
  return std::max({submit_ns, stream_ready_ns, waited_events_ns});
}

// When an event recorded at `recorded_ns` completes on a stream that is ready at `stream_ready_ns`.
constexpr Nanos event_completes_ns(Nanos recorded_ns, Nanos stream_ready_ns) {
  return std::max(recorded_ns, stream_ready_ns);
}

// Host time after a blocking wait that starts at `host_ns` for an op ending at `awaited_end_ns`.
constexpr Nanos host_after_wait_ns(Nanos host_ns, Nanos awaited_end_ns, Nanos wakeup_ns) {
  return awaited_end_ns > host_ns ? std::max(host_ns, awaited_end_ns + wakeup_ns) : host_ns;
}

}  // namespace encbench::timeline::rules
