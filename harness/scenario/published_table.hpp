#pragma once
// The published numbers a scenario reproduces, beside the model's (published_table.cpp): per metric
// the published Before/After, the model's mean over seeds with their range and the error, then each
// change with its one-run 90 % interval over seeds and whether the published change lies inside.
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace encbench::scenario {

// Prints both tables and returns them as the result's "published_comparison". `per_seed[arm]` holds
// each seed's vLLM result JSON; `conditioned_keys` are the metrics the run took as its input (the
// sample totals), marked "(input)" and "conditioned": true rather than read as predictions.
nlohmann::json print_published_comparison(std::ostream& out, const nlohmann::json& published,
                                          const std::vector<std::string>& presets,
                                          const std::vector<std::vector<nlohmann::json>>& per_seed,
                                          const std::vector<std::string>& conditioned_keys = {});

}  // namespace encbench::scenario
