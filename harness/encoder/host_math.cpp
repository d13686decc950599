#include "harness/encoder/host_math.hpp"

#include "kernels/ops.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

namespace encbench::encoder::math {

namespace {

void parallel_rows(kernels::WorkerPool& pool, std::size_t rows, std::size_t chunk,
                   const std::function<void(std::size_t, std::size_t)>& fn) {
  const std::size_t items = (rows + chunk - 1) / chunk;
  pool.run(items, [&](std::size_t item, unsigned) {
    const std::size_t r0 = item * chunk;
    fn(r0, std::min(rows, r0 + chunk));
  });
}

}  // namespace

void linear(kernels::WorkerPool& pool, const float* a, const float* w, const float* bias, float* c,
            std::size_t m, std::size_t k, std::size_t n) {
  kernels::GemmArgs args;
  args.x = a;
  args.w = w;
  args.bias = bias;
  args.out = c;
  args.m = static_cast<std::int64_t>(m);
  args.n = static_cast<std::int64_t>(n);
  args.k = static_cast<std::int64_t>(k);
  kernels::gemm(args, pool);
}

void add(kernels::WorkerPool& pool, const float* x, const float* y, float* out, std::size_t count) {
  parallel_rows(pool, count, 1 << 16, [&](std::size_t i0, std::size_t i1) {
    for (std::size_t i = i0; i < i1; ++i) out[i] = x[i] + y[i];
  });
}

void layer_norm(kernels::WorkerPool& pool, const float* x, const float* gamma, const float* beta,
                float* out, std::size_t rows, std::size_t dim, double eps) {
  parallel_rows(pool, rows, 16, [&](std::size_t r0, std::size_t r1) {
    for (std::size_t r = r0; r < r1; ++r) {
      const float* xr = x + r * dim;
      double mean = 0, var = 0;
      for (std::size_t i = 0; i < dim; ++i) mean += xr[i];
      mean /= static_cast<double>(dim);
      for (std::size_t i = 0; i < dim; ++i) var += (xr[i] - mean) * (xr[i] - mean);
      var /= static_cast<double>(dim);
      const float inv = static_cast<float>(1.0 / std::sqrt(var + eps));
      float* o = out + r * dim;
      for (std::size_t i = 0; i < dim; ++i)
        o[i] = (xr[i] - static_cast<float>(mean)) * inv * gamma[i] + beta[i];
    }
  });
}

void rms_norm(kernels::WorkerPool& pool, const float* x, const float* gamma, float* out,
              std::size_t rows, std::size_t dim, double eps) {
  parallel_rows(pool, rows, 16, [&](std::size_t r0, std::size_t r1) {
    for (std::size_t r = r0; r < r1; ++r) {
      const float* xr = x + r * dim;
      double ss = 0;
      for (std::size_t i = 0; i < dim; ++i) ss += static_cast<double>(xr[i]) * xr[i];
      const float inv = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(dim) + eps));
      float* o = out + r * dim;
      for (std::size_t i = 0; i < dim; ++i) o[i] = xr[i] * inv * gamma[i];
    }
  });
}

void quick_gelu(kernels::WorkerPool& pool, float* x, std::size_t count) {
  parallel_rows(pool, count, 1 << 15, [&](std::size_t i0, std::size_t i1) {
    for (std::size_t i = i0; i < i1; ++i) x[i] = x[i] / (1.0f + std::exp(-1.702f * x[i]));
  });
}

void gelu_tanh(kernels::WorkerPool& pool, float* x, std::size_t count) {
  parallel_rows(pool, count, 1 << 15, [&](std::size_t i0, std::size_t i1) {
    constexpr float kC = 0.7978845608028654f;  // sqrt(2/pi)
    for (std::size_t i = i0; i < i1; ++i) {
      const float v = x[i];
      x[i] = 0.5f * v * (1.0f + std::tanh(kC * (v + 0.044715f * v * v * v)));
    }
  });
}

void gelu_erf(kernels::WorkerPool& pool, float* x, std::size_t count) {
  parallel_rows(pool, count, 1 << 15, [&](std::size_t i0, std::size_t i1) {
    constexpr float kInvSqrt2 = 0.70710678118654752f;
    for (std::size_t i = i0; i < i1; ++i) x[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * kInvSqrt2));
  });
}

void silu_mul(kernels::WorkerPool& pool, const float* gate_up, float* out, std::size_t rows,
              std::size_t inner) {
  parallel_rows(pool, rows, 16, [&](std::size_t r0, std::size_t r1) {
    for (std::size_t r = r0; r < r1; ++r) {
      const float* g = gate_up + r * 2 * inner;
      const float* u = g + inner;
      float* o = out + r * inner;
      for (std::size_t i = 0; i < inner; ++i) o[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
    }
  });
}

void copy_heads(kernels::WorkerPool& pool, const float* src, std::size_t src_row,
                std::size_t src_off, std::size_t src_head, float* dst, std::size_t dst_row,
                std::size_t dst_head, std::size_t tokens, std::size_t heads, std::size_t d) {
  parallel_rows(pool, tokens, 64, [&](std::size_t t0, std::size_t t1) {
    for (std::size_t t = t0; t < t1; ++t) {
      for (std::size_t h = 0; h < heads; ++h) {
        const float* s = src + t * src_row + src_off + h * src_head;
        float* o = dst + t * dst_row + h * dst_head;
        std::copy(s, s + d, o);
        std::fill(o + d, o + dst_head, 0.0f);
      }
    }
  });
}

void rotary_2d(kernels::WorkerPool& pool, float* x, std::size_t row, std::size_t head_stride,
               std::size_t tokens, std::size_t heads, std::size_t head_dim,
               const std::int32_t* pos_h, const std::int32_t* pos_w, double theta) {
  const std::size_t half = head_dim / 2, quarter = head_dim / 4;
  std::vector<double> inv_freq(quarter);
  // VisionRotaryEmbedding(dim = head_dim / 2): inv_freq = 1 / 10000^(arange(0, dim, 2) / dim).
  for (std::size_t j = 0; j < quarter; ++j)
    inv_freq[j] = 1.0 / std::pow(theta, static_cast<double>(2 * j) / static_cast<double>(half));
  parallel_rows(pool, tokens, 32, [&](std::size_t t0, std::size_t t1) {
    std::vector<float> cos_v(half), sin_v(half);
    for (std::size_t t = t0; t < t1; ++t) {
      for (std::size_t i = 0; i < half; ++i) {
        const double pos = i < quarter ? pos_h[t] : pos_w[t];
        const double angle = pos * inv_freq[i < quarter ? i : i - quarter];
        cos_v[i] = static_cast<float>(std::cos(angle));
        sin_v[i] = static_cast<float>(std::sin(angle));
      }
      for (std::size_t h = 0; h < heads; ++h) {
        float* xh = x + t * row + h * head_stride;
        for (std::size_t i = 0; i < half; ++i) {
          const float x1 = xh[i], x2 = xh[i + half];
          xh[i] = x1 * cos_v[i] - x2 * sin_v[i];
          xh[i + half] = x2 * cos_v[i] + x1 * sin_v[i];
        }
      }
    }
  });
}

void attention_reference(kernels::WorkerPool& pool, const float* q, const float* k, const float* v,
                         float* out, std::size_t tokens, std::size_t heads, std::size_t dim,
                         std::span<const std::int32_t> segment, double scale) {
  // Members of each segment, so the cost is per segment rather than T^2.
  std::vector<std::int32_t> order(tokens);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::int32_t a, std::int32_t b) { return segment[a] < segment[b]; });
  std::vector<std::size_t> first(tokens), last(tokens);
  for (std::size_t i = 0; i < tokens;) {
    std::size_t j = i;
    while (j < tokens && segment[order[j]] == segment[order[i]]) ++j;
    for (std::size_t x = i; x < j; ++x) { first[x] = i; last[x] = j; }
    i = j;
  }
  const std::size_t row = heads * dim;
  pool.run(tokens * heads, [&](std::size_t item, unsigned) {
    const std::size_t pos = item / heads, h = item % heads;
    const std::size_t i = static_cast<std::size_t>(order[pos]);
    const float* qi = q + i * row + h * dim;
    std::vector<double> scores(last[pos] - first[pos]);
    double max_score = -INFINITY;
    for (std::size_t x = first[pos]; x < last[pos]; ++x) {
      const float* kj = k + static_cast<std::size_t>(order[x]) * row + h * dim;
      double dot = 0;
      for (std::size_t d = 0; d < dim; ++d) dot += static_cast<double>(qi[d]) * kj[d];
      scores[x - first[pos]] = dot * scale;
      max_score = std::max(max_score, dot * scale);
    }
    double denom = 0;
    for (double& s : scores) { s = std::exp(s - max_score); denom += s; }
    std::vector<double> acc(dim, 0.0);
    for (std::size_t x = first[pos]; x < last[pos]; ++x) {
      const float* vj = v + static_cast<std::size_t>(order[x]) * row + h * dim;
      const double p = scores[x - first[pos]] / denom;
      for (std::size_t d = 0; d < dim; ++d) acc[d] += p * vj[d];
    }
    float* o = out + i * row + h * dim;
    for (std::size_t d = 0; d < dim; ++d) o[d] = static_cast<float>(acc[d]);
  });
}

void gather_groups(kernels::WorkerPool& pool, const float* src, float* dst, const std::int32_t* index,
                   std::size_t groups, std::size_t unit, std::size_t row) {
  const std::size_t group_floats = unit * row;
  parallel_rows(pool, groups, 16, [&](std::size_t g0, std::size_t g1) {
    for (std::size_t g = g0; g < g1; ++g) {
      const float* s = src + static_cast<std::size_t>(index[g]) * group_floats;
      std::copy(s, s + group_floats, dst + g * group_floats);
    }
  });
}

void scatter_groups(kernels::WorkerPool& pool, const float* src, float* dst, const std::int32_t* index,
                    std::size_t groups, std::size_t unit, std::size_t row) {
  const std::size_t group_floats = unit * row;
  parallel_rows(pool, groups, 16, [&](std::size_t g0, std::size_t g1) {
    for (std::size_t g = g0; g < g1; ++g) {
      const float* s = src + g * group_floats;
      std::copy(s, s + group_floats, dst + static_cast<std::size_t>(index[g]) * group_floats);
    }
  });
}

}  // namespace encbench::encoder::math
