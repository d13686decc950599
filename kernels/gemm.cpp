#include <algorithm>
#include <string>

#include "harness/core/error.hpp"
#include "kernels/blocking.hpp"
#include "kernels/cpu/dispatch.hpp"
#include "kernels/ops.hpp"

namespace encbench::kernels {
namespace {

void validate_gemm(const char* who, const GemmArgs& a) {
  const std::string w = std::string(who) + ": ";
  require(a.m >= 0 && a.n > 0 && a.k > 0,
          w + "need m >= 0, n > 0, k > 0 (got m=" + std::to_string(a.m) + " n=" +
              std::to_string(a.n) + " k=" + std::to_string(a.k) + ")");
  require(a.k <= (1 << 30) && a.n <= (1 << 30), w + "dimension too large");
  require(a.w != nullptr, w + "w is null");
  if (a.m > 0) {
    require(a.x != nullptr, w + "x is null");
    require(a.out != nullptr, w + "out is null");
  }
}

}  // namespace

void gemm_reference(const GemmArgs& a) {
  validate_gemm("gemm_reference", a);
  for (std::int64_t i = 0; i < a.m; ++i)
    for (std::int64_t j = 0; j < a.n; ++j) {
      double acc = a.bias ? a.bias[j] : 0.0;
      for (std::int64_t kk = 0; kk < a.k; ++kk)
        acc += static_cast<double>(a.x[i * a.k + kk]) * a.w[j * a.k + kk];
      a.out[i * a.n + j] = static_cast<float>(acc);
    }
}

namespace {

// How the rows of one (NC, KC) step are shared out: row blocks of at most the L2-sized MC, as
// many as a multiple of the worker count so no worker gets a short tail alone; with too few rows
// for that, the columns are split too (each item packs its own A block: cheap when M is small).
struct WorkSplit {
  int mc = 0;               // rows per block (multiple of MR)
  std::int64_t row_blocks = 0;
  std::int64_t col_splits = 0;
};

WorkSplit split_work(std::int64_t m, int nc_panels, const GemmBlocking& b, unsigned workers) {
  WorkSplit s;
  std::int64_t blocks = (m + b.mc - 1) / b.mc;
  blocks = (blocks + workers - 1) / workers * workers;
  const std::int64_t mr_rows = (m + b.mr - 1) / b.mr;  // row panels available
  blocks = std::min(blocks, mr_rows);
  const std::int64_t panels_per_block = (mr_rows + blocks - 1) / blocks;
  s.mc = static_cast<int>(panels_per_block * b.mr);
  s.row_blocks = (m + s.mc - 1) / s.mc;
  s.col_splits = std::clamp<std::int64_t>((2 * workers + s.row_blocks - 1) / s.row_blocks, 1,
                                          nc_panels);
  return s;
}

// One (NC, KC) step of the loop nest: the column block [jc, jc + nc) and reduction slice
// [pc, pc + kc), with the packed B buffer and the per-worker A buffers.
struct BlockStep {
  std::int64_t jc = 0, pc = 0;
  int nc = 0, kc = 0;
  int panels = 0;            // NR-wide B panels of the column block
  int panels_per_split = 0;  // panels per column split of an item
};

void pack_b_panels(const detail::IsaOps& ops, const GemmArgs& a, const GemmBlocking& b,
                   const BlockStep& s, int p_begin, int p_end, float* b_packed) {
  for (int p = p_begin; p < p_end; ++p) {
    const std::int64_t j0 = static_cast<std::int64_t>(p) * b.nr;
    ops.gemm_pack_b(a.w + (s.jc + j0) * a.k + s.pc, static_cast<std::size_t>(a.k),
                    static_cast<int>(std::min<std::int64_t>(b.nr, s.nc - j0)), s.kc,
                    b_packed + static_cast<std::size_t>(j0) * s.kc);
  }
}

// Work item `item` of a step: packs its A rows (and, when `pack_b`, its own B panels), then runs
// the macro-kernel over its columns.
void run_item(const detail::IsaOps& ops, const GemmArgs& a, const GemmBlocking& b,
              const WorkSplit& split, const BlockStep& s, std::size_t item, bool pack_b,
              float* b_packed, float* a_packed) {
  const std::int64_t i0 = static_cast<std::int64_t>(item) / split.col_splits * split.mc;
  const int p0 = static_cast<int>(static_cast<std::int64_t>(item) % split.col_splits) *
                 s.panels_per_split;
  const int j0 = p0 * b.nr;
  if (j0 >= s.nc) return;
  if (pack_b)
    pack_b_panels(ops, a, b, s, p0, std::min(s.panels, p0 + s.panels_per_split), b_packed);
  const int rows = static_cast<int>(std::min<std::int64_t>(split.mc, a.m - i0));
  ops.gemm_pack_a(a.x + i0 * a.k + s.pc, static_cast<std::size_t>(a.k), rows, s.kc, a_packed);
  detail::GemmBlockTask t;
  t.a_packed = a_packed;
  t.b_packed = b_packed + static_cast<std::size_t>(j0) * s.kc;
  t.mc = rows;
  t.nc = std::min(s.nc - j0, s.panels_per_split * b.nr);
  t.kc = s.kc;
  t.nb = b.nb;
  t.c = a.out + i0 * a.n + s.jc + j0;
  t.ldc = static_cast<std::size_t>(a.n);
  t.bias = a.bias ? a.bias + s.jc + j0 : nullptr;
  t.first = s.pc == 0;
  ops.gemm_block(t);
}

}  // namespace

void gemm(const GemmArgs& a, WorkerPool& pool, Isa isa, Workspace* workspace) {
  validate_gemm("gemm", a);
  if (a.m == 0) return;
  const Isa resolved = resolve_isa(isa);
  const detail::IsaOps& ops = detail::ops_for(resolved);
  const GemmBlocking b = gemm_blocking_for(resolved);
  const unsigned workers = std::max(1u, pool.num_workers());
  const int kc_max = static_cast<int>(std::min<std::int64_t>(b.kc, a.k));
  const int nc_max = static_cast<int>(std::min<std::int64_t>(b.nc, detail::round_up(a.n, b.nr)));
  const WorkSplit split = split_work(a.m, (nc_max + b.nr - 1) / b.nr, b, workers);
  const std::size_t b_floats = detail::round_up(static_cast<std::size_t>(nc_max) * kc_max, 16);
  const std::size_t a_floats = detail::round_up(static_cast<std::size_t>(split.mc) * kc_max, 16);
  Workspace local;
  float* b_packed = (workspace ? *workspace : local).floats(b_floats + a_floats * workers);
  float* a_scratch = b_packed + b_floats;
  // With one row block, every B panel is used by exactly one item: the item packs it itself and
  // the step needs one pool round instead of two (small GEMMs of the live forward are dominated
  // by those rounds). Otherwise B is packed once, shared by the row blocks.
  const bool items_pack_b = split.row_blocks == 1;
  const std::size_t items = static_cast<std::size_t>(split.row_blocks * split.col_splits);

  for (std::int64_t jc = 0; jc < a.n; jc += b.nc) {
    for (std::int64_t pc = 0; pc < a.k; pc += b.kc) {
      BlockStep s;
      s.jc = jc, s.pc = pc;
      s.nc = static_cast<int>(std::min<std::int64_t>(b.nc, a.n - jc));
      s.kc = static_cast<int>(std::min<std::int64_t>(b.kc, a.k - pc));
      s.panels = (s.nc + b.nr - 1) / b.nr;
      s.panels_per_split = static_cast<int>((s.panels + split.col_splits - 1) / split.col_splits);
      if (!items_pack_b)
        pool.run(static_cast<std::size_t>(s.panels), [&](std::size_t p, unsigned) {
          pack_b_panels(ops, a, b, s, static_cast<int>(p), static_cast<int>(p) + 1, b_packed);
        });
      pool.run(items, [&](std::size_t item, unsigned worker) {
        run_item(ops, a, b, split, s, item, items_pack_b, b_packed,
                 a_scratch + a_floats * std::min(worker, workers - 1));
      });
    }
  }
}

}  // namespace encbench::kernels
