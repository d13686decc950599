#pragma once
// `encbench encode` and `encbench ab` as library functions: resolve options into configs, run
// forwards on a device, verify, and record what they measured (encode_report.hpp turns the
// records into the result JSON and the human summary). The CLI only parses flags into these structs.
#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/judgement/judgement.hpp"
#include "harness/device/device.hpp"
#include "harness/encoder/encoder.hpp"
#include "harness/encoder/verify.hpp"

namespace encbench::encoder {

struct RunOptions {
  std::string model = "qwen2.5-vl-7b";     // preset name or path.json
  std::vector<std::string> images;          // "WxH"
  std::vector<std::string> videos;          // "FxWxH"
  std::string device = "cpu";               // cpu | sim:<profile>
  std::filesystem::path op_map;             // trace: devices: kernel-name map ("" = the shipped one)
  unsigned threads = 0;                     // device threads (0 = all cores)
  int forwards = 5;
  int warmup = 1;
  std::uint64_t seed = 0;
  bool mlp = false;
  bool verify = false;
  double tolerance = 0;  // 0: the verifying device's default_tolerance (verify.hpp)
  double launch_overhead_us = 0;
  std::string alloc_mode = "caching";       // fresh | caching
  std::string cuda_gemm_math = "fp32";      // fp32 | tf32 (cuda devices only)
  std::string clock;                        // virtual | real; empty: virtual on sim, real elsewhere
  // virtual clock: where host time comes from (device/host_model.hpp). "model": the host model's
  // cost of every device call and host-side step (bit-identical across repeats, builds and
  // machines); "cpu": the host thread's CPU time between device calls, a measurement of this
  // machine (named so in the result and its metrics); "none": only the launch overhead.
  std::string virtual_host_time = "model";
  std::string host_model = std::string(device::kDefaultHostModel);  // name or path.json
  std::filesystem::path profiles_dir;       // where host models live ("" = scenarios/devices)
  double device_memory_gb = 0;              // memory budget; 0: the sim profile's size / unlimited
  double kernel_wait_threshold_us = 30;
  std::string trace_path;
  std::string json_path;
  int max_gaps = 10;                        // largest gaps listed
  int max_ops = 4000;                       // ops of the last forward in the JSON (0 = none)
};

struct EncodeOptions {
  RunOptions run;
  std::string preset = "baseline";
  ToggleOverrides overrides;
  bool sweep = false;
};

struct AbOptions {
  RunOptions run;  // forwards = repetitions per side
  std::string a = "baseline", b = "optimized";
  ToggleOverrides a_overrides, b_overrides;
  judgement::Settings judging;  // --threshold, --alpha, --power of the verdicts
};

// Everything measured for one configuration.
struct ConfigRun {
  std::string label;  // preset name, or "custom" when flags changed it
  Toggles toggles;
  std::vector<ForwardReport> forwards;  // measured (warm-up excluded)
  AccuracyReport accuracy;
  timeline::Timeline last_timeline;
  // Set when the configuration could not run: "out of device memory at layer N, op X: ...".
  // A failed configuration is data (a FAIL row, exit 1), not a crash.
  std::string failure;
};

// Resolved, validated inputs of a run.
struct ResolvedRun {
  ModelConfig model;
  std::vector<MediaInput> media;
  std::vector<vision::GridTHW> grids;
  InputPlan plan;
  device::DeviceOptions device_options;
};
ResolvedRun resolve(const RunOptions& options);
std::unique_ptr<device::Device> make_run_device(const ResolvedRun& resolved);

// Builds the toggles for a preset name plus overrides; label is the preset or "custom".
std::pair<std::string, Toggles> resolve_toggles(const std::string& preset_name, const ToggleOverrides& o);

// One configuration end to end on `device` (warm-up, measured forwards, optional verify). With
// options.verify the verification forward runs on `verify_device` (the same device for cpu; for
// sim a second sim device that computes results, so the measured forwards stay unperturbed).
ConfigRun run_config(device::Device& device, device::Device* verify_device, const ResolvedRun& resolved,
                     const RunOptions& options, const std::string& label, const Toggles& toggles);
// The device the verification forwards run on: nullptr when not verifying, else a computing
// device (a new sim device with verify on for modelled devices).
std::unique_ptr<device::Device> make_verify_device(const ResolvedRun& resolved, device::Device& measured);

// The result JSON and the summaries are encode_report.hpp's reporters.

// Exit code: 0 ok, 1 accuracy FAIL. Prints the summary to `out`; writes --json / --trace.
int run_encode(const EncodeOptions& options, const std::vector<std::string>& argv, std::ostream& out);
int run_ab(const AbOptions& options, const std::vector<std::string>& argv, std::ostream& out);

}  // namespace encbench::encoder
