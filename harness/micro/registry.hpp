#pragma once
namespace encbench::micro {
// Registers every benchmark family. Each area adds one register_* call in registry.cpp.
void register_all();
// Per-area registration functions, called from register_all().
void register_device_benchmarks();  // harness/micro/device_bench.cpp

void register_kernels_benchmarks();  // harness/micro/kernels_bench.cpp
void register_trace_benchmarks();  // harness/micro/trace_bench.cpp

void register_encoder_benchmarks();  // harness/micro/encoder_bench.cpp
void register_tokenizer_benchmarks();  // harness/micro/tokenizer_bench.cpp (encode tokens/s)
void register_scenario_benchmarks();  // harness/micro/scenario_bench.cpp (server encoder hook, profiling off/on)
// harness/micro/cuda_bench.cpp; built and called only with ENCBENCH_HAVE_CUDA.
void register_cuda_benchmarks();
}  // namespace encbench::micro
