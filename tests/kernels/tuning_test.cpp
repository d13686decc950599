// The measured tile choice: registered candidates, the forced-tile syntax and its refusals, the
// process-wide choice the kernels read, and the calibration cache (hit, miss, invalidation by
// binary or CPU, corrupt and foreign files). The calibration is injected: no timing here.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "harness/core/error.hpp"
#include "harness/tuning/tile_cache.hpp"
#include "harness/tuning/tile_calibration.hpp"
#include "harness/tuning/tile_selection.hpp"
#include "kernels/attention.hpp"
#include "kernels/blocking.hpp"
#include "kernels/tuning.hpp"

namespace encbench::tuning::test {
namespace {

using kernels::AttentionTiling;
using kernels::CacheSizes;
using kernels::GemmBlocking;
using kernels::Isa;
using kernels::TileChoice;

const CacheSizes kZen4{32 << 10, 1 << 20, 32 << 20};
const CacheSizes kEmeraldRapids{48 << 10, 2 << 20, 160 << 20};

std::string invalid_message(const std::function<void()>& f) {
  try {
    f();
  } catch (const InvalidInput& e) {
    return e.what();
  }
  return "(no InvalidInput)";
}

TEST(TileCandidates, DefaultFirstDistinctAndWholeRegisterTiles) {
  for (Isa isa : {Isa::avx2, Isa::avx512, Isa::portable}) {
    if (!kernels::isa_available(isa)) continue;
    const GemmBlocking def = kernels::gemm_blocking(isa, kZen4);
    const auto c = kernels::gemm_blocking_candidates(isa, kZen4);
    ASSERT_GE(c.size(), 4u);
    EXPECT_EQ(c[0].kc, def.kc);
    EXPECT_EQ(c[0].mc, def.mc);
    for (std::size_t i = 0; i < c.size(); ++i) {
      EXPECT_EQ(c[i].mc % def.mr, 0) << i;
      EXPECT_EQ(c[i].nb % def.nr, 0) << i;
      EXPECT_LE(std::int64_t{c[i].nb} * c[i].kc * 4, kZen4.l2 / 2) << i;  // B slice in half of L2
      EXPECT_LE(std::int64_t{c[i].mc} * c[i].kc * 4, kZen4.l2) << i;  // the A block fits L2
      for (std::size_t j = 0; j < i; ++j)
        EXPECT_FALSE(c[i].kc == c[j].kc && c[i].mc == c[j].mc && c[i].nb == c[j].nb)
            << i << " repeats " << j;
    }
  }
}

TEST(TileCandidates, OpenblasSkylakeXBlockingOnlyWhereTheL2HoldsIt) {
  if (!kernels::isa_available(Isa::avx2)) GTEST_SKIP() << "no AVX2";
  auto has_448 = [](const std::vector<GemmBlocking>& c) {
    for (const auto& b : c)
      if (b.kc == 448) return true;
    return false;
  };
  EXPECT_FALSE(has_448(kernels::gemm_blocking_candidates(Isa::avx2, kZen4)));  // 1.1 MiB > 3/4 MiB
  EXPECT_TRUE(has_448(kernels::gemm_blocking_candidates(Isa::avx2, kEmeraldRapids)));
  // 2 MiB L2: the default's MC doubles (packed A block in half of L2: 2 MiB / 2 / (384 x 4) = 682).
  EXPECT_EQ(kernels::gemm_blocking_candidates(Isa::avx2, kEmeraldRapids)[0].mc, 678);
  const auto a = kernels::attention_tile_candidates(kZen4);
  ASSERT_EQ(a.size(), 9u);  // 3 x 3, default (256 x 256 at 1 MiB) first
  EXPECT_EQ(a[0].block_q, 256);
  EXPECT_EQ(a[0].block_kv, 256);
}

TEST(TileSpec, ParsesAnySubsetAndFormatsBack) {
  const TileChoice c =
      kernels::parse_tile_spec("bkv=512,kc=256,nb=48,mc=252,bq=64", "t", Isa::portable, kZen4);
  EXPECT_EQ(c.kc, 256);
  EXPECT_EQ(c.mc, 252);
  EXPECT_EQ(c.attention.block_q, 64);
  EXPECT_EQ(c.attention.block_kv, 512);
  EXPECT_EQ(c.nb, 48);
  EXPECT_EQ(kernels::format_tile_spec(c), "kc=256,mc=252,nb=48,bq=64,bkv=512");
  const TileChoice only = kernels::parse_tile_spec("bq=128", "t", Isa::portable, kZen4);
  EXPECT_EQ(only.kc, 0);
  EXPECT_EQ(kernels::format_tile_spec(only), "bq=128");
}

TEST(TileSpec, RefusesWhatThisCpuCannotRunAndNamesWhatItHas) {
  const int mr = kernels::gemm_blocking(Isa::portable, kZen4).mr;  // 4
  const std::string not_whole = invalid_message([&] {
    kernels::parse_tile_spec("mc=" + std::to_string(mr * 10 + 1), "--tile", Isa::portable, kZen4);
  });
  EXPECT_NE(not_whole.find("--tile: mc=41 must be a multiple of MR=4"), std::string::npos) << not_whole;
  EXPECT_NE(not_whole.find("this CPU has"), std::string::npos) << not_whole;
  EXPECT_NE(not_whole.find("L2 1024 KiB"), std::string::npos) << not_whole;
  const std::string too_big = invalid_message(
      [] { kernels::parse_tile_spec("kc=2048,mc=400", "ENCBENCH_TILE", Isa::portable, kZen4); });
  EXPECT_NE(too_big.find("ENCBENCH_TILE: the packed A block (mc x kc x 4 B = 3200 KiB) does not fit in L2"),
            std::string::npos) << too_big;
  // The same A block fits a 4 MiB L2.
  EXPECT_NO_THROW(kernels::parse_tile_spec("kc=2048,mc=400", "t", Isa::portable,
                                           CacheSizes{32 << 10, 4 << 20, 32 << 20}));
  EXPECT_NE(invalid_message([] { kernels::parse_tile_spec("kc=100", "t", Isa::portable, kZen4); })
                .find("kc=100 must be a multiple of 16"), std::string::npos);
  EXPECT_NE(invalid_message([] { kernels::parse_tile_spec("nb=40", "t", Isa::portable, kZen4); })
                .find("nb=40 must be a multiple of NR=16"), std::string::npos);
  EXPECT_NE(invalid_message([] { kernels::parse_tile_spec("kc=1024,nb=512", "t", Isa::portable, kZen4); })
                .find("the B slice (kc x nb x 4 B = 2048 KiB) does not fit in L2"), std::string::npos);
  EXPECT_NE(invalid_message([] { kernels::parse_tile_spec("bq=8", "t", Isa::portable, kZen4); })
                .find("attention block 8 must be in [16, 1024]"), std::string::npos);
  EXPECT_NE(invalid_message([] { kernels::parse_tile_spec("tile=3", "t", Isa::portable, kZen4); })
                .find("unknown key 'tile'"), std::string::npos);
  EXPECT_NE(invalid_message([] { kernels::parse_tile_spec("kc=3x", "t", Isa::portable, kZen4); })
                .find("'kc=3x' is not a positive integer"), std::string::npos);
  EXPECT_NE(invalid_message([] { kernels::parse_tile_spec("", "t", Isa::portable, kZen4); })
                .find("empty tile"), std::string::npos);
}

TEST(ProcessTiles, ReplaceTheDefaultsForTheirPathOnly) {
  const GemmBlocking def = kernels::gemm_blocking_for(Isa::portable);
  const AttentionTiling def_tile = kernels::resolve_tiling({}, 80);
  TileChoice c;
  c.isa = Isa::portable, c.kc = 128, c.mc = 64, c.nb = 64, c.attention = {32, 48};
  kernels::set_process_tiles(c);
  EXPECT_EQ(kernels::gemm_blocking_for(Isa::portable).kc, 128);
  EXPECT_EQ(kernels::gemm_blocking_for(Isa::portable).mc, 64);
  EXPECT_EQ(kernels::gemm_blocking_for(Isa::portable).nb, 64);
  EXPECT_EQ(kernels::resolve_tiling({}, 80).block_q, 32);
  EXPECT_EQ(kernels::resolve_tiling({}, 80).block_kv, 48);
  EXPECT_EQ(kernels::resolve_tiling({64, 0}, 80).block_q, 64);  // an explicit tile still wins
  if (kernels::isa_available(Isa::avx2))  // chosen for portable: the AVX2 blocking is untouched
    EXPECT_EQ(kernels::gemm_blocking_for(Isa::avx2).kc, kernels::gemm_blocking(Isa::avx2, kernels::detect_cache_sizes().sizes).kc);
  kernels::set_process_tiles(TileChoice{});
  EXPECT_EQ(kernels::gemm_blocking_for(Isa::portable).kc, def.kc);
  EXPECT_EQ(def.nb, def.nr);  // the classic order by default
  EXPECT_EQ(kernels::resolve_tiling({}, 80).block_q, def_tile.block_q);
}

TEST(TileCalibration, KeepsTheDefaultUnlessAnotherIsFasterByTheMargin) {
  EXPECT_EQ(choose_candidate({1.00, 0.99, 1.20}, 0.02), 0u);  // 1 % faster: within the margin
  EXPECT_EQ(choose_candidate({1.00, 0.97, 0.98}, 0.02), 1u);  // 3 % faster: the fastest wins
  EXPECT_EQ(choose_candidate({1.00, 0.97, 0.95}, 0.02), 2u);
  EXPECT_EQ(choose_candidate({0.90, 0.95}, 0.02), 0u);        // the default is the fastest
  EXPECT_EQ(choose_candidate({1.00, 0.99}, 0.0), 1u);         // no margin: plain fastest
  EXPECT_EQ(choose_candidate({}, 0.02), 0u);
}

TEST(TileCachePath, XdgThenHomeThenNone) {
  EXPECT_EQ(tile_cache_path(Isa::avx2, "encbench", "/x", "/h"),
            "/x/encbench/kernel-tiles-encbench-avx2.json");
  EXPECT_EQ(tile_cache_path(Isa::avx512, "encbench-micro", "", "/h"),
            "/h/.cache/encbench/kernel-tiles-encbench-micro-avx512.json");
  EXPECT_EQ(tile_cache_path(Isa::avx512, "encbench", nullptr, nullptr), "");
}

class TileSelectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("encbench-tiles-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    request_.resolved = Isa::portable;
    request_.cache_path = (dir_ / "encbench" / "kernel-tiles-test-portable.json").string();
    id_ = {"gnu:aaaa", "Test CPU (family 6 model 207 stepping 2)"};
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // A calibration that returns fixed tiles and counts its calls.
  TileSelection select(const MachineIdentity& id) {
    return select_tiles(request_, kZen4, id, [&] {
      ++calibrations_;
      CalibrationResult r;
      r.choice.isa = Isa::portable, r.choice.kc = 256, r.choice.mc = 252, r.choice.nb = 16;
      r.choice.attention = {128, 512};
      r.gemm.push_back({"kc=256,mc=252", 0.01, 100});
      r.wall_s = 0.5, r.cpu_s = 0.4;
      return r;
    });
  }
  void write_cache_text(const std::string& text) {
    std::filesystem::create_directories(std::filesystem::path(request_.cache_path).parent_path());
    std::ofstream(request_.cache_path) << text;
  }

  std::filesystem::path dir_;
  TileRequest request_;
  MachineIdentity id_;
  int calibrations_ = 0;
};

TEST_F(TileSelectionTest, MissCalibratesAndWritesThenHitReadsWithoutCalibrating) {
  const TileSelection first = select(id_);
  EXPECT_EQ(calibrations_, 1);
  EXPECT_TRUE(first.notes.empty());
  EXPECT_TRUE(first.calibration.has_value());
  EXPECT_NE(first.source.find("calibrated in 0.50 s"), std::string::npos) << first.source;
  ASSERT_TRUE(std::filesystem::exists(request_.cache_path));
  const TileSelection second = select(id_);
  EXPECT_EQ(calibrations_, 1);
  EXPECT_FALSE(second.calibration.has_value());
  EXPECT_EQ(second.source, "cache " + request_.cache_path);
  EXPECT_EQ(kernels::format_tile_spec(second.choice), "kc=256,mc=252,nb=16,bq=128,bkv=512");
  EXPECT_EQ(second.choice.isa, Isa::portable);
}

TEST_F(TileSelectionTest, AnotherBuildOrCpuInvalidatesTheCache) {
  select(id_);
  MachineIdentity rebuilt = id_;
  rebuilt.build_id = "gnu:bbbb";
  const TileSelection after_rebuild = select(rebuilt);
  EXPECT_EQ(calibrations_, 2);
  ASSERT_EQ(after_rebuild.notes.size(), 1u);
  EXPECT_NE(after_rebuild.notes[0].find("made by another build of encbench"), std::string::npos);
  EXPECT_EQ(select(rebuilt).notes.size(), 0u);  // rewritten for the new build: a hit
  EXPECT_EQ(calibrations_, 2);
  MachineIdentity moved = rebuilt;
  moved.cpu_model = "Other CPU";
  const TileSelection after_move = select(moved);
  EXPECT_EQ(calibrations_, 3);
  ASSERT_EQ(after_move.notes.size(), 1u);
  EXPECT_NE(after_move.notes[0].find("made on another CPU: Test CPU"), std::string::npos);
}

TEST_F(TileSelectionTest, CorruptOrForeignFilesAreIgnoredWithOneLineAndRebuilt) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{ not json", "not JSON"},
      {R"j({"schema":"something-else","version":1})j", "not an encbench-kernel-tiles/1 file"},
      {R"j({"schema":"encbench-kernel-tiles","version":"1"})j", "not an encbench-kernel-tiles/1 file"},
      {R"j([1,2,3])j", "not an encbench-kernel-tiles/1 file"},
      {R"j({"schema":"encbench-kernel-tiles","version":1,"isa":"avx512","build_id":"gnu:aaaa"})j",
       "made for ISA path 'avx512'"},
      {R"j({"schema":"encbench-kernel-tiles","version":1,"isa":"portable","build_id":"gnu:aaaa",
          "cpu_model":"Test CPU (family 6 model 207 stepping 2)","tiles":"kc=256,mc=251,nb=16"})j",
       "bad tiles"},
      {R"j({"schema":"encbench-kernel-tiles","version":1,"isa":"portable","build_id":"gnu:aaaa",
          "cpu_model":"Test CPU (family 6 model 207 stepping 2)","tiles":"kc=256"})j",
       "incomplete tiles"},
  };
  int expected_calibrations = 0;
  for (const auto& [text, why] : cases) {
    write_cache_text(text);
    const TileSelection s = select(id_);
    EXPECT_EQ(calibrations_, ++expected_calibrations) << text;
    ASSERT_EQ(s.notes.size(), 1u) << text;
    EXPECT_NE(s.notes[0].find("ignoring tile cache " + request_.cache_path + " (" + why),
              std::string::npos) << s.notes[0];
    EXPECT_NE(s.notes[0].find("recalibrating"), std::string::npos);
    EXPECT_EQ(s.notes[0].find('\n'), std::string::npos);  // one line
    const TileSelection again = select(id_);  // rebuilt: now a hit
    EXPECT_TRUE(again.notes.empty()) << text;
    EXPECT_EQ(calibrations_, expected_calibrations) << text;
  }
}

TEST_F(TileSelectionTest, ForcedChoiceWinsFlagBeforeEnvironment) {
  request_.env_spec = "kc=384,mc=336,nb=16,bq=64,bkv=128";
  const TileSelection by_env = select(id_);
  EXPECT_EQ(calibrations_, 0);
  EXPECT_EQ(by_env.source, "forced by ENCBENCH_TILE");
  EXPECT_EQ(by_env.choice.kc, 384);
  EXPECT_FALSE(std::filesystem::exists(request_.cache_path));
  request_.flag_spec = "kc=512,mc=120,nb=64,bq=256,bkv=256";
  const TileSelection by_flag = select(id_);
  EXPECT_EQ(by_flag.source, "forced by --tile");
  EXPECT_EQ(kernels::format_tile_spec(by_flag.choice), "kc=512,mc=120,nb=64,bq=256,bkv=256");
  // A partial forced choice: its fields over the calibrated ones.
  request_.flag_spec = "bq=64";
  const TileSelection partial = select(id_);
  EXPECT_EQ(calibrations_, 1);
  EXPECT_EQ(kernels::format_tile_spec(partial.choice), "kc=256,mc=252,nb=16,bq=64,bkv=512");
  EXPECT_NE(partial.source.find("bq=64 forced by --tile"), std::string::npos) << partial.source;
}

TEST_F(TileSelectionTest, ForcedTileTheCpuCannotRunIsInvalidInput) {
  request_.env_spec = "mc=13";
  const std::string msg = invalid_message([&] { select(id_); });
  EXPECT_NE(msg.find("ENCBENCH_TILE: mc=13 must be a multiple of MR=4"), std::string::npos) << msg;
  EXPECT_NE(msg.find("this CPU has"), std::string::npos) << msg;
  EXPECT_EQ(calibrations_, 0);
}

TEST_F(TileSelectionTest, DefaultRunsTheCacheSizeTilesWithoutCacheOrCalibration) {
  request_.env_spec = "default";
  const TileSelection by_env = select(id_);
  EXPECT_EQ(calibrations_, 0);
  EXPECT_EQ(by_env.source, "cache-size defaults, forced by ENCBENCH_TILE");
  EXPECT_EQ(kernels::format_tile_spec(by_env.choice), "");  // every field left to the defaults
  EXPECT_FALSE(std::filesystem::exists(request_.cache_path));
  // The flag beats the environment here too: a forced flag tile is not overridden by "default".
  request_.flag_spec = "kc=384,mc=336,nb=16,bq=64,bkv=128";
  EXPECT_EQ(select(id_).source, "forced by --tile");
  request_.flag_spec = "default";
  request_.env_spec = "kc=384";
  EXPECT_EQ(select(id_).source, "cache-size defaults, forced by --tile");
  EXPECT_EQ(calibrations_, 0);
}

TEST_F(TileSelectionTest, AStaleCacheThatCannotBeRewrittenIsOneLine) {
  write_cache_text("{ not json");
  // A directory where the rewrite's temporary file goes: the write fails even for root.
  std::filesystem::create_directories(request_.cache_path + ".tmp");
  const TileSelection s = select(id_);
  EXPECT_EQ(calibrations_, 1);
  ASSERT_EQ(s.notes.size(), 1u);
  EXPECT_NE(s.notes[0].find("ignoring tile cache"), std::string::npos) << s.notes[0];
  EXPECT_NE(s.notes[0].find("cannot rewrite it: cannot write"), std::string::npos) << s.notes[0];
}

}  // namespace
}  // namespace encbench::tuning::test
