// ISA selection (CPUID features injected, the ENCBENCH_ISA override), the cache-derived blocking
// of GEMM and attention, and the GEMM on shapes that cross every block boundary.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "kernels/attention.hpp"
#include "kernels/blocking.hpp"
#include "kernels/isa.hpp"
#include "kernels/ops.hpp"
#include "kernels/tuning.hpp"
#include "tests/kernels/test_support.hpp"

namespace encbench::kernels::test {
namespace {

CpuFeatures avx2_cpu() {
  CpuFeatures f;
  f.avx2 = f.fma = true;
  return f;
}

CpuFeatures avx512_cpu() {
  CpuFeatures f = avx2_cpu();
  f.avx512f = f.avx512vl = f.avx512dq = true;
  return f;
}

TEST(IsaSelection, BestFollowsTheFeaturesAndTheOverride) {
  EXPECT_EQ(resolve_isa(Isa::best, avx512_cpu(), nullptr), Isa::avx512);
  EXPECT_EQ(resolve_isa(Isa::best, avx2_cpu(), ""), Isa::avx2);
  EXPECT_EQ(resolve_isa(Isa::best, CpuFeatures{}, nullptr), Isa::portable);
  EXPECT_EQ(resolve_isa(Isa::best, avx512_cpu(), "avx2"), Isa::avx2);
  EXPECT_EQ(resolve_isa(Isa::best, avx512_cpu(), "portable"), Isa::portable);
  EXPECT_EQ(resolve_isa(Isa::best, avx2_cpu(), "best"), Isa::avx2);
  // An explicit request (tests forcing a path) is not overridden.
  EXPECT_EQ(resolve_isa(Isa::portable, avx512_cpu(), "avx2"), Isa::portable);
  // AVX-512 F without VL/DQ is not enough for the AVX-512 path.
  CpuFeatures partial = avx2_cpu();
  partial.avx512f = true;
  EXPECT_EQ(resolve_isa(Isa::best, partial, nullptr), Isa::avx2);
}

TEST(IsaSelection, AForcedIsaTheCpuLacksNamesWhatItHas) {
  expect_invalid([] { resolve_isa(Isa::best, avx2_cpu(), "avx512"); },
                 "ENCBENCH_ISA=avx512: 'avx512' needs avx512f, avx512vl, avx512dq and fma, but "
                 "this CPU (or build) has: avx2 fma (available: portable, avx2)");
  expect_invalid([] { resolve_isa(Isa::avx512, avx2_cpu(), nullptr); }, "has: avx2 fma");
  expect_invalid([] { resolve_isa(Isa::best, CpuFeatures{}, "avx2"); },
                 "has: none of avx2/fma/avx512f/avx512vl/avx512dq (available: portable)");
  expect_invalid([] { resolve_isa(Isa::best, avx512_cpu(), "sse9"); },
                 "ENCBENCH_ISA=sse9: unknown ISA 'sse9' (expected best, portable, avx2 or avx512)");
  EXPECT_EQ(describe(avx512_cpu()), "avx2 fma avx512f avx512vl avx512dq");
}

// The process environment really reaches every kernel's `best`; restored afterwards.
class IsaEnvironment : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const char* v = std::getenv(kIsaEnvVar)) saved_ = v, had_ = true;
  }
  void TearDown() override {
    if (had_) setenv(kIsaEnvVar, saved_.c_str(), 1);
    else unsetenv(kIsaEnvVar);
  }

 private:
  std::string saved_;
  bool had_ = false;
};

TEST_F(IsaEnvironment, OverrideReachesTheKernelsAndBadValuesAreErrorsNotCrashes) {
  const std::vector<float> x = random_vector(5 * 40, 1), w = random_vector(7 * 40, 2);
  std::vector<float> ref(35), out(35);
  GemmArgs a{x.data(), w.data(), nullptr, ref.data(), 5, 7, 40};
  gemm_reference(a);
  a.out = out.data();
  SerialPool pool;
  for (Isa isa : available_isas()) {
    setenv(kIsaEnvVar, std::string(to_string(isa)).c_str(), 1);
    EXPECT_EQ(resolve_isa(Isa::best), isa);
    out.assign(out.size(), -1.0f);
    gemm(a, pool);
    EXPECT_LT(rel_frobenius(out, ref), 1e-5) << to_string(isa);
  }
  setenv(kIsaEnvVar, "sse9", 1);
  expect_invalid([&] { gemm(a, pool); }, "ENCBENCH_ISA=sse9");
  if (!isa_available(Isa::avx512)) {
    setenv(kIsaEnvVar, "avx512", 1);
    expect_invalid([&] { gemm(a, pool); }, "this CPU (or build) has");
  }
}

TEST(Blocking, GemmBlocksFitTheCachesTheyAreDerivedFrom) {
  const std::vector<CacheSizes> machines = {
      {32 << 10, 1 << 20, 32 << 20},  // Zen 3/4/5 (this project's hosts)
      {48 << 10, 2 << 20, 96 << 20},  // large L2/L3
      {32 << 10, 256 << 10, 8 << 20},  // older Intel client
      {16 << 10, 128 << 10, 1 << 20},  // tiny
  };
  for (Isa isa : available_isas())
    for (const CacheSizes& c : machines) {
      const GemmBlocking b = gemm_blocking(isa, c);
      SCOPED_TRACE(std::string(to_string(isa)) + " L2 " + std::to_string(c.l2));
      EXPECT_GE(b.kc, 128);
      EXPECT_LE(b.kc, 384);
      EXPECT_EQ(b.kc % 16, 0);
      EXPECT_LE(static_cast<std::int64_t>(b.kc) * b.nr * 4, c.l2 / 4 + 16 * b.nr * 4);
      EXPECT_EQ(b.mc % b.mr, 0);
      EXPECT_GE(b.mc, b.mr);
      EXPECT_LE(static_cast<std::int64_t>(b.mc) * b.kc * 4,
                std::max<std::int64_t>(c.l2 / 2, static_cast<std::int64_t>(b.mr) * b.kc * 4));
      EXPECT_EQ(b.nc % b.nr, 0);
      EXPECT_GE(b.nc, 16 * b.nr);
      EXPECT_LE(b.nc, 8192);
    }
  const GemmBlocking zen = gemm_blocking(Isa::portable, machines[0]);
  EXPECT_EQ(zen.kc, 384);
  EXPECT_EQ(zen.mr, 4);
  EXPECT_EQ(zen.mc, 340);  // 512 KiB / (384 x 4 B) = 341 rows, down to a multiple of 4
}

TEST(Blocking, AttentionDefaultTileFollowsL2AndHeadDim) {
  EXPECT_EQ(attention_default_tiling(80, {32 << 10, 1 << 20, 32 << 20}).block_q, 256);
  EXPECT_EQ(attention_default_tiling(80, {32 << 10, 1 << 20, 32 << 20}).block_kv, 256);
  // 256 KiB L2: a quarter holds 102 rows of q+o (or keys of k+v) at d80 -> 64.
  EXPECT_EQ(attention_default_tiling(80, {32 << 10, 256 << 10, 8 << 20}).block_kv, 64);
  EXPECT_EQ(attention_default_tiling(128, {32 << 10, 512 << 10, 8 << 20}).block_q, 128);
  EXPECT_EQ(attention_default_tiling(64, {32 << 10, 8 << 20, 8 << 20}).block_kv, 256);
  const AttentionTiling used = resolve_tiling({}, 80);
  EXPECT_EQ(used.block_q, attention_default_tiling(80).block_q);
  EXPECT_EQ(resolve_tiling({40, 20}, 80).block_kv, 32);  // explicit: rounded up to 16 keys
}

struct BigShape {
  std::int64_t m, n, k;
  bool bias;
  const char* why;
};

TEST(Gemm, ShapesCrossingEveryBlockMatchTheReference) {
  const bool small = sanitized();
  const std::vector<BigShape> shapes = {
      {13, 37, 800, true, "three k blocks (accumulating into C), row and column edges"},
      {small ? 50 : 700, 70, 390, true, "two k blocks, several row blocks per worker, edges"},
      {3, 8200, 20, true, "two n blocks (nc <= 8192)"},
      {1, 1, 1, false, "single element"},
  };
  for (const BigShape& s : shapes) expect_gemm_matches_reference(s.m, s.n, s.k, s.bias, 4, s.why);
}

// The macro-kernel's column sub-blocks (nb > NR: each A panel against several B micro-panels)
// and small KC / MC, installed as the process choice: same result as the reference, with edges
// in every direction (rows, columns, the last sub-block, the last k slice).
TEST(Gemm, ColumnSubBlocksAndChosenBlockingMatchTheReference) {
  for (Isa isa : available_isas()) {
    const GemmBlocking def = gemm_blocking_for(isa);
    for (int nb_panels : {1, 3, 1000}) {
      TileChoice c;
      c.isa = isa, c.kc = 48, c.mc = 2 * def.mr, c.nb = nb_panels * def.nr;
      set_process_tiles(c);
      ASSERT_EQ(gemm_blocking_for(isa).nb, c.nb);
      expect_gemm_matches_reference(5 * def.mr + 3, 7 * def.nr + 5, 101, true, 7,
                                    std::string(to_string(isa)) + " nb=" + std::to_string(c.nb));
    }
  }
  set_process_tiles(TileChoice{});
}

}  // namespace
}  // namespace encbench::kernels::test
