// `encbench trace analyze|diff|whatif`: profiler traces (Kineto, torch_npu, encbench). Parsing
// and wiring only; see harness/trace/.
#include <iostream>
#include <memory>

#include "harness/cli/command.hpp"
#include "harness/trace/analyze_command.hpp"
#include "harness/trace/trace_commands.hpp"

namespace encbench::cli {
namespace {

void add_forward_options(CLI::App* cmd, trace::ForwardOptions& o) {
  cmd->add_option("--device", o.device, "Device index to use (default: the device with the most ops)");
  cmd->add_option("--forward-marker", o.forward_marker,
                  "Glob of host spans that delimit forwards/steps ('|' separates alternatives)")
      ->capture_default_str();
  cmd->add_option("--forward-end", o.forward_end,
                  "Glob of the blocking wait that closes a forward when there are no markers (encbench encode)")
      ->capture_default_str();
  cmd->add_option("--kernel-wait-threshold-us", o.kernel_wait_threshold_us,
                  "Queued gaps shorter than this many MICROseconds are kernel_wait, longer ones other")
      ->capture_default_str();
}

void add_analyze(CLI::App* trace, CommandContext& ctx) {
  auto* analyze = trace->add_subcommand(
      "analyze", "Device idle gaps of a Chrome-trace JSON (plain or .gz): busy/idle per stream and device, "
                 "HTA-style classes, launch delay, queue length, largest gaps");
  auto config = std::make_shared<trace::AnalyzeCommandConfig>();
  analyze->add_option("trace", config->trace_path,
                      "Trace file: Kineto / torch_npu / encbench JSON, optionally gzip; or a torch_npu profile "
                      "directory (*_ascend_pt): its trace_view.json, cross-checked against its kernel_details.csv")
      ->required();
  analyze->add_option("--stream", config->stream, "Analyse only this device stream (Kineto tid / NPU stream id)");
  analyze->add_option("--device", config->device, "Analyse only this device index");
  analyze->add_option("--window", config->window,
                      "T0:T1 in microseconds on the trace's ts axis (as in the file), or 'whole'; default: each "
                      "device's step window (torch_npu's Overlap Analysis extent, else the --forward-marker steps), "
                      "else the whole trace; the whole trace's figure is printed beside a step window");
  analyze->add_option("--json", config->json_out, "Write the result JSON (schema encbench-trace-analysis/1)");
  analyze->add_option("--chrome-trace", config->chrome_out,
                      "Write a Chrome trace of the analysed device with the gaps annotated");
  analyze->add_option("--kernel-wait-threshold-us", config->kernel_wait_threshold_us,
                      "Queued gaps shorter than this many MICROseconds are kernel_wait, longer ones other "
                      "(HTA consecutive_kernel_delay; HTA's default '30 ns' acts as 30 us)")
      ->capture_default_str();
  analyze->add_option("--top", config->top, "How many of the largest gaps (and critical-path segments) to list")
      ->capture_default_str();
  analyze->add_flag("--critical-path", config->critical_path,
                    "Also replay the trace and list each forward's critical path (host work, calls, launch "
                    "latency, device ops, wake-ups that bound its time)");
  analyze->add_option("--forward-marker", config->forward_marker, "Glob of host spans that delimit forwards/steps")
      ->capture_default_str();
  analyze->add_option("--forward-end", config->forward_end, "Glob of the wait that closes a forward (no markers)")
      ->capture_default_str();
  analyze->add_option("--max-events", config->limits.max_events,
                      "Stop with exit 2 past this many events kept (device/host spans, flows, metadata names); "
                      "peak memory is ~480 B per kept event (docs/trace.md); 0 = no limit")
      ->capture_default_str();
  analyze->add_option("--max-decompressed-bytes", config->limits.max_decompressed_bytes,
                      "Stop with exit 2 past this many bytes of JSON text after gunzip (a gzip bomb costs time, "
                      "not memory); 0 = no limit")
      ->capture_default_str();
  analyze->callback([&ctx, config] {
    ctx.action = [&ctx, config] { return trace::run_analyze_command(*config, ctx.argv, std::cout, std::cerr); };
  });
}

void add_diff(CLI::App* trace, CommandContext& ctx) {
  auto* diff = trace->add_subcommand(
      "diff", "Compare two traces of the same workload: per forward and stream, op counts and time by name, idle by "
              "class, host-device syncs and launches; --gate fails (exit 1) on a condition");
  auto config = std::make_shared<trace::DiffCommandConfig>();
  diff->add_option("a", config->a, "Trace A (before): Kineto / torch_npu / encbench JSON, optionally gzip")->required();
  diff->add_option("b", config->b, "Trace B (after)")->required();
  add_forward_options(diff, config->forwards);
  diff->add_option("--gate", config->gates,
                   "Condition METRIC OP VALUE (docs/gates.md), e.g. 'syncs_per_forward<=0' on B; a signed value "
                   "compares B - A ('idle_pct<+1'), '+5%' the relative change; repeatable; exit 1 when one fails, "
                   "2 when one does not parse (its column and the grammar are printed)")
      ->allow_extra_args(false);  // one value per --gate: the traces may follow it
  diff->add_option("--format", config->format, "stdout format: text or markdown")->capture_default_str();
  diff->add_option("--json", config->json_out, "Write the result JSON (schema encbench-trace-diff/1)");
  diff->add_option("--markdown", config->markdown_out, "Write the Markdown report to this file");
  diff->add_flag("--allow-different-workloads", config->allow_different_workloads,
                 "Compare traces whose op names or layer counts differ (refused by default: exit 2)");
  diff->callback([&ctx, config] {
    ctx.action = [&ctx, config] { return trace::run_diff_command(*config, ctx.argv, std::cout); };
  });
}

void add_whatif(CLI::App* trace, CommandContext& ctx) {
  auto* whatif = trace->add_subcommand(
      "whatif", "Replay a trace on the sim device's discrete-event rules with edits (drop ops/syncs, scale host "
                "work, set launch overhead, change kernel times): predicted forward time, idle by class, critical path");
  auto config = std::make_shared<trace::WhatifCommandConfig>();
  whatif->add_option("trace", config->trace_path, "Trace file: Kineto / torch_npu / encbench JSON, optionally gzip")
      ->required();
  add_forward_options(whatif, config->forwards);
  whatif->add_option("--drop", config->drop,
                     "Globs ('|'-separated) of device ops and host calls to remove, with the host work only they "
                     "need, e.g. 'seq_lens_d2h|aclrtSynchronize*'");
  whatif->add_option("--host-scale", config->host_scale, "Multiply the host work between device calls")
      ->capture_default_str();
  whatif->add_option("--launch-overhead-us", config->launch_overhead_us,
                     "Set every launch call's duration to this many microseconds");
  whatif->add_option("--kernel", config->kernels,
                     "PATTERN=xFACTOR or PATTERN=DURATION (ns/us/ms), e.g. 'FlashAttention*=x0.8'; repeatable");
  whatif->add_option("--top", config->top, "Critical-path segments to list")->capture_default_str();
  whatif->add_option("--json", config->json_out, "Write the result JSON (schema encbench-trace-whatif/1)");
  whatif->callback([&ctx, config] {
    ctx.action = [&ctx, config] { return trace::run_whatif_command(*config, ctx.argv, std::cout); };
  });
}

}  // namespace

void add_trace_command(CLI::App& app, CommandContext& ctx) {
  auto* trace = app.add_subcommand("trace", "Analyse, compare and replay profiler traces (Kineto, torch_npu, encbench)");
  trace->require_subcommand(1);
  add_analyze(trace, ctx);
  add_diff(trace, ctx);
  add_whatif(trace, ctx);
}
}  // namespace encbench::cli
