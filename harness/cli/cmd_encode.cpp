// `encbench encode`: one encoder configuration (or --sweep), N forwards, gaps, accuracy.
#include <iostream>
#include <memory>

#include "harness/cli/command.hpp"
#include "harness/encoder/encode_run.hpp"

namespace encbench::cli {

// Flags shared by `encode` and `ab` (also used by cmd_ab.cpp).
void add_encoder_run_flags(CLI::App* sub, encoder::RunOptions& o) {
  sub->add_option("--model", o.model, "Model preset (scenarios/models/*.json) or a path to a model JSON file")
      ->capture_default_str();
  sub->add_option("--image", o.images, "Image WIDTHxHEIGHT in pixels, e.g. 448x448 (repeatable)");
  sub->add_option("--video", o.videos, "Video FRAMESxWIDTHxHEIGHT, e.g. 8x448x448 (repeatable)");
  sub->add_option("--device", o.device,
                  "Device: cpu | sim:<profile> (e.g. sim:ascend-910b) | trace:<trace.json>[@<profile>] (a sim "
                  "device with op times measured in a trace, the profile's roofline where the trace lacks an op)")
      ->capture_default_str();
  sub->add_option("--op-map", o.op_map, "Kernel-name map for a trace:FILE device (JSON, schema encbench-op-name-map; default: scenarios/devices/op-maps/op-name-map.json): gives the trace's kernels (FlashAttentionScore, MatMulV2, flash_fwd_kernel, ...) the roles of encbench's ops");
  sub->add_option("--threads", o.threads, "Device threads (0 = all cores)")->capture_default_str();
  sub->add_option("--forwards", o.forwards, "Measured forwards (ab: repetitions per side)")->capture_default_str();
  sub->add_option("--warmup", o.warmup, "Warm-up forwards (not measured)")->capture_default_str();
  sub->add_option("--seed", o.seed, "Seed of the random weights and pixels")->capture_default_str();
  // On by default, as `serve` and `run` run the encoder, so one model's forward times agree between
  // commands; --mlp stays accepted (it was the way to ask for it).
  o.mlp = true;
  sub->add_flag("--mlp,!--no-mlp", o.mlp,
                "Run norm2 + MLP in every layer (default, as serve and run do); --no-mlp leaves them out "
                "(attention blocks only)");
  sub->add_flag("--verify", o.verify,
                "Run the reference path and report per-layer relative error (non-zero exit on FAIL); "
                "on sim devices an extra (unmeasured) sim device computes the results for it");
  sub->add_option("--tolerance", o.tolerance, "Relative error tolerance of --verify (0: the device's default, 1e-3; 5e-3 on cuda, where attention reads bf16)")
      ->capture_default_str();
  sub->add_option("--launch-overhead-us", o.launch_overhead_us,
                  "Host work added per device op (eager framework dispatch), microseconds; on the virtual "
                  "clock added to the host model's cost of each call")
      ->capture_default_str();
  sub->add_option("--alloc-mode", o.alloc_mode, "Device allocator: fresh | caching")->capture_default_str();
  sub->add_option("--cuda-gemm-math", o.cuda_gemm_math,
                  "GEMM products on a cuda device: fp32 (full fp32) | tf32 (tensor cores, 10-bit mantissa products, "
                  "fp32 accumulation; --verify measures the error). Ignored on cpu and sim devices")
      ->capture_default_str();
  sub->add_option("--clock", o.clock,
                  "virtual | real. virtual (default on sim devices): a discrete-event model; host time comes "
                  "from --virtual-host-time, device time from the roofline, so machine load cannot move the "
                  "figures. real: sim ops wait out their modelled end in real time (lateness reported); "
                  "cpu/cuda always run on the real clock");
  sub->add_option("--virtual-host-time", o.virtual_host_time,
                  "model | cpu | none. Virtual clock only: where host time comes from. model: the --host-model "
                  "cost of every device call and host-side toggle step + the launch overhead (bit-identical "
                  "across repeats, builds and machines); cpu: this thread's CPU time between device calls, a "
                  "MEASUREMENT of this machine (the result says host_time \"measured\" and compare judges it "
                  "like wall-clock data); none: the launch overhead alone")
      ->capture_default_str();
  sub->add_option("--host-model", o.host_model,
                  "Host model of --virtual-host-time model: a name in scenarios/devices/host-models "
                  "(torch-npu-eager, dispatch-only) or a path to a JSON file (per op class a cost in ns and "
                  "its source; docs/device.md)")
      ->capture_default_str();
  sub->add_option("--device-memory-gb", o.device_memory_gb,
                  "Device memory budget in GB (1e9 bytes): a configuration that needs more fails with "
                  "'out of device memory'. 0 = the sim profile's memory size, unlimited on cpu")
      ->capture_default_str();
  sub->add_option("--kernel-wait-threshold-us", o.kernel_wait_threshold_us,
                  "Queued gaps shorter than this are kernel_wait, longer ones other (microseconds)")
      ->capture_default_str();
  sub->add_option("--trace", o.trace_path, "Write a Chrome/Perfetto trace of the last measured forward");
  sub->add_option("--json", o.json_path, "Write the result JSON here");
  sub->add_option("--max-gaps", o.max_gaps, "Largest gaps listed in the result")->capture_default_str();
  sub->add_option("--max-ops", o.max_ops, "Device ops of the last forward listed in the JSON")->capture_default_str();
}

void add_toggle_flags(CLI::App* sub, encoder::ToggleOverrides& t, const std::string& prefix,
                      const std::string& what) {
  auto opt = [&](const std::string& name, std::optional<std::string>& target, const std::string& values) {
    sub->add_option_function<std::string>(
        "--" + prefix + name, [&target](const std::string& v) { target = v; },
        "Override " + what + name + ": " + values);
  };
  opt("seq-lens", t.seq_lens, "d2h-per-layer | layer0-cache | value-cache | host-precomputed | device-cumulative");
  opt("scale", t.scale, "per-call | init");
  opt("pad-decision", t.pad_decision, "per-call | init");
  opt("pad-method", t.pad_method, "three-pads | stacked | weight-padded | none (fused-varlen only)");
  opt("out-buffer", t.out_buffer, "alloc-per-call | reuse");
  opt("kernel", t.kernel, "flash-unpad | fused-varlen");
}

void add_encode_command(CLI::App& app, CommandContext& ctx) {
  auto options = std::make_shared<encoder::EncodeOptions>();
  auto* sub = app.add_subcommand(
      "encode", "Run the vision encoder with one attention configuration: forward time, device idle gaps, syncs, accuracy");
  add_encoder_run_flags(sub, options->run);
  sub->add_option("--preset", options->preset, "baseline | pr6448 | pr7104 | optimized")->capture_default_str();
  add_toggle_flags(sub, options->overrides, "", "the preset's ");
  sub->add_flag("--sweep", options->sweep, "Run every valid toggle combination (ignores --preset)");
  sub->callback([&ctx, options] {
    ctx.action = [&ctx, options] { return encoder::run_encode(*options, ctx.argv, std::cout); };
  });
}

}  // namespace encbench::cli
