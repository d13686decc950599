#pragma once
// The stream machinery shared by the cpu and sim backends.
//
// Each stream is a FIFO of commands executed by its own device thread (never the host thread),
// so host and device overlap for real and a host wait really blocks. Kernel bodies run on the
// device's kernels::ThreadPool. What differs between backends is the ExecutionModel:
//   cpu   ops take as long as they take; start/end are measured on the device thread;
//   sim   (real clock) each op's start = max(submit, previous op's end, waited events), end =
//         start + modelled duration (sim_profile.hpp); the device thread sleeps/spins until that
//         end in real time before completing the op, so the host's waits are real. When it
//         completes late (lateness > kLatenessSlackNs) the next op starts at the real completion.
//         The virtual-clock sim is virtual_device.hpp.
#include <memory>
#include <optional>

#include "harness/device/device.hpp"
#include "harness/device/sim_profile.hpp"

namespace encbench::device {

struct ExecutionModel {
  bool modelled = false;        // sim: durations from the profile
  bool run_bodies = true;       // false: kernel bodies are skipped (sim without verify)
  std::optional<SimProfile> profile;
};

// sim on the real clock: a device thread that completes an op more than this after its modelled
// end shifts the following ops to its real completion (lateness, recorded per op).
inline constexpr Nanos kLatenessSlackNs = 1000;

std::unique_ptr<Device> make_queue_device(const DeviceOptions& options, DeviceInfo info, ExecutionModel model);

// Busy-waits until now_ns() >= deadline, sleeping first when far away (leaving `spin_margin_ns`
// to spin, because sleeps overshoot by tens of microseconds on a loaded machine).
void wait_until_ns(Nanos deadline, Nanos spin_margin_ns = 60'000);

}  // namespace encbench::device
