#pragma once
// splitmix64 (Steele, Lea and Flood 2014; Vigna's public-domain C code), the one integer hash and
// seeded stream of the project. Why this one: it is cheap (two multiplies and three shifts), well
// spread (its finaliser is a bijection in which every input bit flips each output bit with
// probability close to 1/2, so consecutive ids, rows or seeds hash far apart: hash-table buckets
// stay even and draws derived from neighbouring seeds look independent), and deterministic on
// every platform and standard library (std::hash and the <random> distributions are not), so
// virtual runs stay bit-reproducible. Not cryptographic: nothing here needs that.
#include <cstdint>

namespace encbench {

// 2^64 / the golden ratio, odd: the generator's increment (its "gamma").
inline constexpr std::uint64_t kSplitmix64Gamma = 0x9e3779b97f4a7c15ull;

// The finaliser alone: a full-avalanche bijection on 64 bits (finalise(0) is 0).
constexpr std::uint64_t splitmix64_finalise(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// The generator's next output from state `x` (the increment, then the finaliser) as a hash of x:
// the increment keeps small inputs, 0 included, away from the finaliser's fixed point at 0.
constexpr std::uint64_t mix64(std::uint64_t x) { return splitmix64_finalise(x + kSplitmix64Gamma); }

// The generator itself: advances `state` and returns its next output.
constexpr std::uint64_t splitmix64_next(std::uint64_t& state) {
  return splitmix64_finalise(state += kSplitmix64Gamma);
}

}  // namespace encbench
