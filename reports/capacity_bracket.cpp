#include "reports/capacity_bracket.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <iterator>
#include <map>

#include "harness/core/number_format.hpp"

namespace encbench::reports {
namespace {

std::string load_text(double load) { return std::isinf(load) ? "inf" : numbers::significant(load, 4); }

nlohmann::json load_json(const std::optional<double>& load) {
  if (!load) return nullptr;
  return std::isinf(*load) ? nlohmann::json("inf") : nlohmann::json(*load);
}

std::optional<double> load_from_json(const nlohmann::json& j) {
  if (j.is_number()) return j.get<double>();
  if (j.is_string() && j.get<std::string>() == "inf") return std::numeric_limits<double>::infinity();
  return std::nullopt;
}

}  // namespace

std::string to_string(BracketKind kind) {
  switch (kind) {
    case BracketKind::none: return "none";
    case BracketKind::bracketed: return "bracketed";
    case BracketKind::at_least: return "at_least";
    case BracketKind::below_lowest: return "below_lowest";
    case BracketKind::not_monotone: return "not_monotone";
  }
  return "none";
}

CapacityBracket bracket_capacity(std::vector<SloOutcome> outcomes) {
  // One outcome per load: a load that failed once failed.
  std::map<double, bool> meets;
  for (const SloOutcome& o : outcomes) {
    const auto [it, inserted] = meets.emplace(o.load, o.meets_slo);
    if (!inserted) it->second = it->second && o.meets_slo;
  }
  CapacityBracket b;
  if (meets.empty()) return b;
  const auto first_fail = std::find_if(meets.begin(), meets.end(), [](const auto& m) { return !m.second; });
  if (first_fail == meets.end()) {
    b.kind = BracketKind::at_least;
    b.low = meets.rbegin()->first;
    return b;
  }
  b.high = first_fail->first;
  if (first_fail != meets.begin()) b.low = std::prev(first_fail)->first;
  for (auto it = std::next(first_fail); it != meets.end(); ++it)
    if (it->second) b.passes_above.push_back(it->first);
  b.kind = !b.passes_above.empty() ? BracketKind::not_monotone
           : b.low                 ? BracketKind::bracketed
                                   : BracketKind::below_lowest;
  return b;
}

CapacityBracket merge_brackets(const std::vector<CapacityBracket>& per_seed) {
  CapacityBracket merged;
  if (per_seed.empty()) return merged;
  const auto any = [&](BracketKind k) {
    return std::any_of(per_seed.begin(), per_seed.end(), [k](const CapacityBracket& b) { return b.kind == k; });
  };
  merged.kind = any(BracketKind::none)           ? BracketKind::none
                : any(BracketKind::not_monotone) ? BracketKind::not_monotone
                : any(BracketKind::below_lowest) ? BracketKind::below_lowest
                : any(BracketKind::at_least)     ? BracketKind::at_least
                                                 : BracketKind::bracketed;
  // low: the lowest of the seeds' lows, absent when a seed has none; high: the highest of their
  // highs, absent when a seed has none (no point failed there).
  const bool every_low = std::all_of(per_seed.begin(), per_seed.end(), [](const CapacityBracket& b) { return b.low.has_value(); });
  const bool every_high = std::all_of(per_seed.begin(), per_seed.end(), [](const CapacityBracket& b) { return b.high.has_value(); });
  for (const CapacityBracket& b : per_seed) {
    if (every_low) merged.low = std::min(merged.low.value_or(*b.low), *b.low);
    if (every_high) merged.high = std::max(merged.high.value_or(*b.high), *b.high);
    merged.passes_above.insert(merged.passes_above.end(), b.passes_above.begin(), b.passes_above.end());
  }
  std::sort(merged.passes_above.begin(), merged.passes_above.end());
  merged.passes_above.erase(std::unique(merged.passes_above.begin(), merged.passes_above.end()), merged.passes_above.end());
  return merged;
}

std::string load_unit(const std::string& variable) {
  return variable == "max-concurrency" ? "concurrent requests" : "req/s";
}

std::string describe_bracket(const CapacityBracket& b, const std::string& unit, const std::string& at_least_hint) {
  const auto at = [&](const std::optional<double>& load) { return load ? load_text(*load) : std::string("?"); };
  switch (b.kind) {
    case BracketKind::none: return "no load point measured";
    case BracketKind::bracketed: return "between " + at(b.low) + " and " + at(b.high) + " " + unit;
    case BracketKind::at_least: return ">= " + at(b.low) + " " + unit + ": no point failed; " + at_least_hint;
    case BracketKind::below_lowest: return "< " + at(b.high) + " " + unit + ": every point failed";
    case BracketKind::not_monotone: break;
  }
  std::string above;
  for (const double load : b.passes_above) above += (above.empty() ? "" : ", ") + load_text(load);
  return "not monotone: " + above + " " + unit + " met the SLO above a failure at " + at(b.high) + " " + unit +
         "; below that failure: " +
         (b.low ? "between " + at(b.low) + " and " + at(b.high) + " " + unit : "< " + at(b.high) + " " + unit);
}

nlohmann::json to_json(const CapacityBracket& b) {
  nlohmann::json above = nlohmann::json::array();
  for (const double load : b.passes_above) above.push_back(load_json(load));
  return {{"kind", to_string(b.kind)}, {"low", load_json(b.low)}, {"high", load_json(b.high)}, {"passes_above", above}};
}

CapacityBracket bracket_from_json(const nlohmann::json& j) {
  CapacityBracket b;
  if (!j.is_object()) return b;
  const std::string kind = j.value("kind", std::string("none"));
  for (const BracketKind k : {BracketKind::bracketed, BracketKind::at_least, BracketKind::below_lowest,
                              BracketKind::not_monotone})
    if (kind == to_string(k)) b.kind = k;
  if (j.contains("low")) b.low = load_from_json(j["low"]);
  if (j.contains("high")) b.high = load_from_json(j["high"]);
  if (j.contains("passes_above") && j["passes_above"].is_array())
    for (const auto& load : j["passes_above"])
      if (const auto v = load_from_json(load)) b.passes_above.push_back(*v);
  return b;
}

}  // namespace encbench::reports
