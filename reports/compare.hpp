#pragma once
// Comparison of two results (or a result against its history) and the regression gate.
//
// Every metric is judged by the one rule of harness/judgement/judgement.hpp (docs/reports.md,
// "Verdicts"): rounds as the unit where a side holds several runs, a bootstrap of the statistic
// on per-request samples of one run a side, NOISY (not testable) for one value a side, the
// threshold alone for deterministic metrics, and the t prediction interval against history.
// A regression is a gated metric whose verdict is SLOWER, or a violated exact check.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/judgement/judgement.hpp"
#include "harness/core/gate_expression.hpp"
#include "reports/result.hpp"

namespace encbench::reports {

using judgement::Verdict;
using judgement::to_string;

// Thresholds for one metric. A change must exceed every threshold that is set (> 0).
struct MetricRule {
  double relative = judgement::kDefaultThreshold;  // fraction of the baseline value (0.05 = 5 %)
  double absolute = 0;                             // in the metric's unit
  double alpha = judgement::kDefaultAlpha;         // two-sided significance of the test
  double power = judgement::kDefaultPower;         // at which the MDE is stated
  bool gated = false;                              // a SLOWER verdict fails the gate
};

// A metric that must not change: equal to `equals`, one of `one_of`, or (neither) equal to BASE.
struct ExactRule {
  std::string metric;
  std::optional<nlohmann::json> equals;
  std::vector<nlohmann::json> one_of;
};

struct Gate {
  std::string name = "built-in default";
  double alpha = judgement::kDefaultAlpha;
  std::vector<MetricGroup> default_groups = {MetricGroup::throughput, MetricGroup::latency};
  MetricRule defaults;  // thresholds for metrics of default_groups (and inherited by patterns)
  // Deterministic metrics (deterministic_by_name: instruction counts, virtual-clock times) start
  // from this rule instead: 1 %, gated, judged by threshold alone ("deterministic" in a gate file).
  MetricRule deterministic{0.01, 0, judgement::kDefaultAlpha, judgement::kDefaultPower, true};
  struct PatternRule {
    std::string match;  // glob on metric names ('*' and '?')
    nlohmann::json overrides;
  };
  std::vector<PatternRule> metric_rules;  // later entries win
  std::vector<ExactRule> exact;
  std::size_t warn_below_samples = 9;     // compare.py's UTEST_OPTIMAL_REPETITIONS
  // Conditions in the one gate language (harness/core/gate_expression.hpp): a gate file's
  // "conditions" and `compare --gate EXPR`; each is judged on BASE's and NEW's values beside the
  // exact checks (apply_gate_conditions).
  std::vector<GateExpression> conditions;

  MetricRule rule_for(const Metric& metric) const;  // deterministic by name
  // `deterministic` false: the wall-clock rule even for a name that says deterministic (its own
  // samples disagreed: compare_runs checks that premise).
  MetricRule rule_for(const Metric& metric, bool deterministic) const;
};

// The built-in gate at the declared defaults (judgement.hpp), or at --threshold / --alpha.
Gate default_gate();
Gate default_gate(const judgement::Settings& settings);
// --threshold / --alpha given on the command line override a gate file's defaults.
void apply_settings(Gate& gate, const judgement::Settings& settings);
// Parses a gate file ({"schema":"encbench-gate", ...}, see docs/reports.md). Throws InvalidInput.
Gate parse_gate_file(const nlohmann::json& doc, const std::string& source);
Gate load_gate(const std::string& path);
// The gate for `compare --gate ARG...`: each ARG that names a file (names_gate_file: it exists or
// ends in .json) is a gate file, at most one; every other ARG is a condition in the gate language
// added to that file's conditions (or to the built-in default gate's). Throws InvalidInput.
Gate gate_from_arguments(const std::vector<std::string>& arguments);

struct MetricComparison {
  std::string name, label, unit;
  MetricGroup group = MetricGroup::info;
  Better better = Better::none;
  double before = 0, after = 0;
  std::optional<double> relative_change;  // (after - before) / |before|; none when before == 0
  std::size_t n_before = 0, n_after = 0;  // samples used
  std::string sample_kind;
  // The judgement's test: "t on log round values", "bootstrap of the statistic", "not testable",
  // "deterministic", "t prediction interval"; "info" for metrics nobody judges.
  std::string method;
  judgement::Judgement judgement;  // the whole evidence: change, interval, MDE, n, what would settle it
  // deterministic_by_name(name) and its samples (and pooled runs' values) within each side
  // identical; a name that claims determinism with scattered samples is judged by the
  // wall-clock rule instead, and `reason` says so.
  bool deterministic = false;
  std::optional<double> p_value;
  std::optional<double> interval_low, interval_high;  // history prediction interval
  double noise_floor_used = 0;                       // deterministic: the samples' own relative range
  Verdict verdict = Verdict::none;
  MetricRule rule;
  bool regression = false;
  std::string reason;    // one line: why this verdict
  std::string accepted;  // non-empty: a declared, intended change (the reason given); not a regression
};

struct ExactCheck {
  std::string metric, label;
  std::string before, after;  // as text
  std::string expectation;    // "== 0", "one of [PASS, SKIPPED]", "unchanged"
  bool applicable = true;
  bool passed = true;
  std::string reason;
  std::string accepted;   // as MetricComparison::accepted
  std::string condition;  // a gate-language condition's text; its metric's own row stays in the table
};

struct Comparison {
  ResultKind kind = ResultKind::serving;
  std::string base_source, new_source;
  std::string baseline_mode;  // "file" or "history:N"
  Identity identity;
  std::string gate_name;
  double alpha = judgement::kDefaultAlpha;
  judgement::Settings settings;  // the gate's defaults: printed beside every table
  // false: an A/B's own comparison (bench ab, run), whose question is the change, not a gate:
  // printers lead with the change and show no PASS/FAIL.
  bool gate_requested = true;
  std::vector<MetricComparison> rows;
  std::vector<ExactCheck> exact;
  std::vector<std::string> warnings;
  std::vector<std::string> notes;

  std::size_t regression_count() const;
  bool passed() const { return regression_count() == 0; }
  int exit_code() const { return passed() ? 0 : 1; }
};

// A change its author declared intended (compare --accept GLOB=REASON; scripts/ci-gate.sh reads
// them from `Gate-Accept: GLOB=REASON` lines in the commit messages under test). A regression or
// violated exact check on a matching metric is shown as ACCEPTED with the reason and does not fail
// the gate: a model or kernel change that moves a deterministic figure on purpose must be able to
// land, and the waiver stays visible in the commit, the table and the JSON.
struct AcceptedChange {
  std::string match;   // glob on metric names, as in gate files
  std::string reason;  // why the change is intended (required)
};
// Parses "GLOB=REASON". Throws InvalidInput naming `flag` when either part is empty.
AcceptedChange parse_accepted_change(const std::string& spec, const std::string& flag);
// Marks the regressions and violated exact checks that match an accepted change; returns how many.
std::size_t apply_accepted_changes(Comparison& comparison, const std::vector<AcceptedChange>& accepted);

// `design`: paired when BASE's run k and NEW's run k share their inputs by construction (the
// virtual clock's seeds); independent otherwise.
Comparison compare_runs(const RunResult& base, const RunResult& next, const Gate& gate,
                        judgement::RoundDesign design = judgement::RoundDesign::independent);
// Judges each of the gate's conditions on its metric's BASE and NEW values (the compared rows)
// and adds it to the exact checks: a failed one is a regression. Throws InvalidInput listing the
// compared metrics when a condition names none of them.
void apply_gate_conditions(Comparison& comparison, const std::vector<GateExpression>& conditions);
// `history` holds earlier runs (oldest first) of the same series; each metric's baseline is the
// prediction interval of their values.
Comparison compare_with_history(const std::vector<RunResult>& history, const RunResult& next,
                                const Gate& gate);


nlohmann::json to_json(const Comparison& comparison);

}  // namespace encbench::reports
