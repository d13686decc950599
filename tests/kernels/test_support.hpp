#pragma once
// Shared helpers of the kernel tests: random inputs, NaN poisoning, error norms, a tiny
// std::thread pool independent of kernels::ThreadPool, and the list of ISA paths to exercise.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "harness/core/error.hpp"
#include "kernels/isa.hpp"
#include "kernels/ops.hpp"
#include "kernels/worker_pool.hpp"

#include "tests/support/sanitized.hpp"

namespace encbench::kernels::test {

inline bool sanitized() { return encbench::testing::sanitized(); }

inline std::vector<float> random_vector(std::size_t n, unsigned seed, float stddev = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, stddev);
  std::vector<float> v(n);
  for (auto& x : v) {
    x = dist(rng);
    if (x == 0.0f) x = 1e-3f;  // never zeros
  }
  return v;
}

inline std::vector<float> poisoned(std::size_t n) {
  return std::vector<float>(n, std::numeric_limits<float>::quiet_NaN());
}

// ||out - ref|| / ||ref||; NaN anywhere in out makes it NaN (so "fully written" is checked too).
inline double rel_frobenius(const std::vector<float>& out, const std::vector<float>& ref) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const double d = static_cast<double>(out[i]) - ref[i];
    num += d * d;
    den += static_cast<double>(ref[i]) * ref[i];
  }
  return std::sqrt(num) / std::sqrt(den);
}

inline std::size_t count_nan(const std::vector<float>& v) {
  std::size_t n = 0;
  for (float x : v) n += std::isnan(x) ? 1 : 0;
  return n;
}

// A deliberately simple pool: each run() starts `workers` threads that claim items from an atomic
// counter. Independent from kernels::ThreadPool so the kernels are checked against a second pool.
class TestThreadPool final : public WorkerPool {
 public:
  explicit TestThreadPool(unsigned workers) : workers_(workers) {}
  unsigned num_workers() const override { return workers_; }
  void run(std::size_t num_items, const std::function<void(std::size_t, unsigned)>& fn) override {
    std::atomic<std::size_t> next{0};
    std::vector<std::thread> threads;
    for (unsigned w = 0; w < workers_; ++w)
      threads.emplace_back([&, w] {
        for (std::size_t i = next++; i < num_items; i = next++) fn(i, w);
      });
    for (auto& t : threads) t.join();
  }

 private:
  unsigned workers_;
};

inline std::vector<Isa> available_isas() {
  std::vector<Isa> isas;
  for (Isa isa : {Isa::portable, Isa::avx2, Isa::avx512})
    if (isa_available(isa)) isas.push_back(isa);
  return isas;
}

// GEMM of one shape on every ISA with the serial pool and with TestThreadPool(3) against
// gemm_reference (inputs random_vector with seeds seed, seed + 1, seed + 2): fully written over
// a NaN-poisoned output, within 1e-5 relative Frobenius error. `what` names the case.
inline void expect_gemm_matches_reference(std::int64_t m, std::int64_t n, std::int64_t k, bool bias, unsigned seed,
                                          const std::string& what) {
  SerialPool serial;
  TestThreadPool threads(3);
  const auto x = random_vector(static_cast<std::size_t>(m * k), seed),
             w = random_vector(static_cast<std::size_t>(n * k), seed + 1),
             b = random_vector(static_cast<std::size_t>(n), seed + 2);
  std::vector<float> ref(static_cast<std::size_t>(m * n));
  GemmArgs a{x.data(), w.data(), bias ? b.data() : nullptr, ref.data(), m, n, k};
  gemm_reference(a);
  for (Isa isa : available_isas())
    for (WorkerPool* pool : std::vector<WorkerPool*>{&serial, &threads}) {
      std::vector<float> out = poisoned(ref.size());
      a.out = out.data();
      gemm(a, *pool, isa);
      EXPECT_EQ(count_nan(out), 0u) << to_string(isa) << ": " << what;
      EXPECT_LT(rel_frobenius(out, ref), 1e-5)
          << to_string(isa) << " m=" << m << " n=" << n << " k=" << k << ": " << what;
    }
}

// EXPECT that `fn` throws InvalidInput whose message contains `needle`.
template <class Fn>
void expect_invalid(Fn&& fn, const std::string& needle) {
  try {
    fn();
    ADD_FAILURE() << "expected InvalidInput containing '" << needle << "'";
  } catch (const InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos)
        << "message '" << e.what() << "' lacks '" << needle << "'";
  }
}

}  // namespace encbench::kernels::test
