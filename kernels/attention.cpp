#include "kernels/attention.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <string>
#include <vector>

#include "harness/core/error.hpp"
#include "kernels/blocking.hpp"
#include "kernels/cpu/dispatch.hpp"
#include "kernels/tuning.hpp"

namespace encbench::kernels {
namespace {

using detail::round_up;

struct Segment {
  std::int64_t start = 0;
  std::int32_t len = 0;
};

// The checks shared by every attention entry point.
void validate_shape(const char* kernel, const float* q, const float* k, const float* v,
                    const float* out, std::int64_t total_tokens, int num_heads, int num_kv_heads,
                    int head_dim, float scale, const BufferSizes& sizes) {
  const std::string who = std::string(kernel) + ": ";
  require(total_tokens >= 0, who + "total_tokens must be >= 0, got " + std::to_string(total_tokens));
  require(total_tokens <= std::numeric_limits<std::int32_t>::max(),
          who + "total_tokens exceeds the int32 range of cu_seqlens");
  require(head_dim > 0, who + "head_dim must be > 0, got " + std::to_string(head_dim));
  require(num_heads > 0, who + "num_heads must be > 0, got " + std::to_string(num_heads));
  require(num_kv_heads > 0, who + "num_kv_heads must be > 0, got " + std::to_string(num_kv_heads));
  require(num_heads % num_kv_heads == 0,
          who + "num_heads (" + std::to_string(num_heads) + ") must be a multiple of num_kv_heads (" +
              std::to_string(num_kv_heads) + ")");
  require(std::isfinite(scale), who + "scale must be finite");
  if (total_tokens > 0) {
    require(q != nullptr, who + "q is null");
    require(k != nullptr, who + "k is null");
    require(v != nullptr, who + "v is null");
    require(out != nullptr, who + "out is null");
  }
  const auto tokens = static_cast<std::size_t>(total_tokens);
  const std::size_t q_elems = tokens * num_heads * head_dim;
  const std::size_t kv_elems = tokens * num_kv_heads * head_dim;
  auto check = [&](std::size_t given, std::size_t expected, const char* name) {
    require(given == 0 || given == expected,
            who + name + " has " + std::to_string(given) + " elements but the shape [" +
                std::to_string(total_tokens) + ", heads, " + std::to_string(head_dim) + "] needs " +
                std::to_string(expected));
  };
  check(sizes.q, q_elems, "q");
  check(sizes.k, kv_elems, "k");
  check(sizes.v, kv_elems, "v");
  check(sizes.out, q_elems, "out");
}

std::vector<Segment> segments_from_cu(const char* kernel, const std::int32_t* cu,
                                      std::int64_t num_segments, std::int64_t total_tokens) {
  const std::string who = std::string(kernel) + ": ";
  require(num_segments >= 0, who + "num_segments must be >= 0");
  require(cu != nullptr, who + "cu_seqlens is null");
  require(cu[0] == 0, who + "cu_seqlens must start at 0, got " + std::to_string(cu[0]));
  std::vector<Segment> segs(static_cast<std::size_t>(num_segments));
  for (std::int64_t i = 0; i < num_segments; ++i) {
    require(cu[i + 1] >= cu[i], who + "cu_seqlens decreases at index " + std::to_string(i + 1) +
                                    " (" + std::to_string(cu[i]) + " -> " +
                                    std::to_string(cu[i + 1]) + ")");
    segs[i] = {cu[i], cu[i + 1] - cu[i]};
  }
  require(cu[num_segments] == total_tokens,
          who + "cu_seqlens must end at total_tokens (" + std::to_string(total_tokens) + "), got " +
              std::to_string(cu[num_segments]));
  return segs;
}

std::vector<Segment> segments_from_lens(const char* kernel, const std::int32_t* lens,
                                        std::int64_t num_segments, std::int64_t total_tokens) {
  const std::string who = std::string(kernel) + ": ";
  require(num_segments >= 0, who + "num_segments must be >= 0");
  require(num_segments == 0 || lens != nullptr, who + "seq_lens is null");
  std::vector<Segment> segs(static_cast<std::size_t>(num_segments));
  std::int64_t start = 0;
  for (std::int64_t i = 0; i < num_segments; ++i) {
    require(lens[i] >= 0, who + "seq_lens[" + std::to_string(i) + "] is negative (" +
                              std::to_string(lens[i]) + ")");
    segs[i] = {start, lens[i]};
    start += lens[i];
  }
  require(start == total_tokens, who + "seq_lens sum to " + std::to_string(start) +
                                     " but total_tokens is " + std::to_string(total_tokens));
  return segs;
}

struct FlashProblem {
  const float* q;
  const float* k;
  const float* v;
  float* out;
  int num_heads, num_kv_heads;
  int head_dim;        // D used for Q.K^T and the output width
  std::size_t out_head_stride;  // == head_dim
  float scale;
};

// Where everything of one run_flash call lives in its workspace: the packed K^T / V of long
// segments (shared, per kv head), then one scratch slab per worker.
struct FlashLayout {
  int D = 0, Dp = 0;
  std::size_t q_stride = 0, kv_stride = 0;  // floats between consecutive tokens
  // Long segments (more than one query block) get K^T / V packed once into a shared buffer:
  // keys padded to a multiple of kKeyPad, at pad_offset[segment] within each kv head's region.
  std::vector<std::size_t> pad_offset;
  std::size_t k_region = 0, v_region = 0, packed_floats = 0;
  // Per-worker scratch: Q tile, O tile, row max, row sum, scores, local K^T / V (short segments).
  std::size_t q_tile = 0, o_tile = 0, stats = 0, scores = 0, local_k = 0, local_v = 0;
  std::size_t per_worker = 0;

  FlashLayout(const FlashProblem& p, const std::vector<Segment>& segs, AttentionTiling tile) {
    const int G = detail::kAttnRowGroup;
    D = p.head_dim;
    Dp = static_cast<int>(round_up(D, detail::kKeyPad));
    q_stride = static_cast<std::size_t>(p.num_heads) * D;
    kv_stride = static_cast<std::size_t>(p.num_kv_heads) * D;
    pad_offset.assign(segs.size() + 1, 0);
    for (std::size_t s = 0; s < segs.size(); ++s)
      pad_offset[s + 1] =
          pad_offset[s] +
          (segs[s].len > tile.block_q
               ? round_up(static_cast<std::size_t>(segs[s].len), detail::kKeyPad)
               : 0);
    k_region = pad_offset.back() * D;
    v_region = pad_offset.back() * Dp;
    packed_floats = round_up(static_cast<std::size_t>(p.num_kv_heads) * (k_region + v_region), 16);
    const std::size_t rows_padded = round_up(static_cast<std::size_t>(tile.block_q), G);
    q_tile = round_up(rows_padded * D, 16);
    o_tile = rows_padded * Dp;
    stats = round_up(rows_padded, 16);
    scores = static_cast<std::size_t>(G) * tile.block_kv;
    const std::size_t local_keys =
        round_up(static_cast<std::size_t>(tile.block_q), detail::kKeyPad);
    local_k = round_up(local_keys * D, 16);
    local_v = local_keys * Dp;
    per_worker = q_tile + o_tile + 2 * stats + scores + local_k + local_v;
  }
  float* k_packed(float* packed, int kvh, std::size_t seg) const {
    return packed + static_cast<std::size_t>(kvh) * (k_region + v_region) + pad_offset[seg] * D;
  }
  float* v_packed(float* packed, int kvh, std::size_t seg) const {
    return packed + static_cast<std::size_t>(kvh) * (k_region + v_region) + k_region +
           pad_offset[seg] * Dp;
  }
};

// Packs keys [key0, key0 + n) of (kv head, segment) as one block: K^T as panels of
// attn_key_chunk keys ([D][panel] each, see AttnBlockTask), V [n_pad][Dp], zero-padded.
void pack_kv_block(const detail::IsaOps& ops, const FlashProblem& p, const FlashLayout& l, int kvh,
                   const Segment& seg, int key0, int n, float* kt, float* vp) {
  const int D = l.D, Dp = l.Dp;
  const int n_pad = static_cast<int>(round_up(n, detail::kKeyPad));
  const std::size_t token0 = static_cast<std::size_t>(seg.start + key0);
  const float* k_rows = p.k + token0 * l.kv_stride + static_cast<std::size_t>(kvh) * D;
  // K^T with the ISA's 8x8 transposes (the scalar strided copy was a hot spot of the 64-token
  // windows). A panel wholly in the padding has no source rows: zeros only.
  for (int c0 = 0; c0 < n_pad; c0 += ops.attn_key_chunk) {
    const int width = std::min(ops.attn_key_chunk, n_pad - c0);
    const int rows = std::clamp(n - c0, 0, width);
    ops.pack_transposed(rows > 0 ? k_rows + static_cast<std::size_t>(c0) * l.kv_stride : k_rows,
                        l.kv_stride, rows, D, width, kt + static_cast<std::size_t>(c0) * D);
  }
  for (int j = 0; j < n_pad; ++j) {
    float* vrow = vp + static_cast<std::size_t>(j) * Dp;
    if (j < n) {
      const float* vsrc = p.v + (token0 + j) * l.kv_stride + static_cast<std::size_t>(kvh) * D;
      std::copy(vsrc, vsrc + D, vrow);
      std::fill(vrow + D, vrow + Dp, 0.0f);
    } else {
      std::fill(vrow, vrow + Dp, 0.0f);
    }
  }
}

// Phase 1: segments longer than one query block are packed once per (kv head, segment, kv
// block) into the shared buffer, and all their query blocks reuse it. A segment that fits one
// query block (windows) is packed by its own work item into worker scratch instead: same single
// pack for MHA, and the packed copy never leaves the cache.
void pack_long_segments(const detail::IsaOps& ops, const FlashProblem& p, const FlashLayout& l,
                        const std::vector<Segment>& segs, AttentionTiling tile, float* packed,
                        WorkerPool& pool) {
  struct PackItem {
    std::int32_t seg, kvh, key0;
  };
  std::vector<PackItem> pack_items;
  for (std::size_t s = 0; s < segs.size(); ++s)
    if (segs[s].len > tile.block_q)
      for (int h = 0; h < p.num_kv_heads; ++h)
        for (std::int32_t k0 = 0; k0 < segs[s].len; k0 += tile.block_kv)
          pack_items.push_back({static_cast<std::int32_t>(s), h, k0});
  pool.run(pack_items.size(), [&](std::size_t item, unsigned) {
    const PackItem& it = pack_items[item];
    const Segment& seg = segs[it.seg];
    const int n = std::min(tile.block_kv, seg.len - it.key0);
    pack_kv_block(ops, p, l, it.kvh, seg, it.key0, n,
                  l.k_packed(packed, it.kvh, it.seg) + static_cast<std::size_t>(it.key0) * l.D,
                  l.v_packed(packed, it.kvh, it.seg) + static_cast<std::size_t>(it.key0) * l.Dp);
  });
}

struct AttnItem {
  std::int32_t seg, head, row0;
  double cost;
};

// Phase 2's work list: (segment, head, query block) items, longest first (LPT) so the dynamic
// claim order of the pool balances skewed segment lengths.
std::vector<AttnItem> attention_items(const std::vector<Segment>& segs, int num_heads,
                                      AttentionTiling tile) {
  std::vector<AttnItem> items;
  for (std::size_t s = 0; s < segs.size(); ++s)
    for (int h = 0; h < num_heads; ++h)
      for (std::int32_t r0 = 0; r0 < segs[s].len; r0 += tile.block_q) {
        const int rows = std::min(tile.block_q, segs[s].len - r0);
        items.push_back({static_cast<std::int32_t>(s), h, r0,
                         static_cast<double>(round_up(rows, detail::kAttnRowGroup)) * segs[s].len});
      }
  std::stable_sort(items.begin(), items.end(),
                   [](const AttnItem& a, const AttnItem& b) { return a.cost > b.cost; });
  return items;
}

// Starts pulling the K and V rows of a short segment's (kv head) into L2: the item a worker most
// likely claims next (the pool hands items out in order) is packed from them, and windows start
// cold (1.5 % less CPU time at 16x64 windows, in-process A/B).
void prefetch_kv_rows(const FlashProblem& p, const FlashLayout& l, const Segment& seg, int kvh) {
  for (int j = 0; j < seg.len; ++j) {
    const std::size_t off = static_cast<std::size_t>(seg.start + j) * l.kv_stride +
                            static_cast<std::size_t>(kvh) * l.D;
    for (int d = 0; d < l.D; d += 16) {
      __builtin_prefetch(p.k + off + d, 0, 2);
      __builtin_prefetch(p.v + off + d, 0, 2);
    }
  }
}

void run_flash(const FlashProblem& p, const std::vector<Segment>& segs, WorkerPool& pool, Isa isa,
               Workspace* workspace, AttentionTiling tiling) {
  const detail::IsaOps& ops = detail::ops_for(resolve_isa(isa));
  const AttentionTiling tile = resolve_tiling(tiling, p.head_dim);
  const FlashLayout l(p, segs, tile);
  const unsigned workers = std::max(1u, pool.num_workers());
  Workspace local;
  Workspace& ws = workspace ? *workspace : local;
  float* packed = ws.floats(l.packed_floats + l.per_worker * workers);
  float* scratch_base = packed + l.packed_floats;
  pack_long_segments(ops, p, l, segs, tile, packed, pool);

  const std::vector<AttnItem> items = attention_items(segs, p.num_heads, tile);
  const int group = p.num_heads / p.num_kv_heads;
  const float scale_log2 = p.scale * std::numbers::log2e_v<float>;
  pool.run(items.size(), [&](std::size_t item, unsigned worker) {
    const AttnItem& it = items[item];
    const Segment& seg = segs[it.seg];
    const int kvh = it.head / group;
    const std::size_t token0 = static_cast<std::size_t>(seg.start + it.row0);
    detail::AttnBlockTask task;
    task.q = p.q + token0 * l.q_stride + static_cast<std::size_t>(it.head) * l.D;
    task.q_row_stride = l.q_stride;
    task.out = p.out + token0 * l.q_stride + static_cast<std::size_t>(it.head) * l.D;
    task.out_row_stride = l.q_stride;
    task.rows = std::min(tile.block_q, seg.len - it.row0);
    task.head_dim = l.D;
    task.head_dim_padded = l.Dp;
    float* mine = scratch_base + l.per_worker * std::min(worker, workers - 1);
    if (item + workers < items.size()) {
      const AttnItem& next = items[item + workers];
      if (segs[next.seg].len <= tile.block_q)
        prefetch_kv_rows(p, l, segs[next.seg], next.head / group);
    }
    if (seg.len > tile.block_q) {
      task.k_packed = l.k_packed(packed, kvh, it.seg);
      task.v_packed = l.v_packed(packed, kvh, it.seg);
    } else {
      float* kt = mine + l.q_tile + l.o_tile + 2 * l.stats + l.scores;
      float* vp = kt + l.local_k;
      for (int k0 = 0; k0 < seg.len; k0 += tile.block_kv)
        pack_kv_block(ops, p, l, kvh, seg, k0, std::min(tile.block_kv, seg.len - k0),
                      kt + static_cast<std::size_t>(k0) * l.D,
                      vp + static_cast<std::size_t>(k0) * l.Dp);
      task.k_packed = kt;
      task.v_packed = vp;
    }
    task.seq_len = seg.len;
    task.block_kv = tile.block_kv;
    task.scale_log2 = scale_log2;
    detail::AttnScratch sc;
    sc.q_tile = mine;
    sc.o_tile = mine + l.q_tile;
    sc.row_max = sc.o_tile + l.o_tile;
    sc.row_sum = sc.row_max + l.stats;
    sc.scores = sc.row_sum + l.stats;
    ops.attend_block(task, sc);
  });
}

}  // namespace

int npu_padded_head_dim(int head_dim) { return head_dim > 64 && head_dim < 128 ? 128 : head_dim; }

AttentionTiling resolve_tiling(AttentionTiling requested, int head_dim) {
  require(requested.block_q >= 0 && requested.block_kv >= 0, "attention tiling must be >= 0");
  // The process-wide choice (tuning.hpp: forced or calibrated) where installed, else the default
  // derived from the cache sizes.
  const AttentionTiling chosen = process_tiles().attention;
  AttentionTiling fallback = attention_default_tiling(head_dim);
  if (chosen.block_q > 0) fallback.block_q = chosen.block_q;
  if (chosen.block_kv > 0) fallback.block_kv = chosen.block_kv;
  AttentionTiling t;
  t.block_q = requested.block_q > 0 ? requested.block_q : fallback.block_q;
  t.block_kv = static_cast<int>(
      round_up(requested.block_kv > 0 ? requested.block_kv : fallback.block_kv, detail::kKeyPad));
  return t;
}

void attention_reference(const VarlenAttentionArgs& a, WorkerPool& pool) {
  validate_shape("attention_reference", a.q, a.k, a.v, a.out, a.total_tokens, a.num_heads,
                 a.num_kv_heads, a.head_dim, a.scale, a.sizes);
  const std::vector<Segment> segs =
      segments_from_cu("attention_reference", a.cu_seqlens, a.num_segments, a.total_tokens);
  const int H = a.num_heads, KVH = a.num_kv_heads, D = a.head_dim;
  const int group = H / KVH;
  const std::size_t num_items = segs.size() * H;
  pool.run(num_items, [&](std::size_t item, unsigned) {
    const Segment& seg = segs[item / H];
    const int h = static_cast<int>(item % H);
    const int kvh = h / group;
    std::vector<double> score(static_cast<std::size_t>(seg.len));
    std::vector<double> acc(static_cast<std::size_t>(D));
    for (std::int32_t i = 0; i < seg.len; ++i) {
      const float* qi = a.q + (static_cast<std::size_t>(seg.start + i) * H + h) * D;
      double mx = -std::numeric_limits<double>::infinity();
      for (std::int32_t j = 0; j < seg.len; ++j) {
        const float* kj = a.k + (static_cast<std::size_t>(seg.start + j) * KVH + kvh) * D;
        double dot = 0;
        for (int d = 0; d < D; ++d) dot += static_cast<double>(qi[d]) * kj[d];
        score[j] = dot * a.scale;
        mx = std::max(mx, score[j]);
      }
      double sum = 0;
      std::fill(acc.begin(), acc.end(), 0.0);
      for (std::int32_t j = 0; j < seg.len; ++j) {
        const double pj = std::exp(score[j] - mx);
        sum += pj;
        const float* vj = a.v + (static_cast<std::size_t>(seg.start + j) * KVH + kvh) * D;
        for (int d = 0; d < D; ++d) acc[d] += pj * vj[d];
      }
      float* oi = a.out + (static_cast<std::size_t>(seg.start + i) * H + h) * D;
      for (int d = 0; d < D; ++d) oi[d] = static_cast<float>(sum > 0 ? acc[d] / sum : 0.0);
    }
  });
}

void fused_varlen(const VarlenAttentionArgs& a, WorkerPool& pool, Isa isa, Workspace* workspace,
                  AttentionTiling tiling) {
  validate_shape("fused_varlen", a.q, a.k, a.v, a.out, a.total_tokens, a.num_heads,
                 a.num_kv_heads, a.head_dim, a.scale, a.sizes);
  // The cumulative lengths are read here, when the kernel executes (on the CPU device they are
  // device memory written by an earlier op on the same stream).
  const std::vector<Segment> segs =
      segments_from_cu("fused_varlen", a.cu_seqlens, a.num_segments, a.total_tokens);
  FlashProblem p{a.q, a.k, a.v, a.out, a.num_heads, a.num_kv_heads, a.head_dim,
                 static_cast<std::size_t>(a.head_dim), a.scale};
  run_flash(p, segs, pool, isa, workspace, tiling);
}

void flash_unpad(const FlashUnpadArgs& a, WorkerPool& pool, Isa isa, Workspace* workspace,
                 AttentionTiling tiling) {
  validate_shape("flash_unpad", a.q, a.k, a.v, a.out, a.total_tokens, a.num_heads, a.num_kv_heads,
                 a.head_dim_padded, a.scale, a.sizes);
  require(a.head_dim >= 0 && a.head_dim <= a.head_dim_padded,
          "flash_unpad: head_dim (" + std::to_string(a.head_dim) + ") must be in [0, head_dim_padded (" +
              std::to_string(a.head_dim_padded) + ")]");
  const std::vector<Segment> segs =
      segments_from_lens("flash_unpad", a.seq_lens, a.num_segments, a.total_tokens);
  // The NPU op sees only padded tensors: it computes over the padded width (that is the cost of
  // padding), and the zero columns of q/k leave the scores unchanged.
  FlashProblem p{a.q, a.k, a.v, a.out, a.num_heads, a.num_kv_heads, a.head_dim_padded,
                 static_cast<std::size_t>(a.head_dim_padded), a.scale};
  run_flash(p, segs, pool, isa, workspace, tiling);
}

}  // namespace encbench::kernels
