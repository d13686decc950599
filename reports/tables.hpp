#pragma once
// Printers for a Comparison: the seeds' "Performance Metrics" table (Metric | Before | After |
// Comparison, grouped Throughput / Latency, "+x.xx% ↑"), in the terminal and as Markdown, and a
// JUnit XML report for CI systems. Printers only read the Comparison.
#include <optional>
#include <string>
#include <vector>

#include "reports/compare.hpp"

namespace encbench::reports {

// "1,207.07"; integral values without decimals ("2,475"), like the seeds' tables.
std::string format_number(double value);
// "+1.57% ↑", "-1.45% ↓", "+0.00% =" ; "n/a" without a relative change.
std::string format_relative_change(const std::optional<double>& relative_change);

std::string render_terminal(const Comparison& comparison);
std::string render_markdown(const Comparison& comparison);
std::string render_junit(const Comparison& comparison);

std::string xml_escape(const std::string& text);

// Whether a metric's value is deterministic (same code, same value on any machine): instruction
// counts and virtual/modelled times (names containing "instructions" or "virtual"), failed
// requests, syncs per forward, byte counts and peak memory, accuracy verdicts. Everything else is
// wall-clock and carries the machine's noise. Metrics under an exact check are deterministic too;
// the caller knows those.
bool is_deterministic_metric(const std::string& name);
// "deterministic" / "wall-clock".
std::string metric_kind_name(bool deterministic);

// One line per distinct reason a row is NOISY: what would make it testable.
std::vector<std::string> settle_lines(const Comparison& comparison);
// The settings every verdict of `comparison` was judged at, and how to read the table.
std::string judged_at_line(const Comparison& comparison);
// The one-line verdict of a comparison: "PASS (gate ...)", "REGRESSION: 2 of 14 gated metrics ...".
std::string verdict_line(const Comparison& comparison);

}  // namespace encbench::reports
