#pragma once
// CPython's `random` module, bit for bit: the Mersenne Twister seeded as random.seed(int) seeds it
// (init_by_array over the integer's 32-bit words), _randbelow via getrandbits, random(), shuffle
// and choices. vLLM seeds Python's random with --seed for shuffles (ShareGPT, custom datasets),
// oversampling (random.choices) and the LoRA choice; tests compare with python3 itself.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace encbench::client {

// CPython 3.11+'s hash() of a str whose characters are all ASCII (one byte each, as the str
// stores them) in a process started with PYTHONHASHSEED=hash_seed: SipHash-1-3 keyed with the
// secret CPython derives from the seed (zero for 0; else its LCG, lcg_urandom, over 24 bytes);
// -1 becomes -2. vLLM's timed_trace seeds each chunk with hash(f"{h}:{size}") & 0xFFFFFFFF.
std::int64_t python_str_hash(std::string_view ascii, std::uint32_t hash_seed);

class PythonRandom {
 public:
  explicit PythonRandom(std::uint64_t seed);  // random.seed(seed) for a non-negative int
  std::uint32_t next_u32();                   // genrand_uint32
  std::uint64_t below(std::uint64_t n);       // random._randbelow(n), n >= 1
  double random();                            // random.random()
  void shuffle(std::vector<std::size_t>& items);  // random.shuffle
  std::size_t choice_index(std::size_t n);    // the index random.choices(population of n) picks

 private:
  std::array<std::uint32_t, 624> mt_{};
  std::size_t index_ = 624;
};

}  // namespace encbench::client
