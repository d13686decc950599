#pragma once
// The small virtual-clock experiment the scenario tests start from: Qwen3-VL-8B on the simulated
// Ascend 910B (the repository's device profiles), arms baseline and optimized, 448x448 images,
// results under `dir`. Each test sets what it is about (prompts, rate, seeds, clock) on top.
#include <cstdlib>
#include <filesystem>
#include <string>

#include "harness/scenario/preset_ab.hpp"

namespace encbench::testing {

inline scenario::PresetAbOptions small_virtual_options(const std::filesystem::path& dir, const std::string& name) {
  const char* source = std::getenv("ENCBENCH_SOURCE_DIR");
  scenario::PresetAbOptions o;
  o.name = name;
  o.model = "qwen3-vl-8b";
  o.device = "sim:ascend-910b";
  o.profiles_dir = std::filesystem::path(source ? source : ".") / "scenarios/devices";
  o.presets = {"baseline", "optimized"};
  o.image_width = 448;
  o.image_height = 448;
  o.outputs.result_dir = dir;
  return o;
}

// The same on the virtual clock: one run per arm and seed (no rounds, no profile), `prompts`
// requests at 4 req/s, `seeds` seeds, the result in dir/r.json.
inline scenario::PresetAbOptions small_virtual_run(const std::filesystem::path& dir, const std::string& name,
                                                   int prompts, int seeds) {
  scenario::PresetAbOptions o = small_virtual_options(dir, name);
  o.num_prompts = prompts;
  o.request_rate = 4;
  o.rounds = 1;
  o.profile = false;
  o.clock = scenario::RunClock::virtual_time;
  o.seeds = seeds;
  o.outputs.result_file = dir / "r.json";
  return o;
}

}  // namespace encbench::testing
