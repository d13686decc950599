#pragma once
// Which tiles a process runs with, and why: a forced choice (--tile beats ENCBENCH_TILE) for the
// fields it names; the rest from the calibration cache when it matches this binary and CPU, else
// from a fresh calibration (written back to the cache).
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "harness/tuning/machine_identity.hpp"
#include "harness/tuning/tile_calibration.hpp"
#include "kernels/tuning.hpp"

namespace encbench::tuning {

struct TileRequest {
  kernels::Isa resolved = kernels::Isa::portable;  // the path the kernels run (not best)
  std::string flag_spec;   // --tile, "" = not given
  std::string env_spec;    // ENCBENCH_TILE, "" = unset
  std::string cache_path;  // "" = no cache
};

struct TileSelection {
  kernels::TileChoice choice;
  std::string source;  // "forced by --tile", "cache <path>", "calibrated in 0.9 s (cpu 0.9 s)"...
  std::vector<std::string> notes;  // one line each, for stderr (ignored cache files, write errors)
  std::optional<CalibrationResult> calibration;  // when one ran
};

// Throws InvalidInput (exit 2 from the CLI) for a forced tile this CPU cannot run.
TileSelection select_tiles(const TileRequest& request, const kernels::CacheSizes& caches,
                           const MachineIdentity& id,
                           const std::function<CalibrationResult()>& calibrate);

// The whole step for a CLI or benchmark: reads ENCBENCH_TILE and the cache location from the
// environment, calibrates with the real clocks where needed, installs the choice
// (kernels::set_process_tiles) and returns it. `resolved` is the ISA path the kernels will run.
TileSelection select_and_install_tiles(kernels::Isa resolved, const std::string& flag_spec);

// "avx512 gemm kc=384,mc=336,nb=32, attention bq=256,bkv=256 (calibrated in ...)" for logs and benchmark contexts.
std::string describe_selection(const TileSelection& selection);

}  // namespace encbench::tuning
