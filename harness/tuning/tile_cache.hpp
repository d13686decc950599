#pragma once
// The calibration cache: one JSON file per program and ISA path under $XDG_CACHE_HOME/encbench (or
// ~/.cache/encbench), keyed by the binary's build id and the CPU model (one file per program, so
// encbench and encbench-micro, two binaries, do not invalidate each other's). A file made by another
// build or CPU is stale (recalibrate); one that does not parse, or is not this schema, is ignored
// with one line and rebuilt.
#include <string>

#include "harness/tuning/machine_identity.hpp"
#include "harness/tuning/tile_calibration.hpp"
#include "kernels/tuning.hpp"

namespace encbench::tuning {

inline constexpr const char* kTileCacheSchema = "encbench-kernel-tiles";
inline constexpr int kTileCacheVersion = 1;

// "<xdg_cache_home>/encbench/kernel-tiles-<program>-<isa>.json", else
// "<home>/.cache/encbench/..."; "" when neither is set (no cache: calibrate every time). Empty
// strings count as unset.
std::string tile_cache_path(kernels::Isa resolved, const std::string& program,
                            const char* xdg_cache_home, const char* home);

struct CacheLookup {
  bool hit = false;
  kernels::TileChoice choice;  // when hit
  std::string note;  // one line when the file exists but is not used (stale, corrupt, foreign)
};
CacheLookup read_tile_cache(const std::string& path, const MachineIdentity& id,
                            kernels::Isa resolved, const kernels::CacheSizes& caches);

// Writes atomically (temporary file + rename), creating the directory. Returns "" or why not.
std::string write_tile_cache(const std::string& path, const MachineIdentity& id,
                             const CalibrationResult& result);

}  // namespace encbench::tuning
