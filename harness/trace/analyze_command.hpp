#pragma once
// `encbench trace analyze`: read, analyse, print and write. The CLI only fills the config.
#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "harness/trace/trace_analysis.hpp"
#include "harness/trace_read/trace_reader.hpp"

namespace encbench::trace {

// `trace analyze` peaks at ~480 B per kept event (read, import and analysis; docs/trace.md), so
// its default keeps a trace under 1.5 GiB; --max-events raises it.
inline constexpr std::uint64_t kDefaultAnalyzeMaxEvents = 2'500'000;

struct AnalyzeCommandConfig {
  std::filesystem::path trace_path;
  std::optional<int> stream;
  std::optional<int> device;
  std::string window;                   // "T0:T1" in trace microseconds, "whole"; empty = step window
  double kernel_wait_threshold_us = 30;
  int top = 10;
  std::filesystem::path json_out;       // empty: no JSON file
  std::filesystem::path chrome_out;     // empty: no Chrome trace
  bool critical_path = false;           // also replay the trace and print each forward's critical path
  std::string forward_marker = "ProfilerStep#*";
  std::string forward_end = "forward_end";
  ReadLimits limits{.max_events = kDefaultAnalyzeMaxEvents};  // --max-events, --max-decompressed-bytes
};

// "T0:T1" (microseconds on the trace's ts axis, exact to the ns) -> [start_ns, end_ns).
std::pair<Nanos, Nanos> parse_window_us(std::string_view text);

// Runs the command; returns the exit code. Throws InvalidInput for bad input (exit 2).
int run_analyze_command(const AnalyzeCommandConfig& config, const std::vector<std::string>& argv,
                        std::ostream& out, std::ostream& err);

}  // namespace encbench::trace
