#pragma once
// NumPy's random generators, bit for bit, so that a dataset or a schedule drawn with --seed S is
// the one `vllm bench serve --seed S` draws ("each with vLLM's sampling, seeds").
//  - NumpyGenerator: np.random.default_rng(seed) = PCG64 seeded through SeedSequence, with
//    Generator.integers (Lemire's bounded draw on 32 or 64 bits, as numpy's int64 path) and
//    Generator.random(). vLLM's RandomDataset / RandomMultiModalDataset draw from one of these.
//  - NumpyRandomState: the legacy global np.random after np.random.seed(seed) (MT19937), with the
//    legacy gamma (Marsaglia-Tsang over the polar Gaussian, exponential for shape 1, Johnk-like
//    rejection below 1). vLLM's get_request draws the arrival gaps with np.random.gamma.
// tests/client/numpy_random_test.cpp compares both with numpy itself over several seeds.
#include <array>
#include <cstdint>
#include <random>
#include <vector>

namespace encbench::client {

class NumpyGenerator {
 public:
  explicit NumpyGenerator(std::uint64_t seed);  // np.random.default_rng(seed), seed >= 0
  std::uint64_t next_u64();
  std::uint32_t next_u32();  // the upper half of a 64-bit draw is kept for the next call, as numpy
  double random();           // Generator.random()
  // Generator.integers(low, high) (high exclusive, int64 dtype): one draw of the size=n array.
  std::int64_t integers(std::int64_t low, std::int64_t high);
  // numpy's random_interval: uniform in [0, max] by masked rejection (what shuffle draws).
  std::uint64_t interval(std::uint64_t max);
  // Generator.shuffle of a 1-D array or a list (Fisher-Yates from the end).
  void shuffle(std::vector<std::size_t>& items);
  // Generator.integers(0, 256, size=n, dtype=np.uint8): numpy's random_bounded_uint8_fill for the
  // full byte range, four bytes from each 32-bit draw, low byte first (vLLM's synthetic images).
  void fill_uint8(std::uint8_t* out, std::size_t n);
  // Generator.choice(k, p=p) for one item (size=None): cdf = cumsum(p) / its last value, one
  // random(), then searchsorted(side='right'). p must be non-negative and sum to 1 within numpy's
  // tolerance sqrt(eps) (InvalidInput otherwise, as numpy's ValueError).
  std::size_t choice(const std::vector<double>& p);

 private:
  unsigned __int128 state_ = 0, inc_ = 0;
  bool has_u32_ = false;
  std::uint32_t u32_ = 0;
};

// default_rng(seed).permutation(n): a loaded Hugging Face Dataset's shuffle(seed).
std::vector<std::size_t> numpy_permutation(std::size_t n, std::uint64_t seed);
// The order a streamed Hugging Face dataset of one shard yields its n rows in after
// shuffle(seed, buffer_size): a buffer of buffer_size rows; once full, each new row replaces the
// one at an index drawn from default_rng(seed).integers(0, buffer_size) (drawn 1,000 at a time)
// after that one is yielded; the rest of the buffer is shuffled with the same generator at the end.
std::vector<std::size_t> hf_streaming_shuffle_order(std::size_t n, std::uint64_t seed, std::size_t buffer_size = 1000);

class NumpyRandomState {
 public:
  explicit NumpyRandomState(std::uint32_t seed);  // np.random.seed(seed), np.random.RandomState(seed)
  std::uint32_t next_u32();
  std::uint64_t next_u64();  // two 32-bit draws, the first the high half
  // RandomState.permutation(n) (what pandas' DataFrame.sample(n, random_state=seed) takes the
  // first n of) and RandomState.randint(low, high) (its draws with replace=True).
  std::vector<std::size_t> permutation(std::size_t n);
  std::int64_t randint(std::int64_t low, std::int64_t high);
  double random_sample();                          // legacy double (53 bits from two 32-bit draws)
  double standard_exponential();
  double gauss();  // legacy polar method, the second value kept for the next call
  double gamma(double shape, double scale);
  // 32-bit draws taken so far, and skipping n of them: a dataset that draws from vLLM's global
  // np.random (prefix_repetition) leaves it n draws on when vLLM's get_request draws the gaps.
  std::uint64_t u32_draws() const { return draws_; }
  void skip(std::uint64_t n);

 private:
  std::mt19937 mt_;
  std::uint64_t draws_ = 0;
  bool has_gauss_ = false;
  double gauss_ = 0;
};

}  // namespace encbench::client
