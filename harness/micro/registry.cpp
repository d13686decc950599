#include "harness/micro/registry.hpp"

namespace encbench::micro {
void register_all() {
  register_device_benchmarks();
  register_kernels_benchmarks();
  register_trace_benchmarks();
  register_encoder_benchmarks();
  register_scenario_benchmarks();
  register_tokenizer_benchmarks();
#ifdef ENCBENCH_HAVE_CUDA
  register_cuda_benchmarks();
#endif
}
}  // namespace encbench::micro
