// Gate-language conditions in a comparison (compare --gate EXPR, a gate file's "conditions"):
// judged on the compared rows, reported as exact checks so that every table, the JUnit and the
// JSON show them and a failed one fails the gate.
#include <algorithm>

#include "harness/core/error.hpp"
#include "harness/core/gate_expression.hpp"
#include "harness/core/number_format.hpp"
#include "reports/compare.hpp"

namespace encbench::reports {
namespace {

// What an observation is, in the words of the condition's target.
std::string observed_text(const GateExpression& g, double observed) {
  const std::string number = numbers::significant(observed, 6);
  switch (g.target) {
    case GateTarget::after: return "NEW is " + number;
    case GateTarget::change: return "NEW - BASE is " + std::string(observed >= 0 ? "+" : "") + number;
    case GateTarget::change_pct: break;
  }
  return "NEW vs BASE is " + std::string(observed >= 0 ? "+" : "") + number + " %";
}

}  // namespace

void apply_gate_conditions(Comparison& c, const std::vector<GateExpression>& conditions) {
  std::vector<std::string> known;
  for (const MetricComparison& row : c.rows) known.push_back(row.name);
  for (const GateExpression& g : conditions) {
    require_known_gate_metric(g, known, "--gate");
    const auto row = std::find_if(c.rows.begin(), c.rows.end(), [&](const MetricComparison& r) { return r.name == g.metric; });
    const GateObservation seen = evaluate_gate_expression(g, row->before, row->after);
    ExactCheck check;
    check.metric = row->name;
    check.label = row->label;
    check.before = numbers::significant(row->before, 6);
    check.after = numbers::significant(row->after, 6);
    check.expectation = g.op + " " + gate_threshold_text(g) + (g.target == GateTarget::after ? "" : " (change)");
    check.passed = seen.passed;
    check.condition = g.text;
    check.reason = "condition " + g.text + ": " + observed_text(g, seen.observed) + (seen.passed ? "" : ", violated");
    c.exact.push_back(std::move(check));
  }
}

Gate gate_from_arguments(const std::vector<std::string>& arguments) {
  std::string file;
  std::vector<GateExpression> conditions;
  for (const std::string& argument : arguments) {
    if (names_gate_file(argument)) {
      require(file.empty(), "--gate: at most one gate file, got " + file + " and " + argument +
                                " (expressions may be given beside it)");
      file = argument;
    } else {
      conditions.push_back(parse_gate_expression(argument, "--gate"));
    }
  }
  Gate gate = file.empty() ? default_gate() : load_gate(file);
  for (const GateExpression& g : conditions) gate.name += (&g == &conditions.front() ? " + " : ", ") + g.text;
  gate.conditions.insert(gate.conditions.end(), conditions.begin(), conditions.end());
  return gate;
}

}  // namespace encbench::reports
