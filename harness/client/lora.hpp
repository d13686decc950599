#pragma once
// vLLM's --lora-modules / --lora-assignment (vllm/benchmarks/serve.py, benchmark()): request i of
// the run is sent with model = a LoRA module name. round-robin: modules[i % n]. random:
// random.choice(modules) per request from Python's global `random`, seeded with --seed at start.
// PythonRandom reproduces CPython's Mersenne Twister (random.seed(int) -> init_by_array) and
// random.choice (_randbelow via getrandbits), so for datasets that draw nothing from Python's
// `random` before the run (random, random-mm: vLLM uses numpy for them) the modules are exactly
// vLLM's; datasets that do (oversampling, sonnet, prefix_repetition) move vLLM's stream first.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace encbench::client {

class PythonRandom {
 public:
  explicit PythonRandom(std::uint64_t seed);  // random.seed(seed) for a non-negative int
  std::uint32_t next_u32();                   // genrand_uint32
  std::uint64_t below(std::uint64_t n);       // random._randbelow(n), n >= 1

 private:
  std::array<std::uint32_t, 624> mt_{};
  std::size_t index_ = 624;
};

// Throws InvalidInput for an empty module list or an assignment other than random / round-robin.
std::vector<std::string> assign_lora_modules(const std::vector<std::string>& modules, const std::string& assignment,
                                             std::size_t requests, std::uint64_t seed);

}  // namespace encbench::client
