#include "harness/tuning/tile_selection.hpp"

#include <errno.h>  // program_invocation_short_name (GNU)

#include <cstdio>
#include <cstdlib>

#include "harness/core/clock.hpp"
#include "harness/tuning/tile_cache.hpp"

namespace encbench::tuning {
namespace {

using kernels::TileChoice;

bool complete(const TileChoice& c) {
  return c.kc > 0 && c.mc > 0 && c.nb > 0 && c.attention.block_q > 0 && c.attention.block_kv > 0;
}

// The fields `forced` sets replace those of `base`.
TileChoice overlay(TileChoice base, const TileChoice& forced) {
  if (forced.kc > 0) base.kc = forced.kc;
  if (forced.mc > 0) base.mc = forced.mc;
  if (forced.nb > 0) base.nb = forced.nb;
  if (forced.attention.block_q > 0) base.attention.block_q = forced.attention.block_q;
  if (forced.attention.block_kv > 0) base.attention.block_kv = forced.attention.block_kv;
  return base;
}

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f s", s);
  return buf;
}

}  // namespace

TileSelection select_tiles(const TileRequest& request, const kernels::CacheSizes& caches,
                           const MachineIdentity& id,
                           const std::function<CalibrationResult()>& calibrate) {
  TileSelection s;
  // "default": the cache-size defaults with no calibration and no cache, so that two builds
  // compared side by side (the CI gate) run the same tiles whatever each would calibrate to.
  for (const std::string* spec : {&request.flag_spec, &request.env_spec}) {
    if (spec->empty()) continue;
    if (*spec == "default") {
      s.choice.isa = request.resolved;
      s.source = "cache-size defaults, forced by " +
                 std::string(spec == &request.flag_spec ? "--tile" : kernels::kTileEnvVar);
      return s;
    }
    break;  // the flag, when given, beats the environment
  }
  TileChoice forced;
  forced.isa = request.resolved;
  std::string forced_by;
  if (!request.flag_spec.empty()) {
    forced = kernels::parse_tile_spec(request.flag_spec, "--tile", request.resolved, caches);
    forced_by = "--tile";
  } else if (!request.env_spec.empty()) {
    forced = kernels::parse_tile_spec(request.env_spec, kernels::kTileEnvVar, request.resolved,
                                      caches);
    forced_by = kernels::kTileEnvVar;
  }
  if (complete(forced)) {
    s.choice = forced;
    s.source = "forced by " + forced_by;
    return s;
  }
  CacheLookup cached;
  if (!request.cache_path.empty())
    cached = read_tile_cache(request.cache_path, id, request.resolved, caches);
  if (!cached.note.empty()) s.notes.push_back(cached.note);
  if (cached.hit) {
    s.choice = cached.choice;
    s.source = "cache " + request.cache_path;
  } else {
    s.calibration = calibrate();
    s.choice = s.calibration->choice;
    s.source = "calibrated in " + seconds_text(s.calibration->wall_s) + " (thread CPU " +
               seconds_text(s.calibration->cpu_s) + ")";
    if (!request.cache_path.empty()) {
      const std::string error = write_tile_cache(request.cache_path, id, *s.calibration);
      if (error.empty()) s.source += ", written to " + request.cache_path;
      // One line per cause: a stale file that also cannot be rewritten (a read-only home) is the
      // same fault, said once.
      else if (!s.notes.empty()) s.notes.back() += "; cannot rewrite it: " + error;
      else s.notes.push_back("encbench: tile cache not written: " + error);
    }
  }
  s.choice.isa = request.resolved;
  if (!forced_by.empty()) {
    s.choice = overlay(s.choice, forced);
    s.source += "; " + kernels::format_tile_spec(forced) + " forced by " + forced_by;
  }
  return s;
}

TileSelection select_and_install_tiles(kernels::Isa resolved, const std::string& flag_spec) {
  TileRequest request;
  request.resolved = resolved;
  request.flag_spec = flag_spec;
  const char* env = std::getenv(kernels::kTileEnvVar);
  request.env_spec = env ? env : "";
  request.cache_path = tile_cache_path(resolved, program_invocation_short_name,
                                       std::getenv("XDG_CACHE_HOME"), std::getenv("HOME"));
  const kernels::CacheSizes caches = kernels::detect_cache_sizes().sizes;
  TileSelection s = select_tiles(request, caches, current_machine_identity(), [&] {
    return calibrate_tiles(resolved, caches, &encbench::now_ns, &encbench::thread_cpu_ns);
  });
  kernels::set_process_tiles(s.choice);
  return s;
}

std::string describe_selection(const TileSelection& s) {
  TileChoice gemm_part, attention_part;
  gemm_part.kc = s.choice.kc, gemm_part.mc = s.choice.mc, gemm_part.nb = s.choice.nb;
  attention_part.attention = s.choice.attention;
  return std::string(kernels::to_string(s.choice.isa)) + " gemm " +
         kernels::format_tile_spec(gemm_part) + ", attention " +
         kernels::format_tile_spec(attention_part) + " (" + s.source + ")";
}

}  // namespace encbench::tuning
