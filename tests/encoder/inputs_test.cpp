// grid_thw, cu_seqlens and the Qwen2.5-VL window formula on hand-computed cases.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "harness/core/error.hpp"
#include "harness/encoder/inputs.hpp"
#include "harness/encoder/model_config.hpp"
#include "harness/vision/smart_resize.hpp"

using namespace encbench;
using namespace encbench::encoder;

namespace {
ModelConfig model(const std::string& name) { return load_model(name); }
std::vector<std::int32_t> range_step(int start, int stop, int step) {
  std::vector<std::int32_t> v;
  for (int x = start; x <= stop; x += step) v.push_back(x);
  return v;
}
}  // namespace

TEST(SmartResize, MultiplesOfFactorWithPythonRounding) {
  // 448 / 28 = 16 exactly.
  EXPECT_EQ(vision::smart_resize(448, 448, 28, 3136, 12845056).height, 448);
  // 1080 / 28 = 38.57 -> 39 * 28 = 1092; 1920 / 28 = 68.57 -> 69 * 28 = 1932.
  auto r = vision::smart_resize(1080, 1920, 28, 3136, 12845056);
  EXPECT_EQ(r.height, 1092);
  EXPECT_EQ(r.width, 1932);
  // Half to even: 42 / 28 = 1.5 -> 2 (even); 70 / 28 = 2.5 -> 2 (even).
  EXPECT_EQ(vision::smart_resize(42, 70, 28, 28 * 28, 12845056).height, 56);
  EXPECT_EQ(vision::smart_resize(42, 70, 28, 28 * 28, 12845056).width, 56);
}

TEST(SmartResize, ScalesDownAboveMaxAndUpBelowMin) {
  // 4000x3000 with max 1003520 (28*28*1280): beta = sqrt(12e6 / 1003520) = 3.4580...
  // h = floor(3000 / beta / 28) * 28 = floor(30.98) * 28 = 840; w = floor(41.31) * 28 = 1148.
  auto down = vision::smart_resize(3000, 4000, 28, 3136, 1003520);
  EXPECT_EQ(down.height, 840);
  EXPECT_EQ(down.width, 1148);
  EXPECT_LE(down.height * down.width, 1003520);
  // 30x30 with min 3136: beta = sqrt(3136 / 900) = 1.8667; ceil(30 * 1.8667 / 28) = ceil(2.0) = 2 -> 56.
  auto up = vision::smart_resize(30, 30, 28, 3136, 1003520);
  EXPECT_EQ(up.height, 56);
  EXPECT_EQ(up.width, 56);
}

TEST(SmartResize, RejectsBadSizes) {
  EXPECT_THROW(vision::smart_resize(0, 448, 28, 3136, 1003520), InvalidInput);
  EXPECT_THROW(vision::smart_resize(-5, 448, 28, 3136, 1003520), InvalidInput);
  // A side below the factor is no longer refused (HF transformers today): tests/vision/vision_geometry_test.cpp.
  EXPECT_THROW(vision::smart_resize(28, 28 * 201, 28, 3136, 1003520), InvalidInput); // aspect > 200
}

TEST(InputSpecs, ParseAndReject) {
  auto img = parse_image_spec("640x480");
  EXPECT_EQ(img.width, 640);
  EXPECT_EQ(img.height, 480);
  auto vid = parse_video_spec("8x448x224");
  EXPECT_EQ(vid.frames, 8);
  EXPECT_EQ(vid.width, 448);
  EXPECT_EQ(vid.height, 224);
  EXPECT_THROW(parse_image_spec("0x448"), InvalidInput);
  EXPECT_THROW(parse_image_spec("-448x448"), InvalidInput);
  EXPECT_THROW(parse_image_spec("448"), InvalidInput);
  EXPECT_THROW(parse_image_spec("448xabc"), InvalidInput);
  EXPECT_THROW(parse_image_spec("100000x100000"), InvalidInput);  // too many pixels
  EXPECT_THROW(parse_video_spec("8x448"), InvalidInput);
  try {
    parse_image_spec("0x448");
    FAIL();
  } catch (const InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find("positive"), std::string::npos) << e.what();
  }
}

TEST(Grid, ImageAndVideo) {
  const auto m = model("qwen2.5-vl-7b");
  EXPECT_EQ(grid_for(parse_image_spec("448x448"), m), (vision::GridTHW{1, 32, 32}));
  // Video: 8 frames / temporal 2 = 4; video max pixels 768*28*28 keeps 448x448 (256 tokens... 1024 patches).
  EXPECT_EQ(grid_for(parse_video_spec("8x448x448"), m), (vision::GridTHW{4, 32, 32}));
  // Odd frame counts are padded by repeating the last frame: 7 -> t = 4.
  EXPECT_EQ(grid_for(parse_video_spec("7x448x448"), m).t, 4);
  // Qwen3-VL: patch 16, factor 32: 448 / 32 = 14 -> 448 px = 28 patches; min pixels 65536 = 256^2.
  const auto q3 = model("qwen3-vl-8b");
  EXPECT_EQ(grid_for(parse_image_spec("448x448"), q3), (vision::GridTHW{1, 28, 28}));
}

TEST(CuSeqlens, RepeatHWByT) {
  EXPECT_EQ(build_cu_seqlens({{1, 32, 32}}), (std::vector<std::int32_t>{0, 1024}));
  EXPECT_EQ(build_cu_seqlens({{1, 32, 32}, {1, 16, 20}}), (std::vector<std::int32_t>{0, 1024, 1344}));
  EXPECT_EQ(build_cu_seqlens({{3, 4, 6}}), (std::vector<std::int32_t>{0, 24, 48, 72}));
}

TEST(WindowIndex, Image448GivesSixteenWindowsOf64) {
  const auto m = model("qwen2.5-vl-7b");
  const auto plan = build_window_plan({{1, 32, 32}}, m);
  EXPECT_EQ(plan.cu_window_seqlens, range_step(0, 1024, 64));
  // Before unique_consecutive: 5x5 windows (a full empty pad window per side, 9 empty), row-major,
  // so each row ends with a repeated endpoint (256 twice, ...) and the last row repeats 1024:
  // 1024 appears after window (3,3), (3,4) and the five windows of row 4.
  EXPECT_EQ(plan.raw_cu_window_seqlens.size(), 26u);
  EXPECT_EQ(std::count(plan.raw_cu_window_seqlens.begin(), plan.raw_cu_window_seqlens.end(), 256), 2);
  EXPECT_EQ(std::count(plan.raw_cu_window_seqlens.begin(), plan.raw_cu_window_seqlens.end(), 1024), 7);
  // The first window holds merged tokens rows 0..3, cols 0..3 of the 16x16 merged grid.
  ASSERT_EQ(plan.window_index.size(), 256u);
  EXPECT_EQ((std::vector<std::int32_t>(plan.window_index.begin(), plan.window_index.begin() + 8)),
            (std::vector<std::int32_t>{0, 1, 2, 3, 16, 17, 18, 19}));
  // A permutation.
  auto sorted = plan.window_index;
  std::sort(sorted.begin(), sorted.end());
  for (std::size_t i = 0; i < sorted.size(); ++i) EXPECT_EQ(sorted[i], static_cast<std::int32_t>(i));
}

TEST(WindowIndex, SizesNotMultipleOfWindow) {
  const auto m = model("qwen2.5-vl-7b");
  // grid 1x20x12 -> merged 10x6; ws 4: windows rows [4,4,2] x cols [4,2] -> sizes
  // 16,8 | 16,8 | 8,4 merged tokens -> x4 patches: 64,32,64,32,32,16.
  const auto plan = build_window_plan({{1, 20, 12}}, m);
  EXPECT_EQ(plan.cu_window_seqlens, (std::vector<std::int32_t>{0, 64, 96, 160, 192, 224, 240}));
  // Window (0,1) starts at merged token (0,4) = 4, then 5, then row 1: 10, 11.
  EXPECT_EQ((std::vector<std::int32_t>(plan.window_index.begin() + 16, plan.window_index.begin() + 20)),
            (std::vector<std::int32_t>{4, 5, 10, 11}));
}

TEST(WindowIndex, SeveralImagesAndVideoFrames) {
  const auto m = model("qwen2.5-vl-7b");
  // Two images: 448x448 (16 windows of 64) then grid 1x8x8 (merged 4x4 = one window of 64).
  const auto two = build_window_plan({{1, 32, 32}, {1, 8, 8}}, m);
  auto expect = range_step(0, 1024, 64);
  expect.push_back(1088);
  EXPECT_EQ(two.cu_window_seqlens, expect);
  EXPECT_EQ(two.window_index[256], 256);  // second image offset by the first's merged tokens
  // Video t = 2, grid 2x8x16: per frame merged 4x8 -> 2 windows of 16 merged tokens each.
  const auto vid = build_window_plan({{2, 8, 16}}, m);
  EXPECT_EQ(vid.cu_window_seqlens, (std::vector<std::int32_t>{0, 64, 128, 192, 256}));
  EXPECT_EQ(vid.window_index[32], 32);  // frame 2 starts after frame 1's 32 merged tokens
  const auto cu = build_cu_seqlens({{2, 8, 16}});
  EXPECT_EQ(cu, (std::vector<std::int32_t>{0, 128, 256}));
}

TEST(InputPlan, SegmentIdsAgreeWithWindowFormula) {
  const auto m = model("tiny-qwen2.5-vl");
  const std::vector<vision::GridTHW> grids{{1, 20, 12}, {2, 8, 16}, {1, 32, 32}};
  const auto plan = plan_inputs(grids, m);
  // Permuting the geometric window ids by window_index must give contiguous runs whose
  // lengths are exactly cu_window_seqlens.
  const int unit = m.merge_unit();
  std::vector<std::int32_t> permuted;
  for (auto g : plan.window_index)
    for (int u = 0; u < unit; ++u) permuted.push_back(plan.window_segment_id[static_cast<std::size_t>(g * unit + u)]);
  std::vector<std::int32_t> cu{0};
  for (std::size_t i = 1; i <= permuted.size(); ++i)
    if (i == permuted.size() || permuted[i] != permuted[i - 1]) cu.push_back(static_cast<std::int32_t>(i));
  EXPECT_EQ(cu, plan.cu_window_seqlens);
  // Full segments: one per image and per video frame.
  EXPECT_EQ(plan.full_segment_id.back(), 3);
  EXPECT_EQ(plan.cu_seqlens.size(), 5u);
}
