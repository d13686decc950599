#pragma once
// Comparison of two results (or a result against its history) and the regression gate.
//
// Rules ("statistics that do not cry wolf", docs/reports.md):
//  * a metric with samples on both sides gets a two-sided Mann-Whitney U test; it is FASTER or
//    SLOWER only when the test is significant (p < alpha), the change exceeds the practical
//    threshold(s), and the test's direction agrees with the change; a large change without
//    significance is NOISY; everything else SAME;
//  * where a U test cannot reach alpha (too few samples) or there are no samples, a single-value
//    change is FASTER/SLOWER only beyond the threshold AND beyond a noise floor (the gate's, or
//    the measured relative spread of the samples when that is larger);
//  * against history (N earlier runs), the new value must leave the t prediction interval of the
//    runs AND exceed the threshold;
//  * a regression is a gated metric whose verdict is SLOWER, or a violated exact check.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/core/gate_expression.hpp"
#include "reports/result.hpp"

namespace encbench::reports {

enum class Verdict { faster, slower, same, noisy, none };
std::string to_string(Verdict verdict);  // "FASTER", "SLOWER", "SAME", "NOISY", "-"

// Thresholds for one metric. A change must exceed every threshold that is set (> 0).
struct MetricRule {
  double relative = 0.05;     // fraction of the baseline value (0.05 = 5 %)
  double absolute = 0;        // in the metric's unit
  double alpha = 0.002;        // required significance of the U test / prediction interval
  double noise_floor = 0.10;  // relative; single-value metrics must change by more than this
  bool gated = false;         // a SLOWER verdict fails the gate
};

// A metric that must not change: equal to `equals`, one of `one_of`, or (neither) equal to BASE.
struct ExactRule {
  std::string metric;
  std::optional<nlohmann::json> equals;
  std::vector<nlohmann::json> one_of;
};

struct Gate {
  std::string name = "built-in default";
  double alpha = 0.002;
  std::vector<MetricGroup> default_groups = {MetricGroup::throughput, MetricGroup::latency};
  MetricRule defaults;  // thresholds for metrics of default_groups (and inherited by patterns)
  // Deterministic metrics (deterministic_by_name: instruction counts, virtual-clock times) start
  // from this rule instead: 1 %, gated, judged by threshold alone ("deterministic" in a gate file).
  MetricRule deterministic{0.01, 0, 0.002, 0, true};
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

Gate default_gate();
// Parses a gate file ({"schema":"encbench-gate", ...}, see docs/reports.md). Throws InvalidInput.
Gate parse_gate_file(const nlohmann::json& doc, const std::string& source);
Gate load_gate(const std::string& path);
// The gate for `compare --gate ARG...`: each ARG that names a file (names_gate_file: it exists or
// ends in .json) is a gate file, at most one; every other ARG is a condition in the gate language
// added to that file's conditions (or to the built-in default gate's). Throws InvalidInput.
Gate gate_from_arguments(const std::vector<std::string>& arguments);
bool glob_match(const std::string& pattern, const std::string& text);

struct MetricComparison {
  std::string name, label, unit;
  MetricGroup group = MetricGroup::info;
  Better better = Better::none;
  double before = 0, after = 0;
  std::optional<double> relative_change;  // (after - before) / |before|; none when before == 0
  std::size_t n_before = 0, n_after = 0;  // samples used
  std::string sample_kind;
  // "mann-whitney-u", "threshold+noise-floor", "prediction-interval", "deterministic"
  std::string method;
  // deterministic_by_name(name) and its samples (and pooled runs' values) within each side
  // identical; a name that claims determinism with scattered samples is judged by the
  // wall-clock rule instead, and `reason` says so.
  bool deterministic = false;
  std::optional<double> p_value;
  std::optional<double> interval_low, interval_high;  // history prediction interval
  double noise_floor_used = 0;
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
  double alpha = 0.002;
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

Comparison compare_runs(const RunResult& base, const RunResult& next, const Gate& gate);
// Judges each of the gate's conditions on its metric's BASE and NEW values (the compared rows)
// and adds it to the exact checks: a failed one is a regression. Throws InvalidInput listing the
// compared metrics when a condition names none of them.
void apply_gate_conditions(Comparison& comparison, const std::vector<GateExpression>& conditions);
// `history` holds earlier runs (oldest first) of the same series; each metric's baseline is the
// prediction interval of their values.
Comparison compare_with_history(const std::vector<RunResult>& history, const RunResult& next,
                                const Gate& gate);

// Smallest two-sided p-value a U test can give with these sample sizes (no ties): when it is not
// below alpha, significance is unreachable and the noise-floor rule is used instead.
double min_achievable_p(std::size_t n1, std::size_t n2);
// Quantile of Student's t distribution with `df` degrees of freedom (p in (0, 1)).
double student_t_quantile(double p, double df);

nlohmann::json to_json(const Comparison& comparison);

}  // namespace encbench::reports
