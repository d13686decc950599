#pragma once
// The short calibration that picks the GEMM blocking and the attention tile among the registered
// candidates (kernels/tuning.hpp) by timing each on this machine: single-thread, thread CPU time
// (what other load on a shared host does not move), two interleaved rounds, the best of each.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/blocking.hpp"
#include "kernels/tuning.hpp"

namespace encbench::tuning {

struct CandidateTiming {
  std::string tile;        // format_tile_spec of the candidate ("kc=384,mc=336", "bq=128,bkv=256")
  double best_cpu_s = 0;   // fastest of the rounds
  double gflops_per_core_s = 0;
};

struct CalibrationResult {
  kernels::TileChoice choice;  // the chosen GEMM blocking and attention tile (choose_candidate)
  std::vector<CandidateTiming> gemm, attention;  // every candidate, in registration order
  double wall_s = 0, cpu_s = 0;  // what the calibration itself took
};

using NanosecondClock = std::int64_t (*)();

// Index of the candidate to keep given each one's best time: the first (the cache-size default)
// unless another is faster by more than `margin` (relative), else the fastest. One calibration's
// candidates differ by 1-3 % on a loaded host, about its noise: without the margin two runs (two
// builds compared by the CI gate, say) would pick different tiles by chance.
std::size_t choose_candidate(const std::vector<double>& best_seconds, double margin);
inline constexpr double kDefaultTileMargin = 0.02;

// Times every candidate for `resolved` (not Isa::best): a 768 x 1280 -> 768 GEMM and fused_varlen
// d80 over one 1536-token segment with one head. About 0.45 s of CPU on a Zen 4 core.
CalibrationResult calibrate_tiles(kernels::Isa resolved, const kernels::CacheSizes& caches,
                                  NanosecondClock wall_clock, NanosecondClock thread_cpu_clock);

}  // namespace encbench::tuning
