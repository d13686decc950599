#pragma once
// The CUDA backend (harness/device_cuda, kernels/cuda and the encoder's CUDA op bodies, with
// libcudart, libcublas/libcublasLt and libcupti) is a module of its own, libencbench-cuda.so,
// opened with dlopen the first time a CUDA device or the encoder's CUDA bodies are asked for. A
// run on the cpu or sim device, `--version` or `serve` on sim never maps the CUDA libraries:
// linked into the binary, they cost every command ~70 ms of CPU and ~218 MB of RSS at start
// (docs/device.md, "Start-up footprint").
//
// Where the module is looked for, first found wins:
//   $ENCBENCH_CUDA_MODULE (a path), the directory of the running binary, that directory's
//   ../lib, and the build tree's path (for the test binaries of the same build).
// A process that links the backend itself (tests/cuda) is used as it is: the entry points are
// looked up in the process first.
#include <string>

namespace encbench::device {

// Whether this build made the module (the CUDA toolkit was found at configure time).
bool cuda_module_built();

// The module's entry point `name`, loading the module on first use. Throws InvalidInput with one
// line when the build has no CUDA module, when no module file is found, or when it cannot be
// loaded (the loader's own message, e.g. a missing libcudart.so.13) or lacks `name`.
void* cuda_module_symbol(const char* name);

// Whether the CUDA libraries are mapped in this process (libcudart; /proc/self/maps).
bool cuda_libraries_mapped();

// The module file this process would open (empty when none is found); for messages and tests.
std::string cuda_module_path();

}  // namespace encbench::device
