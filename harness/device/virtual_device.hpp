#pragma once
// The sim backend on a virtual clock: a discrete-event model of host and device run on the
// calling (host) thread, with no device threads and nothing that sleeps or spins.
//
//   host time    advances by the host model's cost of each device call (by class: kernel
//                launch, copies, sync, events) and of each host_work() step the caller declares
//                (allocation, host tensors, small host math), plus the modelled launch overhead
//                per submitted op (DeviceOptions::host_time model, the default; host_model.hpp).
//                Asked for (host_time measured): the host thread's own CPU time between device
//                API calls instead (CLOCK_THREAD_CPUTIME_ID), the simulator's own bookkeeping
//                inside an API call excluded: a measurement of this machine.
//   device op    start = max(submit, stream ready, waited events); end = start + roofline
//                duration (sim_profile.hpp); the stream is ready again at end.
//   host wait    (D2H copy, synchronize, event synchronize) moves the host to the awaited op's
//                end + host_wakeup_ns; if that op already ended, the host does not wait.
//
// Every timeline time is virtual ns, so a sync gap is exactly d2h latency + wake-up + the host
// work before the next submit, and a forward costs the real machine only its host CPU time.
// With options.verify kernel bodies and copies run synchronously at submit (program order is a
// valid execution order of the streams), so results are real while timing stays virtual.
// One host thread drives the device at a time; calls are serialised.
#include <memory>

#include "harness/device/device.hpp"
#include "harness/device/sim_profile.hpp"

namespace encbench::device {

std::unique_ptr<Device> make_virtual_sim_device(const DeviceOptions& options, DeviceInfo info, SimProfile profile);

}  // namespace encbench::device
