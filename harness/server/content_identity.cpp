#include "harness/server/content_identity.hpp"

#include <cstring>

namespace encbench::server {
namespace {

constexpr std::uint64_t kGolden = 0x9e3779b97f4a7c15ull;
constexpr std::uint64_t kMul = 0xbf58476d1ce4e5b9ull;

// splitmix64's finaliser: every input bit moves every output bit.
std::uint64_t avalanche(std::uint64_t x) {
  x ^= x >> 30;
  x *= kMul;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

std::uint64_t rotl(std::uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

std::uint64_t absorb(std::uint64_t h, std::uint64_t word) { return rotl(h ^ (word * kMul), 29) * kGolden; }

}  // namespace

std::uint64_t content_hash64(std::string_view bytes, std::uint64_t seed) {
  // The length first, so that inputs differing only in trailing zero bytes differ.
  std::uint64_t h = absorb(seed ^ kGolden, static_cast<std::uint64_t>(bytes.size()));
  const char* p = bytes.data();
  std::size_t left = bytes.size();
  for (; left >= 8; left -= 8, p += 8) {
    std::uint64_t word;
    std::memcpy(&word, p, 8);
    h = absorb(h, word);
  }
  if (left > 0) {
    std::uint64_t tail = 0;
    std::memcpy(&tail, p, left);
    h = absorb(h, tail);
  }
  return avalanche(h);
}

std::uint64_t combine_identity(std::uint64_t running, std::uint64_t value) {
  return avalanche(absorb(running ^ kGolden, value));
}

}  // namespace encbench::server
