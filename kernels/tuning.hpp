#pragma once
// The GEMM blocking and attention tile a process runs with when the caller passes none: the
// registered candidates a calibration chooses among (harness/tuning measures them; kernels/ has
// no clocks), the text form of a forced choice, and the process-wide choice the kernels read.
//
// Precedence, highest first: an explicit AttentionTiling argument; the process choice installed
// with set_process_tiles (a forced choice or a calibration's); the default derived from the
// cache sizes (blocking.hpp).
#include <string>
#include <string_view>
#include <vector>

#include "kernels/attention.hpp"
#include "kernels/blocking.hpp"
#include "kernels/isa.hpp"

namespace encbench::kernels {

inline constexpr const char* kTileEnvVar = "ENCBENCH_TILE";

// A choice of tiles for one ISA path; a zero field = not chosen (the cache-size default).
struct TileChoice {
  Isa isa = Isa::best;  // the resolved path the GEMM blocking was chosen for
  int kc = 0, mc = 0;   // GEMM reduction slice and row block (NC stays the L3 default)
  int nb = 0;           // GEMM macro-kernel column sub-block (GemmBlocking::nb)
  AttentionTiling attention;  // block_q x block_kv of fused_varlen / flash_unpad
};

// GEMM blockings worth measuring on this machine for `resolved`: the cache-size default; KC 256 /
// 384 / 512 with the packed A block in half or a quarter of L2; the KC whose B micro-panel
// (KC x NR) fits 3/4 of L1; the turned-round order (nb > NR: A panel in L1, a KC x nb slice of
// B in half of L2, A block in a quarter) at KC 256 and 384; and OpenBLAS SkylakeX's sgemm
// blocking (640 rows x K 448) where it fits in 3/4 of L2 (a 2 MiB L2: Sapphire/Emerald Rapids).
// Deduplicated, the default first. MC is a multiple of MR, nb of NR.
std::vector<GemmBlocking> gemm_blocking_candidates(Isa resolved, const CacheSizes& caches);
// The attention tiles worth measuring: block_q {64, 128, 256} x block_kv {128, 256, 512} (the
// kernels/attention_tiling sweep), the cache-size default for d80 first.
std::vector<AttentionTiling> attention_tile_candidates(const CacheSizes& caches);

// "kc=384,mc=336,nb=32,bq=128,bkv=256" (any subset, any order) -> a forced choice for `resolved`.
// `source` names where the text came from ("ENCBENCH_TILE", "--tile") in error messages. Throws
// InvalidInput for unknown keys or bad numbers, and for values this CPU's kernels cannot run: MC
// not a multiple of the ISA's MR, nb not a multiple of its NR, KC not a multiple of 16 or outside
// [16, 2048], a packed A block (MC x KC) or B slice (KC x nb) larger than L2, attention blocks
// outside [16, 1024]; the message names what the CPU has.
TileChoice parse_tile_spec(std::string_view spec, std::string_view source, Isa resolved,
                           const CacheSizes& caches);
// "kc=384,mc=336,nb=32,bq=128,bkv=256" (the fields that are set): the inverse of parse_tile_spec.
std::string format_tile_spec(const TileChoice& choice);

// The process-wide choice (a function-local value behind a mutex, like the ENCBENCH_ISA
// override it sits beside): gemm() and the attention kernels read it when the caller passes no
// tile. Install before the kernels run; a default TileChoice clears it.
void set_process_tiles(const TileChoice& choice);
TileChoice process_tiles();

}  // namespace encbench::kernels
