#pragma once
// `encbench trace diff A B`: what changed between two traces of the same workload.
//
// Each trace is summarised on its own (summarize_trace: per stream, per forward, per op name,
// idle by class from the project's one gap analysis, host-device syncs and launches per
// forward); diff_traces then only compares two summaries, and gates only read the comparison.
#include <iosfwd>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/core/gate_expression.hpp"
#include "harness/timeline/gaps.hpp"
#include "harness/trace/replay.hpp"
#include "harness/trace/replay_model.hpp"
#include "harness/trace_read/trace_import.hpp"

namespace encbench::trace {

struct OpNameStats {
  std::string name;
  std::size_t count = 0;
  Nanos total_ns = 0;
};

struct StreamSummary {
  int stream = 0;
  std::size_t ops = 0;
  Nanos busy_ns = 0, idle_ns = 0;
  std::map<timeline::GapClass, Nanos> idle_ns_by_class;
};

struct ForwardSummary {
  std::string name;
  Nanos duration_ns = 0;
  std::size_t ops = 0, launches = 0;
  std::size_t syncs = 0;        // host-device syncs: blocking waits, not counting the forward's closing one
  std::size_t d2h_copies = 0;   // device-to-host copies launched in the forward
  Nanos device_busy_ns = 0, device_idle_ns = 0;
  std::map<timeline::GapClass, Nanos> idle_ns_by_class;
};

struct TraceSummary {
  std::string source, layout, device_label;
  int layers = 0;                         // distinct layer annotations (encbench traces), 0 if none
  std::vector<StreamSummary> streams;
  std::vector<ForwardSummary> forwards;
  std::vector<OpNameStats> by_name;       // all forwards, sorted by name
  std::map<std::string, double> metrics;  // per-forward means: forward_ms, syncs_per_forward, ...
};

TraceSummary summarize_trace(const ImportedTrace& trace, const ReplayModel& model, Nanos kernel_wait_threshold_ns);

struct MetricChange {
  std::string name;
  double a = 0, b = 0;
  double delta() const { return b - a; }
};

struct OpNameChange {
  std::string name;
  double count_a = 0, count_b = 0;     // per forward
  double time_a_us = 0, time_b_us = 0; // per forward
};

struct TraceDiff {
  TraceSummary a, b;
  std::vector<MetricChange> metrics;
  std::vector<OpNameChange> op_changes;  // names whose count or time per forward changed, largest time change first
};

// Throws InvalidInput when the two traces are not of the same workload (op names mostly
// differ, or a different number of layers) unless allow_different_workloads.
TraceDiff diff_traces(TraceSummary a, TraceSummary b, bool allow_different_workloads);

// --gate conditions (harness/core/gate_expression.hpp, docs/gates.md) judged on the traces'
// per-forward metrics: A is the first trace, B the second.
struct GateResult {
  GateExpression condition;
  double observed = 0;
  bool passed = false;
};
// Throws InvalidInput naming the valid metrics when a condition's metric is not one of the diff's.
std::vector<GateResult> evaluate_gates(const TraceDiff& diff, const std::vector<GateExpression>& gates);

void print_diff_text(std::ostream& out, const TraceDiff& diff, const std::vector<GateResult>& gates);
void print_diff_markdown(std::ostream& out, const TraceDiff& diff, const std::vector<GateResult>& gates);
nlohmann::json to_json(const TraceDiff& diff, const std::vector<GateResult>& gates);

}  // namespace encbench::trace
