#pragma once
// vLLM's --lora-modules / --lora-assignment (vllm/benchmarks/serve.py, benchmark()): request i of
// the run is sent with model = a LoRA module name. round-robin: modules[i % n]. random:
// random.choice(modules) per request from Python's global `random`, seeded with --seed at start.
// PythonRandom (python_random.hpp) is CPython's random, so for datasets that draw nothing from Python's
// `random` before the run (random, random-mm: vLLM uses numpy for them) the modules are exactly
// vLLM's; datasets that do (oversampling, sonnet, prefix_repetition) move vLLM's stream first.
#include <cstdint>
#include <string>
#include <vector>

#include "harness/client/python_random.hpp"

namespace encbench::client {

// Throws InvalidInput for an empty module list or an assignment other than random / round-robin.
std::vector<std::string> assign_lora_modules(const std::vector<std::string>& modules, const std::string& assignment,
                                             std::size_t requests, std::uint64_t seed);

}  // namespace encbench::client
