#pragma once
// The devices tests ask for again and again, from the one factory (device::make_device): a CPU
// device with a few threads, and the simulated Ascend 910B on the virtual clock.
#include <cstdint>
#include <memory>

#include "harness/core/clock.hpp"
#include "harness/device/device.hpp"

namespace encbench::testing {

// CPU device: `threads` kernel threads (2: parallel paths run, the 2-core CI box is not
// oversubscribed), `launch_overhead_ns` added to every launch.
inline std::unique_ptr<device::Device> cpu_test_device(unsigned threads = 2, Nanos launch_overhead_ns = 0) {
  device::DeviceOptions o;
  o.spec = "cpu";
  o.device_threads = threads;
  o.launch_overhead_ns = launch_overhead_ns;
  return device::make_device(o);
}

// sim:ascend-910b on the virtual clock; `memory_budget_bytes` 0 is unlimited.
inline std::unique_ptr<device::Device> virtual_sim_device(device::HostTime host_time = device::HostTime::model,
                                                          std::uint64_t memory_budget_bytes = 0) {
  device::DeviceOptions o;
  o.spec = "sim:ascend-910b";
  o.clock = device::ClockMode::virtual_time;
  o.host_time = host_time;
  o.memory_budget_bytes = memory_budget_bytes;
  return device::make_device(o);
}

}  // namespace encbench::testing
