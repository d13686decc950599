#pragma once
// The serving model's coefficients as data (scenarios/serving/*.json), each with its source: a
// datasheet, a config file, a published measurement, or a fit on a declared calibration set by
// scripts/fit-seeds.py. From them and a model preset's language_model block on a sim profile:
//
//   LM step (device)  = fixed_ms + weight_bytes / (bw * achieved_bandwidth_fraction)
//                     + kernels * kernel_fixed_ns             (with lm_step_ops: its op list)
//                     + per_seq_ms * sequences
//                     + prefill_tokens * flops_per_token / (peak * achieved_flops_fraction)
//                     + context_tokens * kv_bytes_per_token / (bw * achieved_bandwidth_fraction)
//   LM launch (host)  = the op list's calls at the host model's class costs, by step kind
//                       (lm_step_ops.hpp; overlaps the step's device work in both modes)
//   engine-core host  = host_base_ms + host_per_seq_ms * sequences  (overlaps the device step
//                       with async scheduling, adds to it without; serving/step_cost.hpp), or,
//                       with engine_host_parts (issue 35 item 5), per part base_share *
//                       host_base_ms + per_seq_ms * sequences, each part overlapping or not as
//                       vLLM V1's code orders it (engine_host_parts.hpp)
//   encoder step      = the real encoder path on the virtual-clock sim device, each op's host
//                       dispatch = encoder_dispatch_us_per_op (the eager framework's cost the PRs
//                       fought), D2H round trips from the device profile, plus
//                       encoder_host_ms_per_step of host pre-processing (pixel values, position
//                       ids, cu_seqlens) once per encoder step; of it the share
//                       encoder_host_post_forward_share runs after the forward returns and
//                       adds only what the forward's queued device work does not cover
//                       (serving/step_timing.hpp)
//                       (issue 35: or the eager host model named by encoder_host_model, per torch
//                       call, view and host step, with encoder_dispatch_us_per_op 0)
//   KV capacity       = (device_memory_gib * gpu_memory_utilization - reserved_gib) / KV bytes per token
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "harness/device/sim_profile.hpp"
#include "harness/serving/engine_host_parts.hpp"
#include "harness/serving/lm_step_ops.hpp"
#include "harness/serving/step_cost.hpp"
#include "harness/serving/lm_roofline.hpp"

namespace encbench::serving {

struct SourcedValue {
  double value = 0;
  std::string source;
};

struct ServingModel {
  std::string name;
  std::filesystem::path path;
  SourcedValue achieved_flops_fraction{1.0, "roofline: 100 % of the profile's peak"};
  SourcedValue achieved_bandwidth_fraction{1.0, "roofline: 100 % of the profile's bandwidth"};
  SourcedValue lm_fixed_ms{2.0, "estimate: launches and sampling"};
  SourcedValue lm_per_seq_ms{0, "none"};
  SourcedValue host_base_ms{0, "none"};
  SourcedValue host_per_seq_ms{0, "none"};
  SourcedValue encoder_dispatch_us_per_op{0, "none"};
  SourcedValue encoder_host_ms_per_step{0, "none"};
  SourcedValue encoder_host_post_forward_share{0, "0: all of encoder_host_ms_per_step before the forward"};
  SourcedValue device_memory_gib{0, "0: unlimited KV cache"};
  SourcedValue gpu_memory_utilization{0.9, "vLLM default --gpu-memory-utilization"};
  SourcedValue reserved_gib{0, "none"};
  // Run-to-run noise of a real server: the coefficient of variation of each engine step's time
  // (serving/virtual_loop.hpp); 0 = none.
  SourcedValue step_time_cv{0, "none"};
  // Run-to-run noise of the path from the client to vLLM's API server: each request reaches it
  // (bodies in transit when sent, itself included) x this x a lognormal factor of median 1 and
  // arrival_jitter_sigma after it was sent, drawn per run (serving/virtual_loop.hpp), so requests
  // sent at once arrive in an order that changes from run to run; 0 = none.
  SourcedValue arrival_jitter_ms_per_request{0, "none"};
  SourcedValue arrival_jitter_sigma{0, "none"};
  // Run-to-run noise from vLLM's sampling (scenario/workload.hpp RunOutputNoise): each run (each
  // arm of a seed) stops its requests at EOS in its own places. output_length_cv: the coefficient
  // of variation of an early-stopped request's length between runs; output_length_redraw_share:
  // the share of requests whose length each run draws afresh from the workload's distribution.
  // 0 = every run generates the seed's lengths. Only a workload (--workload) has early stops; the
  // fixed sample sends ignore_eos, whose lengths sampling cannot move.
  SourcedValue output_length_cv{0, "none"};
  SourcedValue output_length_redraw_share{0, "none"};
  // The encoder's host model on the virtual clock (device/host_model.hpp: a name in
  // scenarios/devices/host-models or a path): {"encoder_host_model": {"name": ..., "source": ...}}.
  // "dispatch-only" leaves the encoder's host cost to encoder_dispatch_us_per_op alone.
  // The engine-core host split into vLLM V1's parts (empty: one part, the rule before item 5).
  // When given, host_per_seq_ms must be 0: the per-sequence costs are the parts' own.
  EngineHostParts engine_host_parts;
  // The LM forward's host and device work from its op list (lm_step_ops.hpp); empty: the roofline
  // and lm_fixed_ms alone (the rule before issue 59).
  LmStepOps lm_step_ops;
  std::string encoder_host_model = "dispatch-only";
  std::string encoder_host_model_source = "default: dispatch-only";
  // vLLM's API-server stage before the scheduler (serving/api_server_model.hpp): "none", a name in
  // scenarios/serving/api-server or a path: {"api_server": {"name": ..., "source": ...}}.
  std::string api_server = "none";
  std::string api_server_source = "default: none (a request reaches the scheduler when sent)";
};

// Reads a serving-model file; keys absent keep the defaults above. Throws InvalidInput naming the
// file and key for an unknown key, a value that is not a number, or one outside its range.
ServingModel load_serving_model(const std::filesystem::path& file);
ServingModel parse_serving_model(const nlohmann::json& doc, const std::string& origin);
// The model without its run-to-run noise (step_time_cv, arrival jitter, output-length noise at 0):
// what a comparison with a live round, which brings its own noise, runs against.
void clear_run_noise(ServingModel& model);
nlohmann::json to_json(const ServingModel& model);
// "name=value,name=value" overrides (the fit script's way in); throws InvalidInput naming the key.
void apply_overrides(ServingModel& model, const std::string& overrides);

// `profiles_dir`: where the lm_step_ops host model is found by name (unused without lm_step_ops).
serving::StepCostModel step_cost_model(const ServingModel& model, const LanguageModelDims& dims,
                                      const device::SimProfile& profile, bool async_scheduling,
                                      const std::filesystem::path& profiles_dir = {});
// 0 when device_memory_gib is 0 (unlimited). Throws InvalidInput when nothing is left for KV.
std::int64_t kv_capacity_tokens(const ServingModel& model, const LanguageModelDims& dims);

}  // namespace encbench::serving
