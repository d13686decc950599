#include "harness/trace/analyze_command.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <ostream>

#include "harness/core/error.hpp"
#include "harness/core/number_format.hpp"
#include "harness/core/result_json.hpp"
#include "harness/trace/ascend_profile_dir.hpp"
#include "harness/trace/trace_commands.hpp"

namespace encbench::trace {

std::pair<Nanos, Nanos> parse_window_us(std::string_view text) {
  const auto colon = text.find(':');
  require(colon != std::string_view::npos,
          "--window must be T0:T1 in microseconds or 'whole', got '" + std::string(text) + "'");
  Nanos start = 0, end = 0;
  require(parse_us_to_ns(text.substr(0, colon), start) && parse_us_to_ns(text.substr(colon + 1), end),
          "--window must be T0:T1 with numbers in microseconds, got '" + std::string(text) + "'");
  require(end > start, "--window end must be after its start, got '" + std::string(text) + "'");
  return {start, end};
}

namespace {

void print_kernel_table_check(std::ostream& out, const KernelTableCheck& check) {
  out << "\n";
  for (const std::string& problem : check.problems) out << problem << "\n";
  if (!check.read) return;
  out << "kernel_details.csv: " << check.rows << " rows, " << check.matched << " found as ops (same name, start within 1 us)";
  if (check.matched > 0) {
    out << "; largest duration disagreement " << numbers::exact_us(check.largest_disagreement_ns) << " us ('"
        << check.largest_name << "' at " << numbers::exact_us(check.largest_start_ns) << " us)";
  }
  out << "\n";
}

void print_op_statistic_check(std::ostream& out, const OpStatisticCheck& check) {
  for (const std::string& problem : check.problems) out << problem << "\n";
  if (!check.read) return;
  out << "op_statistic.csv: " << check.types << " op types, " << check.compared
      << " compared with the trace's ops of that type (kernel_details.csv's Type)";
  if (check.compared > 0) {
    out << "; largest total disagreement " << numbers::exact_us(check.largest_disagreement_ns) << " us ('"
        << check.largest_type << "')";
  }
  out << "\n";
}

}  // namespace

int run_analyze_command(const AnalyzeCommandConfig& config, const std::vector<std::string>& argv,
                        std::ostream& out, std::ostream& err) {
  AnalyzeOptions options;
  options.stream = config.stream;
  options.device = config.device;
  require(std::isfinite(config.kernel_wait_threshold_us) && config.kernel_wait_threshold_us >= 0,
          "--kernel-wait-threshold-us must be a number >= 0");
  options.kernel_wait_threshold_ns = static_cast<Nanos>(std::llround(config.kernel_wait_threshold_us * 1e3));
  require(config.top >= 0, "--top must be >= 0");
  options.top_gaps = config.top;
  options.step_marker = config.forward_marker;
  options.whole_trace = config.window == "whole";
  if (!config.window.empty() && !options.whole_trace) {
    const auto [start, end] = parse_window_us(config.window);
    options.window_start_ns = start;
    options.window_end_ns = end;
  }

  // A torch_npu profile directory: its trace, and its kernel table as a cross-check.
  const bool profile_dir = std::filesystem::is_directory(config.trace_path);
  const AscendProfileFiles files = profile_dir ? find_ascend_profile_files(config.trace_path) : AscendProfileFiles{};
  const ImportedTrace trace = import_trace_file(profile_dir ? files.trace : config.trace_path, config.limits);
  const TraceReport report = analyze_trace(trace, options);
  print_summary(out, trace, report);
  std::optional<KernelTableCheck> kernel_check;
  std::optional<OpStatisticCheck> type_check;
  if (profile_dir) {
    kernel_check = check_kernel_details(files.kernel_details, trace);
    print_kernel_table_check(out, *kernel_check);
    type_check = check_op_statistic(files.op_statistic, *kernel_check);
    print_op_statistic_check(out, *type_check);
  }
  nlohmann::json critical_paths;
  if (config.critical_path) {
    ForwardOptions forward_options;
    forward_options.forward_marker = config.forward_marker;
    forward_options.forward_end = config.forward_end;
    forward_options.device = config.device.value_or(-1);
    forward_options.kernel_wait_threshold_us = config.kernel_wait_threshold_us;
    critical_paths = print_critical_paths(out, trace, forward_options, std::max(config.top, 1));
  }

  const std::string device_kind = report.devices.front().label;
  if (!config.json_out.empty()) {
    nlohmann::json result = make_result_envelope("encbench-trace-analysis", 1, argv, device_kind);
    result.update(to_json(trace, report));
    if (config.critical_path) result["critical_paths"] = critical_paths;
    if (kernel_check) result["kernel_details_check"] = to_json(*kernel_check);
    if (type_check) result["op_statistic_check"] = to_json(*type_check);
    write_json_file(config.json_out, result);
    out << "\nwrote " << config.json_out.string() << "\n";
  }
  if (!config.chrome_out.empty()) {
    std::size_t chosen = 0;
    for (std::size_t i = 1; i < report.devices.size(); ++i) {
      if (report.devices[i].gaps.op_count > report.devices[chosen].gaps.op_count) chosen = i;
    }
    if (report.devices.size() > 1) {
      err << "encbench: the trace has " << report.devices.size() << " devices; the Chrome trace shows "
          << report.devices[chosen].label << " (choose with --device)\n";
    }
    nlohmann::json metadata = make_result_envelope("encbench-trace-analysis", 1, argv, device_kind);
    write_json_file(config.chrome_out, annotated_chrome_trace(trace, report, chosen, metadata), -1);
    out << "wrote " << config.chrome_out.string() << "\n";
  }
  return 0;
}

}  // namespace encbench::trace
