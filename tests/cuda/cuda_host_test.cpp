// Tests of the CUDA backend that need no GPU: spec parsing, the "no CUDA device" error, clock
// calibration, allocator size classes, and the varlen tile planning shared by host and device.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "harness/core/error.hpp"
#include "harness/device_cuda/cuda_device.hpp"
#include "kernels/cuda/cuda_kernels.hpp"

namespace encbench {
namespace {

namespace kc = kernels::cuda;

TEST(CudaSpec, ParsesOrdinals) {
  EXPECT_EQ(device::parse_cuda_ordinal("cuda"), 0);
  EXPECT_EQ(device::parse_cuda_ordinal("cuda:0"), 0);
  EXPECT_EQ(device::parse_cuda_ordinal("cuda:3"), 3);
  for (const char* bad : {"cuda:", "cuda:-1", "cuda:x", "cuda:1x", "gpu", "cpu", "cuda0"})
    EXPECT_THROW(device::parse_cuda_ordinal(bad), InvalidInput) << bad;
}

TEST(CudaDevice, WithoutGpuIsAClearInvalidInput) {
  std::string why;
  if (kc::device_count(&why) > 0) GTEST_SKIP() << "a CUDA device is present; covered by cuda_gpu_tests";
  device::DeviceOptions options;
  options.spec = "cuda:0";
  try {
    (void)device::make_cuda_device(options);
    FAIL() << "make_cuda_device succeeded without a GPU";
  } catch (const InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find("no CUDA device"), std::string::npos) << e.what();
  }
  options.spec = "cuda:zero";
  EXPECT_THROW((void)device::make_cuda_device(options), InvalidInput);
}

// Through the generic factory too, once the lead wires make_device("cuda[:N]") to
// make_cuda_device (docs/cuda.md); before that the device library says CUDA is not built in.
TEST(CudaDevice, GenericFactoryWithoutGpuIsAnInvalidInput) {
  std::string why;
  if (kc::device_count(&why) > 0) GTEST_SKIP() << "a CUDA device is present; covered by cuda_gpu_tests";
  device::DeviceOptions options;
  options.spec = "cuda";
  try {
    (void)device::make_device(options);
    FAIL() << "make_device(cuda) succeeded without a GPU";
  } catch (const InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find("CUDA"), std::string::npos) << e.what();
  }
}

TEST(ClockCalibration, PicksTheTightestBracket) {
  const std::int64_t offset = 1'700'000'000'000'000'000LL - 123'456'789LL;  // realtime vs steady
  std::vector<device::ClockSample> samples;
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> width(50, 5000), where(0, 100);
  std::int64_t host = 1'000'000;
  for (int i = 0; i < 32; ++i) {
    const int w = width(rng);
    const std::int64_t read_at = host + w * where(rng) / 100;  // the CUPTI read inside the bracket
    samples.push_back({host, read_at + offset, host + w});
    host += 10'000;
  }
  samples.push_back({host, host + 5 + offset, host + 10});  // the tightest: width 10
  const auto fitted = device::fit_clock_calibration(samples.data(), samples.size());
  EXPECT_LE(std::llabs(fitted.offset_ns - offset), 5);
  EXPECT_EQ(fitted.uncertainty_ns, 5);
  EXPECT_EQ(fitted.to_host(static_cast<std::uint64_t>(host + 5 + offset)), host + 5 - (fitted.offset_ns - offset));
  EXPECT_THROW(device::fit_clock_calibration(samples.data(), 0), InvalidInput);
  const device::ClockSample backwards{10, 0, 5};
  EXPECT_THROW(device::fit_clock_calibration(&backwards, 1), InvalidInput);
}

TEST(CachingAllocator, SizeClassesCoverRequestsWithBoundedWaste) {
  std::mt19937_64 rng(3);
  std::uniform_int_distribution<std::size_t> bytes(1, std::size_t{64} << 20);
  for (int i = 0; i < 2000; ++i) {
    const std::size_t b = bytes(rng);
    const std::size_t block = device::caching_block_size(b);
    ASSERT_GE(block, b);
    ASSERT_LT(block - b, b <= (1u << 20) ? 512u : (2u << 20));
    ASSERT_EQ(device::caching_block_size(block), block) << "a class maps to itself";
  }
}

// Independent enumeration of the real tiles: (seq, q_begin) for every 64-row tile of every segment.
std::set<std::pair<int, int>> expected_tiles(const std::vector<std::int32_t>& cu, int block_m) {
  std::set<std::pair<int, int>> tiles;
  for (std::size_t s = 0; s + 1 < cu.size(); ++s)
    for (int q = 0; q < cu[s + 1] - cu[s]; q += block_m) tiles.insert({static_cast<int>(s), q});
  return tiles;
}

std::vector<std::int32_t> random_cu(std::mt19937& rng, int segments, int max_len, int empty_tail) {
  std::uniform_int_distribution<int> len(0, max_len);
  std::vector<std::int32_t> cu{0};
  for (int s = 0; s < segments; ++s) cu.push_back(cu.back() + len(rng));
  for (int s = 0; s < empty_tail; ++s) cu.push_back(cu.back());  // padded capacity
  return cu;
}

TEST(VarlenTilePlan, EveryTileOfEverySegmentExactlyOnce) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 300; ++trial) {
    // 64: the WMMA kernel and the 4-warp mma kernel; 128: the 8-warp mma kernel.
    const int block_m = trial % 2 ? 128 : kc::kAttentionBlockM;
    const int segments = 1 + static_cast<int>(rng() % 40);
    const int max_len = std::vector<int>{1, 63, 64, 65, 300, 4096}[rng() % 6];
    const auto cu = random_cu(rng, segments, max_len, static_cast<int>(rng() % 4));
    const int num = static_cast<int>(cu.size()) - 1;
    const std::int32_t total = cu.back();
    const auto grid = kc::varlen_grid_tiles(total, num, block_m);
    std::multiset<std::pair<int, int>> seen;
    for (int vt = 0; vt < grid; ++vt) {
      const auto loc = kc::locate_varlen_tile(cu.data(), num, vt, block_m, total);
      if (loc.seq < 0) continue;
      ASSERT_EQ(loc.seq_start, cu[loc.seq]);
      ASSERT_EQ(loc.seq_len, cu[loc.seq + 1] - cu[loc.seq]);
      ASSERT_EQ(loc.q_begin % block_m, 0);
      seen.insert({loc.seq, loc.q_begin});
    }
    const auto expected = expected_tiles(cu, block_m);
    ASSERT_EQ(seen.size(), expected.size()) << "trial " << trial << ": duplicate or missing tiles";
    ASSERT_TRUE(std::equal(seen.begin(), seen.end(), expected.begin()));
    // Idle blocks are bounded by one per segment.
    ASSERT_LE(grid - static_cast<std::int64_t>(expected.size()), num);
  }
}

TEST(VarlenTilePlan, MalformedCuSeqlensGiveIdleBlocksNotOutOfRange) {
  const std::vector<std::int32_t> decreasing{0, 100, 50, 200};
  const std::vector<std::int32_t> beyond{0, 100, 900};
  for (const auto* cu : {&decreasing, &beyond}) {
    const int num = static_cast<int>(cu->size()) - 1;
    for (int vt = 0; vt < 40; ++vt) {
      const auto loc = kc::locate_varlen_tile(cu->data(), num, vt, 64, 200);
      if (loc.seq < 0) continue;
      EXPECT_GE(loc.seq_start, 0);
      EXPECT_LE(loc.seq_start + loc.seq_len, 200);
      EXPECT_LT(loc.q_begin, loc.seq_len);
    }
  }
  EXPECT_LT(kc::locate_varlen_tile(decreasing.data(), 0, 0, 64, 200).seq, 0);
}

TEST(UnpadWorkList, ListsExactlyTheRealTiles) {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 100; ++trial) {
    const auto cu = random_cu(rng, 1 + static_cast<int>(rng() % 30), 500, 0);
    std::vector<std::int32_t> lens;
    for (std::size_t s = 0; s + 1 < cu.size(); ++s) lens.push_back(cu[s + 1] - cu[s]);
    const auto work = kc::build_unpad_work_list(lens.data(), static_cast<int>(lens.size()));
    ASSERT_EQ(work.size() % 3, 0u);
    std::set<std::pair<int, int>> listed;
    for (std::size_t i = 0; i < work.size(); i += 3) {
      const auto seq = std::find(cu.begin(), cu.end(), work[i]) - cu.begin();
      // With empty segments several cu entries share a start: pick the one of this length.
      std::size_t s = static_cast<std::size_t>(seq);
      while (s + 1 < cu.size() && cu[s + 1] - cu[s] != work[i + 1]) ++s;
      ASSERT_LT(s + 1, cu.size());
      ASSERT_LT(work[i + 2], work[i + 1]);
      listed.insert({static_cast<int>(s), work[i + 2]});
    }
    ASSERT_EQ(listed, expected_tiles(cu, kc::kAttentionBlockM));
  }
  const std::int32_t negative[] = {4, -1};
  EXPECT_THROW(kc::build_unpad_work_list(negative, 2), InvalidInput);
  EXPECT_TRUE(kc::build_unpad_work_list(nullptr, 0).empty());
}

TEST(CudaKernels, HeadDimsAndSharedMemoryFitHopper) {
  for (int d : {64, 72, 80, 128}) {
    EXPECT_TRUE(kc::attention_head_dim_supported(d));
    EXPECT_GT(kc::attention_shared_bytes(d), 0u);
    EXPECT_LE(kc::attention_shared_bytes(d), std::size_t{227} * 1024) << "above sm_90's opt-in limit";
  }
  for (int d : {0, 32, 96, 100, 256}) EXPECT_FALSE(kc::attention_head_dim_supported(d));
  for (int d : {64, 72, 80, 128})
    for (int block : {64, 128}) {
      EXPECT_GT(kc::attention_mma_shared_bytes(d, block), 0u);
      EXPECT_LE(kc::attention_mma_shared_bytes(d, block), std::size_t{227} * 1024) << "above sm_90's opt-in limit";
    }
  // Q + two K and two V buffers of 64 rows, rows padded by 16 bytes: 80 -> (64 + 256) * 88 * 2.
  EXPECT_EQ(kc::attention_mma_shared_bytes(80, 64), std::size_t{(64 + 256) * 88 * 2});
  EXPECT_EQ(kc::attention_mma_shared_bytes(72, 128), std::size_t{(128 + 256) * 88 * 2});
  EXPECT_EQ(kc::attention_mma_shared_bytes(80, 96), 0u);
  EXPECT_EQ(kc::attention_mma_shared_bytes(96, 64), 0u);
  EXPECT_EQ(kc::mma_head_dim(72), 80);
  EXPECT_EQ(kc::mma_head_dim(80), 80);
}

TEST(CudaKernels, BadArgumentsAreRejectedBeforeAnyLaunch) {
  kc::AttentionTensors t;
  t.num_heads = 16;
  t.head_dim = 80;
  t.total_tokens = 128;
  const std::int32_t* cu = nullptr;
  EXPECT_THROW(kc::fused_varlen_attention(t, cu, 1, nullptr), InvalidInput);  // null tensors
  alignas(16) static const char storage[64] = {};
  t.q = t.k = t.v = storage;
  t.out = const_cast<char*>(storage);
  t.head_dim = 96;
  EXPECT_THROW(kc::fused_varlen_attention(t, cu, 1, nullptr), InvalidInput);  // head dim
  t.head_dim = 80;
  t.q_stride = 12;  // not a multiple of 8 and < H*D
  EXPECT_THROW(kc::fused_varlen_attention(t, cu, 1, nullptr), InvalidInput);
  t.q_stride = 0;
  EXPECT_THROW(kc::fused_varlen_attention(t, cu, 1, nullptr), InvalidInput);  // null cu
  EXPECT_THROW(kc::flash_unpad_attention(t, 80, nullptr, 1, nullptr), InvalidInput);  // not 128
  EXPECT_THROW(kc::fused_varlen_attention_mma(t, cu, 1, nullptr), InvalidInput);      // null cu
  EXPECT_THROW(kc::flash_unpad_attention_mma(t, 80, nullptr, 1, nullptr), InvalidInput);  // not 128
  alignas(4) static const std::int32_t cu_host[2] = {0, 128};
  EXPECT_THROW(kc::fused_varlen_attention_mma(t, cu_host, 1, nullptr, 96), InvalidInput);  // block size
  t.head_dim = 96;
  EXPECT_THROW(kc::fused_varlen_attention_mma(t, cu_host, 1, nullptr), InvalidInput);  // head dim
  t.head_dim = 80;
  EXPECT_THROW(kc::pad_last_dim(storage, 4, 100, 80, nullptr, nullptr), InvalidInput);
  kc::LayoutCopy copy;
  copy.src = storage;
  copy.dst = const_cast<char*>(storage);
  copy.rank = 5;
  EXPECT_THROW(kc::layout_copy(copy, nullptr), InvalidInput);
}

}  // namespace
}  // namespace encbench
