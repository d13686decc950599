#include "harness/client/numpy_random.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "harness/core/error.hpp"

namespace encbench::client {

namespace {

// numpy/random/bit_generator.pyx, SeedSequence with the default pool of 4 words.
constexpr std::uint32_t kInitA = 0x43b0d7e5, kMultA = 0x931e8875, kInitB = 0x8b51f9dd, kMultB = 0x58f38ded;
constexpr std::uint32_t kMixMultL = 0xca01f9dd, kMixMultR = 0x4973f715;
constexpr int kXShift = 16;
constexpr std::size_t kPoolSize = 4;

std::uint32_t hashmix(std::uint32_t value, std::uint32_t& hash_const) {
  value ^= hash_const;
  hash_const *= kMultA;
  value *= hash_const;
  value ^= value >> kXShift;
  return value;
}

std::uint32_t mix(std::uint32_t x, std::uint32_t y) {
  std::uint32_t result = kMixMultL * x - kMixMultR * y;
  result ^= result >> kXShift;
  return result;
}

// SeedSequence(seed).generate_state(n_words64, np.uint64).
std::vector<std::uint64_t> seed_sequence_state(std::uint64_t seed, std::size_t n_words64) {
  // The integer as little-endian 32-bit words (0 is one word).
  std::vector<std::uint32_t> entropy;
  do {
    entropy.push_back(static_cast<std::uint32_t>(seed));
    seed >>= 32;
  } while (seed != 0);
  std::array<std::uint32_t, kPoolSize> pool{};
  std::uint32_t hash_const = kInitA;
  for (std::size_t i = 0; i < kPoolSize; ++i) pool[i] = hashmix(i < entropy.size() ? entropy[i] : 0, hash_const);
  for (std::size_t src = 0; src < kPoolSize; ++src)
    for (std::size_t dst = 0; dst < kPoolSize; ++dst)
      if (src != dst) pool[dst] = mix(pool[dst], hashmix(pool[src], hash_const));
  for (std::size_t src = kPoolSize; src < entropy.size(); ++src)
    for (std::size_t dst = 0; dst < kPoolSize; ++dst) pool[dst] = mix(pool[dst], hashmix(entropy[src], hash_const));
  std::vector<std::uint32_t> words(2 * n_words64);
  std::uint32_t hash_b = kInitB;
  for (std::size_t i = 0; i < words.size(); ++i) {
    std::uint32_t v = pool[i % kPoolSize];
    v ^= hash_b;
    hash_b *= kMultB;
    v *= hash_b;
    v ^= v >> kXShift;
    words[i] = v;
  }
  std::vector<std::uint64_t> out(n_words64);
  for (std::size_t i = 0; i < n_words64; ++i) out[i] = words[2 * i] | (static_cast<std::uint64_t>(words[2 * i + 1]) << 32);
  return out;
}

constexpr unsigned __int128 kPcgMultiplier =
    (static_cast<unsigned __int128>(0x2360ED051FC65DA4ULL) << 64) | 0x4385DF649FCCF645ULL;

unsigned __int128 u128(std::uint64_t high, std::uint64_t low) { return (static_cast<unsigned __int128>(high) << 64) | low; }

// numpy's random_interval: uniform in [0, max] by masked rejection, 32-bit draws when max fits.
template <class Gen>
std::uint64_t masked_interval(Gen& gen, std::uint64_t max) {
  if (max == 0) return 0;
  std::uint64_t mask = max;
  for (int shift = 1; shift <= 32; shift *= 2) mask |= mask >> shift;
  std::uint64_t value = 0;
  if (max <= 0xFFFFFFFFULL) {
    while ((value = (gen.next_u32() & mask)) > max) {
    }
  } else {
    while ((value = (gen.next_u64() & mask)) > max) {
    }
  }
  return value;
}

// numpy's _shuffle_raw (Generator.shuffle and RandomState.shuffle of a 1-D array or a list).
template <class Gen>
void shuffle_from_the_end(Gen& gen, std::vector<std::size_t>& items) {
  for (std::size_t i = items.size(); i-- > 1;) std::swap(items[i], items[static_cast<std::size_t>(masked_interval(gen, i))]);
}

}  // namespace

NumpyGenerator::NumpyGenerator(std::uint64_t seed) {
  // PCG64.__init__: generate_state(4, uint64) -> (seed[0] << 64 | seed[1], inc[0] << 64 | inc[1]);
  // pcg_setseq_128_srandom_r: inc = initseq << 1 | 1, step, add the initial state, step.
  const auto words = seed_sequence_state(seed, 4);
  const unsigned __int128 initstate = u128(words[0], words[1]), initseq = u128(words[2], words[3]);
  state_ = 0;
  inc_ = (initseq << 1) | 1;
  state_ = state_ * kPcgMultiplier + inc_;
  state_ += initstate;
  state_ = state_ * kPcgMultiplier + inc_;
}

std::uint64_t NumpyGenerator::next_u64() {
  // XSL-RR output of the advanced state.
  state_ = state_ * kPcgMultiplier + inc_;
  const auto high = static_cast<std::uint64_t>(state_ >> 64), low = static_cast<std::uint64_t>(state_);
  const unsigned rot = static_cast<unsigned>(state_ >> 122);
  const std::uint64_t x = high ^ low;
  return (x >> rot) | (x << ((64 - rot) & 63));
}

std::uint32_t NumpyGenerator::next_u32() {
  if (has_u32_) {
    has_u32_ = false;
    return u32_;
  }
  const std::uint64_t v = next_u64();
  has_u32_ = true;
  u32_ = static_cast<std::uint32_t>(v >> 32);
  return static_cast<std::uint32_t>(v);
}

double NumpyGenerator::random() { return static_cast<double>(next_u64() >> 11) * (1.0 / 9007199254740992.0); }

std::int64_t NumpyGenerator::integers(std::int64_t low, std::int64_t high) {
  // numpy's random_bounded_uint64_fill with use_masked=False; rng = high - 1 - low (closed).
  const auto rng = static_cast<std::uint64_t>(high - 1 - low);
  if (rng == 0) return low;
  if (rng <= 0xFFFFFFFFULL) {
    if (rng == 0xFFFFFFFFULL) return low + static_cast<std::int64_t>(next_u32());
    const auto rng_excl = static_cast<std::uint32_t>(rng) + 1;
    std::uint64_t m = static_cast<std::uint64_t>(next_u32()) * rng_excl;
    auto leftover = static_cast<std::uint32_t>(m);
    if (leftover < rng_excl) {
      const std::uint32_t threshold = (0xFFFFFFFFU - static_cast<std::uint32_t>(rng)) % rng_excl;
      while (leftover < threshold) {
        m = static_cast<std::uint64_t>(next_u32()) * rng_excl;
        leftover = static_cast<std::uint32_t>(m);
      }
    }
    return low + static_cast<std::int64_t>(m >> 32);
  }
  if (rng == ~0ULL) return low + static_cast<std::int64_t>(next_u64());
  const std::uint64_t rng_excl = rng + 1;
  unsigned __int128 m = static_cast<unsigned __int128>(next_u64()) * rng_excl;
  auto leftover = static_cast<std::uint64_t>(m);
  if (leftover < rng_excl) {
    const std::uint64_t threshold = (~0ULL - rng) % rng_excl;
    while (leftover < threshold) {
      m = static_cast<unsigned __int128>(next_u64()) * rng_excl;
      leftover = static_cast<std::uint64_t>(m);
    }
  }
  return low + static_cast<std::int64_t>(static_cast<std::uint64_t>(m >> 64));
}

std::uint64_t NumpyGenerator::interval(std::uint64_t max) { return masked_interval(*this, max); }

void NumpyGenerator::shuffle(std::vector<std::size_t>& items) { shuffle_from_the_end(*this, items); }

void NumpyGenerator::fill_uint8(std::uint8_t* out, std::size_t n) {
  // buffered_uint8 with a buffer local to the fill: a fresh 32-bit draw every fourth byte, shifted
  // down 8 bits for the next three (next_u32 keeps numpy's half-used 64-bit draw across calls).
  std::uint32_t buf = 0;
  int left = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (left == 0) {
      buf = next_u32();
      left = 3;
    } else {
      buf >>= 8;
      --left;
    }
    out[i] = static_cast<std::uint8_t>(buf);
  }
}

std::size_t NumpyGenerator::choice(const std::vector<double>& p) {
  require(!p.empty(), "choice: probabilities must not be empty");
  // numpy checks with kahan_sum; a plain sum differs from it by far less than the tolerance.
  double total = 0;
  for (double v : p) {
    require(v >= 0, "choice: probabilities are not non-negative");
    total += v;
  }
  require(std::abs(total - 1.0) <= std::sqrt(2.220446049250313e-16), "choice: probabilities do not sum to 1");
  std::vector<double> cdf(p.size());
  double running = 0;
  for (std::size_t i = 0; i < p.size(); ++i) cdf[i] = running += p[i];
  const double last = cdf.back();
  for (double& c : cdf) c /= last;
  const double u = random();
  return static_cast<std::size_t>(std::upper_bound(cdf.begin(), cdf.end(), u) - cdf.begin());
}

std::vector<std::size_t> numpy_permutation(std::size_t n, std::uint64_t seed) {
  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = i;
  NumpyGenerator(seed).shuffle(order);
  return order;
}

std::vector<std::size_t> hf_streaming_shuffle_order(std::size_t n, std::uint64_t seed, std::size_t buffer_size) {
  constexpr std::size_t kRandomBatch = 1000;  // datasets' _iter_random_indices batch
  NumpyGenerator rng(seed);
  std::vector<std::size_t> batch, buffer, out;
  std::size_t next = 0;
  out.reserve(n);
  for (std::size_t row = 0; row < n; ++row) {
    if (buffer.size() < buffer_size) {
      buffer.push_back(row);
      continue;
    }
    if (next == batch.size()) {
      batch.clear();
      for (std::size_t k = 0; k < kRandomBatch; ++k) batch.push_back(static_cast<std::size_t>(rng.integers(0, static_cast<std::int64_t>(buffer_size))));
      next = 0;
    }
    const std::size_t i = batch[next++];
    out.push_back(buffer[i]);
    buffer[i] = row;
  }
  rng.shuffle(buffer);
  out.insert(out.end(), buffer.begin(), buffer.end());
  return out;
}

NumpyRandomState::NumpyRandomState(std::uint32_t seed) : mt_(seed) {}

std::uint32_t NumpyRandomState::next_u32() {
  ++draws_;
  return static_cast<std::uint32_t>(mt_());
}

void NumpyRandomState::skip(std::uint64_t n) {
  mt_.discard(n);
  draws_ += n;
}

std::uint64_t NumpyRandomState::next_u64() {
  const std::uint64_t high = next_u32();
  return (high << 32) | next_u32();
}

std::vector<std::size_t> NumpyRandomState::permutation(std::size_t n) {
  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = i;
  shuffle_from_the_end(*this, order);
  return order;
}

std::int64_t NumpyRandomState::randint(std::int64_t low, std::int64_t high) {
  // The legacy randint's masked rejection over [low, high - 1].
  return low + static_cast<std::int64_t>(masked_interval(*this, static_cast<std::uint64_t>(high - 1 - low)));
}

double NumpyRandomState::random_sample() {
  const std::uint32_t a = next_u32() >> 5, b = next_u32() >> 6;
  return (a * 67108864.0 + b) / 9007199254740992.0;
}

double NumpyRandomState::standard_exponential() { return -std::log(1.0 - random_sample()); }

double NumpyRandomState::gauss() {
  if (has_gauss_) {
    has_gauss_ = false;
    const double kept = gauss_;
    gauss_ = 0;
    return kept;
  }
  double x1 = 0, x2 = 0, r2 = 0;
  do {
    x1 = 2.0 * random_sample() - 1.0;
    x2 = 2.0 * random_sample() - 1.0;
    r2 = x1 * x1 + x2 * x2;
  } while (r2 >= 1.0 || r2 == 0.0);
  const double f = std::sqrt(-2.0 * std::log(r2) / r2);
  gauss_ = f * x1;
  has_gauss_ = true;
  return f * x2;
}

double NumpyRandomState::gamma(double shape, double scale) {
  // numpy's legacy_standard_gamma, then times scale.
  if (shape == 1.0) return scale * standard_exponential();
  if (shape == 0.0) return 0.0;
  if (shape < 1.0) {
    for (;;) {
      const double u = random_sample(), v = standard_exponential();
      if (u <= 1.0 - shape) {
        const double x = std::pow(u, 1. / shape);
        if (x <= v) return scale * x;
      } else {
        const double y = -std::log((1 - u) / shape);
        const double x = std::pow(1.0 - shape + shape * y, 1. / shape);
        if (x <= v + y) return scale * x;
      }
    }
  }
  const double b = shape - 1. / 3., c = 1. / std::sqrt(9 * b);
  for (;;) {
    double x = 0, v = 0;
    do {
      x = gauss();
      v = 1.0 + c * x;
    } while (v <= 0.0);
    v = v * v * v;
    const double u = random_sample();
    if (u < 1.0 - 0.0331 * (x * x) * (x * x)) return scale * (b * v);
    if (std::log(u) < 0.5 * x * x + b * (1. - v + std::log(v))) return scale * (b * v);
  }
}

}  // namespace encbench::client
