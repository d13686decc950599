#include "harness/encoder/verify.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include <map>

namespace encbench::encoder {

namespace {

double rel_error(const std::vector<float>& got, const std::vector<double>& want) {
  if (got.size() != want.size()) return INFINITY;
  double num = 0, den = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const double d = static_cast<double>(got[i]) - want[i];
    num += d * d;
    den += static_cast<double>(want[i]) * want[i];
  }
  if (!std::isfinite(num)) return INFINITY;
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

std::string describe_set(const std::vector<std::int32_t>& lengths) {
  const auto mx = lengths.empty() ? 0 : *std::max_element(lengths.begin(), lengths.end());
  return std::to_string(lengths.size()) + (lengths.size() == 1 ? " segment" : " segments") +
         " of <= " + std::to_string(mx) + " patches";
}

std::string join_layers(const std::vector<int>& layers) {
  std::string s;
  for (std::size_t i = 0; i < layers.size(); ++i) { if (i) s += ", "; s += std::to_string(layers[i]); }
  return s;
}

}  // namespace

namespace ref {

// Everything below is the reference's own code: plain loops in fp64. Nothing here calls the
// device path's helpers (host_math, kernels, the InputPlan's positions or window index), so a
// mistake there cannot hide by being repeated here.
using Vec = std::vector<double>;

// Per patch in the processor's order (merge blocks row-major, 2x2 row-major inside; frames of a
// video one after the other): 2-D position (Qwen2-VL rot_pos_emb's hpos/wpos), the full-attention
// segment (image / temporal group: cu_seqlens) and the window (Qwen2.5-VL get_window_index:
// windows of window_size/merge/patch merged tokens per side, counted from the top-left corner).
struct Geometry {
  std::vector<long long> pos_h, pos_w, full_segment, window_segment;
};

Geometry geometry(const std::vector<vision::GridTHW>& grids, const ModelConfig& m) {
  Geometry g;
  const int s = m.spatial_merge_size;
  const int ws = m.window_size > 0 ? m.window_size / s / m.patch_size : 0;
  long long frame_id = 0, window_base = 0;
  for (const auto& grid : grids) {
    const int mh = grid.h / s, mw = grid.w / s;
    const long long windows_x = ws > 0 ? (mw + ws - 1) / ws : 1;
    const long long windows_y = ws > 0 ? (mh + ws - 1) / ws : 1;
    for (int t = 0; t < grid.t; ++t, ++frame_id, window_base += windows_x * windows_y)
      for (int by = 0; by < mh; ++by)
        for (int bx = 0; bx < mw; ++bx)
          for (int iy = 0; iy < s; ++iy)
            for (int ix = 0; ix < s; ++ix) {
              g.pos_h.push_back(by * s + iy);
              g.pos_w.push_back(bx * s + ix);
              g.full_segment.push_back(frame_id);
              g.window_segment.push_back(ws > 0 ? window_base + (by / ws) * windows_x + bx / ws : frame_id);
            }
  }
  return g;
}

Vec to_double(const std::vector<float>& x) { return Vec(x.begin(), x.end()); }

// nn.Linear: y[r, :] = x[r, :] . W^T + b, W [n, k] row-major.
Vec linear(kernels::WorkerPool& pool, const Vec& x, std::size_t rows, std::size_t k,
           const std::vector<float>& w, const std::vector<float>* b, std::size_t n) {
  Vec wt(k * n);  // [k, n]: the inner loop below runs over contiguous outputs
  for (std::size_t o = 0; o < n; ++o)
    for (std::size_t i = 0; i < k; ++i) wt[i * n + o] = w[o * k + i];
  Vec y(rows * n);
  constexpr std::size_t kRows = 4;
  pool.run((rows + kRows - 1) / kRows, [&](std::size_t item, unsigned) {
    const std::size_t r0 = item * kRows, r1 = std::min(rows, r0 + kRows);
    for (std::size_t r = r0; r < r1; ++r)
      for (std::size_t o = 0; o < n; ++o) y[r * n + o] = b ? static_cast<double>((*b)[o]) : 0.0;
    for (std::size_t i = 0; i < k; ++i) {
      const double* wrow = &wt[i * n];
      for (std::size_t r = r0; r < r1; ++r) {
        const double xv = x[r * k + i];
        double* yr = &y[r * n];
        for (std::size_t o = 0; o < n; ++o) yr[o] += xv * wrow[o];
      }
    }
  });
  return y;
}

// LayerNorm(eps=1e-6) with weight and bias, or Qwen2RMSNorm(eps=1e-6) with weight only.
Vec norm(const Vec& x, std::size_t rows, std::size_t dim, NormKind kind, const std::vector<float>& gamma,
         const std::vector<float>& beta) {
  constexpr double kEps = 1e-6;
  Vec y(rows * dim);
  for (std::size_t r = 0; r < rows; ++r) {
    const double* xr = &x[r * dim];
    double* yr = &y[r * dim];
    if (kind == NormKind::rms) {
      double ms = 0;
      for (std::size_t i = 0; i < dim; ++i) ms += xr[i] * xr[i];
      const double inv = 1.0 / std::sqrt(ms / static_cast<double>(dim) + kEps);
      for (std::size_t i = 0; i < dim; ++i) yr[i] = gamma[i] * (xr[i] * inv);
    } else {
      double mean = 0, var = 0;
      for (std::size_t i = 0; i < dim; ++i) mean += xr[i];
      mean /= static_cast<double>(dim);
      for (std::size_t i = 0; i < dim; ++i) var += (xr[i] - mean) * (xr[i] - mean);
      var /= static_cast<double>(dim);
      const double inv = 1.0 / std::sqrt(var + kEps);
      for (std::size_t i = 0; i < dim; ++i) yr[i] = (xr[i] - mean) * inv * gamma[i] + beta[i];
    }
  }
  return y;
}

// Qwen2-VL apply_rotary_pos_emb_vision on one head vector x[0:D]: freqs = outer(pos, inv_freq)
// with inv_freq = 1 / 10000^(arange(0, D/2, 2) / (D/2)); emb = cat(freqs_h, freqs_w) (D/2
// angles), then cat(emb, emb); x * cos + rotate_half(x) * sin, rotate_half = cat(-x2, x1).
void rotary(double* x, std::size_t D, long long ph, long long pw) {
  const std::size_t half = D / 2, quarter = D / 4;
  Vec angle(D);
  for (std::size_t i = 0; i < half; ++i) {
    const std::size_t j = i % quarter;
    const double inv_freq = 1.0 / std::pow(10000.0, static_cast<double>(2 * j) / static_cast<double>(half));
    angle[i] = static_cast<double>(i < quarter ? ph : pw) * inv_freq;
    angle[i + half] = angle[i];
  }
  Vec out(D);
  for (std::size_t i = 0; i < D; ++i) {
    const double rotated = i < half ? -x[i + half] : x[i - half];
    out[i] = x[i] * std::cos(angle[i]) + rotated * std::sin(angle[i]);
  }
  std::copy(out.begin(), out.end(), x);
}

// softmax(q k^T * D^-0.5) v per head, token i attending to every token of its own segment.
Vec attention(kernels::WorkerPool& pool, const Vec& q, const Vec& k, const Vec& v, std::size_t T,
              std::size_t H, std::size_t D, const std::vector<long long>& segment) {
  std::map<long long, std::vector<std::size_t>> members;
  for (std::size_t t = 0; t < T; ++t) members[segment[t]].push_back(t);
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  const std::size_t row = H * D;
  Vec out(T * row, 0.0);
  pool.run(T * H, [&](std::size_t item, unsigned) {
    const std::size_t i = item / H, h = item % H;
    const auto& js = members.at(segment[i]);
    Vec p(js.size());
    double mx = -INFINITY;
    for (std::size_t n = 0; n < js.size(); ++n) {
      double dot = 0;
      for (std::size_t d = 0; d < D; ++d) dot += q[i * row + h * D + d] * k[js[n] * row + h * D + d];
      p[n] = dot * scale;
      mx = std::max(mx, p[n]);
    }
    double sum = 0;
    for (double& x : p) { x = std::exp(x - mx); sum += x; }
    for (std::size_t n = 0; n < js.size(); ++n)
      for (std::size_t d = 0; d < D; ++d) out[i * row + h * D + d] += p[n] / sum * v[js[n] * row + h * D + d];
  });
  return out;
}

double act(MlpKind kind, double x) {
  switch (kind) {
    case MlpKind::quick_gelu: return x / (1.0 + std::exp(-1.702 * x));
    case MlpKind::gelu_tanh: return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
    case MlpKind::silu_gated: return x / (1.0 + std::exp(-x));
  }
  return x;
}

double gelu(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }

}  // namespace ref

std::vector<double> reference_layer(kernels::WorkerPool& pool, const ModelConfig& m,
                                    const HostLayerWeights& w, bool with_mlp, int layer,
                                    const InputPlan& plan, const std::vector<float>& input) {
  const std::size_t T = static_cast<std::size_t>(plan.num_patches);
  const std::size_t hidden = static_cast<std::size_t>(m.hidden_size);
  const std::size_t H = static_cast<std::size_t>(m.num_heads);
  const std::size_t D = static_cast<std::size_t>(m.head_dim);
  const ref::Geometry geo = ref::geometry(plan.grids, m);
  ref::Vec x = ref::to_double(input);
  // attention: qkv = Linear(hidden, 3*hidden) -> [T, 3, H, D]
  const ref::Vec qkv = ref::linear(pool, ref::norm(x, T, hidden, m.norm, w.norm1_gamma, w.norm1_beta), T, hidden,
                                   w.qkv_w, &w.qkv_b, 3 * hidden);
  ref::Vec q(T * hidden), k(T * hidden), v(T * hidden);
  for (std::size_t t = 0; t < T; ++t)
    for (std::size_t i = 0; i < hidden; ++i) {
      q[t * hidden + i] = qkv[t * 3 * hidden + i];
      k[t * hidden + i] = qkv[t * 3 * hidden + hidden + i];
      v[t * hidden + i] = qkv[t * 3 * hidden + 2 * hidden + i];
    }
  for (std::size_t t = 0; t < T; ++t)
    for (std::size_t h = 0; h < H; ++h) {
      ref::rotary(&q[t * hidden + h * D], D, geo.pos_h[t], geo.pos_w[t]);
      ref::rotary(&k[t * hidden + h * D], D, geo.pos_h[t], geo.pos_w[t]);
    }
  // Qwen2.5-VL: layers in fullatt_block_indexes attend per image/frame, the others per window.
  const bool full = m.window_size == 0 ||
                    std::find(m.fullatt_block_indexes.begin(), m.fullatt_block_indexes.end(), layer) !=
                        m.fullatt_block_indexes.end();
  const ref::Vec attn = ref::attention(pool, q, k, v, T, H, D, full ? geo.full_segment : geo.window_segment);
  const ref::Vec proj = ref::linear(pool, attn, T, hidden, w.proj_w, &w.proj_b, hidden);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] += proj[i];
  if (with_mlp) {
    const std::size_t inter = static_cast<std::size_t>(m.intermediate_size);
    const ref::Vec n2 = ref::norm(x, T, hidden, m.norm, w.norm2_gamma, w.norm2_beta);
    ref::Vec a(T * inter);
    if (m.mlp_kind == MlpKind::silu_gated) {
      // down(silu(gate(x)) * up(x)); fc1 holds gate rows then up rows.
      const ref::Vec gu = ref::linear(pool, n2, T, hidden, w.fc1_w, &w.fc1_b, 2 * inter);
      for (std::size_t t = 0; t < T; ++t)
        for (std::size_t i = 0; i < inter; ++i)
          a[t * inter + i] = ref::act(MlpKind::silu_gated, gu[t * 2 * inter + i]) * gu[t * 2 * inter + inter + i];
    } else {
      a = ref::linear(pool, n2, T, hidden, w.fc1_w, &w.fc1_b, inter);
      for (double& e : a) e = ref::act(m.mlp_kind, e);
    }
    const ref::Vec down = ref::linear(pool, a, T, inter, w.fc2_w, &w.fc2_b, hidden);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] += down[i];
  }
  return x;
}

std::vector<double> reference_merger(kernels::WorkerPool& pool, const ModelConfig& m,
                                     const HostMergerWeights& w, bool post_shuffle,
                                     const std::vector<float>& hidden_states) {
  const std::size_t hidden = static_cast<std::size_t>(m.hidden_size);
  const std::size_t unit = static_cast<std::size_t>(m.spatial_merge_size * m.spatial_merge_size);
  const std::size_t merged = hidden * unit;
  const std::size_t T = hidden_states.size() / hidden;
  const std::size_t rows = T / unit;
  const ref::Vec x = ref::to_double(hidden_states);
  // Final merger: norm over hidden, then view(-1, hidden*4). Deepstack: view first, norm over it.
  const ref::Vec normed = post_shuffle ? ref::norm(x, rows, merged, m.norm, w.norm_gamma, w.norm_beta)
                                       : ref::norm(x, T, hidden, m.norm, w.norm_gamma, w.norm_beta);
  ref::Vec a = ref::linear(pool, normed, rows, merged, w.fc1_w, &w.fc1_b, merged);
  for (double& e : a) e = ref::gelu(e);
  return ref::linear(pool, a, rows, merged, w.fc2_w, &w.fc2_b, static_cast<std::size_t>(m.out_hidden_size));
}

AccuracyReport verify_forward(kernels::WorkerPool& pool, const EncoderRunner& runner,
                              const InputPlan& plan, const LayerSnapshots& snapshots,
                              const std::vector<LayerAttentionInfo>& attention, double tolerance) {
  const EncoderConfig& cfg = runner.config();
  const ModelConfig& m = cfg.model;
  const HostWeights& w = runner.weights();
  AccuracyReport r;
  r.tolerance = tolerance;
  const std::size_t T = static_cast<std::size_t>(plan.num_patches);
  const std::size_t hidden = static_cast<std::size_t>(m.hidden_size);
  if (snapshots.hidden.size() != static_cast<std::size_t>(m.depth) + 1)
    return skipped_accuracy("no layer snapshots were captured");
  // The input: patch embedding in original order, then the device's permute/restore round trip.
  {
    // Conv3d(kernel = stride = (temporal, patch, patch), bias=False) on flattened patches.
    const auto pixels = ref::to_double(make_pixels(plan.num_patches, w.patch_dim, cfg.seed));
    r.input_rel_error = rel_error(snapshots.hidden[0], ref::linear(pool, pixels, T, static_cast<std::size_t>(w.patch_dim),
                                                                   w.patch_w, nullptr, hidden));
  }
  std::vector<std::string> reasons;
  std::vector<int> wrong_full, wrong_window, other;
  for (int l = 0; l < m.depth; ++l) {
    const auto want = reference_layer(pool, m, w.layers[static_cast<std::size_t>(l)], cfg.mlp, l, plan,
                                      snapshots.hidden[static_cast<std::size_t>(l)]);
    LayerAccuracy la;
    la.layer = l;
    la.rel_error = rel_error(snapshots.hidden[static_cast<std::size_t>(l) + 1], want);
    la.full_attention = m.is_full_attention_layer(l);
    const LayerAttentionInfo* info = nullptr;
    for (const auto& a : attention)
      if (a.layer == l) info = &a;
    if (info) la.lengths_source = info->lengths_source;
    la.ok = la.rel_error <= tolerance;
    r.max_rel_error = std::max(r.max_rel_error, la.rel_error);
    if (!la.ok) {
      r.failed_layers.push_back(l);
      const bool set_differs = info && info->full_attention && !info->used_full_set;
      const bool window_differs = info && !info->full_attention && !info->used_window_set;
      if (set_differs && info->used_window_set) wrong_full.push_back(l);
      else if (window_differs && info->used_full_set) wrong_window.push_back(l);
      else other.push_back(l);
    }
    r.layers.push_back(la);
  }
  if (r.input_rel_error > tolerance) reasons.push_back("the patch embedding / window permutation differs from the reference");
  // The mergers, each on the device's own input to it.
  r.merger_rel_error = rel_error(snapshots.merged, reference_merger(pool, m, w.merger, false, snapshots.hidden.back()));
  r.max_rel_error = std::max(r.max_rel_error, r.merger_rel_error);
  if (!(r.merger_rel_error <= tolerance)) {
    std::ostringstream s;
    s << "the patch merger output (" << plan.num_patches / m.merge_unit() << " tokens x " << m.out_hidden_size
      << ") differs from the reference (rel error " << r.merger_rel_error << ")";
    reasons.push_back(s.str());
  }
  for (std::size_t k = 0; k < m.deepstack_visual_indexes.size(); ++k) {
    const int layer = m.deepstack_visual_indexes[k];
    const double e = k < snapshots.deepstack.size()
                         ? rel_error(snapshots.deepstack[k],
                                     reference_merger(pool, m, w.deepstack[k], true,
                                                      snapshots.hidden[static_cast<std::size_t>(layer) + 1]))
                         : INFINITY;
    r.deepstack_rel_errors.push_back(e);
    r.max_rel_error = std::max(r.max_rel_error, e);
    if (!(e <= tolerance)) {
      std::ostringstream s;
      s << "deepstack merger " << k << " (after layer " << layer << ") differs from the reference (rel error " << e << ")";
      reasons.push_back(s.str());
    }
  }
  const auto full_set = lengths_from_cumulative(plan.cu_seqlens);
  const auto window_set = lengths_from_cumulative(plan.cu_window_seqlens);
  if (!wrong_full.empty())
    reasons.push_back("full-attention layers " + join_layers(wrong_full) + " ran with window lengths (" +
                      describe_set(window_set) + ") instead of the full lengths (" + describe_set(full_set) + ")");
  if (!wrong_window.empty())
    reasons.push_back("window layers " + join_layers(wrong_window) + " ran with the full lengths (" +
                      describe_set(full_set) + ") instead of window lengths (" + describe_set(window_set) + ")");
  if (!other.empty()) {
    std::ostringstream s;
    s << "layers " << join_layers(other) << " differ from the reference beyond tolerance";
    for (int l : other)
      for (const auto& a : attention)
        if (a.layer == l && !a.used_full_set && !a.used_window_set)
          s << " (layer " << l << " ran with " << describe_set(a.lengths_used) << ", a stale set)";
    reasons.push_back(s.str());
  }
  r.verdict = (r.failed_layers.empty() && r.input_rel_error <= tolerance && reasons.empty()) ? "PASS" : "FAIL";
  for (std::size_t i = 0; i < reasons.size(); ++i) { if (i) r.reason += "; "; r.reason += reasons[i]; }
  if (r.verdict == "PASS")
    r.reason = "every layer within relative error " + [&] {
      std::ostringstream s;
      s << tolerance;
      return s.str();
    }() + " of the reference";
  return r;
}

double default_tolerance(const device::DeviceInfo& info) {
  return info.kind.starts_with("cuda") ? kCudaTolerance : kDefaultTolerance;
}

AccuracyReport skipped_accuracy(std::string reason) {
  AccuracyReport r;
  r.verdict = "SKIPPED";
  r.reason = std::move(reason);
  return r;
}

nlohmann::json to_json(const AccuracyReport& r) {
  nlohmann::json layers = nlohmann::json::array();
  for (const auto& l : r.layers)
    layers.push_back({{"layer", l.layer},
                      {"rel_error", l.rel_error},
                      {"full_attention", l.full_attention},
                      {"lengths_source", l.lengths_source},
                      {"ok", l.ok}});
  return {{"verdict", r.verdict},         {"max_rel_error", r.max_rel_error},
          {"tolerance", r.tolerance},     {"input_rel_error", r.input_rel_error},
          {"merger_rel_error", r.merger_rel_error}, {"deepstack_rel_errors", r.deepstack_rel_errors},
          {"failed_layers", r.failed_layers}, {"layers", layers},
          {"reason", r.reason}};
}

}  // namespace encbench::encoder
