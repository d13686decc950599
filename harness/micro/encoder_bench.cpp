// Whole-forward A/B per preset of the encoder path, with the idle-gap counters.
//   encoder/forward/<model>/<device>/<preset>
// Manual time = the forward's time (submit .. device idle): wall time on cpu; on sim devices the
// virtual clock's time (roofline device + modelled host time, scenarios/devices/host-models/
// torch-npu-eager.json), a function of code and model files alone, bit-identical across repeats,
// builds and machines; it is also the counter virtual_forward_ms there. Counters per forward: idle_fraction, syncs,
// host_us_per_layer, device_busy_ms, peak_device_memory_bytes.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "harness/encoder/encoder.hpp"
#include "harness/micro/registry.hpp"

namespace encbench::micro {

namespace {

void forward_case(benchmark::State& state, const std::string& model_name, const std::string& device_spec,
                  const std::string& preset_name, const std::string& image) {
  device::DeviceOptions options;
  options.spec = device_spec;
  const bool sim = device::parse_device_spec(device_spec).backend == device::DeviceSpec::Backend::sim;
  if (sim) options.clock = device::ClockMode::virtual_time;
  auto dev = device::make_device(options);
  encoder::EncoderConfig cfg;
  cfg.model = encoder::load_model(model_name);
  cfg.toggles = encoder::preset(preset_name);
  cfg.keep_host_weights = false;
  encoder::EncoderRunner runner(cfg, *dev);
  const std::vector<vision::GridTHW> grids{encoder::grid_for(encoder::parse_image_spec(image), cfg.model)};
  (void)runner.forward(grids);  // warm-up: workspaces, allocator cache
  double idle = 0, syncs = 0, host_layer = 0, busy_ms = 0, peak_memory = 0;
  // Integer ns: n identical forwards sum and divide back to the same double, whatever n is.
  Nanos forward_ns = 0;
  for (auto _ : state) {
    const encoder::ForwardReport r = runner.forward(grids);
    state.SetIterationTime(ns_to_s(r.forward_ns));
    idle += r.idle_fraction;
    syncs += static_cast<double>(r.syncs);
    host_layer += r.host_us_per_layer;
    busy_ms += ns_to_ms(r.device_busy_ns);
    forward_ns += r.forward_ns;
    peak_memory = std::max(peak_memory, static_cast<double>(r.peak_bytes_in_use));
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["idle_fraction"] = idle / n;
  state.counters["syncs"] = syncs / n;
  state.counters["host_us_per_layer"] = host_layer / n;
  state.counters["device_busy_ms"] = busy_ms / n;
  state.counters["peak_device_memory_bytes"] = peak_memory;
  if (sim) state.counters["virtual_forward_ms"] = static_cast<double>(forward_ns) / n / 1e6;
  state.SetLabel(sim ? "virtual clock: modelled device + modelled host time" : "measured");
}

}  // namespace

void register_encoder_benchmarks() {
  struct Case { const char* model; const char* device; const char* image; };
  // Real shapes only on the sim device (a CPU forward of a 7B tower takes seconds).
  const Case cases[] = {{"tiny-qwen2.5-vl", "cpu", "448x448"},
                        {"tiny-qwen3-vl", "cpu", "448x448"},
                        {"tiny-qwen2.5-vl", "sim:ascend-910b", "448x448"},
                        {"qwen2.5-vl-7b", "sim:ascend-910b", "448x448"},
                        {"qwen3-vl-8b", "sim:ascend-910b", "448x448"}};
  for (const Case& c : cases) {
    for (const std::string preset : {"baseline", "pr6448", "pr7104", "optimized"}) {
      const std::string name = std::string("encoder/forward/") + c.model + "/" + c.device + "/" + preset;
      benchmark::RegisterBenchmark(name.c_str(), forward_case, std::string(c.model), std::string(c.device), preset,
                                   std::string(c.image))
          ->UseManualTime()
          ->Unit(benchmark::kMillisecond)
          ->MinTime(0.2);
    }
  }
}

}  // namespace encbench::micro
