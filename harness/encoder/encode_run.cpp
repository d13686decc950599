#include "harness/encoder/encode_run.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <map>
#include <ostream>
#include <sstream>

#include "harness/core/error.hpp"
#include "harness/core/result_json.hpp"
#include "harness/encoder/encode_report.hpp"
#include "harness/device/measured_op_times.hpp"
#include "harness/device/sim_profile.hpp"
#include "kernels/thread_pool.hpp"
#include "harness/timeline/chrome_trace.hpp"

namespace encbench::encoder {

namespace {

// --virtual-host-time and --host-model into the device options (virtual clock only).
void resolve_host_time(const RunOptions& o, device::DeviceOptions& d) {
  d.host_time = device::parse_virtual_host_time_flag(o.virtual_host_time);
  const bool virtual_clock = d.clock == device::ClockMode::virtual_time;
  require(d.host_time == device::HostTime::model || virtual_clock,
          "--virtual-host-time " + o.virtual_host_time + " needs the virtual clock (a sim device with --clock virtual)");
  if (!o.profiles_dir.empty()) d.profiles_dir = o.profiles_dir;
  if (virtual_clock && d.host_time == device::HostTime::model) {
    const auto dir = d.profiles_dir.empty() ? device::default_profiles_dir() : d.profiles_dir;
    d.host_model = std::make_shared<const device::HostModel>(device::load_host_model(o.host_model, dir));
  }
}

}  // namespace

ResolvedRun resolve(const RunOptions& o) {
  require(o.forwards >= 1 && o.forwards <= 100000, "--forwards must be in [1, 100000]");
  require(o.warmup >= 0 && o.warmup <= 10000, "--warmup must be in [0, 10000]");
  require(o.launch_overhead_us >= 0 && o.launch_overhead_us <= 1e6, "--launch-overhead-us must be in [0, 1e6]");
  require(o.kernel_wait_threshold_us >= 0, "--kernel-wait-threshold-us must be >= 0");
  require(o.tolerance >= 0, "--tolerance must be >= 0 (0: the device's default)");
  require(o.alloc_mode == "fresh" || o.alloc_mode == "caching",
          "--alloc-mode: unknown value '" + o.alloc_mode + "'; valid values: fresh, caching");
  require(o.cuda_gemm_math == "fp32" || o.cuda_gemm_math == "tf32",
          "--cuda-gemm-math: unknown value '" + o.cuda_gemm_math + "'; valid values: fp32, tf32");
  ResolvedRun r;
  r.model = load_model(o.model);
  for (const auto& s : o.images) r.media.push_back(parse_image_spec(s));
  for (const auto& s : o.videos) r.media.push_back(parse_video_spec(s));
  require(!r.media.empty(), "no inputs: pass at least one --image WxH or --video FxWxH");
  for (const auto& m : r.media) r.grids.push_back(grid_for(m, r.model));
  r.plan = plan_inputs(r.grids, r.model);
  // Keeps one forward's activations within reason on a shared machine (~4 GiB of fp32 qkv).
  require(r.plan.num_patches <= 262144,
          "too many patches in one forward: " + std::to_string(r.plan.num_patches) + " (limit 262144)");
  r.device_options.spec = o.device;
  r.device_options.op_map = o.op_map;
  r.device_options.device_threads = o.threads;
  r.device_options.alloc_mode = o.alloc_mode == "fresh" ? device::AllocMode::fresh : device::AllocMode::caching;
  // Measured forwards never compute on a sim device; verification gets its own device.
  r.device_options.verify = false;
  r.device_options.record = true;
  r.device_options.launch_overhead_ns = static_cast<Nanos>(std::llround(o.launch_overhead_us * 1e3));
  const bool sim = device::parse_device_spec(o.device).backend == device::DeviceSpec::Backend::sim;
  r.device_options.clock = o.clock.empty() ? (sim ? device::ClockMode::virtual_time : device::ClockMode::real)
                                           : device::parse_clock_mode(o.clock);
  resolve_host_time(o, r.device_options);
  require(std::isfinite(o.device_memory_gb) && o.device_memory_gb >= 0 && o.device_memory_gb <= 1e6,
          "--device-memory-gb must be in [0, 1e6] (0: the sim profile's memory size, unlimited on cpu)");
  r.device_options.memory_budget_bytes = static_cast<std::uint64_t>(o.device_memory_gb * 1e9);
  return r;
}

std::unique_ptr<device::Device> make_run_device(const ResolvedRun& resolved) {
  return device::make_device(resolved.device_options);
}

std::pair<std::string, Toggles> resolve_toggles(const std::string& preset_name, const ToggleOverrides& o) {
  const Toggles base = preset(preset_name);
  const Toggles t = apply_overrides(base, o);
  validate(t);
  return {t == base ? preset_name : std::string("custom"), t};
}

std::unique_ptr<device::Device> make_verify_device(const ResolvedRun& resolved, device::Device& measured) {
  if (measured.info().computes_results) return nullptr;  // verify on the measured device itself
  device::DeviceOptions vopt = resolved.device_options;
  vopt.verify = true;
  vopt.launch_overhead_ns = 0;
  return device::make_device(vopt);
}

namespace {
AccuracyReport verify_with(EncoderRunner& runner, const device::Device& device, const ResolvedRun& resolved,
                           const RunOptions& options) {
  LayerSnapshots snaps;
  const ForwardReport vr = runner.forward_with_snapshots(resolved.grids, snaps);
  kernels::ThreadPool pool(options.threads);
  const double tolerance = options.tolerance > 0 ? options.tolerance : default_tolerance(device.info());
  return verify_forward(pool, runner, resolved.plan, snaps, vr.attention, tolerance);
}
AccuracyReport verify_config(device::Device& device, const ResolvedRun& resolved, const RunOptions& options,
                             EncoderConfig cfg) {
  cfg.keep_host_weights = true;
  EncoderRunner runner(cfg, device);
  return verify_with(runner, device, resolved, options);
}
}  // namespace

namespace {
// The encoder of one configuration, as the options ask for it.
EncoderConfig encoder_config(const ResolvedRun& resolved, const RunOptions& o, const Toggles& toggles) {
  EncoderConfig cfg;
  cfg.model = resolved.model;
  cfg.toggles = toggles;
  cfg.mlp = o.mlp;
  cfg.cuda_tf32_gemms = o.cuda_gemm_math == "tf32";
  cfg.seed = o.seed;
  cfg.kernel_wait_threshold_ns = static_cast<Nanos>(std::llround(o.kernel_wait_threshold_us * 1e3));
  return cfg;
}
}  // namespace

ConfigRun run_config(device::Device& device, device::Device* verify_device, const ResolvedRun& resolved,
                     const RunOptions& options, const std::string& label, const Toggles& toggles) {
  EncoderConfig cfg = encoder_config(resolved, options, toggles);
  // Host weights are only needed by the reference path, on the device that verifies.
  cfg.keep_host_weights = options.verify && verify_device == nullptr;
  ConfigRun run;
  run.label = label;
  run.toggles = toggles;
  try {
    EncoderRunner runner(cfg, device);
    for (int i = 0; i < options.warmup; ++i) (void)runner.forward(resolved.grids);
    for (int i = 0; i < options.forwards; ++i) run.forwards.push_back(runner.forward(resolved.grids));
    run.last_timeline = runner.last_timeline();
    if (options.verify && verify_device == nullptr) run.accuracy = verify_with(runner, device, resolved, options);
  } catch (const OutOfDeviceMemoryAt& oom) {
    run.failure = oom.what();
    run.forwards.clear();
    run.accuracy = skipped_accuracy("not run: " + run.failure);
    run.accuracy.verdict = "FAIL";
    return run;
  }
  if (!options.verify) run.accuracy = skipped_accuracy("not verified (pass --verify)");
  else if (verify_device != nullptr) run.accuracy = verify_config(*verify_device, resolved, options, cfg);
  return run;
}

namespace {

void write_trace(const std::string& path, const ConfigRun& run, const nlohmann::json& meta) {
  if (path.empty() || run.forwards.empty()) return;
  timeline::ChromeTraceOptions topt;
  topt.gaps = &run.forwards.back().gaps;
  topt.metadata = meta;
  timeline::write_chrome_trace(path, run.last_timeline, topt);
}

int exit_code_for(const ConfigRun& run) { return run.accuracy.verdict == "FAIL" || !run.failure.empty() ? 1 : 0; }

}  // namespace

int run_encode(const EncodeOptions& options, const std::vector<std::string>& argv, std::ostream& out) {
  const ResolvedRun resolved = resolve(options.run);
  std::vector<std::pair<std::string, Toggles>> configs;
  if (options.sweep) {
    for (const auto& t : all_valid_toggles()) configs.emplace_back("sweep", t);
  } else {
    configs.push_back(resolve_toggles(options.preset, options.overrides));
  }
  auto device = make_run_device(resolved);
  EncodeRecord record;
  record.info = device->info();
  record.sweep = options.sweep;
  auto verify_device = options.run.verify ? make_verify_device(resolved, *device) : nullptr;
  if (options.sweep) print_encode_sweep_head(out, resolved, options.run, record.info, configs.size());
  int exit_code = 0;
  for (const auto& [label, toggles] : configs) {
    record.runs.push_back(run_config(*device, verify_device.get(), resolved, options.run, label, toggles));
    const ConfigRun& run = record.runs.back();
    if (options.sweep) print_encode_sweep_row(out, run);
    else out << encode_summary(resolved, options.run, record.info, run);
    if (exit_code_for(run) != 0) exit_code = 1;
  }
  if (!options.sweep) {
    const ConfigRun& run = record.runs.front();
    const device::DeviceInfo& info = record.info;
    write_trace(options.run.trace_path, run,
                {{"encbench", {{"schema", "encbench-encode"}, {"preset", run.label}, {"toggles", to_json(run.toggles)},
                               {"model", resolved.model.name}, {"device", info.kind}, {"modelled", info.modelled},
                               {"launch_overhead_us", options.run.launch_overhead_us}}}});
  }
  if (!options.run.json_path.empty()) write_json_file(options.run.json_path, encode_json(resolved, options.run, record, argv));
  return exit_code;
}

namespace {

EncoderConfig ab_encoder_config(const ResolvedRun& resolved, const RunOptions& o, const Toggles& t) {
  EncoderConfig cfg = encoder_config(resolved, o, t);
  cfg.keep_host_weights = false;  // verification builds its own runner
  return cfg;
}

// Both sides' forwards, interleaved ABAB... so drift on a shared machine hits both alike. One
// device per side: each side's memory figures (weights, workspaces, caches) are its own, and
// neither side's allocator state leaks into the other's forwards. A side that runs out of device
// memory is recorded as the record's failure (a FAIL, not a crash).
void run_sides(const ResolvedRun& resolved, const RunOptions& o, device::Device& device_a, device::Device& device_b,
               AbRecord& r) {
  ConfigRun* running = &r.a;  // the side whose call is under way, for an out-of-memory verdict
  try {
    EncoderRunner runner_a(ab_encoder_config(resolved, o, r.a.toggles), device_a);
    running = &r.b;
    EncoderRunner runner_b(ab_encoder_config(resolved, o, r.b.toggles), device_b);
    for (int i = 0; i < o.warmup; ++i) {
      running = &r.a;
      (void)runner_a.forward(resolved.grids);
      running = &r.b;
      (void)runner_b.forward(resolved.grids);
    }
    for (int i = 0; i < o.forwards; ++i) {
      running = &r.a;
      r.a.forwards.push_back(runner_a.forward(resolved.grids));
      running = &r.b;
      r.b.forwards.push_back(runner_b.forward(resolved.grids));
    }
    r.a.last_timeline = runner_a.last_timeline();
    r.b.last_timeline = runner_b.last_timeline();
  } catch (const OutOfDeviceMemoryAt& oom) {
    // Both runners are freed here.
    running->failure = oom.what();
    r.failure = oom.what();
  }
}

}  // namespace

int run_ab(const AbOptions& options, const std::vector<std::string>& argv, std::ostream& out) {
  const ResolvedRun resolved = resolve(options.run);
  judgement::validate(options.judging);
  const auto [label_a, toggles_a] = resolve_toggles(options.a, options.a_overrides);
  const auto [label_b, toggles_b] = resolve_toggles(options.b, options.b_overrides);
  auto device = make_run_device(resolved);
  auto device_b = make_run_device(resolved);
  const RunOptions& o = options.run;
  AbRecord record;
  record.info = device->info();
  record.judging = options.judging;
  record.a.label = label_a == options.a ? options.a : options.a + "+overrides";
  record.b.label = label_b == options.b ? options.b : options.b + "+overrides";
  record.a.toggles = toggles_a;
  record.b.toggles = toggles_b;
  run_sides(resolved, o, *device, *device_b, record);
  if (!record.failure.empty()) {
    print_ab(out, resolved, o, record);
    if (!o.json_path.empty()) write_json_file(o.json_path, ab_json(resolved, o, record, argv));
    return 1;
  }
  // Both runners are freed before verification builds its own (memory of real shapes).
  auto verify_device = o.verify ? make_verify_device(resolved, *device) : nullptr;
  for (ConfigRun* side : {&record.a, &record.b})
    side->accuracy = o.verify ? verify_config(verify_device ? *verify_device : *device, resolved, o,
                                              ab_encoder_config(resolved, o, side->toggles))
                              : skipped_accuracy("not verified (pass --verify)");
  record.metrics = compare_sides(record.a, record.b, options.judging);
  print_ab(out, resolved, o, record);
  if (!o.json_path.empty()) write_json_file(o.json_path, ab_json(resolved, o, record, argv));
  if (!o.trace_path.empty()) {
    // Two traces: <path> for B (after) and <path>.a.json for A (before).
    const ConfigRun &a = record.a, &b = record.b;
    write_trace(o.trace_path, b, {{"encbench", {{"schema", "encbench-ab"}, {"side", "b"}, {"toggles", to_json(b.toggles)}}}});
    write_trace(o.trace_path + ".a.json", a, {{"encbench", {{"schema", "encbench-ab"}, {"side", "a"}, {"toggles", to_json(a.toggles)}}}});
  }
  return (record.a.accuracy.verdict == "FAIL" || record.b.accuracy.verdict == "FAIL") ? 1 : 0;
}

}  // namespace encbench::encoder
