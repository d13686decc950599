#include "kernels/tuning.hpp"

#include <algorithm>
#include <charconv>
#include <mutex>

#include "harness/core/error.hpp"

namespace encbench::kernels {
namespace {

// MC rows such that the packed A block (MC x KC floats) takes `share` of L2, a multiple of MR.
int rows_for_l2_share(std::int64_t l2, double share, int kc, int mr) {
  const auto rows = static_cast<std::int64_t>(static_cast<double>(l2) * share /
                                              (static_cast<double>(kc) * sizeof(float)));
  return static_cast<int>(std::clamp<std::int64_t>(rows / mr * mr, mr, 1020 / mr * mr));
}

std::string describe_machine(Isa resolved, const CacheSizes& caches) {
  const GemmBlocking b = gemm_blocking(resolved, caches);
  return "this CPU has " + describe(detect_cpu_features()) + ", runs " +
         std::string(to_string(resolved)) + " (register tile " + std::to_string(b.mr) + "x" +
         std::to_string(b.nr) + "), L1d " + std::to_string(caches.l1d >> 10) + " KiB, L2 " +
         std::to_string(caches.l2 >> 10) + " KiB";
}

int parse_positive(std::string_view text, std::string_view key, std::string_view source) {
  int v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  require(ec == std::errc() && end == text.data() + text.size() && v > 0,
          std::string(source) + ": '" + std::string(key) + "=" + std::string(text) +
              "' is not a positive integer");
  return v;
}

std::mutex& tiles_mutex() {
  static std::mutex m;
  return m;
}
TileChoice& tiles_slot() {
  static TileChoice choice;
  return choice;
}

}  // namespace

std::vector<GemmBlocking> gemm_blocking_candidates(Isa resolved, const CacheSizes& caches) {
  const GemmBlocking base = gemm_blocking(resolved, caches);
  std::vector<GemmBlocking> out{base};
  auto add = [&](int kc, int mc, int nb) {
    GemmBlocking b = base;
    b.kc = kc, b.mc = mc, b.nb = nb;
    const bool seen = std::any_of(out.begin(), out.end(), [&](const GemmBlocking& o) {
      return o.kc == b.kc && o.mc == b.mc && o.nb == b.nb;
    });
    if (!seen) out.push_back(b);
  };
  const int nr = base.nr, mr = base.mr;
  for (int kc : {256, 384, 512})
    for (double share : {0.5, 0.25}) add(kc, rows_for_l2_share(caches.l2, share, kc, mr), nr);
  // The B micro-panel in 3/4 of L1 (the textbook rule; 192 at 32 KiB, 288 at 48 KiB for NR 32).
  const std::int64_t l1 = std::clamp<std::int64_t>(caches.l1d, 16 << 10, 256 << 10);
  const int l1_kc = static_cast<int>(std::clamp<std::int64_t>(l1 * 3 / 4 / (nr * 4) / 16 * 16, 64, 512));
  add(l1_kc, rows_for_l2_share(caches.l2, 0.5, l1_kc, mr), nr);
  // Turned round: the A panel in L1, a KC x nb slice of B in half of L2, the A block in a quarter.
  for (int kc : {256, 384}) {
    const auto cols = static_cast<int>(caches.l2 / 2 / (kc * 4) / nr * nr);
    if (cols >= 2 * nr) add(kc, rows_for_l2_share(caches.l2, 0.25, kc, mr), cols);
  }
  // OpenBLAS SkylakeX: sgemm M block 640 over K 448 (1.1 MiB packed A): a 2 MiB L2's size.
  const int openblas_mc = 640 / base.mr * base.mr;
  if (static_cast<std::int64_t>(openblas_mc) * 448 * 4 <= caches.l2 * 3 / 4) add(448, openblas_mc, nr);
  return out;
}

std::vector<AttentionTiling> attention_tile_candidates(const CacheSizes& caches) {
  std::vector<AttentionTiling> out{attention_default_tiling(80, caches)};
  for (int bq : {64, 128, 256})
    for (int bkv : {128, 256, 512})
      if (bq != out[0].block_q || bkv != out[0].block_kv) out.push_back({bq, bkv});
  return out;
}

TileChoice parse_tile_spec(std::string_view spec, std::string_view source, Isa resolved,
                           const CacheSizes& caches) {
  TileChoice c;
  c.isa = resolved;
  const std::string where(source);
  require(!spec.empty(), where + ": empty tile (expected e.g. kc=384,mc=336,bq=128,bkv=256)");
  while (!spec.empty()) {
    const std::size_t comma = spec.find(',');
    const std::string_view item = spec.substr(0, comma);
    spec = comma == std::string_view::npos ? std::string_view() : spec.substr(comma + 1);
    const std::size_t eq = item.find('=');
    require(eq != std::string_view::npos,
            where + ": '" + std::string(item) + "' is not key=value (keys: kc, mc, nb, bq, bkv)");
    const std::string_view key = item.substr(0, eq), value = item.substr(eq + 1);
    const int v = parse_positive(value, key, source);
    if (key == "kc") c.kc = v;
    else if (key == "mc") c.mc = v;
    else if (key == "nb") c.nb = v;
    else if (key == "bq") c.attention.block_q = v;
    else if (key == "bkv") c.attention.block_kv = v;
    else throw InvalidInput(where + ": unknown key '" + std::string(key) + "' (keys: kc, mc, nb, bq, bkv)");
  }
  const GemmBlocking base = gemm_blocking(resolved, caches);
  const std::string cpu = describe_machine(resolved, caches);
  require(c.kc == 0 || (c.kc % 16 == 0 && c.kc <= 2048),
          where + ": kc=" + std::to_string(c.kc) + " must be a multiple of 16 in [16, 2048]; " + cpu);
  require(c.mc == 0 || (c.mc % base.mr == 0 && c.mc <= 4096),
          where + ": mc=" + std::to_string(c.mc) + " must be a multiple of MR=" +
              std::to_string(base.mr) + " up to 4096 for " + std::string(to_string(resolved)) +
              "; " + cpu);
  require(c.nb == 0 || (c.nb % base.nr == 0 && c.nb <= 8192),
          where + ": nb=" + std::to_string(c.nb) + " must be a multiple of NR=" +
              std::to_string(base.nr) + " up to 8192 for " + std::string(to_string(resolved)) +
              "; " + cpu);
  const std::int64_t b_slice =
      static_cast<std::int64_t>(c.nb ? c.nb : base.nb) * (c.kc ? c.kc : base.kc) * 4;
  require(b_slice <= caches.l2, where + ": the B slice (kc x nb x 4 B = " +
                                    std::to_string(b_slice >> 10) + " KiB) does not fit in L2; " +
                                    cpu);
  const std::int64_t a_block =
      static_cast<std::int64_t>(c.mc ? c.mc : base.mc) * (c.kc ? c.kc : base.kc) * 4;
  require(a_block <= caches.l2, where + ": the packed A block (mc x kc x 4 B = " +
                                    std::to_string(a_block >> 10) + " KiB) does not fit in L2; " +
                                    cpu);
  for (int b : {c.attention.block_q, c.attention.block_kv})
    require(b == 0 || (b >= 16 && b <= 1024),
            where + ": attention block " + std::to_string(b) + " must be in [16, 1024]; " + cpu);
  return c;
}

std::string format_tile_spec(const TileChoice& c) {
  std::string s;
  auto add = [&](const char* key, int v) {
    if (v <= 0) return;
    if (!s.empty()) s += ',';
    s += std::string(key) + "=" + std::to_string(v);
  };
  add("kc", c.kc), add("mc", c.mc), add("nb", c.nb);
  add("bq", c.attention.block_q), add("bkv", c.attention.block_kv);
  return s;
}

void set_process_tiles(const TileChoice& choice) {
  const std::lock_guard lock(tiles_mutex());
  tiles_slot() = choice;
}

TileChoice process_tiles() {
  const std::lock_guard lock(tiles_mutex());
  return tiles_slot();
}

}  // namespace encbench::kernels
