#pragma once
// `encbench trace diff` and `encbench trace whatif`: read, compute, print and write. The CLI
// only fills these configs.
#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "harness/trace/replay.hpp"

namespace encbench::trace {

struct ForwardOptions {
  std::string forward_marker = "ProfilerStep#*";
  std::string forward_end = "forward_end";
  int device = -1;                       // -1: the device with the most ops
  double kernel_wait_threshold_us = 30;
};

struct DiffCommandConfig {
  std::filesystem::path a, b;
  ForwardOptions forwards;
  std::vector<std::string> gates;
  std::string format = "text";           // text | markdown (stdout)
  std::filesystem::path json_out, markdown_out;
  bool allow_different_workloads = false;
};

struct WhatifCommandConfig {
  std::filesystem::path trace_path;
  ForwardOptions forwards;
  std::string drop;
  double host_scale = 1.0;
  std::optional<double> launch_overhead_us;
  std::vector<std::string> kernels;      // "PATTERN=x0.8" / "PATTERN=120us"
  int top = 12;                          // critical-path segments listed
  std::filesystem::path json_out;
};

// Return the exit code (diff: 1 when a gate fails). Throw InvalidInput for bad input (exit 2).
int run_diff_command(const DiffCommandConfig& config, const std::vector<std::string>& argv, std::ostream& out);
int run_whatif_command(const WhatifCommandConfig& config, const std::vector<std::string>& argv, std::ostream& out);

// Critical path of each forward of an unedited replay, for `trace analyze --critical-path`.
nlohmann::json print_critical_paths(std::ostream& out, const ImportedTrace& trace, const ForwardOptions& options,
                                    int top);

}  // namespace encbench::trace
