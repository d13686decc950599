#pragma once
// The comparison every preset A/B prints: each arm's repeats (live rounds or virtual seeds)
// pooled as a directory of runs is (reports::merge_runs: per-request samples together, each run's
// own value kept so a change must also clear their spread), then arm 1 against arm 0 by the
// default gate.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reports/compare.hpp"

namespace encbench::scenario {

// One arm's repeats pooled (one repeat: itself; more: reports::merge_runs).
reports::RunResult pool_repeats(const std::vector<nlohmann::json>& serving, const std::vector<std::string>& names);

// serving_by_arm[a][k]: arm a's k-th repeat (vLLM result keys); repeat_names[a][k] labels it.
reports::Comparison compare_pooled_arms(const std::vector<std::vector<nlohmann::json>>& serving_by_arm,
                                        const std::vector<std::vector<std::string>>& repeat_names,
                                        const judgement::Settings& settings = {},
                                        judgement::RoundDesign design = judgement::RoundDesign::independent);

}  // namespace encbench::scenario
