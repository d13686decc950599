#pragma once
// The vision-encoder forward on a device::Device, with the attention op's toggles, and the small
// API the live server uses (EncoderRunner).
//
// Per layer, on the device: norm1 -> qkv_proj -> split_heads -> rotary -> [seq-lens work] ->
// [pad] -> attention -> [unpad] -> out_proj -> residual_add (+ norm2 -> MLP -> residual_add with
// --mlp); Qwen3-VL's deepstack mergers after their listed layers; after the blocks the patch
// merger and (window models) the reverse window index on the merged tokens. The host work each toggle implies (scale, pad decision, building length lists, cumsum,
// allocation, D2H waits) is real host work recorded as timeline HostSpans.
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/core/clock.hpp"
#include "harness/device/device.hpp"
#include "harness/encoder/inputs.hpp"
#include "harness/encoder/model_config.hpp"
#include "harness/encoder/toggles.hpp"
#include "harness/timeline/gaps.hpp"

namespace encbench::encoder {

// Test-only perturbations of the device path (deliberately not a user flag): tests/encoder use
// them to show that --verify catches each kind of mistake. The defaults are the models' values.
struct DevicePathFaults {
  double rotary_theta = 10000.0;      // base of the vision rotary frequencies
  double norm_eps = 1e-6;             // epsilon of every norm on the device path
  bool swap_window_index = false;     // swap the first merged tokens of windows 0 and 1
  bool transpose_merger_fc1 = false;  // merger fc1 uploaded as [in, out], not nn.Linear [out, in]
};

struct EncoderConfig {
  ModelConfig model;
  Toggles toggles;
  bool mlp = false;          // add norm2 + MLP per layer (realistic device time)
  std::uint64_t seed = 0;    // deterministic random weights and pixels
  // Keep a host copy of the weights for the reference path (forward_with_snapshots + verify).
  // Only used when the device computes results; a sim device without verify needs no values.
  bool keep_host_weights = true;
  // Queued gaps shorter than this are kernel_wait (see timeline/gaps.hpp). Unit: ns.
  Nanos kernel_wait_threshold_ns = 30'000;
  DevicePathFaults faults;  // tests only
  // Build every op's KernelLaunch::native_body on any device (a CUDA device always gets them):
  // tests check through the cpu device that no op lacks one. Off by default so the cpu/sim host
  // path (timed, instruction-counted) does no work for bodies it never runs.
  bool native_bodies = false;
  // CUDA only: the fp32 GEMMs run on tensor cores in TF32 (10-bit mantissa products, fp32
  // accumulation) instead of full fp32 products: ~7x the GEMM throughput of an H100/H200 at an
  // error the --verify guard measures. Off by default so the guard's budget goes to bf16 attention.
  bool cuda_tf32_gemms = false;
  // Called on the host thread at the boundaries of a forward: with `layer` before each layer's
  // host work, with `depth` after the last layer, and with -1 once the forward's device work is
  // done (before its timeline is analysed). encbench-instr dumps instruction counts here.
  std::function<void(int layer)> layer_boundary;
};

// Which cu_seqlens set a layer's attention really used, and which one it should have used.
struct LayerAttentionInfo {
  int layer = -1;
  bool full_attention = true;               // what the model says the layer is
  std::string lengths_source;               // "d2h", "layer0-cache", "value-cache hit", ...
  std::vector<std::int32_t> lengths_used;   // per-sequence lengths the kernel attended with
  bool used_full_set = true;                // lengths_used equals the full-attention set
  bool used_window_set = false;             // lengths_used equals the window set
};

struct ForwardReport {
  Nanos forward_ns = 0;          // host wall time: first submit .. device idle after the forward
  // Of forward_ns: the host's time at the forward's end, from issuing its last op until the device
  // had finished (the device work still queued then, plus the closing synchronize's own call and
  // wake-up; small when the host was the bottleneck or had just synced). What host work after the
  // forward can hide behind (serving/step_timing.hpp).
  Nanos end_wait_ns = 0;
  Nanos device_busy_ns = 0;      // union of device ops
  Nanos idle_ns = 0;             // device idle inside its busy span
  double idle_fraction = 0;
  std::size_t syncs = 0;         // blocking host waits inside the forward (D2H copies)
  double host_us_per_layer = 0;  // host api + work spans attributed to layers / depth (no waits)
  std::size_t device_ops = 0;
  timeline::GapAnalysis gaps;
  std::vector<LayerAttentionInfo> attention;  // per layer
  // Device memory of this forward (allocator figures; the sim device accounts without
  // materialising): peak in use, peak held from the system, bytes requested.
  std::uint64_t peak_bytes_in_use = 0;
  std::uint64_t peak_bytes_reserved = 0;
  std::uint64_t bytes_allocated = 0;
  int peak_memory_layer = -1;  // layer during which the peak was reached (-1: outside the layers)
  timeline::LatenessSummary lateness;  // sim on the real clock only
  long long output_tokens = 0;   // tokens the LM receives: patches / merge^2
  Nanos merger_busy_ns = 0;      // device time of the patch merger and deepstack merger ops
};

// Snapshot of the hidden states (original token order) before layer 0 and after every layer,
// [depth + 1][T * hidden], the merger's output [T / merge^2, out_hidden] and each deepstack
// merger's output (same shape, in deepstack_visual_indexes order), all in the original token
// order. Filled only by a verification forward.
struct LayerSnapshots {
  std::vector<std::vector<float>> hidden;
  std::vector<float> merged;
  std::vector<std::vector<float>> deepstack;
};

// The device's memory budget refused an allocation of the encoder: where and how much.
// Message: "out of device memory at layer N, op X: needed A with R reserved, budget B".
class OutOfDeviceMemoryAt : public std::runtime_error {
 public:
  OutOfDeviceMemoryAt(int layer, std::string op, const device::OutOfDeviceMemory& oom);
  int layer;       // -1: weights or workspaces (load/setup)
  std::string op;  // allocation site: "alloc pad", "alloc attn_out", "workspace", "weights qkv_w"
  std::size_t requested;
  std::uint64_t budget;
};

class EncoderRunner {
 public:
  // Generates the weights from config.seed and uploads them (when the device computes results).
  EncoderRunner(const EncoderConfig& config, device::Device& device);
  ~EncoderRunner();
  EncoderRunner(const EncoderRunner&) = delete;
  EncoderRunner& operator=(const EncoderRunner&) = delete;

  // One forward over a batch of inputs; blocks until the device is done. The recording of this
  // forward is collected, analysed and (when keep_timeline) kept in last_timeline().
  ForwardReport forward(std::span<const vision::GridTHW> grids);
  // Same, also capturing per-layer hidden states (extra device copies; used by --verify only).
  ForwardReport forward_with_snapshots(std::span<const vision::GridTHW> grids, LayerSnapshots& snapshots);

  void set_keep_timeline(bool keep) { keep_timeline_ = keep; }
  const timeline::Timeline& last_timeline() const;
  const EncoderConfig& config() const;
  // Host copy of the weights (the reference path uses the same ones).
  const struct HostWeights& weights() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  bool keep_timeline_ = false;
};

// Deterministic weights for a model: patch embedding and every layer, fp32, nn.Linear layout
// [out, in] so y = x * W^T + b.
struct HostLayerWeights {
  std::vector<float> norm1_gamma, norm1_beta, norm2_gamma, norm2_beta;
  std::vector<float> qkv_w, qkv_b;    // [3*hidden, hidden] (q | k | v rows, heads inside)
  std::vector<float> proj_w, proj_b;  // [hidden, hidden]
  std::vector<float> fc1_w, fc1_b;    // [I, hidden] or gated [2I, hidden] (gate | up)
  std::vector<float> fc2_w, fc2_b;    // [hidden, I]
};
// A patch merger (Qwen2-VL PatchMerger, Qwen2.5-VL Qwen2_5_VLPatchMerger, Qwen3-VL
// Qwen3VLVisionPatchMerger): norm, view(-1, hidden * merge^2), fc1 -> GELU (erf) -> fc2.
// The final merger normalises before the 2x2 merge (norm over hidden); Qwen3-VL's deepstack
// mergers after it (use_postshuffle_norm: norm over hidden * merge^2). The norm is the blocks'
// kind (RMSNorm for Qwen2.5-VL, LayerNorm otherwise; RMSNorm ignores norm_beta).
struct HostMergerWeights {
  std::vector<float> norm_gamma, norm_beta;  // [hidden] or [hidden * merge^2] (post-shuffle)
  std::vector<float> fc1_w, fc1_b;           // [4h, 4h], [4h]  (4h = hidden * merge^2)
  std::vector<float> fc2_w, fc2_b;           // [out_hidden, 4h], [out_hidden]
};
struct HostWeights {
  int patch_dim = 0;                  // in_channels(3) * temporal * patch * patch
  std::vector<float> patch_w;         // [hidden, patch_dim]
  std::vector<HostLayerWeights> layers;
  HostMergerWeights merger;
  std::vector<HostMergerWeights> deepstack;  // one per deepstack_visual_indexes entry
};
HostWeights make_weights(const ModelConfig& model, std::uint64_t seed, bool with_mlp);
// Deterministic input pixels for a forward of `patches` patches, [patches, patch_dim].
std::vector<float> make_pixels(long long patches, int patch_dim, std::uint64_t seed);

}  // namespace encbench::encoder
