#include "harness/client/python_random.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

#include "harness/core/error.hpp"

namespace encbench::client {

namespace {

constexpr std::size_t kN = 624, kM = 397;

std::uint64_t rotl(std::uint64_t x, int b) { return (x << b) | (x >> (64 - b)); }

// CPython's pyhash.c SINGLE_ROUND: two HALF_ROUNDs.
void sip_round(std::uint64_t& v0, std::uint64_t& v1, std::uint64_t& v2, std::uint64_t& v3) {
  v0 += v1;
  v2 += v3;
  v1 = rotl(v1, 13) ^ v0;
  v3 = rotl(v3, 16) ^ v2;
  v0 = rotl(v0, 32);
  v2 += v1;
  v0 += v3;
  v1 = rotl(v1, 17) ^ v2;
  v3 = rotl(v3, 21) ^ v0;
  v2 = rotl(v2, 32);
}

std::uint64_t le64(const unsigned char* p, std::size_t n) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < n; ++i) v |= static_cast<std::uint64_t>(p[i]) << (8 * i);
  return v;
}

// pyhash.c siphash13 (one compression round, three finalisation rounds).
std::uint64_t siphash13(std::uint64_t k0, std::uint64_t k1, std::string_view src) {
  std::uint64_t v0 = k0 ^ 0x736f6d6570736575ULL, v1 = k1 ^ 0x646f72616e646f6dULL;
  std::uint64_t v2 = k0 ^ 0x6c7967656e657261ULL, v3 = k1 ^ 0x7465646279746573ULL;
  const auto* in = reinterpret_cast<const unsigned char*>(src.data());
  std::size_t left = src.size();
  for (; left >= 8; left -= 8, in += 8) {
    const std::uint64_t m = le64(in, 8);
    v3 ^= m;
    sip_round(v0, v1, v2, v3);
    v0 ^= m;
  }
  const std::uint64_t b = (static_cast<std::uint64_t>(src.size()) << 56) | le64(in, left);
  v3 ^= b;
  sip_round(v0, v1, v2, v3);
  v0 ^= b;
  v2 ^= 0xff;
  for (int r = 0; r < 3; ++r) sip_round(v0, v1, v2, v3);
  return (v0 ^ v1) ^ (v2 ^ v3);
}

}  // namespace

std::int64_t python_str_hash(std::string_view ascii, std::uint32_t hash_seed) {
  if (ascii.empty()) return 0;
  // _Py_HashRandomization_Init: PYTHONHASHSEED=0 zeroes the secret; another value fills its 24
  // bytes with lcg_urandom; siphash's k0, k1 are the first 16 (little-endian).
  unsigned char secret[24] = {};
  if (hash_seed != 0) {
    std::uint32_t x = hash_seed;
    for (unsigned char& byte : secret) {
      x = x * 214013U + 2531011U;
      byte = static_cast<unsigned char>((x >> 16) & 0xff);
    }
  }
  const auto h = static_cast<std::int64_t>(siphash13(le64(secret, 8), le64(secret + 8, 8), ascii));
  return h == -1 ? -2 : h;
}

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
