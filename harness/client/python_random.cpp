#include "harness/client/python_random.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

#include "harness/core/error.hpp"

namespace encbench::client {

namespace {

constexpr std::size_t kN = 624, kM = 397;

}  // namespace

PythonRandom::PythonRandom(std::uint64_t seed) {
  // CPython random_seed: the key is abs(seed) in 32-bit words, least significant first ([0] for 0).
  std::vector<std::uint32_t> key;
  for (std::uint64_t s = seed; s != 0; s >>= 32) key.push_back(static_cast<std::uint32_t>(s));
  if (key.empty()) key.push_back(0);
  // init_genrand(19650218), then init_by_array (the reference mt19937ar.c, as CPython has it).
  mt_[0] = 19650218U;
  for (std::size_t i = 1; i < kN; ++i)
    mt_[i] = 1812433253U * (mt_[i - 1] ^ (mt_[i - 1] >> 30)) + static_cast<std::uint32_t>(i);
  std::size_t i = 1, j = 0;
  for (std::size_t k = std::max(kN, key.size()); k > 0; --k) {
    mt_[i] = (mt_[i] ^ ((mt_[i - 1] ^ (mt_[i - 1] >> 30)) * 1664525U)) + key[j] + static_cast<std::uint32_t>(j);
    ++i;
    ++j;
    if (i >= kN) {
      mt_[0] = mt_[kN - 1];
      i = 1;
    }
    if (j >= key.size()) j = 0;
  }
  for (std::size_t k = kN - 1; k > 0; --k) {
    mt_[i] = (mt_[i] ^ ((mt_[i - 1] ^ (mt_[i - 1] >> 30)) * 1566083941U)) - static_cast<std::uint32_t>(i);
    ++i;
    if (i >= kN) {
      mt_[0] = mt_[kN - 1];
      i = 1;
    }
  }
  mt_[0] = 0x80000000U;
  index_ = kN;
}

std::uint32_t PythonRandom::next_u32() {
  if (index_ >= kN) {
    for (std::size_t k = 0; k < kN; ++k) {
      const std::uint32_t y = (mt_[k] & 0x80000000U) | (mt_[(k + 1) % kN] & 0x7fffffffU);
      mt_[k] = mt_[(k + kM) % kN] ^ (y >> 1) ^ ((y & 1U) ? 0x9908b0dfU : 0U);
    }
    index_ = 0;
  }
  std::uint32_t y = mt_[index_++];
  y ^= y >> 11;
  y ^= (y << 7) & 0x9d2c5680U;
  y ^= (y << 15) & 0xefc60000U;
  y ^= y >> 18;
  return y;
}

std::uint64_t PythonRandom::below(std::uint64_t n) {
  require(n >= 1 && n <= 0xffffffffULL, "internal: PythonRandom::below takes 1 <= n < 2^32");
  // _randbelow_with_getrandbits: k = n.bit_length(); draw getrandbits(k) until it is < n.
  const int k = std::bit_width(n);
  for (;;) {
    const std::uint64_t r = next_u32() >> (32 - k);
    if (r < n) return r;
  }
}

double PythonRandom::random() {
  // random_random (genrand_res53): 27 + 26 bits.
  const std::uint32_t a = next_u32() >> 5, b = next_u32() >> 6;
  return (a * 67108864.0 + b) * (1.0 / 9007199254740992.0);
}

void PythonRandom::shuffle(std::vector<std::size_t>& items) {
  for (std::size_t i = items.size(); i-- > 1;) std::swap(items[i], items[static_cast<std::size_t>(below(i + 1))]);
}

std::size_t PythonRandom::choice_index(std::size_t n) {
  // random.choices without weights: population[floor(random() * n)].
  return static_cast<std::size_t>(std::floor(random() * static_cast<double>(n)));
}

}  // namespace encbench::client
