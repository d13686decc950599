#pragma once
// The accuracy guard: the same forward through an independent reference (plain fp64 loops of its
// own for every step: patch embedding, norms, projections, 2-D rotary, attention over the
// *correct* per-layer segments derived from the grid geometry, MLP, patch merger and deepstack
// mergers; same weights, no padding), compared layer by layer. It shares no code with the device
// path except the generators of the inputs and weights (make_pixels, make_weights).
//
// Each layer is checked on the device's own input to that layer (teacher forcing), so an error
// is attributed to the layer that made it rather than to every later layer it propagates into.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/encoder/encoder.hpp"
#include "kernels/worker_pool.hpp"

namespace encbench::encoder {

struct LayerAccuracy {
  int layer = -1;
  double rel_error = 0;  // ||device - reference|| / ||reference|| of the layer output
  bool full_attention = true;
  std::string lengths_source;
  bool ok = true;
};

struct AccuracyReport {
  std::string verdict = "SKIPPED";  // PASS | FAIL | SKIPPED
  double tolerance = 1e-3;
  double max_rel_error = 0;
  double input_rel_error = 0;  // patch embedding + window permutation round trip
  double merger_rel_error = 0;  // patch merger (+ reverse window index) on the last layer's output
  std::vector<double> deepstack_rel_errors;  // per deepstack merger
  std::vector<LayerAccuracy> layers;
  std::vector<int> failed_layers;
  std::string reason;
};

inline constexpr double kDefaultTolerance = 1e-3;
// On a CUDA device attention rounds q/k/v to bf16 (8-bit mantissa, relative rounding 2^-9) for
// the flash kernels; everything else there is fp32. Measured on an H200: 5.6e-4 to 8.3e-4 per
// layer (both issue models, every kernel and pad method), too close to 1e-3 to hold for larger
// inputs, while a wrong length binding gives 0.35 (docs/cuda.md: the encoder on CUDA).
inline constexpr double kCudaTolerance = 5e-3;
// The tolerance --verify uses when none is given: kCudaTolerance on "cuda[:N]", else
// kDefaultTolerance.
double default_tolerance(const device::DeviceInfo& info);

// One layer of the reference forward on `input` (original token order, [T, hidden]); only
// plan.grids is read (positions and segments are derived here from the grids).
std::vector<double> reference_layer(kernels::WorkerPool& pool, const ModelConfig& model,
                                    const HostLayerWeights& weights, bool with_mlp, int layer,
                                    const InputPlan& plan, const std::vector<float>& input);
// A patch merger of the reference on hidden states [T, hidden] (original order): [T/4, out].
std::vector<double> reference_merger(kernels::WorkerPool& pool, const ModelConfig& model,
                                     const HostMergerWeights& weights, bool post_shuffle,
                                     const std::vector<float>& hidden);

AccuracyReport verify_forward(kernels::WorkerPool& pool, const EncoderRunner& runner,
                              const InputPlan& plan, const LayerSnapshots& snapshots,
                              const std::vector<LayerAttentionInfo>& attention,
                              double tolerance = kDefaultTolerance);

AccuracyReport skipped_accuracy(std::string reason);
nlohmann::json to_json(const AccuracyReport& report);

}  // namespace encbench::encoder
