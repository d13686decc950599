#include "harness/core/mix64.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cstdint>

using namespace encbench;

// The first outputs of splitmix64 from state 0, as Vigna's reference C code (splitmix64.c) gives
// them (also computed independently in Python with 64-bit masking).
TEST(Mix64, GeneratorMatchesReferenceFromStateZero) {
  std::uint64_t state = 0;
  EXPECT_EQ(splitmix64_next(state), 0xe220a8397b1dcdafull);
  EXPECT_EQ(splitmix64_next(state), 0x6e789e6aa1b965f4ull);
  EXPECT_EQ(splitmix64_next(state), 0x06c45d188009454full);
  EXPECT_EQ(state, 3 * kSplitmix64Gamma);
}

TEST(Mix64, HashIsTheGeneratorsStepAndTheFinaliserAlone) {
  EXPECT_EQ(splitmix64_finalise(0), 0u);  // the finaliser's fixed point, which mix64 avoids
  EXPECT_EQ(splitmix64_finalise(1), 0x5692161d100b05e5ull);
  EXPECT_EQ(mix64(0), 0xe220a8397b1dcdafull);
  for (std::uint64_t x : {0ull, 1ull, 12345ull, ~0ull}) {
    std::uint64_t state = x;
    EXPECT_EQ(mix64(x), splitmix64_next(state));
  }
  static_assert(mix64(0) == 0xe220a8397b1dcdafull, "usable in constant expressions");
}

// Why it is used for hashing ids: neighbouring inputs give outputs about 32 bits apart.
TEST(Mix64, NeighbouringInputsDifferInAboutHalfTheBits) {
  int total = 0;
  constexpr int kPairs = 1000;
  for (std::uint64_t x = 0; x < kPairs; ++x) {
    const int flipped = std::popcount(mix64(x) ^ mix64(x + 1));
    EXPECT_GE(flipped, 10) << x;
    EXPECT_LE(flipped, 54) << x;
    total += flipped;
  }
  EXPECT_NEAR(static_cast<double>(total) / kPairs, 32.0, 1.0);
}
