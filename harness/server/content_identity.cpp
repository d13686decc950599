#include "harness/server/content_identity.hpp"

#include <cstring>

#include "harness/core/mix64.hpp"

namespace encbench::server {
namespace {

constexpr std::uint64_t kMul = 0xbf58476d1ce4e5b9ull;

std::uint64_t rotl(std::uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

std::uint64_t absorb(std::uint64_t h, std::uint64_t word) { return rotl(h ^ (word * kMul), 29) * kSplitmix64Gamma; }

}  // namespace

std::uint64_t content_hash64(std::string_view bytes, std::uint64_t seed) {
  // The length first, so that inputs differing only in trailing zero bytes differ.
  std::uint64_t h = absorb(seed ^ kSplitmix64Gamma, static_cast<std::uint64_t>(bytes.size()));
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
  return splitmix64_finalise(h);
}

std::uint64_t combine_identity(std::uint64_t running, std::uint64_t value) {
  return splitmix64_finalise(absorb(running ^ kSplitmix64Gamma, value));
}

std::uint64_t images_identity(const std::vector<std::uint64_t>& mm_hashes) {
  if (mm_hashes.empty()) return 0;
  if (mm_hashes.size() == 1) return mm_hashes.front();
  std::uint64_t key = 0;
  for (const std::uint64_t h : mm_hashes) key = combine_identity(key, h);
  return nonzero_identity(key);
}

}  // namespace encbench::server
