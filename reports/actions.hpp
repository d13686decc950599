#pragma once
// What the compare / report / history subcommands do, as plain functions over option structs, so
// the CLI files only parse flags. Each returns the process exit code (0 pass, 1 regression);
// invalid input throws InvalidInput (exit 2 in main).
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "harness/judgement/judgement.hpp"

namespace encbench::reports {

struct CompareOptions {
  std::string base;       // file, directory or comma list; empty with --baseline history:N
  std::string next;       // same forms
  std::string baseline;   // "history:N" or a path (alternative to the BASE positional)
  // --gate: gate files (at most one) and gate-language conditions (gate_from_arguments); empty:
  // the built-in default gate.
  std::vector<std::string> gates;
  std::string junit_file, markdown_file, json_file;
  std::string history_file;  // where history lives (default_history_path() when empty)
  bool record = false;       // record NEW into the history after comparing
  std::string git_sha;       // overrides NEW's git sha when recording
  bool quiet = false;        // no terminal table
  std::vector<std::string> accept;  // --accept GLOB=REASON (reports::AcceptedChange)
  // --threshold / --alpha / --power: override the gate's (file or built-in) defaults.
  std::optional<judgement::Settings> settings;
  std::vector<std::string> argv;
};
int run_compare(const CompareOptions& options, std::ostream& out);

struct ReportOptions {
  std::vector<std::string> inputs;         // results; encbench-compare JSON here counts as --compare
  std::vector<std::string> compare_files;  // encbench compare --json outputs: the verdict
  std::optional<int> gate_exit;            // the gate's exit status, shown as the verdict
  std::string html_file;
  std::string title = "encbench report";
  std::string json_file;  // optional: what the report contains, as JSON
  std::vector<std::string> argv;
};
int run_report(const ReportOptions& options, std::ostream& out);

struct HistoryOptions {
  std::string action;             // list | trend | record | reset-baseline
  std::string history_file;
  std::string metric;             // trend
  std::vector<std::string> inputs;  // record
  std::string series = "*";       // glob over kind|model|device|dataset|scenario
  std::size_t last = 20;
  std::string reason;             // reset-baseline
  std::string git_sha;            // record
  std::string json_file;
  std::vector<std::string> argv;
};
int run_history(const HistoryOptions& options, std::ostream& out);

}  // namespace encbench::reports
