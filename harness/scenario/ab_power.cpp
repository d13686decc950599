#include "harness/judgement/distributions.hpp"
#include "harness/core/number_format.hpp"
#include "harness/scenario/ab_power.hpp"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <ostream>
#include <sstream>

#include "harness/core/error.hpp"
#include "harness/core/stats.hpp"
#include "reports/compare.hpp"

namespace encbench::scenario {
namespace {

// Each round's own value of a pooled metric: run_values where the rounds carried per-request
// samples, else (throughputs) merge_runs keeps the rounds' values as the samples.
std::vector<double> round_values(const reports::Metric& m) {
  if (!m.run_values.empty()) return m.run_values;
  if (m.sample_kind == "runs") return m.samples;
  return {m.value};
}

struct RoundSpread {
  double sd = 0;     // pooled sd of the per-round values (absolute)
  double df = 0;
  double scale = 0;  // |mean of A's per-round values|
};

// The same pooled estimate as reports' between-run bound: both arms' per-round values around
// their own means.
RoundSpread round_spread(const reports::Metric& a, const reports::Metric& b) {
  RoundSpread s;
  s.scale = std::fabs(stats::mean(round_values(a)));
  double sum_sq = 0;
  for (const reports::Metric* m : {&a, &b}) {
    const auto values = round_values(*m);
    if (values.size() < 2) continue;
    const double sd = stats::stdev_sample(values);
    sum_sq += sd * sd * static_cast<double>(values.size() - 1);
    s.df += static_cast<double>(values.size() - 1);
  }
  if (s.df >= 1) s.sd = std::sqrt(sum_sq / s.df);
  return s;
}

double t_sum(double alpha, double power, double df) {
  return judgement::student_t_quantile(1.0 - alpha / 2.0, df) + judgement::student_t_quantile(power, df);
}

std::size_t rounds_of(const reports::Metric& m) { return round_values(m).size(); }

// Variance of a round's mean from its own requests: var(samples) / requests per round.
std::optional<double> within_round_variance_of_mean(const reports::Metric& m) {
  if (m.statistic != reports::Statistic::mean || m.samples.size() < 2) return std::nullopt;
  const double per_round = static_cast<double>(m.samples.size()) / static_cast<double>(rounds_of(m));
  const double sd = stats::stdev_sample(m.samples);
  return sd * sd / per_round;
}

std::string pct(std::optional<double> v, int digits = 2) {
  return v ? numbers::fixed(100.0 * *v, digits) + " %" : "-";
}

}  // namespace

std::vector<std::string> headline_metrics() {
  return {"mean_ttft_ms", "median_ttft_ms", "p99_ttft_ms", "mean_tpot_ms", "median_tpot_ms",
          "p99_tpot_ms",  "request_throughput", "output_throughput"};
}

std::vector<MdeRow> minimum_detectable_effects(const reports::RunResult& a, const reports::RunResult& b,
                                               const reports::Comparison& comparison) {
  std::vector<MdeRow> rows;
  for (const auto& name : headline_metrics()) {
    const reports::Metric* ma = a.find(name);
    const reports::Metric* mb = b.find(name);
    const auto judged = std::find_if(comparison.rows.begin(), comparison.rows.end(),
                                     [&](const reports::MetricComparison& r) { return r.name == name; });
    if (!ma || !mb || judged == comparison.rows.end()) continue;
    MdeRow row;
    row.metric = name;
    row.label = ma->label;
    row.base_value = ma->value;
    row.rounds_a = rounds_of(*ma);
    row.rounds_b = rounds_of(*mb);
    const RoundSpread spread = round_spread(*ma, *mb);
    if (spread.df >= 1 && spread.scale > 0) row.round_sd_rel = spread.sd / spread.scale;
    row.mde = judged->judgement.mde;
    row.basis = judged->judgement.test;
    if (!row.mde) row.basis += judged->judgement.settle.empty() ? "" : " (" + judged->judgement.settle + ")";
    rows.push_back(std::move(row));
  }
  return rows;
}

namespace {

// Smallest k (rounds per arm, 2..200) whose two-sample bound reaches `change`.
std::optional<int> rounds_needed(double sd_rel, double change, const Settings& settings) {
  for (int k = 2; k <= 200; ++k)
    if (t_sum(settings.alpha, settings.power, 2.0 * k - 2.0) * sd_rel * std::sqrt(2.0 / k) <= change) return k;
  return std::nullopt;
}

}  // namespace

Plan plan_rounds(const reports::RunResult& a, const reports::RunResult& b, double change,
                 std::size_t prompts_per_round, const Settings& settings) {
  require(change > 0 && change < 1, "--plan expects a change between 0 and 100 %");
  Plan plan;
  plan.change = change;
  plan.prompts_per_round = prompts_per_round;
  for (const auto& name : headline_metrics()) {
    const reports::Metric* ma = a.find(name);
    const reports::Metric* mb = b.find(name);
    if (!ma || !mb) continue;
    require(rounds_of(*ma) >= 2 && rounds_of(*mb) >= 2,
            "--plan needs a pilot of at least 2 rounds per arm (--rounds 2 or more)");
    plan.pilot_rounds = rounds_of(*ma);
    const RoundSpread spread = round_spread(*ma, *mb);
    if (spread.scale == 0) continue;
    PlanRow row;
    row.metric = name;
    row.label = ma->label;
    row.round_sd_rel = spread.sd / spread.scale;
    const double round_var = spread.sd * spread.sd;
    const auto va = within_round_variance_of_mean(*ma), vb = within_round_variance_of_mean(*mb);
    if (va && vb && round_var > 0) row.within_share = std::min(1.0, 0.5 * (*va + *vb) / round_var);
    const bool scalable = va && vb;
    for (std::size_t factor : {std::size_t{1}, std::size_t{2}, std::size_t{4}}) {
      if (factor > 1 && !scalable) break;
      const double var_rel = row.round_sd_rel * row.round_sd_rel *
                             (1.0 - row.within_share + row.within_share / static_cast<double>(factor));
      row.rounds_by_prompts.emplace_back(prompts_per_round * factor, rounds_needed(std::sqrt(var_rel), change, settings));
    }
    plan.rows.push_back(std::move(row));
  }
  std::ostringstream s;
  for (const auto& row : plan.rows) {
    if (row.metric != "mean_ttft_ms") continue;
    const auto& [prompts, rounds] = row.rounds_by_prompts.front();
    s << "a " << pct(change, 1) << " change of mean TTFT needs ";
    if (rounds)
      s << *rounds << " rounds per arm of " << prompts << " prompts";
    else
      s << "more than 200 rounds per arm of " << prompts << " prompts";
    if (row.rounds_by_prompts.size() > 1 && row.rounds_by_prompts.back().second)
      s << " (or " << *row.rounds_by_prompts.back().second << " rounds of " << row.rounds_by_prompts.back().first << ")";
  }
  plan.summary = s.str();
  return plan;
}

nlohmann::json to_json(const MdeRow& row) {
  auto opt = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(); };
  return {{"metric", row.metric},         {"label", row.label},         {"base_value", row.base_value},
          {"rounds_a", row.rounds_a},     {"rounds_b", row.rounds_b},   {"round_sd_rel", opt(row.round_sd_rel)},
          {"mde_rel", opt(row.mde)},      {"basis", row.basis}};
}

nlohmann::json to_json(const Plan& plan) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& row : plan.rows) {
    nlohmann::json options = nlohmann::json::array();
    for (const auto& [prompts, rounds] : row.rounds_by_prompts)
      options.push_back({{"prompts_per_round", prompts}, {"rounds_per_arm", rounds ? nlohmann::json(*rounds) : nlohmann::json()}});
    rows.push_back({{"metric", row.metric}, {"label", row.label}, {"round_sd_rel", row.round_sd_rel},
                    {"within_share", row.within_share}, {"options", options}});
  }
  return {{"change_rel", plan.change}, {"pilot_rounds", plan.pilot_rounds},
          {"prompts_per_round", plan.prompts_per_round}, {"rows", rows}, {"summary", plan.summary}};
}

void print_mde(std::ostream& out, const std::vector<MdeRow>& rows, const Settings& settings) {
  out << "\nMinimum detectable effect of each verdict's own test (" << judgement::describe(settings) << ")\n";
  out << "| " << std::left << std::setw(34) << "Metric" << " | " << std::setw(12) << "Round sd" << " | " << std::setw(12)
      << "MDE" << " | test\n";
  for (const auto& row : rows)
    out << "| " << std::left << std::setw(34) << row.label << " | " << std::setw(12) << pct(row.round_sd_rel) << " | "
        << std::setw(12) << pct(row.mde) << " | " << row.basis << "\n";
}

void print_plan(std::ostream& out, const Plan& plan) {
  out << "\nPlan for a " << pct(plan.change, 1) << " change (pilot: " << plan.pilot_rounds << " rounds per arm of "
      << plan.prompts_per_round << " prompts): rounds per arm needed\n";
  for (const auto& row : plan.rows) {
    out << "| " << std::left << std::setw(34) << row.label << " | round sd " << std::setw(9) << pct(row.round_sd_rel) << " |";
    for (const auto& [prompts, rounds] : row.rounds_by_prompts)
      out << " " << prompts << " prompts: " << (rounds ? std::to_string(*rounds) : std::string(">200")) << " |";
    out << "\n";
  }
  if (!plan.summary.empty()) out << "Plan: " << plan.summary << "\n";
}

}  // namespace encbench::scenario
