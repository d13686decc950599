// The CUDA module's device entry point (harness/device/cuda_module.hpp): make_device() looks it
// up by name after opening libencbench-cuda.so and owns the device it returns.
#include "harness/device_cuda/cuda_device.hpp"

extern "C" encbench::device::Device* encbench_cuda_make_device(const encbench::device::DeviceOptions& options,
                                                               int device_index) {
  return encbench::device::make_cuda_device(options, device_index).release();
}
