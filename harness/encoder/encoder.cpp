#include "harness/encoder/encoder.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <numeric>

#include "harness/core/error.hpp"
#include "harness/core/instrument.hpp"
#include "harness/core/mix64.hpp"
#include "harness/encoder/host_math.hpp"
#include "harness/encoder/native_ops.hpp"
#include "harness/timeline/recorder.hpp"
#include "kernels/attention.hpp"
#include "kernels/workspace.hpp"

namespace encbench::encoder {

using device::Buffer;
using device::HostOpClass;
using device::KernelLaunch;
using device::OpCost;
using timeline::HostSpanKind;
using timeline::ScopedHostSpan;

namespace {

// splitmix64: fast, deterministic, good enough for random weights.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(seed * kSplitmix64Gamma + 0x632BE59BD9B4E019ULL) {}
  std::uint64_t next() { return splitmix64_next(state_); }
  float uniform(float bound) {  // [-bound, bound)
    const double u = static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0);
    return static_cast<float>((2.0 * u - 1.0) * bound);
  }

 private:
  std::uint64_t state_;
};

std::vector<float> random_vector(Rng& rng, std::size_t count, float bound) {
  std::vector<float> v(count);
  for (auto& x : v) x = rng.uniform(bound);
  return v;
}

std::vector<float> near_one(Rng& rng, std::size_t count) {
  std::vector<float> v(count);
  for (auto& x : v) x = 1.0f + rng.uniform(0.1f);
  return v;
}

// Uniform bound giving unit-variance outputs for unit-variance inputs: sqrt(3 / fan_in).
float init_bound(std::size_t fan_in) { return std::sqrt(3.0f / static_cast<float>(fan_in)); }

std::size_t fsize(std::size_t count) { return count * sizeof(float); }

// Bytes per element in the device cost model: the encoder runs in bf16 on the NPU/GPU (vLLM
// --dtype bfloat16), although this C++ path computes in fp32 where it computes at all. Only the
// sim's roofline reads it; buffers and memory accounting keep their fp32 sizes.
constexpr double kCostBytes = 2.0;

// A host-side step of the encoder (scale, pad decision, cumsum, a per-call allocation, input
// preparation): recorded as a host span, and charged to the device's virtual clock as its op
// class's cost in the host model (Device::host_work) before the span ends, so the step costs
// virtual time that no machine can move. Other devices take the step's real time.
// The charge is the simulator's bookkeeping, not the encoder's host code: encbench-instr's counts
// exclude it (as they exclude the device calls' own bookkeeping).
class HostStep {
 public:
  HostStep(device::Device& dev, timeline::Recorder* rec, const char* name, HostSpanKind kind, HostOpClass op_class,
           int layer = -1)
      : span_(rec, name, kind, layer), dev_(dev), op_class_(op_class) {}
  ~HostStep() {  // members are destroyed after this: the span ends last
    const instrument::Paused pause;
    dev_.host_work(op_class_);
  }
  HostStep(const HostStep&) = delete;
  HostStep& operator=(const HostStep&) = delete;

 private:
  ScopedHostSpan span_;
  device::Device& dev_;
  HostOpClass op_class_;
};

// One eager torch call from Python: the framework's part (interpreter, ATen, the op
// queue: the host model's torch_dispatch) charged first, and the span encloses the runtime call
// the op then makes, as aten::<op> encloses its launch in a torch profiler trace (so a trace
// what-if that drops the launch drops the call's host work with it).
class TorchCall {
 public:
  TorchCall(device::Device& dev, timeline::Recorder* rec, const std::string& op, int layer)
      : span_(rec, op + " (torch)", HostSpanKind::work, layer) {
    dev.host_work(HostOpClass::torch_dispatch);
  }

 private:
  ScopedHostSpan span_;
};

}  // namespace

HostWeights make_weights(const ModelConfig& m, std::uint64_t seed, bool with_mlp) {
  HostWeights w;
  const std::size_t hidden = static_cast<std::size_t>(m.hidden_size);
  w.patch_dim = 3 * m.temporal_patch_size * m.patch_size * m.patch_size;
  Rng rng(seed);
  w.patch_w = random_vector(rng, static_cast<std::size_t>(w.patch_dim) * hidden,
                            init_bound(static_cast<std::size_t>(w.patch_dim)));
  const std::size_t inter = static_cast<std::size_t>(m.intermediate_size);
  const std::size_t fc1_out = m.mlp_kind == MlpKind::silu_gated ? 2 * inter : inter;
  for (int l = 0; l < m.depth; ++l) {
    Rng lr(seed ^ (0xA5A5A5A5ULL + static_cast<std::uint64_t>(l) * 7919ULL));
    HostLayerWeights L;
    L.norm1_gamma = near_one(lr, hidden);
    L.norm1_beta = random_vector(lr, hidden, 0.1f);
    L.qkv_w = random_vector(lr, hidden * 3 * hidden, init_bound(hidden));
    L.qkv_b = random_vector(lr, 3 * hidden, 0.1f);
    L.proj_w = random_vector(lr, hidden * hidden, init_bound(hidden));
    L.proj_b = random_vector(lr, hidden, 0.1f);
    if (with_mlp) {
      L.norm2_gamma = near_one(lr, hidden);
      L.norm2_beta = random_vector(lr, hidden, 0.1f);
      L.fc1_w = random_vector(lr, hidden * fc1_out, init_bound(hidden));
      L.fc1_b = random_vector(lr, fc1_out, 0.1f);
      L.fc2_w = random_vector(lr, inter * hidden, init_bound(inter));
      L.fc2_b = random_vector(lr, hidden, 0.1f);
    }
    w.layers.push_back(std::move(L));
  }
  // The mergers draw from their own streams, so the blocks' weights do not depend on them.
  const std::size_t merged = hidden * static_cast<std::size_t>(m.merge_unit());
  const std::size_t out = static_cast<std::size_t>(m.out_hidden_size);
  auto merger = [&](std::uint64_t stream, std::size_t norm_dim) {
    Rng mr(seed ^ (0x3E3E3E3EULL + stream * 104729ULL));
    HostMergerWeights M;
    M.norm_gamma = near_one(mr, norm_dim);
    M.norm_beta = random_vector(mr, norm_dim, 0.1f);
    M.fc1_w = random_vector(mr, merged * merged, init_bound(merged));
    M.fc1_b = random_vector(mr, merged, 0.1f);
    M.fc2_w = random_vector(mr, out * merged, init_bound(merged));
    M.fc2_b = random_vector(mr, out, 0.1f);
    return M;
  };
  w.merger = merger(0, hidden);
  for (std::size_t k = 0; k < m.deepstack_visual_indexes.size(); ++k) w.deepstack.push_back(merger(k + 1, merged));
  return w;
}

std::vector<float> make_pixels(long long patches, int patch_dim, std::uint64_t seed) {
  Rng rng(seed ^ 0x5EEDF00DULL);
  // Normalised pixel values (the processor standardises them): roughly unit variance.
  return random_vector(rng, static_cast<std::size_t>(patches) * static_cast<std::size_t>(patch_dim), 1.7f);
}

namespace {
std::string oom_message(int layer, const std::string& op, const device::OutOfDeviceMemory& oom) {
  auto gb = [](double bytes) {
    char text[32];
    std::snprintf(text, sizeof text, "%.3f GB", bytes / 1e9);
    return std::string(text);
  };
  return "out of device memory at " + (layer >= 0 ? "layer " + std::to_string(layer) : std::string("load/setup")) +
         ", op " + op + ": needed " + gb(static_cast<double>(oom.requested)) + " with " +
         gb(static_cast<double>(oom.reserved)) + " reserved, budget " + gb(static_cast<double>(oom.budget));
}
}  // namespace

OutOfDeviceMemoryAt::OutOfDeviceMemoryAt(int layer_index, std::string op_name, const device::OutOfDeviceMemory& oom)
    : std::runtime_error(oom_message(layer_index, op_name, oom)),
      layer(layer_index),
      op(std::move(op_name)),
      requested(oom.requested),
      budget(oom.budget) {}

struct EncoderRunner::Impl {
  struct MergerBuffers {
    Buffer norm_gamma, norm_beta, fc1_w, fc1_b, fc2_w, fc2_b;
  };
  struct LayerBuffers {
    Buffer norm1_gamma, norm1_beta, norm2_gamma, norm2_beta;
    Buffer qkv_w, qkv_b, proj_w, proj_b;
    Buffer qkv_w_padded, qkv_b_padded, proj_w_padded;  // weight-padded (#701)
    Buffer fc1_w, fc1_b, fc2_w, fc2_b;
  };
  // Per-layer state of the attention module (what __init__ would hold).
  struct AttentionState {
    float scale_init = 0;
    bool enable_pad_init = false;
  };
  // out-buffer=reuse: one attention output buffer shared by every layer (the stream runs the
  // layers in order, so a layer's output is consumed before the next layer writes it); one
  // per layer would hold num_layers full-size buffers.
  Buffer shared_out_buffer;
  std::size_t shared_out_bytes = 0;
  // The #6448 module-global cache, shared by every layer (and the value-cache variant's key).
  struct SeqLensCache {
    bool valid = false;
    std::vector<std::int32_t> lengths;
    const void* key_buffer = nullptr;  // value-cache: identity of the cu_seqlens tensor ...
    std::uint64_t key_version = 0;     // ... and its write version (like data_ptr + _version)
  };
  // Per-call tensors (pads, outputs) on a caching allocator are reused as PyTorch's caching
  // allocator does on one stream: a block freed after its last consumer was submitted may serve
  // the next request at once, because the stream runs in submission order. (The device allocator
  // itself parks released blocks until the device has finished with them, which is safe for any
  // use but would make a host that runs ahead allocate fresh memory for every call.) With
  // --alloc-mode fresh every request goes to the device allocator (a system allocation).
  struct SameStreamCache {
    std::map<std::size_t, std::vector<Buffer>> free_blocks;
  };
  // Shape-dependent workspaces (re-allocated when the token count changes).
  struct Workspace {
    long long tokens = -1;
    std::size_t max_cu = 0;
    Buffer pixels, embed, hidden, norm_out, qkv, q, k, v, attn_flat, proj_out, mlp_a, mlp_b;
    Buffer cu_full, cu_window, lengths_dev, window_index, pos_h, pos_w, snapshots;
    Buffer merge_mid, merged_perm, merged;  // merger: fc1 output, output (blocks' order), restored
    std::vector<Buffer> deepstack;          // one output per deepstack merger
    // CUDA only: bf16 staging of q/k/v/out for the flash kernels, and the attention's host length
    // list (cu_seqlens or flash-unpad's work list) uploaded per layer.
    Buffer q16, k16, v16, out16, attn_lengths;
    std::size_t attn_lengths_count = 0;  // int32 capacity of attn_lengths
  };

  EncoderConfig cfg;
  device::Device& dev;
  device::Stream& stream;
  timeline::Recorder* rec;
  bool computes;
  bool native;         // a CUDA device: ops run their native bodies (native_ops.hpp)
  native::Ops nops;
  HostWeights host;
  Buffer patch_w;
  std::vector<LayerBuffers> layers;
  MergerBuffers merger;
  std::vector<MergerBuffers> deepstack;
  std::vector<AttentionState> attn_state;
  SeqLensCache cache;
  Workspace ws;
  SameStreamCache call_cache;
  std::uint64_t cu_version = 0;
  std::vector<float> pixels_host;
  long long pixels_patches = -1;
  timeline::Timeline last_timeline;
  const std::vector<float> no_data;
  kernels::Workspace attention_scratch;

  Impl(const EncoderConfig& c, device::Device& d)
      : cfg(c), dev(d), stream(d.default_stream()), rec(&d.recorder()),
        computes(d.info().computes_results),
        native(d.info().kind.starts_with("cuda")),
        nops(native, c.native_bodies, c.cuda_tf32_gemms) {
    validate(cfg.toggles);
    const ModelConfig& m = cfg.model;
    // Weights exist on the host only when the device computes results (the reference needs
    // them too); a sim device without verify only needs correctly sized buffers.
    if (computes) host = make_weights(m, cfg.seed, cfg.mlp);
    else host.patch_dim = 3 * m.temporal_patch_size * m.patch_size * m.patch_size;
    const std::size_t hidden = static_cast<std::size_t>(m.hidden_size);
    const std::size_t heads = static_cast<std::size_t>(m.num_heads);
    const std::size_t D = static_cast<std::size_t>(m.head_dim);
    const std::size_t Dp = static_cast<std::size_t>(m.padded_head_dim());
    const std::size_t inter = static_cast<std::size_t>(m.intermediate_size);
    const std::size_t fc1_out = m.mlp_kind == MlpKind::silu_gated ? 2 * inter : inter;
    const bool weight_padded = cfg.toggles.pad_method == PadMethod::weight_padded && m.needs_head_pad();

    patch_w = upload(host.patch_w, static_cast<std::size_t>(host.patch_dim) * hidden, "patch_w");
    for (int l = 0; l < m.depth; ++l) {
      const HostLayerWeights* hw = computes ? &host.layers[static_cast<std::size_t>(l)] : nullptr;
      auto get = [&](const std::vector<float> HostLayerWeights::*field) -> const std::vector<float>& {
        return hw ? hw->*field : no_data;
      };
      LayerBuffers L;
      L.norm1_gamma = upload(get(&HostLayerWeights::norm1_gamma), hidden, "norm1_gamma");
      L.norm1_beta = upload(get(&HostLayerWeights::norm1_beta), hidden, "norm1_beta");
      L.qkv_w = upload(get(&HostLayerWeights::qkv_w), hidden * 3 * hidden, "qkv_w");
      L.qkv_b = upload(get(&HostLayerWeights::qkv_b), 3 * hidden, "qkv_b");
      L.proj_w = upload(get(&HostLayerWeights::proj_w), hidden * hidden, "proj_w");
      L.proj_b = upload(get(&HostLayerWeights::proj_b), hidden, "proj_b");
      if (weight_padded) {
        // Pad once at load (#701 pad_qkv_weight / pad_proj_weight): zero columns for each
        // head's padded lanes in QKV, zero rows in the output projection.
        std::vector<float> qw, qb, pw;
        if (hw) {
          // nn.Linear layout [out, in]: padded output rows for QKV, padded input columns for proj.
          qw.assign(3 * heads * Dp * hidden, 0.0f);
          qb.assign(3 * heads * Dp, 0.0f);
          pw.assign(hidden * heads * Dp, 0.0f);
          for (std::size_t part = 0; part < 3; ++part)
            for (std::size_t h = 0; h < heads; ++h)
              for (std::size_t d = 0; d < D; ++d) {
                const std::size_t src_row = part * hidden + h * D + d;
                const std::size_t dst_row = (part * heads + h) * Dp + d;
                std::copy_n(&hw->qkv_w[src_row * hidden], hidden, &qw[dst_row * hidden]);
                qb[dst_row] = hw->qkv_b[src_row];
              }
          for (std::size_t r = 0; r < hidden; ++r)
            for (std::size_t h = 0; h < heads; ++h)
              std::copy_n(&hw->proj_w[r * hidden + h * D], D, &pw[r * heads * Dp + h * Dp]);
        }
        L.qkv_w_padded = upload(qw, hidden * 3 * heads * Dp, "qkv_w_padded");
        L.qkv_b_padded = upload(qb, 3 * heads * Dp, "qkv_b_padded");
        L.proj_w_padded = upload(pw, heads * Dp * hidden, "proj_w_padded");
      }
      if (cfg.mlp) {
        L.norm2_gamma = upload(get(&HostLayerWeights::norm2_gamma), hidden, "norm2_gamma");
        L.norm2_beta = upload(get(&HostLayerWeights::norm2_beta), hidden, "norm2_beta");
        L.fc1_w = upload(get(&HostLayerWeights::fc1_w), hidden * fc1_out, "fc1_w");
        L.fc1_b = upload(get(&HostLayerWeights::fc1_b), fc1_out, "fc1_b");
        L.fc2_w = upload(get(&HostLayerWeights::fc2_w), inter * hidden, "fc2_w");
        L.fc2_b = upload(get(&HostLayerWeights::fc2_b), hidden, "fc2_b");
      }
      layers.push_back(std::move(L));
    }
    merger = upload_merger(computes ? &host.merger : nullptr, hidden);
    for (std::size_t k = 0; k < m.deepstack_visual_indexes.size(); ++k)
      deepstack.push_back(upload_merger(computes ? &host.deepstack[k] : nullptr,
                                        hidden * static_cast<std::size_t>(m.merge_unit())));
    // __init__ work of the init-time toggles.
    attn_state.resize(static_cast<std::size_t>(m.depth));
    for (auto& st : attn_state) {
      st.scale_init = static_cast<float>(std::pow(static_cast<double>(m.head_dim), -0.5));
      st.enable_pad_init = m.needs_head_pad();
    }
    dev.synchronize();
    (void)dev.collect_timeline();  // the load is not part of any forward
    if (!cfg.keep_host_weights) {
      // The device holds its own copy; drop the host one (halves memory on the cpu device).
      host.patch_w = {};
      host.layers = {};
      host.merger = {};
      host.deepstack = {};
    }
  }

  MergerBuffers upload_merger(const HostMergerWeights* hw, std::size_t norm_dim) {
    const std::size_t merged = static_cast<std::size_t>(cfg.model.hidden_size) *
                               static_cast<std::size_t>(cfg.model.merge_unit());
    const std::size_t out = static_cast<std::size_t>(cfg.model.out_hidden_size);
    auto get = [&](const std::vector<float> HostMergerWeights::*field) -> const std::vector<float>& {
      return hw ? hw->*field : no_data;
    };
    MergerBuffers B;
    B.norm_gamma = upload(get(&HostMergerWeights::norm_gamma), norm_dim, "merger_norm_gamma");
    B.norm_beta = upload(get(&HostMergerWeights::norm_beta), norm_dim, "merger_norm_beta");
    if (hw && cfg.faults.transpose_merger_fc1) {
      std::vector<float> t(merged * merged);
      for (std::size_t r = 0; r < merged; ++r)
        for (std::size_t c = 0; c < merged; ++c) t[c * merged + r] = hw->fc1_w[r * merged + c];
      B.fc1_w = upload(t, merged * merged, "merger_fc1_w");
    } else {
      B.fc1_w = upload(get(&HostMergerWeights::fc1_w), merged * merged, "merger_fc1_w");
    }
    B.fc1_b = upload(get(&HostMergerWeights::fc1_b), merged, "merger_fc1_b");
    B.fc2_w = upload(get(&HostMergerWeights::fc2_w), out * merged, "merger_fc2_w");
    B.fc2_b = upload(get(&HostMergerWeights::fc2_b), out, "merger_fc2_b");
    return B;
  }

  ~Impl() {
    // Every queued op may still reference our buffers.
    try {
      dev.synchronize();
    } catch (...) {
    }
  }

  // Where the next allocation happens, for an out-of-memory verdict that names it.
  struct AllocSite {
    int layer = -1;
    std::string op = "weights";
  };
  AllocSite site;

  Buffer allocate(std::size_t bytes) {
    try {
      return dev.allocator().allocate(std::max<std::size_t>(bytes, 4));
    } catch (const device::OutOfDeviceMemory& oom) {
      throw OutOfDeviceMemoryAt(site.layer, site.op, oom);
    }
  }

  Buffer upload(const std::vector<float>& data, std::size_t count, const char* label) {
    site = {-1, std::string("weights ") + label};
    Buffer b = allocate(fsize(count));
    if (!data.empty()) stream.copy_h2d(b, 0, data.data(), fsize(count), label);
    return b;
  }

  // `native_body`: the same op as CUDA kernels (native_ops.hpp); every op has both.
  void launch(std::string name, int layer, OpCost cost, std::function<void(kernels::WorkerPool&)> body,
              native::Body native_body) {
    const TorchCall call(dev, rec, name, layer);
    stream.launch(KernelLaunch{std::move(name), cost, layer, std::move(body), std::move(native_body)});
  }
  // `count` Python-level view ops (view, chunk, unbind, a slice, a rearrange that needs no copy).
  void view_ops(const char* name, int layer, int count) {
    const ScopedHostSpan span(rec, name, HostSpanKind::work, layer);
    for (int i = 0; i < count; ++i) dev.host_work(HostOpClass::tensor_view);
  }
  // `count` host steps of one class under one span (the small CPU-side ops of the input stage).
  void host_steps(const char* name, HostOpClass op_class, int count) {
    const ScopedHostSpan span(rec, name, HostSpanKind::work, -1);
    for (int i = 0; i < count; ++i) dev.host_work(op_class);
  }
  void copy_h2d_call(const Buffer& dst, const void* src, std::size_t bytes, const char* label) {
    const TorchCall call(dev, rec, label, -1);
    stream.copy_h2d(dst, 0, src, bytes, label);
  }

  static OpCost gemm_cost(std::size_t m, std::size_t k, std::size_t n) {
    return {2.0 * m * k * n, kCostBytes * (m * k + k * n + m * n + n)};
  }
  static OpCost copy_cost(std::size_t elements_in, std::size_t elements_out) {
    return {0.0, kCostBytes * (elements_in + elements_out)};
  }

  void gemm_op(const char* name, int layer, const Buffer& a, const Buffer& w,
               const Buffer& bias, const Buffer& c, std::size_t m, std::size_t k, std::size_t n) {
    const float* ap = a.as<float>();
    const float* wp = w.as<float>();
    const float* bp = bias ? bias.as<float>() : nullptr;
    float* cp = c.as<float>();
    launch(name, layer, gemm_cost(m, k, n),
           [=](kernels::WorkerPool& pool) { math::linear(pool, ap, wp, bp, cp, m, k, n); },
           nops.gemm(ap, wp, bp, cp, m, k, n));
  }

  void ensure_workspace(const InputPlan& plan) {
    const ModelConfig& m = cfg.model;
    const std::size_t max_cu = std::max(plan.cu_seqlens.size(), plan.cu_window_seqlens.size());
    if (ws.tokens == plan.num_patches && ws.max_cu >= max_cu) return;
    dev.synchronize();  // old workspaces may still be in use
    call_cache.free_blocks.clear();
    ws = Workspace{};
    site = {-1, "workspace"};
    ws.tokens = plan.num_patches;
    ws.max_cu = max_cu;
    const std::size_t T = static_cast<std::size_t>(plan.num_patches);
    const std::size_t hidden = static_cast<std::size_t>(m.hidden_size);
    const std::size_t heads = static_cast<std::size_t>(m.num_heads);
    const std::size_t Dp = static_cast<std::size_t>(m.padded_head_dim());
    const std::size_t inter = static_cast<std::size_t>(m.intermediate_size);
    ws.pixels = allocate(fsize(T * static_cast<std::size_t>(host.patch_dim)));
    ws.embed = allocate(fsize(T * hidden));
    ws.hidden = allocate(fsize(T * hidden));
    ws.norm_out = allocate(fsize(T * hidden));
    ws.qkv = allocate(fsize(T * 3 * heads * Dp));
    ws.q = allocate(fsize(T * heads * Dp));
    ws.k = allocate(fsize(T * heads * Dp));
    ws.v = allocate(fsize(T * heads * Dp));
    ws.attn_flat = allocate(fsize(T * heads * Dp));
    ws.proj_out = allocate(fsize(T * hidden));
    if (cfg.mlp) {
      ws.mlp_a = allocate(fsize(T * 2 * inter));
      ws.mlp_b = allocate(fsize(T * inter));
    }
    ws.cu_full = allocate(max_cu * sizeof(std::int32_t));
    ws.cu_window = allocate(max_cu * sizeof(std::int32_t));
    ws.lengths_dev = allocate(max_cu * sizeof(std::int32_t));
    ws.window_index = allocate(std::max<std::size_t>(plan.window_index.size(), 1) * sizeof(std::int32_t));
    ws.pos_h = allocate(T * sizeof(std::int32_t));
    ws.pos_w = allocate(T * sizeof(std::int32_t));
    const std::size_t merged_rows = T / static_cast<std::size_t>(m.merge_unit());
    const std::size_t out = static_cast<std::size_t>(m.out_hidden_size);
    ws.merge_mid = allocate(fsize(T * hidden));
    ws.merged_perm = allocate(fsize(merged_rows * out));
    if (m.has_windows()) ws.merged = allocate(fsize(merged_rows * out));
    for (std::size_t k = 0; k < m.deepstack_visual_indexes.size(); ++k)
      ws.deepstack.push_back(allocate(fsize(merged_rows * out)));
    if (native) allocate_native_attention(T, heads * Dp, max_cu);
  }

  // The CUDA attention's extra device memory: bf16 copies of q/k/v/out ([T, H, Dp] is the widest
  // layout any toggle uses) and room for the longest length list a layer uploads: flash-unpad's
  // work list has 3 int32 per tile and at most T/64 + segments tiles (sum of ceil(len/64)).
  void allocate_native_attention(std::size_t T, std::size_t row, std::size_t max_cu) {
    const std::size_t bytes16 = T * row * 2;
    ws.q16 = allocate(bytes16);
    ws.k16 = allocate(bytes16);
    ws.v16 = allocate(bytes16);
    ws.out16 = allocate(bytes16);
    ws.attn_lengths_count = 3 * (T / static_cast<std::size_t>(native::Ops::kTileRows) + max_cu + 1);
    ws.attn_lengths = allocate(ws.attn_lengths_count * sizeof(std::int32_t));
  }

  // A patch merger on the hidden states [T, hidden] (in the blocks' token order): norm (over
  // hidden before the 2x2 merge, or over hidden*4 after it for the post-shuffle deepstack
  // mergers), view as [T/4, hidden*4], fc1 -> GELU -> fc2 into `out` [T/4, out_hidden].
  void merger_ops(const std::string& prefix, const MergerBuffers& B, bool post_shuffle, const Buffer& out,
                  std::size_t T) {
    const ModelConfig& m = cfg.model;
    const std::size_t hidden = static_cast<std::size_t>(m.hidden_size);
    const std::size_t merged = hidden * static_cast<std::size_t>(m.merge_unit());
    const std::size_t rows = T / static_cast<std::size_t>(m.merge_unit());
    if (post_shuffle) norm_op((prefix + "_norm").c_str(), -1, ws.hidden, B.norm_gamma, B.norm_beta, ws.norm_out, rows, merged);
    else norm_op((prefix + "_norm").c_str(), -1, ws.hidden, B.norm_gamma, B.norm_beta, ws.norm_out, T, hidden);
    gemm_op((prefix + "_fc1").c_str(), -1, ws.norm_out, B.fc1_w, B.fc1_b, ws.merge_mid, rows, merged, merged);
    float* a = ws.merge_mid.as<float>();
    launch(prefix + "_gelu", -1, {8.0 * rows * merged, 2.0 * kCostBytes * rows * merged},
           [=](kernels::WorkerPool& pool) { math::gelu_erf(pool, a, rows * merged); },
           nops.activation(native::NativeActivation::gelu_erf, a, rows * merged));
    gemm_op((prefix + "_fc2").c_str(), -1, ws.merge_mid, B.fc2_w, B.fc2_b, out, rows, merged,
            static_cast<std::size_t>(m.out_hidden_size));
  }

  // A per-call tensor: from the same-stream cache (caching mode) or the device allocator.
  Buffer allocate_call(std::size_t bytes) {
    if (dev.allocator().mode() == device::AllocMode::caching) {
      auto it = call_cache.free_blocks.find(bytes);
      if (it != call_cache.free_blocks.end() && !it->second.empty()) {
        Buffer b = std::move(it->second.back());
        it->second.pop_back();
        return b;
      }
    }
    return allocate(bytes);
  }
  // Called after the last consumer of the layer's per-call tensors was submitted.
  void free_calls(std::vector<Buffer>& buffers) {
    if (dev.allocator().mode() == device::AllocMode::caching) {
      for (auto& b : buffers) call_cache.free_blocks[b.bytes()].push_back(std::move(b));
    }
    buffers.clear();  // fresh: back to the device allocator (it parks them until the device is done)
  }

  // ---- the attention op -------------------------------------------------------------------
  struct ForwardState {
    const InputPlan* plan = nullptr;
    std::vector<std::int32_t> full_lengths, window_lengths;        // host-precomputed
    std::vector<std::int32_t> full_cumulative, window_cumulative;  // host-precomputed (fused)
    std::vector<LayerAttentionInfo> infos;
    std::size_t syncs = 0;
  };

  std::vector<std::int32_t> seq_lens_d2h(int layer, const Buffer& cu_buf, std::size_t cu_count,
                                         const std::vector<std::int32_t>& expected, ForwardState& fs) {
    const std::size_t n = cu_count - 1;
    const std::int32_t* cu = cu_buf.as<std::int32_t>();
    std::int32_t* out = ws.lengths_dev.as<std::int32_t>();
    // torch.diff(cu_seqlens) on the device ...
    launch("seq_lens_diff", layer, copy_cost(n + 1, n), [=](kernels::WorkerPool&) {
      for (std::size_t i = 0; i < n; ++i) out[i] = cu[i + 1] - cu[i];
    }, nops.diff(cu, n, out));
    // ... then .to("cpu"): waits for everything queued before it.
    std::vector<std::int32_t> lengths(n);
    // The call's framework part before the copy (its span does not enclose the blocking wait, which
    // is the device's time, not host work).
    { const TorchCall call(dev, rec, "seq_lens_d2h", layer); }
    stream.copy_d2h(lengths.data(), ws.lengths_dev, 0, n * sizeof(std::int32_t), "seq_lens_d2h", layer);
    ++fs.syncs;
    // A sim device without verify computes nothing; use what the device would have returned.
    if (!computes) lengths = expected;
    return lengths;
  }

  // The per-call host decisions before the kernel: the softmax scale and whether q/k/v are padded
  // to 128 (each a host step when the toggles compute it on every call, as #4750 did).
  std::pair<float, std::size_t> attention_scale_and_width(int layer, const AttentionState& st) {
    const ModelConfig& m = cfg.model;
    const Toggles& tg = cfg.toggles;
    float scale = st.scale_init;
    if (tg.scale == ScaleMode::per_call) {
      const HostStep span(dev, rec, "scale", HostSpanKind::work, HostOpClass::host_scalar, layer);
      scale = static_cast<float>(std::pow(static_cast<double>(m.head_dim), -0.5));
    }
    bool enable_pad = st.enable_pad_init;
    if (tg.pad_decision == PadDecision::per_call) {
      const HostStep span(dev, rec, "pad_decision", HostSpanKind::work, HostOpClass::host_scalar, layer);
      // #4750 looked up an environment switch on every call before checking the head size.
      const char* env = std::getenv("USE_OPTIMIZED_MODEL");
      const bool optimized_model = env == nullptr || std::strcmp(env, "0") != 0;
      enable_pad = optimized_model && m.head_dim > 64 && m.head_dim < 128;
    }
    if (tg.pad_method == PadMethod::none) enable_pad = false;  // fused kernel, native head_dim
    return {scale, enable_pad ? std::size_t{128} : static_cast<std::size_t>(m.head_dim)};
  }

  // What the kernel reads for the segment boundaries, and where the host got it.
  struct SeqLens {
    std::vector<std::int32_t> lengths;     // per-sequence (unpad kernel)
    std::vector<std::int32_t> cumulative;  // endpoints (fused kernel, host list)
    bool device_cu = false;                // the fused kernel reads cu_seqlens on the device
  };

  // The seq_lens of one layer by the toggles' mode (a D2H, a cache, or host data), then the
  // fused kernel's host cumsum when it needs one; records the layer's attention info.
  SeqLens attention_seq_lens(int layer, ForwardState& fs, const Buffer& cu_now,
                             const std::vector<std::int32_t>& cu_now_host, bool full) {
    const Toggles& tg = cfg.toggles;
    const InputPlan& plan = *fs.plan;
    const std::vector<std::int32_t> expected = lengths_from_cumulative(cu_now_host);
    LayerAttentionInfo info;
    info.layer = layer;
    info.full_attention = full;
    SeqLens s;
    switch (tg.seq_lens) {
      case SeqLensMode::d2h_per_layer:
        s.lengths = seq_lens_d2h(layer, cu_now, cu_now_host.size(), expected, fs);
        info.lengths_source = "d2h";
        break;
      case SeqLensMode::layer0_cache:
        s.lengths = layer0_cached_lengths(layer, cu_now, cu_now_host.size(), expected, fs, info);
        break;
      case SeqLensMode::value_cache:
        s.lengths = value_cached_lengths(layer, cu_now, cu_now_host.size(), expected, fs, info);
        break;
      case SeqLensMode::host_precomputed: {
        const HostStep span(dev, rec, "seq_lens_select", HostSpanKind::work, HostOpClass::host_scalar, layer);
        s.lengths = full ? fs.full_lengths : fs.window_lengths;
        if (tg.kernel == KernelKind::fused_varlen) s.cumulative = full ? fs.full_cumulative : fs.window_cumulative;
        info.lengths_source = "host-precomputed";
        break;
      }
      case SeqLensMode::device_cumulative:
        s.device_cu = true;
        s.lengths = expected;  // what the kernel will read on the device
        info.lengths_source = "device-cumulative";
        break;
    }
    if (tg.kernel == KernelKind::fused_varlen && !s.device_cu && s.cumulative.empty()) {
      // #7046: list(seq_lens_cpu.cumsum(0)) on every call.
      const HostStep span(dev, rec, "seq_lens_cumsum", HostSpanKind::work, HostOpClass::host_math, layer);
      s.cumulative.reserve(s.lengths.size() + 1);
      s.cumulative.push_back(0);
      for (std::int32_t len : s.lengths) s.cumulative.push_back(s.cumulative.back() + len);
    }
    // _reshape_qkv_to_3d (after the seq_lens work in forward_oot): three .view calls
    view_ops("reshape_qkv_to_3d", layer, 3);
    info.lengths_used = s.lengths;
    info.used_full_set = s.lengths == lengths_from_cumulative(plan.cu_seqlens);
    info.used_window_set = s.lengths == lengths_from_cumulative(plan.cu_window_seqlens);
    fs.infos.push_back(info);
    return s;
  }

  // #6448: refreshed only when layer_index == 0, shared by every layer.
  std::vector<std::int32_t> layer0_cached_lengths(int layer, const Buffer& cu_now, std::size_t cu_count,
                                                  const std::vector<std::int32_t>& expected, ForwardState& fs,
                                                  LayerAttentionInfo& info) {
    if (layer == 0 || !cache.valid) {
      cache.lengths = seq_lens_d2h(layer, cu_now, cu_count, expected, fs);
      cache.valid = true;
      info.lengths_source = "d2h (layer-0 refresh)";
    } else {
      info.lengths_source = "layer0-cache";
    }
    return cache.lengths;
  }

  // #6448's earlier text: refreshed when cu_seqlens changes. Comparing values would need the
  // device data (the D2H being avoided); the honest host-side check is the tensor's identity and
  // write version (data_ptr + _version).
  std::vector<std::int32_t> value_cached_lengths(int layer, const Buffer& cu_now, std::size_t cu_count,
                                                 const std::vector<std::int32_t>& expected, ForwardState& fs,
                                                 LayerAttentionInfo& info) {
    bool hit;
    {
      const HostStep span(dev, rec, "seq_lens_cache_check", HostSpanKind::work, HostOpClass::host_scalar, layer);
      hit = cache.valid && cache.key_buffer == cu_now.data() && cache.key_version == cu_version;
    }
    if (!hit) {
      cache.lengths = seq_lens_d2h(layer, cu_now, cu_count, expected, fs);
      cache.valid = true;
      cache.key_buffer = cu_now.data();
      cache.key_version = cu_version;
      info.lengths_source = "d2h (value-cache miss)";
    } else {
      info.lengths_source = "value-cache hit";
    }
    return cache.lengths;
  }

  // q/k/v as the kernel reads them: [T, H, stride] each (k and v may be offsets into q's buffer).
  struct QkvView {
    const float* q = nullptr;
    const float* k = nullptr;
    const float* v = nullptr;
    std::size_t stride = 0;
  };

  // Pads q/k/v from qkv_stride to Dp when they need it: #6204's stack + one F.pad + unbind, or
  // three F.pad calls (also the fallback when weight-padded is asked but weights are not padded).
  QkvView pad_qkv(int layer, std::size_t T, std::size_t qkv_stride, std::size_t Dp, std::vector<Buffer>& per_call) {
    const std::size_t heads = static_cast<std::size_t>(cfg.model.num_heads);
    const std::size_t D = static_cast<std::size_t>(cfg.model.head_dim);
    // Dp == D: the pad decision said no (then a weight-padded layout stays as it is).
    if (Dp == D || qkv_stride == Dp) return {ws.q.as<float>(), ws.k.as<float>(), ws.v.as<float>(), qkv_stride};
    auto alloc_call = [&](std::size_t bytes, const char* what) {
      const HostStep span(dev, rec, what, HostSpanKind::api, HostOpClass::allocation, layer);
      site = {layer, what};
      per_call.push_back(allocate_call(bytes));
      return per_call.size() - 1;
    };
    if (cfg.toggles.pad_method == PadMethod::stacked) {
      const std::size_t si = alloc_call(fsize(3 * T * heads * D), "alloc stack_qkv");
      const std::size_t pi = alloc_call(fsize(3 * T * heads * Dp), "alloc pad_stacked");
      float* s = per_call[si].as<float>();
      float* p = per_call[pi].as<float>();
      const float *qs = ws.q.as<float>(), *ks = ws.k.as<float>(), *vs = ws.v.as<float>();
      const std::size_t n = T * heads * D;
      launch("stack_qkv", layer, copy_cost(3 * n, 3 * n), [=](kernels::WorkerPool&) {
        std::memcpy(s, qs, fsize(n));
        std::memcpy(s + n, ks, fsize(n));
        std::memcpy(s + 2 * n, vs, fsize(n));
      }, nops.enabled() ? nops.sequence({nops.copy(s, qs, fsize(n)), nops.copy(s + n, ks, fsize(n)),
                                         nops.copy(s + 2 * n, vs, fsize(n))})
                        : native::Body{});
      launch("pad_stacked", layer, copy_cost(3 * n, 3 * T * heads * Dp), [=](kernels::WorkerPool& pool) {
        math::copy_heads(pool, s, heads * D, 0, D, p, heads * Dp, Dp, 3 * T, heads, D);
      }, nops.copy_heads(s, heads * D, 0, D, p, heads * Dp, Dp, 3 * T, heads, D));
      view_ops("unbind", layer, 1);
      const float* qp = per_call[pi].as<float>();  // unbind: k and v are views into the same buffer
      return {qp, qp + T * heads * Dp, qp + 2 * T * heads * Dp, Dp};
    }
    const char* names[3] = {"pad_q", "pad_k", "pad_v"};
    const Buffer* srcs[3] = {&ws.q, &ws.k, &ws.v};
    std::size_t idx[3];
    for (int i = 0; i < 3; ++i) {
      idx[i] = alloc_call(fsize(T * heads * Dp), "alloc pad");
      const float* s = srcs[i]->as<float>();
      float* d = per_call[idx[i]].as<float>();
      launch(names[i], layer, copy_cost(T * heads * D, T * heads * Dp), [=](kernels::WorkerPool& pool) {
        math::copy_heads(pool, s, heads * D, 0, D, d, heads * Dp, Dp, T, heads, D);
      }, nops.copy_heads(s, heads * D, 0, D, d, heads * Dp, Dp, T, heads, D));
    }
    return {per_call[idx[0]].as<float>(), per_call[idx[1]].as<float>(), per_call[idx[2]].as<float>(), Dp};
  }

  // The attention output: torch.empty_like(q) on every call, or (#6448's out_buffer) one buffer
  // reused while its size holds.
  const Buffer* attention_out_buffer(int layer, std::size_t out_bytes, std::vector<Buffer>& per_call) {
    if (cfg.toggles.out_buffer == OutBuffer::alloc_per_call) {
      const TorchCall call(dev, rec, "empty_like", layer);  // torch.empty_like(q): the call, then the allocator
      const HostStep span(dev, rec, "alloc attn_out", HostSpanKind::api, HostOpClass::allocation, layer);
      site = {layer, "alloc attn_out"};
      per_call.push_back(allocate_call(out_bytes));
      return &per_call.back();
    }
    if (!shared_out_buffer || shared_out_bytes != out_bytes) {
      const HostStep span(dev, rec, "alloc attn_out (shape changed)", HostSpanKind::api, HostOpClass::allocation, layer);
      site = {layer, "alloc attn_out"};
      shared_out_buffer = Buffer();  // back to the allocator before the new one is taken
      shared_out_buffer = allocate(out_bytes);
      shared_out_bytes = out_bytes;
    }
    return &shared_out_buffer;
  }

  // The kernel launch. Each kernel variant its own op name, so the sim profile gives it
  // its own efficiency and a trace: device its own measured time.
  void attention_kernel(int layer, const QkvView& in, float* op, float scale, const SeqLens& s, const Buffer& cu_now,
                        std::size_t cu_count, std::size_t T) {
    const ModelConfig& m = cfg.model;
    const std::size_t heads = static_cast<std::size_t>(m.num_heads);
    double sum_sq = 0;
    for (std::int32_t len : s.lengths) sum_sq += static_cast<double>(len) * len;
    const OpCost cost{4.0 * sum_sq * static_cast<double>(heads * in.stride),
                      4.0 * kCostBytes * static_cast<double>(T * heads * in.stride)};
    const int H = m.num_heads;
    const int model_dim = m.head_dim;
    const int layout_dim = static_cast<int>(in.stride);
    kernels::Workspace* scratch = &attention_scratch;  // ops of one stream never overlap
    const bool unpad = cfg.toggles.kernel == KernelKind::flash_unpad;
    const std::string kernel_name = std::string(unpad ? "attention_flash_unpad" : "attention_fusion") +
                                    (in.stride != static_cast<std::size_t>(m.head_dim) ? "_pad128" : "");
    const float *qp = in.q, *kp = in.k, *vp = in.v;
    native::Body native_body = native_attention(layer, in, op, scale, s, cu_now, cu_count, T);
    if (unpad) {
      // _npu_flash_attention_unpad(seq_len = per-sequence host lengths, out = padded buffer)
      launch(kernel_name, layer, cost, [=, lens = s.lengths](kernels::WorkerPool& pool) {
        kernels::FlashUnpadArgs a;
        a.q = qp;
        a.k = kp;
        a.v = vp;
        a.out = op;
        a.seq_lens = lens.data();
        a.num_segments = static_cast<std::int64_t>(lens.size());
        a.total_tokens = static_cast<std::int64_t>(T);
        a.num_heads = H;
        a.num_kv_heads = H;
        a.head_dim_padded = layout_dim;
        a.head_dim = std::min(model_dim, layout_dim);
        a.scale = scale;
        kernels::flash_unpad(a, pool, kernels::Isa::best, scratch);
      }, std::move(native_body));
      return;
    }
    // npu_fusion_attention / FIA: cumulative lengths, from a host list or (device-cumulative)
    // read from the device's cu_seqlens when the kernel runs. Padded lanes are zeros, so the
    // kernel runs over the layout's head_dim with the original-head_dim scale.
    const std::int32_t* cu_dev = s.device_cu ? cu_now.as<std::int32_t>() : nullptr;
    const std::size_t n_cu = s.device_cu ? cu_count : s.cumulative.size();
    launch(kernel_name, layer, cost, [=, cu_host = s.cumulative](kernels::WorkerPool& pool) {
      kernels::VarlenAttentionArgs a;
      a.q = qp;
      a.k = kp;
      a.v = vp;
      a.out = op;
      a.cu_seqlens = cu_dev ? cu_dev : cu_host.data();
      a.num_segments = static_cast<std::int64_t>(n_cu) - 1;
      a.total_tokens = static_cast<std::int64_t>(T);
      a.num_heads = H;
      a.num_kv_heads = H;
      a.head_dim = layout_dim;
      a.scale = scale;
      kernels::fused_varlen(a, pool, kernels::Isa::best, scratch);
    }, std::move(native_body));
  }

  // The attention's native body. The CUDA kernels read their lengths from device memory: the
  // device-cumulative mode passes cu_seqlens as it is; a host list (flash-unpad's per-sequence
  // lengths as a tile work list, the fused kernel's host cumulative list) is uploaded with an
  // H2D copy before the launch, as the NPU op takes its host seq_len list down itself. flash-unpad
  // without the 128 pad (pad decision off) has no CUDA kernel: the fused one runs instead.
  native::Body native_attention(int layer, const QkvView& in, float* op, float scale, const SeqLens& s,
                                const Buffer& cu_now, std::size_t cu_count, std::size_t T) {
    native::AttentionCall call;
    call.q = in.q;
    call.k = in.k;
    call.v = in.v;
    call.out = op;
    call.q16 = ws.q16.data();
    call.k16 = ws.k16.data();
    call.v16 = ws.v16.data();
    call.out16 = ws.out16.data();
    call.tokens = static_cast<std::int64_t>(T);
    call.heads = cfg.model.num_heads;
    call.stride = static_cast<int>(in.stride);
    call.original_head_dim = cfg.model.head_dim;
    call.scale = scale;
    call.lengths = ws.attn_lengths.as<std::int32_t>();
    if (!native) return nops.attention(call);  // a body never run: no host list work off CUDA
    std::vector<std::int32_t> host_list;
    if (cfg.toggles.kernel == KernelKind::flash_unpad && in.stride == 128) {
      host_list = native::Ops::unpad_work_list(s.lengths);
      call.work_list = true;
      call.count = static_cast<int>(host_list.size() / 3);
    } else if (s.device_cu) {
      call.lengths = cu_now.as<std::int32_t>();
      call.count = static_cast<int>(cu_count) - 1;
    } else {
      host_list = s.cumulative;
      if (host_list.empty()) {  // flash-unpad's lengths, as the fused kernel's endpoints
        host_list.push_back(0);
        for (std::int32_t len : s.lengths) host_list.push_back(host_list.back() + len);
      }
      call.count = static_cast<int>(host_list.size()) - 1;
    }
    if (!host_list.empty()) {
      require(host_list.size() <= ws.attn_lengths_count, "attention length list exceeds its workspace");
      stream.copy_h2d(ws.attn_lengths, 0, host_list.data(), host_list.size() * sizeof(std::int32_t),
                      "attention_lengths_h2d", layer);
    }
    return nops.attention(call);
  }

  // Runs the attention op for one layer. q/k/v are [T, H, qkv_stride] (qkv_stride = Dp when
  // weights are padded, else D). Returns the buffer holding [T, H, out_stride] and out_stride.
  std::pair<const Buffer*, std::size_t> attention(int layer, ForwardState& fs, std::size_t qkv_stride,
                                                  std::vector<Buffer>& per_call) {
    const ModelConfig& m = cfg.model;
    const InputPlan& plan = *fs.plan;
    const std::size_t T = static_cast<std::size_t>(plan.num_patches);
    const std::size_t heads = static_cast<std::size_t>(m.num_heads);
    const std::size_t D = static_cast<std::size_t>(m.head_dim);
    const bool full = m.is_full_attention_layer(layer);
    // The model passes the right cu_seqlens per layer (cu_seqlens_now); the op only sees that.
    const Buffer& cu_now = full ? ws.cu_full : ws.cu_window;
    const std::vector<std::int32_t>& cu_now_host = full ? plan.cu_seqlens : plan.cu_window_seqlens;

    const auto [scale, Dp] = attention_scale_and_width(layer, attn_state[static_cast<std::size_t>(layer)]);
    // vllm-ascend's forward_oot up to #7104 runs the pads and torch.empty_like(q) before it computes
    // seq_len (diff(cu_seqlens).to("cpu"), the layer-0 cache, the host list): the pads' host work
    // overlaps the device work queued before them, and the D2H sync then waits for the pads too
    // (the #5810 diff shows the order: pads, empty_like, cu_seqlens, seq_len).
    const QkvView in = pad_qkv(layer, T, qkv_stride, Dp, per_call);
    const Buffer* out = attention_out_buffer(layer, fsize(T * heads * in.stride), per_call);
    const SeqLens s = attention_seq_lens(layer, fs, cu_now, cu_now_host, full);
    float* op = out->as<float>();
    attention_kernel(layer, in, op, scale, s, cu_now, cu_now_host.size(), T);

    if (in.stride != qkv_stride) {
      // slice [..., :head_dim] (a view), then einops.rearrange(...).contiguous(): one more copy
      // into a fresh tensor.
      view_ops("slice head_dim", layer, 1);
      {
        const HostStep span(dev, rec, "alloc unpad_out", HostSpanKind::api, HostOpClass::allocation, layer);
        site = {layer, "alloc unpad_out"};
        per_call.push_back(allocate_call(fsize(T * heads * D)));
      }
      float* dst = per_call.back().as<float>();
      const std::size_t Dpad = in.stride;
      launch("unpad_out", layer, copy_cost(T * heads * Dpad, T * heads * D), [=](kernels::WorkerPool& pool) {
        math::copy_heads(pool, op, heads * Dpad, 0, Dpad, dst, heads * D, D, T, heads, D);
      }, nops.copy_heads(op, heads * Dpad, 0, Dpad, dst, heads * D, D, T, heads, D));
      return {&per_call.back(), D};
    }
    view_ops("rearrange (b s) h d", layer, 1);  // contiguous already: a view
    return {out, in.stride};
  }

  // ---- the host work before the blocks -------------------------------------------
  // vLLM's vision tower forward (qwen2_5_vl.py, qwen3_vl.py, v0.15-v0.16) before its blocks, in
  // eager mode: each torch call on a CPU tensor one host step of its class. Per image: rot_pos_emb
  // builds row/column ids (arange, expand, reshape, permute, flatten, stack: host_tensor); the
  // window models' get_window_index pads and reshapes an index grid per image (about ten CPU ops:
  // host_math) and unique_consecutive's the window bounds; every model builds cu_seqlens
  // (repeat_interleave, cumsum, F.pad: host_math) and max_seqlen (diff + max: host_math).
  void input_index_host_ops(const InputPlan& plan) {
    const int images = static_cast<int>(plan.grids.size());
    host_steps("rot_pos_ids", HostOpClass::host_tensor, 6 * images);
    if (cfg.model.has_windows()) {
      host_steps("get_window_index", HostOpClass::host_math, 10 * images);
      host_steps("cu_window_seqlens", HostOpClass::host_math, 2);
    }
    host_steps("cu_seqlens", HostOpClass::host_math, 3);
    host_steps("max_seqlen", HostOpClass::host_math, 2);
  }

  // The device side of the same stage: the rotary cos/sin tables (inv_freq outer product on the
  // largest grid, then an index per position: 3 ops) and, for Qwen3-VL (learned position
  // embeddings, the models with deepstack mergers), fast_pos_embed_interpolate: per image about
  // twenty tiny index/weight ops (linspace, floor, clamp, sub, mul, stack on [h] and [w]), then
  // the embedding gather of 4 corners, the weighted sum, a permute copy and the add to hidden.
  void pre_block_device_ops(const InputPlan& plan) {
    const ModelConfig& m = cfg.model;
    const std::size_t T = static_cast<std::size_t>(plan.num_patches);
    const std::size_t hidden = static_cast<std::size_t>(m.hidden_size);
    const std::size_t D = static_cast<std::size_t>(m.head_dim);
    for (const char* op : {"rotary_table_freqs", "rotary_table_cos", "rotary_table_sin"})
      launch(op, -1, {2.0 * T * D, kCostBytes * 2.0 * T * D}, [](kernels::WorkerPool&) {}, nops.nothing());
    if (m.deepstack_visual_indexes.empty()) return;
    for (std::size_t image = 0; image < plan.grids.size(); ++image)
      for (int i = 0; i < 20; ++i) launch("pos_embed_index", -1, {1e3, 8e3}, [](kernels::WorkerPool&) {}, nops.nothing());
    launch("pos_embed_gather", -1, copy_cost(4 * T * hidden, 4 * T * hidden), [](kernels::WorkerPool&) {},
           nops.nothing());
    launch("pos_embed_weighted_sum", -1, {8.0 * T * hidden, kCostBytes * 5.0 * T * hidden}, [](kernels::WorkerPool&) {},
           nops.nothing());
    view_ops("pos_embed split/permute views", -1, 4 * static_cast<int>(plan.grids.size()));
    launch("pos_embed_permute", -1, copy_cost(T * hidden, T * hidden), [](kernels::WorkerPool&) {}, nops.nothing());
    launch("pos_embed_add", -1, {1.0 * T * hidden, 3.0 * kCostBytes * T * hidden}, [](kernels::WorkerPool&) {},
           nops.nothing());
  }

  // ---- the forward ------------------------------------------------------------------------
  // The host's input stage: the plan (cu_seqlens, window index, positions), the rotary
  // positions in window order, the index work before the blocks and the H2D copies.
  InputPlan prepare_and_upload_inputs(std::span<const vision::GridTHW> grids, ForwardState& fs) {
    const ModelConfig& m = cfg.model;
    InputPlan plan;
    {
      const HostStep span(dev, rec, "prepare_inputs", HostSpanKind::work, HostOpClass::input_prep);
      plan = plan_inputs(std::vector<vision::GridTHW>(grids.begin(), grids.end()), m);
      if (cfg.faults.swap_window_index && m.has_windows() && plan.cu_window_seqlens.size() > 2)
        std::swap(plan.window_index[0],
                  plan.window_index[static_cast<std::size_t>(plan.cu_window_seqlens[1] / m.merge_unit())]);
    }
    const std::size_t T = static_cast<std::size_t>(plan.num_patches);
    ensure_workspace(plan);
    const std::size_t unit = static_cast<std::size_t>(m.merge_unit());
    const std::size_t groups = T / unit;
    // Pixel values matter only where results are computed; elsewhere the copy is modelled.
    if (computes && pixels_patches != plan.num_patches) {
      pixels_host = make_pixels(plan.num_patches, host.patch_dim, cfg.seed);
      pixels_patches = plan.num_patches;
    }
    std::vector<std::int32_t> pos_h(T), pos_w(T);
    {
      const HostStep span(dev, rec, "rotary_positions", HostSpanKind::work, HostOpClass::host_tensor);
      for (std::size_t g = 0; g < groups; ++g)
        for (std::size_t u = 0; u < unit; ++u) {
          const std::size_t src = static_cast<std::size_t>(plan.window_index[g]) * unit + u;
          pos_h[g * unit + u] = plan.pos_h[src];
          pos_w[g * unit + u] = plan.pos_w[src];
        }
    }
    const std::size_t pix_bytes = fsize(T * static_cast<std::size_t>(host.patch_dim));
    input_index_host_ops(plan);
    copy_h2d_call(ws.pixels, pixels_host.data(), pix_bytes, "pixels_h2d");
    copy_h2d_call(ws.cu_full, plan.cu_seqlens.data(), plan.cu_seqlens.size() * 4, "cu_seqlens_h2d");
    if (m.has_windows())
      copy_h2d_call(ws.cu_window, plan.cu_window_seqlens.data(), plan.cu_window_seqlens.size() * 4,
                    "cu_window_seqlens_h2d");
    ++cu_version;  // the host wrote the cu_seqlens tensors again
    copy_h2d_call(ws.window_index, plan.window_index.data(), plan.window_index.size() * 4, "window_index_h2d");
    copy_h2d_call(ws.pos_h, pos_h.data(), T * 4, "rotary_pos_h2d");
    copy_h2d_call(ws.pos_w, pos_w.data(), T * 4, "rotary_pos_h2d");

    if (cfg.toggles.seq_lens == SeqLensMode::host_precomputed) {
      // PR #7104 done right: both sets, once per forward, from host data.
      const HostStep span(dev, rec, "seq_lens_host_build", HostSpanKind::work, HostOpClass::host_math);
      fs.full_lengths = lengths_from_cumulative(plan.cu_seqlens);
      fs.window_lengths = lengths_from_cumulative(plan.cu_window_seqlens);
      if (cfg.toggles.kernel == KernelKind::fused_varlen) {
        fs.full_cumulative = plan.cu_seqlens;
        fs.window_cumulative = plan.cu_window_seqlens;
      }
    }
    return plan;
  }

  // Patch embedding, the position work before the blocks, then the window permutation.
  void embed_patches(const InputPlan& plan) {
    const ModelConfig& m = cfg.model;
    const std::size_t T = static_cast<std::size_t>(plan.num_patches);
    const std::size_t hidden = static_cast<std::size_t>(m.hidden_size);
    const Buffer& embed_dst = m.has_windows() ? ws.embed : ws.hidden;
    gemm_op("patch_embed", -1, ws.pixels, patch_w, Buffer(), embed_dst, T, static_cast<std::size_t>(host.patch_dim),
            hidden);
    pre_block_device_ops(plan);
    if (!m.has_windows()) return;
    const std::size_t unit = static_cast<std::size_t>(m.merge_unit());
    const float* src = ws.embed.as<float>();
    float* dst = ws.hidden.as<float>();
    const std::int32_t* idx = ws.window_index.as<std::int32_t>();
    launch("window_permute", -1, copy_cost(T * hidden, T * hidden), [=](kernels::WorkerPool& pool) {
      math::gather_groups(pool, src, dst, idx, T / unit, unit, hidden);
    }, nops.gather_groups(src, dst, idx, T / unit, unit * hidden));
  }

  // One vision block: norm1, qkv, the head split and rotary, attention with the toggles, the
  // output projection and residual, the MLP.
  void vision_block(int layer, ForwardState& fs, std::size_t T, std::vector<Buffer>& per_call) {
    const ModelConfig& m = cfg.model;
    const std::size_t hidden = static_cast<std::size_t>(m.hidden_size);
    const std::size_t heads = static_cast<std::size_t>(m.num_heads);
    const std::size_t D = static_cast<std::size_t>(m.head_dim);
    const bool weight_padded = cfg.toggles.pad_method == PadMethod::weight_padded && m.needs_head_pad();
    const std::size_t qkv_stride = weight_padded ? static_cast<std::size_t>(m.padded_head_dim()) : D;
    const LayerBuffers& L = layers[static_cast<std::size_t>(layer)];
    norm_op("norm1", layer, ws.hidden, L.norm1_gamma, L.norm1_beta, ws.norm_out, T, hidden);
    // qkv projection (padded weights produce the padded layout directly)
    const std::size_t qkv_width = 3 * heads * qkv_stride;
    gemm_op("qkv_proj", layer, ws.norm_out, weight_padded ? L.qkv_w_padded : L.qkv_w,
            weight_padded ? L.qkv_b_padded : L.qkv_b, ws.qkv, T, hidden, qkv_width);
    // The head split as vLLM v0.14-v0.16's Qwen2_5_VisionAttention.forward does it (Qwen3-VL's
    // vision blocks use it; vllm-ascend stopped patching it when MMEncoderAttention came in):
    // einops.rearrange of qkv and the qk / v slices are views, `rearrange(qk, "b s two h d ->
    // (two b) s h d").contiguous()` copies q and k, and v stays a strided view that the first op
    // reading it (F.pad or torch.stack) copies contiguous. One copy of all three parts in all,
    // which this op stands for; the data lands in the contiguous q, k, v buffers.
    {
      const float* src = ws.qkv.as<float>();
      float* dsts[3] = {ws.q.as<float>(), ws.k.as<float>(), ws.v.as<float>()};
      std::vector<native::Body> parts;
      for (std::size_t part = 0; part < 3 && nops.enabled(); ++part)
        parts.push_back(nops.copy_heads(src, qkv_width, part * heads * qkv_stride, qkv_stride, dsts[part],
                                        heads * qkv_stride, qkv_stride, T, heads, qkv_stride));
      launch("split_heads", layer, copy_cost(T * qkv_width, T * qkv_width), [=](kernels::WorkerPool& pool) {
        for (std::size_t part = 0; part < 3; ++part)
          math::copy_heads(pool, src, qkv_width, part * heads * qkv_stride, qkv_stride, dsts[part],
                           heads * qkv_stride, qkv_stride, T, heads, qkv_stride);
      }, nops.sequence(std::move(parts)));
    }
    // The views around that copy: rearrange of qkv, the qk and v slices, rearrange of qk. (Before
    // vLLM's rearrange form, q and k were made contiguous separately and joined by torch.cat([q, k])
    // for one rotary call: a second device copy of q and k that v0.14's code no longer has.)
    view_ops("split_qkv views", layer, 4);
    // vision 2D rotary on q and k
    {
      float* qp = ws.q.as<float>();
      float* kp = ws.k.as<float>();
      const std::int32_t* ph = ws.pos_h.as<std::int32_t>();
      const std::int32_t* pw = ws.pos_w.as<std::int32_t>();
      const double theta = cfg.faults.rotary_theta;
      launch("rotary", layer, {12.0 * T * heads * D, 4.0 * kCostBytes * T * heads * qkv_stride},
             [=](kernels::WorkerPool& pool) {
               math::rotary_2d(pool, qp, heads * qkv_stride, qkv_stride, T, heads, D, ph, pw, theta);
               math::rotary_2d(pool, kp, heads * qkv_stride, qkv_stride, T, heads, D, ph, pw, theta);
             },
             nops.rotary(qp, kp, heads * qkv_stride, qkv_stride, T, heads, D, ph, pw, theta));
    }
    view_ops("qk_rotated view + unbind", layer, 2);
    auto [attn_out, out_stride] = attention(layer, fs, qkv_stride, per_call);
    view_ops("rearrange context", layer, 1);  // "b s h d -> s b (h d)" with b = 1: no copy
    // output projection (padded weights consume the padded layout), then the residual
    const bool proj_padded = out_stride != D;
    gemm_op("out_proj", layer, *attn_out, proj_padded ? L.proj_w_padded : L.proj_w, L.proj_b, ws.proj_out, T,
            heads * out_stride, hidden);
    add_op("residual_add", layer, ws.hidden, ws.proj_out, T * hidden);
    if (cfg.mlp) mlp_block(layer, L, T);
  }

  // The patch merger, then (window models) hidden[reverse_indices] on the merged tokens.
  void merge_output(std::size_t T) {
    const ModelConfig& m = cfg.model;
    merger_ops("merger", merger, false, ws.merged_perm, T);
    if (!m.has_windows()) return;
    const std::size_t groups = T / static_cast<std::size_t>(m.merge_unit());
    const std::size_t out_hidden = static_cast<std::size_t>(m.out_hidden_size);
    const float* src = ws.merged_perm.as<float>();
    float* dst = ws.merged.as<float>();
    const std::int32_t* idx = ws.window_index.as<std::int32_t>();
    launch("window_restore", -1, copy_cost(groups * out_hidden, groups * out_hidden), [=](kernels::WorkerPool& pool) {
      math::scatter_groups(pool, src, dst, idx, groups, 1, out_hidden);
    }, nops.scatter_groups(src, dst, idx, groups, out_hidden));
  }

  // Verification snapshots back in the original patch order (after the forward's end).
  void read_snapshots(const InputPlan& plan, const std::vector<Buffer>& snaps, LayerSnapshots& out) {
    const ModelConfig& m = cfg.model;
    const std::size_t T = static_cast<std::size_t>(plan.num_patches);
    const std::size_t hidden = static_cast<std::size_t>(m.hidden_size);
    const std::size_t unit = static_cast<std::size_t>(m.merge_unit());
    const std::size_t groups = T / unit;
    const std::size_t out_hidden = static_cast<std::size_t>(m.out_hidden_size);
    out.hidden.assign(snaps.size(), {});
    for (std::size_t s = 0; s < snaps.size(); ++s) {
      std::vector<float> permuted(T * hidden);
      if (dev.info().host_visible_memory) std::memcpy(permuted.data(), snaps[s].data(), fsize(T * hidden));
      else stream.copy_d2h(permuted.data(), snaps[s], 0, fsize(T * hidden), "verify_snapshot_d2h");
      auto& orig = out.hidden[s];
      orig.assign(T * hidden, 0.0f);
      for (std::size_t g = 0; g < groups; ++g)
        std::memcpy(&orig[static_cast<std::size_t>(plan.window_index[g]) * unit * hidden],
                    &permuted[g * unit * hidden], fsize(unit * hidden));
    }
    auto read = [&](const Buffer& b, std::vector<float>& dst, const char* label) {
      dst.assign(groups * out_hidden, 0.0f);
      if (dev.info().host_visible_memory) std::memcpy(dst.data(), b.data(), fsize(dst.size()));
      else stream.copy_d2h(dst.data(), b, 0, fsize(dst.size()), label);
    };
    read(m.has_windows() ? ws.merged : ws.merged_perm, out.merged, "verify_merged_d2h");
    out.deepstack.assign(ws.deepstack.size(), {});
    for (std::size_t k = 0; k < ws.deepstack.size(); ++k) {
      std::vector<float> permuted;
      read(ws.deepstack[k], permuted, "verify_deepstack_d2h");
      auto& orig = out.deepstack[k];
      orig.assign(permuted.size(), 0.0f);
      for (std::size_t g = 0; g < groups; ++g)
        std::memcpy(&orig[static_cast<std::size_t>(plan.window_index[g]) * out_hidden], &permuted[g * out_hidden],
                    fsize(out_hidden));
    }
  }

  ForwardReport run(std::span<const vision::GridTHW> grids, LayerSnapshots* snapshots) {
    const ModelConfig& m = cfg.model;
    const std::size_t hidden = static_cast<std::size_t>(m.hidden_size);
    dev.synchronize();
    (void)dev.collect_timeline();
    dev.allocator().reset_peaks();
    const std::uint64_t requested_before = dev.allocator().stats().bytes_requested;
    const Nanos t0 = dev.host_now_ns();
    ForwardState fs;
    const InputPlan plan = prepare_and_upload_inputs(grids, fs);
    fs.plan = &plan;
    const std::size_t T = static_cast<std::size_t>(plan.num_patches);
    embed_patches(plan);
    std::vector<Buffer> snaps;
    auto snapshot = [&](int slot) {
      if (!snapshots) return;
      Buffer b = allocate(fsize(T * hidden));
      const float* src = ws.hidden.as<float>();
      float* dst = b.as<float>();
      launch("verify_snapshot", slot - 1, copy_cost(T * hidden, T * hidden),
             [=](kernels::WorkerPool&) { std::memcpy(dst, src, fsize(T * hidden)); }, nops.copy(dst, src, fsize(T * hidden)));
      snaps.push_back(std::move(b));
    };
    snapshot(0);

    // The layer during which device memory peaked (-1: before the layers, e.g. the workspaces).
    int peak_layer = -1;
    std::uint64_t peak_seen = dev.allocator().stats().peak_bytes_in_use;
    for (int layer = 0; layer < m.depth; ++layer) {
      if (cfg.layer_boundary) cfg.layer_boundary(layer);
      std::vector<Buffer> per_call;
      per_call.reserve(8);  // attention() hands out pointers to its elements
      vision_block(layer, fs, T, per_call);
      free_calls(per_call);
      snapshot(layer + 1);
      if (const std::uint64_t peak = dev.allocator().stats().peak_bytes_in_use; peak > peak_seen) {
        peak_seen = peak;
        peak_layer = layer;
      }
      // Qwen3-VL: deepstack features taken after the listed layers.
      for (std::size_t k = 0; k < m.deepstack_visual_indexes.size(); ++k)
        if (m.deepstack_visual_indexes[k] == layer)
          merger_ops("deepstack_merger" + std::to_string(k), deepstack[k], true, ws.deepstack[k], T);
    }

    if (cfg.layer_boundary) cfg.layer_boundary(m.depth);
    merge_output(T);
    const Nanos issued = dev.host_now_ns();
    stream.synchronize("forward_end");
    const Nanos t1 = dev.host_now_ns();
    if (cfg.layer_boundary) cfg.layer_boundary(-1);
    const device::AllocatorStats memory = dev.allocator().stats();
    if (snapshots) read_snapshots(plan, snaps, *snapshots);

    // The forward only recorded its timeline; what it means (gaps, host work per layer, merger
    // time) is read from the recording afterwards, as for an imported trace.
    ForwardReport report = report_from_timeline(dev.collect_timeline(), t1 - t0, fs);
    report.end_wait_ns = t1 - issued;
    report.peak_bytes_in_use = memory.peak_bytes_in_use;
    report.peak_bytes_reserved = memory.peak_bytes_reserved;
    report.bytes_allocated = memory.bytes_requested - requested_before;
    report.peak_memory_layer = memory.peak_bytes_in_use > peak_seen ? -1 : peak_layer;
    report.output_tokens = static_cast<long long>(T / static_cast<std::size_t>(m.merge_unit()));
    return report;
  }

  // Gap analysis and the other figures of a forward, from its recorded timeline (kept as
  // last_timeline).
  ForwardReport report_from_timeline(timeline::Timeline tl, Nanos forward_ns, ForwardState& fs) {
    ForwardReport report;
    report.forward_ns = forward_ns;
    timeline::GapOptions gap_options;
    gap_options.kernel_wait_threshold_ns = cfg.kernel_wait_threshold_ns;
    report.gaps = timeline::analyze_gaps(tl, gap_options);
    report.device_busy_ns = report.gaps.busy_ns;
    report.idle_ns = report.gaps.idle_ns;
    report.idle_fraction = report.gaps.idle_fraction;
    report.syncs = fs.syncs;
    report.device_ops = report.gaps.op_count;
    // Host work the layers cost (api + work spans; waits are the device's time, not host work).
    Nanos layer_host = 0;
    for (const auto& span : tl.host_spans)
      if (span.layer >= 0 && span.kind != timeline::HostSpanKind::wait) layer_host += span.end_ns - span.start_ns;
    report.host_us_per_layer = ns_to_us(layer_host) / static_cast<double>(cfg.model.depth);
    report.attention = std::move(fs.infos);
    report.lateness = timeline::lateness_of(tl);
    for (const auto& op : tl.device_ops)
      if (op.name.starts_with("merger_") || op.name.starts_with("deepstack_merger")) report.merger_busy_ns += op.end_ns - op.start_ns;
    last_timeline = std::move(tl);
    return report;
  }

  void norm_op(const char* name, int layer, const Buffer& x, const Buffer& gamma, const Buffer& beta,
               const Buffer& out, std::size_t rows, std::size_t dim) {
    const float* xp = x.as<float>();
    const float* gp = gamma.as<float>();
    const float* bp = beta.as<float>();
    float* op = out.as<float>();
    const bool rms = cfg.model.norm == NormKind::rms;
    const double eps = cfg.faults.norm_eps;
    launch(name, layer, {8.0 * rows * dim, 2.0 * kCostBytes * rows * dim}, [=](kernels::WorkerPool& pool) {
      if (rms) math::rms_norm(pool, xp, gp, op, rows, dim, eps);
      else math::layer_norm(pool, xp, gp, bp, op, rows, dim, eps);
    }, nops.norm(xp, gp, rms ? nullptr : bp, op, rows, dim, eps));
  }

  void add_op(const char* name, int layer, const Buffer& x, const Buffer& y, std::size_t count) {
    float* xp = x.as<float>();
    const float* yp = y.as<float>();
    launch(name, layer, {1.0 * count, 3.0 * kCostBytes * count},
           [=](kernels::WorkerPool& pool) { math::add(pool, xp, yp, xp, count); }, nops.add(xp, yp, xp, count));
  }

  void mlp_block(int layer, const LayerBuffers& L, std::size_t T) {
    const ModelConfig& m = cfg.model;
    const std::size_t hidden = static_cast<std::size_t>(m.hidden_size);
    const std::size_t inter = static_cast<std::size_t>(m.intermediate_size);
    norm_op("norm2", layer, ws.hidden, L.norm2_gamma, L.norm2_beta, ws.norm_out, T, hidden);
    if (m.mlp_kind == MlpKind::silu_gated) {
      gemm_op("mlp_gate_up", layer, ws.norm_out, L.fc1_w, L.fc1_b, ws.mlp_a, T, hidden, 2 * inter);
      const float* a = ws.mlp_a.as<float>();
      float* b = ws.mlp_b.as<float>();
      launch("mlp_act", layer, {4.0 * T * inter, 3.0 * kCostBytes * T * inter},
             [=](kernels::WorkerPool& pool) { math::silu_mul(pool, a, b, T, inter); }, nops.silu_mul(a, b, T, inter));
      gemm_op("mlp_down", layer, ws.mlp_b, L.fc2_w, L.fc2_b, ws.proj_out, T, inter, hidden);
    } else {
      gemm_op("mlp_fc1", layer, ws.norm_out, L.fc1_w, L.fc1_b, ws.mlp_a, T, hidden, inter);
      float* a = ws.mlp_a.as<float>();
      const bool quick = m.mlp_kind == MlpKind::quick_gelu;
      launch("mlp_act", layer, {8.0 * T * inter, 2.0 * kCostBytes * T * inter}, [=](kernels::WorkerPool& pool) {
        if (quick) math::quick_gelu(pool, a, T * inter);
        else math::gelu_tanh(pool, a, T * inter);
      }, nops.activation(quick ? native::NativeActivation::quick_gelu : native::NativeActivation::gelu_tanh, a, T * inter));
      gemm_op("mlp_fc2", layer, ws.mlp_a, L.fc2_w, L.fc2_b, ws.proj_out, T, inter, hidden);
    }
    add_op("residual_add", layer, ws.hidden, ws.proj_out, T * hidden);
  }
};

EncoderRunner::EncoderRunner(const EncoderConfig& config, device::Device& device)
    : impl_(std::make_unique<Impl>(config, device)) {}
EncoderRunner::~EncoderRunner() = default;

ForwardReport EncoderRunner::forward(std::span<const vision::GridTHW> grids) { return impl_->run(grids, nullptr); }
ForwardReport EncoderRunner::forward_with_snapshots(std::span<const vision::GridTHW> grids, LayerSnapshots& snapshots) {
  require(impl_->computes, "verification needs a device that computes results (sim: pass --verify)");
  require(impl_->host.layers.size() == static_cast<std::size_t>(impl_->cfg.model.depth),
          "verification needs EncoderConfig.keep_host_weights");
  return impl_->run(grids, &snapshots);
}
const timeline::Timeline& EncoderRunner::last_timeline() const { return impl_->last_timeline; }
const EncoderConfig& EncoderRunner::config() const { return impl_->cfg; }
const HostWeights& EncoderRunner::weights() const { return impl_->host; }

}  // namespace encbench::encoder
