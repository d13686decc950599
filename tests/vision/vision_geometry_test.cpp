// The one smart_resize (vision::smart_resize, which the encoder and the server's geometry use) pinned where the
// two copies this project had disagreed: encoder/inputs.cpp refused a side below the factor and
// clamped every branch to one factor after the fact; server/vision_geometry.cpp followed HF
// transformers' current rules (models/qwen2_vl/image_processing_qwen2_vl.py):
//
//   h_bar = round(h / f) * f, w_bar = round(w / f) * f        (Python round: half to even)
//   if h_bar * w_bar > max:  beta = sqrt(h * w / max); side = max(f, floor(side / beta / f) * f)
//   elif h_bar * w_bar < min: beta = sqrt(min / (h * w)); side = ceil(side * beta / f) * f
//   max(h, w) / min(h, w) > 200 is refused
//
// Every expected value below is worked by hand from those lines (shown beside each case), with
// inputs chosen so that no quotient lands on an integer where floating point could tip a ceil.
#include <gtest/gtest.h>

#include "harness/core/error.hpp"
#include "harness/vision/smart_resize.hpp"
#include "harness/vision/vision_geometry.hpp"

namespace encbench {
namespace {

constexpr long long kMin = 3136, kMax = 1003520;  // 56*56 and vLLM's serving cap for Qwen2.5-VL

void expect_resized(long long h, long long w, long long f, long long min, long long max, long long eh, long long ew) {
  const vision::ResizedSize r = vision::smart_resize(h, w, f, min, max);
  EXPECT_EQ(r.height, eh) << h << "x" << w << " factor " << f;
  EXPECT_EQ(r.width, ew) << h << "x" << w << " factor " << f;
}

// The old encoder copy threw "smaller than the resize factor" for each of these.
TEST(SmartResizeHf, SidesBelowTheFactorAreResizedNotRefused) {
  // round(20/28) = round(0.714) = 1 -> 28; round(448/28) = 16 -> 448; 28*448 = 12544 in range.
  expect_resized(20, 448, 28, kMin, kMax, 28, 448);
  // round(10/28) = 0 and round(12/28) = 0: 0 < 3136, so beta = sqrt(3136/120) = 5.1121;
  // 10*5.1121/28 = 1.826 -> ceil 2 -> 56; 12*5.1121/28 = 2.191 -> ceil 3 -> 84.
  expect_resized(10, 12, 28, kMin, kMax, 56, 84);
  // Aspect ratio exactly 200 is allowed: round(1/28) = 0, round(200/28) = 7 -> 196; 0 < 3136, so
  // beta = sqrt(3136/200) = 3.9598; 1*3.9598/28 = 0.141 -> 1 -> 28; 200*3.9598/28 = 28.28 -> 29 -> 812.
  expect_resized(1, 200, 28, kMin, kMax, 28, 812);
  // Qwen3-VL (factor 32, min 65536): round(20/32) = 1, round(24/32) = 1 -> 32*32 = 1024 < 65536;
  // beta = sqrt(65536/480) = 11.685; 20*11.685/32 = 7.303 -> 8 -> 256; 24*11.685/32 = 8.764 -> 9 -> 288.
  expect_resized(20, 24, 32, 65536, 16777216, 256, 288);
}

// Scaling down may floor a thin side to 0: HF keeps one factor there (and only there), even though
// the result then exceeds max_pixels. Both old copies agreed on this one (the encoder through its
// clamp after every branch, which no other branch can reach with min_pixels > 0).
TEST(SmartResizeHf, ThinSideFloorsToOneFactorWhenScalingDown) {
  // round(30/28) = 1 -> 28; round(5000/28) = round(178.57) = 179 -> 5012; 28*5012 = 140336 > 50000:
  // beta = sqrt(150000/50000) = 1.7321; 30/1.7321/28 = 0.619 -> 0 -> max(28, 0) = 28;
  // 5000/1.7321/28 = 103.1 -> 103 -> 2884.
  expect_resized(30, 5000, 28, kMin, 50000, 28, 2884);
}

TEST(SmartResizeHf, RefusesWhatPythonCannotAnswer) {
  EXPECT_THROW(vision::smart_resize(1, 201, 28, kMin, kMax), InvalidInput);   // aspect ratio 201 > 200
  EXPECT_THROW(vision::smart_resize(0, 448, 28, kMin, kMax), InvalidInput);   // ZeroDivisionError in Python
  EXPECT_THROW(vision::smart_resize(448, -1, 28, kMin, kMax), InvalidInput);
  EXPECT_THROW(vision::smart_resize(448, 448, 0, kMin, kMax), InvalidInput);  // no factor
  EXPECT_THROW(vision::smart_resize(448, 448, 28, 0, kMax), InvalidInput);    // min_pixels 0
  EXPECT_THROW(vision::smart_resize(448, 448, 28, kMax, kMin), InvalidInput); // min above max
  try {
    (void)vision::smart_resize(1, 201, 28, kMin, kMax);
  } catch (const InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find("aspect ratio must be smaller than 200"), std::string::npos) << e.what();
  }
}

// The server's geometry goes through the same function: a 20 x 24 image on Qwen3-VL is the
// 256 x 288 above, 16 x 18 patches of 16, and 16*18/2^2 = 72 LM tokens.
TEST(SmartResizeHf, ServerGeometryUsesTheOneResize) {
  const vision::VisionGeometry g = vision::vision_geometry_for("qwen3-vl-8b");
  const vision::GridTHW grid = vision::image_grid(g, 20, 24);
  EXPECT_EQ(grid, (vision::GridTHW{1, 16, 18}));
  EXPECT_EQ(vision::image_token_count(g, grid), 72);
}

}  // namespace
}  // namespace encbench
