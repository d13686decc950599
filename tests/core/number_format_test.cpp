// The one number formatter: each format against values worked out by hand (the seeds' tables
// group thousands and drop the decimals of whole numbers; printf's rules for the rest).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "harness/core/number_format.hpp"

namespace encbench {
namespace {

TEST(NumberFormat, GroupedAsTheSeedsTables) {
  EXPECT_EQ(numbers::grouped(1207.07), "1,207.07");
  EXPECT_EQ(numbers::grouped(2475), "2,475");                  // whole: no decimals
  EXPECT_EQ(numbers::grouped(-1234567.891), "-1,234,567.89");  // rounded to two
  EXPECT_EQ(numbers::grouped(999.999), "1,000.00");            // the carry reaches the grouping
  EXPECT_EQ(numbers::grouped(0.001234), "0.00123");            // small fractions keep 3 digits
  EXPECT_EQ(numbers::grouped(0), "0");
  EXPECT_EQ(numbers::grouped(12.5), "12.50");
  EXPECT_EQ(numbers::grouped(std::numeric_limits<double>::infinity()), "inf");
  EXPECT_EQ(numbers::grouped(-std::numeric_limits<double>::infinity()), "-inf");
  EXPECT_EQ(numbers::grouped(std::nan("")), "nan");
}

TEST(NumberFormat, FixedSignedSignificantAndPercent) {
  EXPECT_EQ(numbers::fixed(7328.8649, 1), "7328.9");
  EXPECT_EQ(numbers::fixed(2.5, 0), "2");  // printf rounds half to even
  EXPECT_EQ(numbers::fixed(std::numeric_limits<double>::infinity(), 2), "inf");
  EXPECT_EQ(numbers::fixed(1e300, 2).size(), 304u);  // longer than any small buffer: not cut
  EXPECT_EQ(numbers::signed_fixed(0, 1), "+0.0");
  EXPECT_EQ(numbers::signed_fixed(-0.04, 1), "-0.0");
  EXPECT_EQ(numbers::signed_fixed(3.26, 1), "+3.3");
  EXPECT_EQ(numbers::significant(1234567, 4), "1.235e+06");
  EXPECT_EQ(numbers::significant(0.5, 4), "0.5");
  EXPECT_EQ(numbers::percent_of_fraction(0.125, 1), "12.5%");
  EXPECT_EQ(numbers::percent_of_fraction(-0.02, 0), "-2%");
}

TEST(NumberFormat, ExactMicrosecondsFromNanoseconds) {
  // An absolute torch_npu time has 19 significant digits: a double would print ...410.250.
  EXPECT_EQ(numbers::exact_us(1736405443881410320LL), "1736405443881410.320");
  EXPECT_EQ(numbers::exact_us(1700000000000020500LL), "1700000000000020.500");
  EXPECT_EQ(numbers::exact_us(0), "0.000");
  EXPECT_EQ(numbers::exact_us(7), "0.007");
  EXPECT_EQ(numbers::exact_us(-1500), "-1.500");
  EXPECT_EQ(numbers::exact_us(INT64_MIN), "-9223372036854775.808");
}

}  // namespace
}  // namespace encbench
