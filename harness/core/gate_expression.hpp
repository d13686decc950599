#pragma once
// The one gate language: 'METRIC OP VALUE' conditions on a metric of two runs (A before, B after),
// read by `trace diff --gate`, `compare --gate EXPR` and the "conditions" list of a gate file
// (docs/gates.md). The value's form says what is compared:
//   syncs_per_forward<=0    B's value             (an unsigned number)
//   idle_pct<+1             B minus A             (a signed number)
//   forward_ms<+5%          (B - A) / A in percent (a signed number with %)
// Errors are InvalidInput naming the flag, the column and the accepted grammar; an unknown
// metric lists the valid names.
#include <string>
#include <string_view>
#include <vector>

namespace encbench {

enum class GateTarget { after, change, change_pct };

struct GateExpression {
  std::string text;    // as written
  std::string metric;  // the name before the operator
  std::string op;      // < <= > >= == !=
  double value = 0;    // the threshold, with its sign for a change
  GateTarget target = GateTarget::after;
};

// The grammar, as error messages and --help show it.
std::string gate_expression_grammar();

// Parses one expression. `source` names where it came from ("--gate", "gate.json: conditions[2]")
// and starts every error message. A relative change below -100 % is out of range (no positive
// metric can fall further), as is a number that is not finite.
GateExpression parse_gate_expression(std::string_view text, std::string_view source);

// Throws InvalidInput listing `known` unless the expression's metric is one of them.
void require_known_gate_metric(const GateExpression& expression, const std::vector<std::string>& known,
                               std::string_view source);

struct GateObservation {
  double observed = 0;  // what the threshold was compared with: B, B - A or the change in percent
  bool passed = false;
};
// The expression on A's value `before` and B's value `after` (a change in percent of A = 0 is 0).
GateObservation evaluate_gate_expression(const GateExpression& expression, double before, double after);

// The threshold as written after the operator: "0", "+1", "+5%".
std::string gate_threshold_text(const GateExpression& expression);

// Whether a --gate argument names a gate file rather than an expression: a path that exists, or
// one that ends in .json (a missing one then fails as a missing file, not as a bad expression).
bool names_gate_file(const std::string& argument);

}  // namespace encbench
