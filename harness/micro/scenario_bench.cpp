// The live server's encoder hook with server-side profiling off vs on ("profiling off
// costs nothing measurable").
//   scenario/encoder_hook/<model>/<device>/profile=none|off|on
// Real time per hook call (one forward of one image, as an engine step with one new image).
// "on" records every forward into the profiler's ring (timeline copy + gap totals); "off" is the
// path every forward takes outside a /start_profile../stop_profile window.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "harness/micro/registry.hpp"
#include "harness/server/encoder_profiler.hpp"
#include "harness/serving/encoder_step.hpp"

namespace encbench::micro {
namespace {

// mode: "none" = hook built without a profiler (no endpoints), "off" = profiler installed but not
// started (the serving default), "on" = recording every forward.
void hook_case(benchmark::State& state, const std::string& model, const std::string& device, const std::string& mode) {
  serving::EncoderStepOptions o;
  o.model = model;
  o.device = device;
  o.profiles_dir = "";  // device's default lookup
  auto profiler = std::make_shared<server::EncoderProfiler>(std::filesystem::temp_directory_path(), 8);
  const serving::EncoderHook hook = serving::make_encoder_step(o, mode == "none" ? nullptr : profiler).hook;
  if (mode == "on") profiler->handle(server::ProfileAction::start);
  const std::vector<vision::GridTHW> grids{{1, 16, 16}};
  (void)hook(grids);  // warm-up
  for (auto _ : state) benchmark::DoNotOptimize(hook(grids));
  state.counters["recorded_forwards"] = static_cast<double>(profiler->summary()["forwards"].get<std::int64_t>());
}

}  // namespace

void register_scenario_benchmarks() {
  for (const std::string mode : {"none", "off", "on"}) {
    const std::string name = "scenario/encoder_hook/tiny-qwen3-vl/sim:ascend-910b/profile=" + mode;
    benchmark::RegisterBenchmark(name.c_str(), hook_case, std::string("tiny-qwen3-vl"),
                                 std::string("sim:ascend-910b"), mode)
        ->UseRealTime()
        ->Unit(benchmark::kMicrosecond);
  }
}

}  // namespace encbench::micro
