#pragma once
// Capacity at an SLO as what the measured points allow: bracketed between the highest passing load
// and the lowest failing one above it, or a bound when no point failed (at least the highest) or
// every point failed (below the lowest), and said plainly when a load passes above a failing one
// (not monotone: the capacity is not one number). Every place that reports a capacity (`bench
// sweep`, `run --sweep/--slo`, their JSON, the sweep page) says it through these.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace encbench::reports {

// One load (a request rate or a concurrency) and whether it met the SLO.
struct SloOutcome {
  double load = 0;
  bool meets_slo = false;
};

enum class BracketKind { none, bracketed, at_least, below_lowest, not_monotone };
std::string to_string(BracketKind kind);  // "none", "bracketed", "at_least", "below_lowest", "not_monotone"

struct CapacityBracket {
  BracketKind kind = BracketKind::none;  // none: no outcomes
  std::optional<double> low;             // the highest passing load below `high` (every one when none failed)
  std::optional<double> high;            // the lowest failing load
  std::vector<double> passes_above;      // not_monotone: the passing loads above `high`, ascending
};

// The bracket of outcomes in any order (one load measured twice counts as failing if either failed).
CapacityBracket bracket_capacity(std::vector<SloOutcome> outcomes);

// The seeds' brackets as one: every seed's capacity lies within [low, high] (the lowest low, the
// highest high); a bound or a non-monotone seed makes the whole one (not_monotone first, then
// below_lowest, then at_least).
CapacityBracket merge_brackets(const std::vector<CapacityBracket>& per_seed);

// The load's unit: "req/s" for request-rate, "concurrent requests" for max-concurrency.
std::string load_unit(const std::string& variable);

// One line: "between 20 and 40 req/s", ">= 40 req/s: no point failed; <at_least_hint>",
// "< 5 req/s: every point failed", "not monotone: ...".
std::string describe_bracket(const CapacityBracket& bracket, const std::string& unit,
                             const std::string& at_least_hint = "extend --sweep");

// {"kind", "low", "high", "passes_above"} (low/high null when absent, "inf" for an infinite load);
// from_json reads it back (the sweep page).
nlohmann::json to_json(const CapacityBracket& bracket);
CapacityBracket bracket_from_json(const nlohmann::json& j);

}  // namespace encbench::reports
