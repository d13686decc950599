#include "harness/scenario/sweep_report.hpp"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <ostream>

#include "harness/core/number_format.hpp"
#include "harness/core/result_json.hpp"
#include "harness/core/stats.hpp"

namespace encbench::scenario {
namespace {

// Load points and capacities (an offered rate may be inf, never -inf).
std::string number(double v, int digits = 2) { return numbers::fixed(v, digits); }

// Two-sided 95 % Student t quantiles for 1..30 degrees of freedom (then the normal's 1.96).
double t95(std::size_t df) {
  static const double table[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                                 2.201,  2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
                                 2.080,  2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
  return df == 0 ? 0.0 : df <= 30 ? table[df - 1] : 1.96;
}

struct Interval {
  double mean = 0, low = 0, high = 0;
  std::size_t n = 0;
};

Interval mean_ci(const std::vector<double>& xs) {
  Interval ci;
  ci.n = xs.size();
  ci.mean = stats::mean(xs);
  const double half = xs.size() > 1 ? t95(xs.size() - 1) * stats::stdev_sample(xs) / std::sqrt(static_cast<double>(xs.size())) : 0;
  ci.low = ci.mean - half;
  ci.high = ci.mean + half;
  return ci;
}

nlohmann::json to_json(const Interval& ci) {
  return {{"mean", ci.mean}, {"ci95_low", ci.low}, {"ci95_high", ci.high}, {"n", ci.n}};
}

constexpr const char* kPointKeys[] = {"request_throughput", "output_throughput", "duration", "max_concurrent_requests",
                                      "mean_ttft_ms", "median_ttft_ms", "p90_ttft_ms", "p99_ttft_ms",
                                      "mean_tpot_ms", "median_tpot_ms", "p90_tpot_ms", "p99_tpot_ms",
                                      "mean_itl_ms", "median_itl_ms", "p99_itl_ms", "mean_e2el_ms", "p99_e2el_ms"};

// The per-request arrays of one seed's run, as bench serve writes them (--save-detailed); no
// generated texts (their size is the user's output, not a measurement).
constexpr const char* kDetailedKeys[] = {"input_lens", "output_lens", "ttfts", "itls", "latencies", "start_times",
                                         "queue_times", "errors"};

nlohmann::json detailed_requests(std::uint64_t seed, const nlohmann::json& serving) {
  nlohmann::json d = {{"seed", seed}};
  for (const char* key : kDetailedKeys)
    if (serving.contains(key)) d[key] = serving[key];
  return d;
}

// One arm at one load point: the seeds' mean of every key (with min and max), and goodput;
// with the requests kept, the requests of every seed.
nlohmann::json arm_point_json(const SweepArmPoint& arm, const std::vector<SloTerm>& slo) {
  std::vector<nlohmann::json> serving;
  for (const ArmSeed& s : arm.seeds) serving.push_back(serving_json(s));
  nlohmann::json p = nlohmann::json::object();
  for (const char* key : kPointKeys) {
    std::vector<double> xs;
    for (const nlohmann::json& s : serving) xs.push_back(s.value(key, 0.0));
    p[key] = {{"mean", stats::mean(xs)}, {"min", *std::min_element(xs.begin(), xs.end())},
              {"max", *std::max_element(xs.begin(), xs.end())}};
  }
  if (!slo.empty()) {
    bool all_meet = true;
    for (const nlohmann::json& s : serving) all_meet = all_meet && meets_slo(slo, s);
    p["goodput"] = {{"mean", stats::mean(arm.goodput)}};
    p["meets_slo"] = all_meet;
  }
  if (arm.keep_requests) {
    p["detailed"] = nlohmann::json::array();
    for (std::size_t k = 0; k < arm.seeds.size(); ++k)
      p["detailed"].push_back(detailed_requests(arm.seeds[k].seed, serving[k]));
  }
  return p;
}

nlohmann::json verdicts_json(const std::vector<PointVerdict>& verdicts) {
  nlohmann::json v = nlohmann::json::object();
  for (const PointVerdict& row : verdicts)
    v[row.metric] = {{"change_pct", row.change_pct},
                     {"verdict", row.verdict},
                     {"p_value", row.p_value ? nlohmann::json(*row.p_value) : nlohmann::json(nullptr)},
                     {"change", row.change_text},
                     {"mde_relative", row.mde ? nlohmann::json(*row.mde) : nlohmann::json(nullptr)}};
  return v;
}

nlohmann::json capacity_json(const std::vector<std::string>& presets, const std::vector<SloTerm>& slo,
                             const CapacityRecord& capacity) {
  nlohmann::json j = {{"slo", describe(slo)}, {"arms", nlohmann::json::array()}};
  for (std::size_t a = 0; a < presets.size(); ++a) {
    nlohmann::json per_seed_bracket = nlohmann::json::array();
    for (const reports::CapacityBracket& b : capacity.brackets[a]) per_seed_bracket.push_back(reports::to_json(b));
    j["arms"].push_back({{"preset", presets[a]},
                         {"per_seed", capacity.per_arm[a]},
                         {"capacity_req_s", to_json(mean_ci(capacity.per_arm[a]))},
                         {"capacity_bracket", reports::to_json(reports::merge_brackets(capacity.brackets[a]))},
                         {"per_seed_bracket", per_seed_bracket}});
  }
  if (!capacity.gains_pct.empty()) j["gain_pct"] = to_json(mean_ci(capacity.gains_pct));
  return j;
}

nlohmann::json points_json(const std::vector<SweepPoint>& points, const std::vector<SloTerm>& slo) {
  nlohmann::json out = nlohmann::json::array();
  for (const SweepPoint& p : points) out.push_back(point_json(p, slo));
  return out;
}

}  // namespace

void drop_requests(ArmSeed& seed) {
  client::ServingMetrics& m = seed.result.metrics;
  m.input_lens = {};
  m.output_lens = {};
  m.ttfts_s = m.latencies_s = m.start_times_s = m.queue_times_s = {};
  m.itls_s = {};
  m.generated_texts = m.errors = {};
  seed.result.run.records = {};
  seed.result.probe_records = {};
  seed.detail = {};
}

nlohmann::json point_json(const SweepPoint& point, const std::vector<SloTerm>& slo) {
  nlohmann::json j = {{"variable", point.variable},
                      {"value", std::isinf(point.value) ? nlohmann::json("inf") : nlohmann::json(point.value)},
                      {"arms", nlohmann::json::array()}};
  for (const SweepArmPoint& arm : point.arms) j["arms"].push_back(arm_point_json(arm, slo));
  j["verdicts"] = verdicts_json(point.verdicts);
  if (!point.over_saturated.empty()) j["over_saturated"] = point.over_saturated;
  return j;
}

void print_sweep_head(std::ostream& out, const PresetAbOptions& o, const SweepOptions& w) {
  out << "\nSweep of " << w.sweep.variable << " (VIRTUAL clock), " << o.presets[0] << " (A) vs " << o.presets[1]
      << " (B), " << o.seeds << " seed(s) x " << o.num_prompts << " requests per arm and point; B vs A judged at "
      << judgement::describe(o.judging) << "\n";
  out << "| " << std::setw(8) << w.sweep.variable.substr(0, 8) << " | A req/s | B req/s | A TTFT ms | B TTFT ms "
      << "| TTFT B vs A      | A p99 ms | B p99 ms | A TPOT  | B TPOT  |" << (w.slo.empty() ? "" : " A good  | B good  |")
      << "\n";
}

void print_point_row(std::ostream& out, const SweepPoint& point) {
  const nlohmann::json j = point_json(point, {});
  const auto& a = j["arms"][0];
  const auto& b = j["arms"][1];
  const PointVerdict* ttft = nullptr;
  for (const PointVerdict& v : point.verdicts)
    if (v.metric == "mean_ttft_ms") ttft = &v;
  const auto get = [](const nlohmann::json& arm, const char* key) { return arm[key]["mean"].get<double>(); };
  out << "| " << std::setw(8) << number(point.value, point.variable == "request-rate" ? 2 : 0) << " | " << std::setw(7)
      << number(get(a, "request_throughput")) << " | " << std::setw(7) << number(get(b, "request_throughput"))
      << " | " << std::setw(9) << number(get(a, "mean_ttft_ms"), 0) << " | " << std::setw(9)
      << number(get(b, "mean_ttft_ms"), 0) << " | " << std::setw(8) << number(ttft ? ttft->change_pct : 0.0, 1) << " % "
      << std::setw(7) << (ttft ? ttft->verdict : "-") << " | " << std::setw(8) << number(get(a, "p99_ttft_ms"), 0)
      << " | " << std::setw(8) << number(get(b, "p99_ttft_ms"), 0) << " | " << std::setw(7)
      << number(get(a, "mean_tpot_ms"), 1) << " | " << std::setw(7) << number(get(b, "mean_tpot_ms"), 1) << " |";
  if (!point.arms[0].goodput.empty())
    out << " " << std::setw(7) << number(stats::mean(point.arms[0].goodput)) << " | " << std::setw(7)
        << number(stats::mean(point.arms[1].goodput)) << " |";
  out << "\n";
}

void print_capacity(std::ostream& out, const PresetAbOptions& o, const std::vector<SloTerm>& slo,
                    const CapacityRecord& capacity) {
  out << "\nCapacity at " << describe(slo) << " (highest request rate meeting it, bracketed per seed by the search; "
      << o.seeds << " seed(s), 95 % CI over seeds)\n";
  bool bounded = false;
  for (std::size_t a = 0; a < o.presets.size(); ++a) {
    const Interval ci = mean_ci(capacity.per_arm[a]);
    const reports::CapacityBracket all = reports::merge_brackets(capacity.brackets[a]);
    out << "  " << std::left << std::setw(36) << o.presets[a] << number(ci.mean) << " req/s  [" << number(ci.low)
        << ", " << number(ci.high) << "]" << std::right;
    if (all.kind == reports::BracketKind::bracketed) {
      out << "  every seed bracketed, all " << reports::describe_bracket(all, "req/s") << "\n";
      continue;
    }
    bounded = true;
    out << "  a BOUND, not a capacity:\n";
    for (std::size_t s = 0; s < capacity.brackets[a].size(); ++s)
      if (capacity.brackets[a][s].kind != reports::BracketKind::bracketed)
        out << "    seed " << o.seed + s << ": "
            << reports::describe_bracket(capacity.brackets[a][s], "req/s", "the search stops there") << "\n";
  }
  if (!capacity.gains_pct.empty()) {
    const Interval g = mean_ci(capacity.gains_pct);
    out << "  " << o.presets[1] << ": " << (g.mean >= 0 ? "+" : "") << number(g.mean, 1) << " % capacity at "
        << describe(slo) << ", CI [" << number(g.low, 1) << ", " << number(g.high, 1) << "] (paired by seed"
        << (bounded ? "; a bound enters it, so it is not a measured gain" : "") << ")\n";
  }
}

void print_points_capacity(std::ostream& out, const std::vector<std::string>& presets, const SweepRecord& record) {
  if (record.points.empty() || record.slo.empty()) return;
  const std::string unit = reports::load_unit(record.points.front().variable);
  out << "\nCapacity at " << describe(record.slo) << " as the sweep's points bracket it:\n";
  for (std::size_t a = 0; a < presets.size() && a < record.brackets.size(); ++a)
    out << "  " << std::left << std::setw(36) << presets[a] << std::right
        << reports::describe_bracket(record.brackets[a], unit) << "\n";
}

void print_live_summary(std::ostream& out, const std::string& label, const std::string& variable,
                        const SweepRecord& record) {
  out << "\nSweep of " << label << " (" << variable << "): " << record.points.size() << " point(s)"
      << (record.stopped_early.empty() ? "" : ", stopped early") << "\n";
  for (const SweepPoint& point : record.points) {
    const nlohmann::json p = point_json(point, record.slo);
    const auto& a = p["arms"][0];
    out << "  " << std::setw(8) << p["value"].dump() << ": " << number(a["request_throughput"]["mean"].get<double>())
        << " req/s, mean TTFT " << number(a["mean_ttft_ms"]["mean"].get<double>(), 1) << " ms, p99 TTFT "
        << number(a["p99_ttft_ms"]["mean"].get<double>(), 1) << " ms"
        << (a.contains("meets_slo") ? (a["meets_slo"].get<bool>() ? "  meets SLO" : "  misses SLO") : "") << "\n";
  }
  if (!record.slo.empty() && !record.brackets.empty())
    out << "Capacity at " << describe(record.slo) << ": "
        << reports::describe_bracket(record.brackets[0], reports::load_unit(variable),
                                     record.stopped_early.empty() ? "extend --sweep"
                                                                  : "the sweep stopped early (over-saturated)")
        << "\n";
}

nlohmann::json virtual_sweep_json(const PresetAbOptions& o, const SweepRecord& record,
                                   const std::string& model_description, const std::vector<std::string>& argv) {
  nlohmann::json doc = make_result_envelope("encbench-sweep", 1, argv, o.device);
  doc["clock"] = "virtual";
  doc["scenario"] = to_json(o);
  doc["model"] = {{"description", model_description}};
  doc["presets"] = o.presets;
  doc["slo"] = describe(record.slo);
  doc["points"] = points_json(record.points, record.slo);
  doc["interrupted"] = record.interrupted;
  if (record.capacity) doc["capacity"] = capacity_json(o.presets, record.slo, *record.capacity);
  if (!record.slo.empty() && !record.points.empty()) {
    doc["points_capacity"] = nlohmann::json::array();
    for (std::size_t a = 0; a < o.presets.size() && a < record.brackets.size(); ++a)
      doc["points_capacity"].push_back({{"preset", o.presets[a]}, {"capacity_bracket", reports::to_json(record.brackets[a])}});
  }
  return doc;
}

nlohmann::json live_sweep_json(const std::string& target, const SweepRecord& record,
                               const std::vector<std::string>& argv) {
  nlohmann::json doc = make_result_envelope("encbench-sweep", 1, argv, "live:" + target);
  doc["clock"] = "real";
  doc["target"] = target;
  doc["model"] = {{"description", "live server " + target}};
  doc["presets"] = record.presets;
  doc["slo"] = describe(record.slo);
  doc["points"] = points_json(record.points, record.slo);
  doc["interrupted"] = record.interrupted;
  if (!record.stopped_early.empty()) doc["stopped_early"] = record.stopped_early;
  if (!record.slo.empty()) {
    nlohmann::json probes = nlohmann::json::array();
    for (const CapacityProbe& p : record.probes)
      probes.push_back({{"value", p.value}, {"meets_slo", p.meets_slo}, {"point", point_json(p.point, record.slo)}});
    doc["capacity"] = {{"slo", describe(record.slo)},
                       {"capacity_bracket", reports::to_json(record.brackets.empty() ? reports::CapacityBracket{}
                                                                                     : record.brackets[0])},
                       {"highest_passing", record.highest_passing},
                       {"lowest_failing", record.lowest_failing > 0 ? nlohmann::json(record.lowest_failing)
                                                                    : nlohmann::json(nullptr)},
                       {"probes", probes}};
  }
  return doc;
}

}  // namespace encbench::scenario
