// `encbench peak`: the fp32 FMA peak of 1 thread and of N threads (the "100%" that kernel
// GFLOP/s are reported against). The loop lives in kernels/peak.hpp; this file parses flags,
// supplies the clocks and prints/writes the result.
#include <time.h>

#include <cstdio>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "harness/cli/command.hpp"
#include "harness/core/clock.hpp"
#include "harness/core/error.hpp"
#include "harness/core/result_json.hpp"
#include "harness/tuning/tile_selection.hpp"
#include "kernels/peak.hpp"
#include "kernels/thread_pool.hpp"

namespace encbench::cli {
namespace {

struct PeakOptions {
  unsigned threads = 0;  // 0 = all cores
  double seconds = 1.0;
  std::string isa = "all";
  std::string json_path;
  std::string tile;  // forced tiles (kernels/tuning.hpp syntax), "" = calibrated / cached
};

std::int64_t thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

int vector_bits(kernels::Isa isa) {
  switch (isa) {
    case kernels::Isa::avx512: return 512;
    case kernels::Isa::avx2: return 256;
    default: return 0;  // compiler's choice
  }
}

void print_candidates(const char* what, const std::vector<tuning::CandidateTiming>& rows,
                      nlohmann::json& out) {
  double best = 0;
  for (const auto& r : rows) best = std::max(best, r.gflops_per_core_s);
  for (const auto& r : rows) {
    std::printf("  %-9s %-22s %8.1f GFLOP/s per core  %5.1f %% below the best\n", what,
                r.tile.c_str(), r.gflops_per_core_s, 100.0 * (1.0 - r.gflops_per_core_s / best));
    out.push_back({{"kernel", what}, {"tile", r.tile}, {"gflops_per_core_s", r.gflops_per_core_s}});
  }
}

// The GEMM blocking and attention tile the kernels of this process run with (forced, cached or
// calibrated: harness/tuning), printed and returned for the JSON.
nlohmann::json print_tiles(const tuning::TileSelection& s) {
  for (const std::string& note : s.notes) std::fprintf(stderr, "%s\n", note.c_str());
  std::printf("tiles: %s\n", tuning::describe_selection(s).c_str());
  nlohmann::json j = {{"isa", kernels::to_string(s.choice.isa)},
                      {"tiles", kernels::format_tile_spec(s.choice)},
                      {"source", s.source}};
  if (s.calibration) {
    nlohmann::json rows = nlohmann::json::array();
    print_candidates("gemm", s.calibration->gemm, rows);
    print_candidates("attention", s.calibration->attention, rows);
    j["candidates"] = rows;
    j["calibration_wall_s"] = s.calibration->wall_s;
    j["calibration_cpu_s"] = s.calibration->cpu_s;
  }
  return j;
}

int run_peak(const PeakOptions& opt, const std::vector<std::string>& argv) {
  using kernels::Isa;
  require(opt.seconds > 0 && opt.seconds <= 600, "--seconds must be in (0, 600]");
  const unsigned all_cores = std::max(1u, std::thread::hardware_concurrency());
  const unsigned threads = opt.threads ? opt.threads : all_cores;
  std::vector<Isa> isas;
  if (opt.isa == "all") {
    for (Isa isa : {Isa::avx512, Isa::avx2})
      if (kernels::isa_available(isa)) isas.push_back(isa);
    if (isas.empty()) isas.push_back(Isa::portable);
  } else {
    isas.push_back(kernels::resolve_isa(kernels::isa_from_string(opt.isa)));
  }

  // Tiles for the path the kernels run: the one asked for, or (with --isa all) the best. Chosen
  // first, so a forced tile the CPU cannot run stops the command before any measurement.
  const tuning::TileSelection tiles = tuning::select_and_install_tiles(
      opt.isa == "all" ? kernels::resolve_isa(Isa::best) : isas.front(), opt.tile);
  kernels::ThreadPool pool(threads);
  nlohmann::json result = make_result_envelope("encbench-peak", 1, argv, "cpu");
  nlohmann::json rows = nlohmann::json::array();
  double best_all = 0, best_one = 0, best_core = 0;
  std::printf("encbench peak: fp32 FMA loop, %.2f s per measurement, %u hardware threads\n",
              opt.seconds, all_cores);
  std::printf("%-9s %5s %8s %12s %18s\n", "isa", "bits", "threads", "GFLOP/s", "GFLOP/s per core*");
  for (Isa isa : isas) {
    std::vector<unsigned> counts{1};
    if (threads != 1) counts.push_back(threads);
    for (unsigned n : counts) {
      const kernels::PeakMeasurement m =
          kernels::measure_fma_peak(pool, n, isa, opt.seconds, &encbench::now_ns, &thread_cpu_ns);
      std::printf("%-9s %5d %8u %12.1f %18.1f\n", std::string(kernels::to_string(m.isa)).c_str(),
                  vector_bits(m.isa), n, m.gflops_per_s, m.gflops_per_core_s);
      rows.push_back({{"isa", kernels::to_string(m.isa)},
                      {"vector_bits", vector_bits(m.isa)},
                      {"threads", n},
                      {"gflops_per_s", m.gflops_per_s},
                      {"gflops_per_core_s", m.gflops_per_core_s},
                      {"flops", m.flops},
                      {"wall_s", m.seconds},
                      {"cpu_s", m.cpu_seconds}});
      if (n == threads) best_all = std::max(best_all, m.gflops_per_s);
      if (n == 1) best_one = std::max(best_one, m.gflops_per_s);
      best_core = std::max(best_core, m.gflops_per_core_s);
    }
  }
  std::printf("* FLOPs per CPU-second the loop actually ran: unaffected by other load on the machine\n");
  result["tiles"] = print_tiles(tiles);
  result["threads"] = threads;
  result["seconds_per_measurement"] = opt.seconds;
  result["measurements"] = rows;
  result["peak_gflops_per_s"] = best_all;
  result["peak_gflops_per_s_1_thread"] = best_one;
  result["peak_gflops_per_core_s"] = best_core;
  if (!opt.json_path.empty()) {
    write_json_file(opt.json_path, result);
    std::printf("wrote %s\n", opt.json_path.c_str());
  }
  return 0;
}

}  // namespace

void add_peak_command(CLI::App& app, CommandContext& ctx) {
  auto opt = std::make_shared<PeakOptions>();
  auto* sub = app.add_subcommand(
      "peak", "Measure the fp32 FMA peak (GFLOP/s) of 1 thread and of N threads");
  sub->add_option("--threads", opt->threads, "Threads for the multi-thread figure (0 = all cores)")
      ->capture_default_str();
  sub->add_option("--seconds", opt->seconds, "Seconds per measurement")->capture_default_str();
  sub->add_option("--isa", opt->isa,
                  "Loop to run: all (avx512 zmm and avx2 ymm where available), avx512, avx2, "
                  "portable, best")
      ->capture_default_str();
  sub->add_option("--json", opt->json_path, "Write the result (schema encbench-peak/1) to FILE");
  sub->add_option("--tile", opt->tile,
                  "Force the kernel tiles instead of the calibrated ones, e.g. "
                  "kc=384,mc=336,nb=32,bq=128,bkv=256 (any subset; beats ENCBENCH_TILE)");
  sub->callback([&ctx, opt] {
    ctx.action = [&ctx, opt] { return run_peak(*opt, ctx.argv); };
  });
}

}  // namespace encbench::cli
