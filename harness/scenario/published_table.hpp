#pragma once
// The published numbers a scenario reproduces, beside the model's (published_table.cpp): per metric
// the published Before/After, the model's mean over seeds with their range and the error, then each
// change with its one-run 90 % interval over seeds and whether the published change lies inside.
// compare_published computes the record; print_published_comparison and to_json only read it.
#include <cstddef>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace encbench::scenario {

// One side (Before or After) of a metric: the published value, the model's mean over the seeds
// with their range, and the model's error against the published value (per cent).
struct PublishedSide {
  double published = 0, model = 0, model_min = 0, model_max = 0, error_pct = 0;
};

// A metric's After-vs-Before change, published and modelled, with the one-run 90 % interval over
// the seeds' paired changes and whether the published change lies inside it.
struct PublishedChange {
  double published_pct = 0, model_pct = 0, difference_points = 0, one_run_p05_pct = 0, one_run_p95_pct = 0;
  std::size_t interval_seeds = 0;
  bool published_inside = false;
};

struct PublishedRow {
  std::string metric;        // vLLM's result key
  bool conditioned = false;  // a sample total the run took as its input, not a prediction
  std::optional<PublishedSide> before, after;
  std::optional<PublishedChange> change;
};

struct PublishedComparison {
  std::optional<std::string> source;  // the scenario's "source"; absent when it names none
  std::string role;    // "prediction" or "calibration" (the model was fitted to these)
  std::vector<PublishedRow> rows;
};

// `published`: the scenario's {"source", "role", "before": {metric: value}, "after": {...}};
// `per_seed[arm]` holds each seed's vLLM result JSON; `conditioned_keys` are the metrics the run
// took as its input (the sample totals), marked "(input)" and "conditioned": true rather than read
// as predictions.
PublishedComparison compare_published(const nlohmann::json& published,
                                      const std::vector<std::vector<nlohmann::json>>& per_seed,
                                      const std::vector<std::string>& conditioned_keys = {});

// Both tables: published vs model per metric, then the changes of `presets[1]` vs `presets[0]`.
void print_published_comparison(std::ostream& out, const PublishedComparison& comparison,
                                const std::vector<std::string>& presets);

// The result's "published_comparison".
nlohmann::json to_json(const PublishedComparison& comparison);

}  // namespace encbench::scenario
