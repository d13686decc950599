#include "harness/scenario/sweep.hpp"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <limits>
#include <map>
#include <ostream>
#include <sstream>

#include "harness/core/error.hpp"
#include "harness/core/result_json.hpp"
#include "harness/core/stats.hpp"
#include "harness/scenario/virtual_experiment.hpp"
#include "reports/compare.hpp"
#include "reports/result.hpp"
#include "reports/sweep_html.hpp"

namespace encbench::scenario {
namespace {

constexpr const char* kStatistics[] = {"mean", "median", "p50", "p90", "p95", "p99"};
constexpr const char* kMetrics[] = {"ttft", "tpot", "itl", "e2el"};

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

std::string number(double v, int digits = 2) {
  if (std::isinf(v)) return "inf";
  std::ostringstream s;
  s << std::fixed << std::setprecision(digits) << v;
  return s.str();
}

// Requests that met every per-request limit of the SLO (vLLM's goodput: TTFT, TPOT, E2EL),
// per second of the run.
double goodput(const nlohmann::json& serving, const std::vector<SloTerm>& slo) {
  std::map<std::string, double> limit_s;
  for (const SloTerm& t : slo)
    if (t.metric != "itl" && !limit_s.contains(t.metric)) limit_s[t.metric] = t.limit_ms / 1e3;
  const auto& ttfts = serving.value("ttfts", nlohmann::json::array());
  const auto& latencies = serving.value("latencies", nlohmann::json::array());
  const auto& outputs = serving.value("output_lens", nlohmann::json::array());
  const double duration = serving.value("duration", 0.0);
  if (duration <= 0 || ttfts.size() != latencies.size() || ttfts.size() != outputs.size()) return 0;
  std::size_t good = 0;
  for (std::size_t i = 0; i < ttfts.size(); ++i) {
    const double ttft = ttfts[i].get<double>(), latency = latencies[i].get<double>();
    const auto out = outputs[i].get<std::int64_t>();
    if (out <= 0) continue;  // failed
    const double tpot = out > 1 ? (latency - ttft) / static_cast<double>(out - 1) : 0;
    const auto within = [&](const char* metric, double v) { return !limit_s.contains(metric) || v <= limit_s[metric]; };
    if (within("ttft", ttft) && within("tpot", tpot) && within("e2el", latency)) ++good;
  }
  return static_cast<double>(good) / duration;
}

constexpr const char* kPointKeys[] = {"request_throughput", "output_throughput", "duration", "max_concurrent_requests",
                                      "mean_ttft_ms", "median_ttft_ms", "p90_ttft_ms", "p99_ttft_ms",
                                      "mean_tpot_ms", "median_tpot_ms", "p90_tpot_ms", "p99_tpot_ms",
                                      "mean_itl_ms", "median_itl_ms", "p99_itl_ms", "mean_e2el_ms", "p99_e2el_ms"};

// One arm at one load point: the seeds' mean of every key (with min and max), and goodput.
nlohmann::json arm_point(const std::vector<ArmSeed>& seeds, const std::vector<SloTerm>& slo) {
  nlohmann::json p = nlohmann::json::object();
  for (const char* key : kPointKeys) {
    std::vector<double> xs;
    for (const ArmSeed& s : seeds) xs.push_back(s.serving.value(key, 0.0));
    p[key] = {{"mean", stats::mean(xs)}, {"min", *std::min_element(xs.begin(), xs.end())},
              {"max", *std::max_element(xs.begin(), xs.end())}};
  }
  if (!slo.empty()) {
    std::vector<double> xs;
    bool all_meet = true;
    for (const ArmSeed& s : seeds) {
      xs.push_back(goodput(s.serving, slo));
      all_meet = all_meet && meets_slo(slo, s.serving);
    }
    p["goodput"] = {{"mean", stats::mean(xs)}};
    p["meets_slo"] = all_meet;
  }
  return p;
}

// The B-vs-A verdicts of one point (pooled seeds, the live loop's comparison).
nlohmann::json point_verdicts(const std::vector<std::vector<ArmSeed>>& by_arm, const std::vector<std::string>& presets) {
  std::vector<reports::RunResult> pooled;
  for (std::size_t a = 0; a < by_arm.size(); ++a) {
    std::vector<reports::RunResult> runs;
    for (const ArmSeed& r : by_arm[a]) runs.push_back(reports::parse_result(r.serving, presets[a]));
    pooled.push_back(runs.size() == 1 ? runs.front() : reports::merge_runs(runs));
  }
  const reports::Comparison c = reports::compare_runs(pooled[0], pooled[1], reports::default_gate());
  nlohmann::json v = nlohmann::json::object();
  for (const auto& row : c.rows) {
    if (row.name != "mean_ttft_ms" && row.name != "p99_ttft_ms" && row.name != "mean_tpot_ms" &&
        row.name != "request_throughput")
      continue;
    v[row.name] = {{"change_pct", row.relative_change ? 100.0 * *row.relative_change : 0.0},
                   {"verdict", reports::to_string(row.verdict)},
                   {"p_value", row.p_value ? nlohmann::json(*row.p_value) : nlohmann::json(nullptr)}};
  }
  return v;
}

ClosedLoopOptions at_load(const ClosedLoopOptions& o, const std::string& variable, double value) {
  ClosedLoopOptions load = o;
  if (variable == "request-rate") load.request_rate = value;
  else load.max_concurrency = static_cast<int>(value);
  return load;
}

}  // namespace

std::string SloTerm::key() const {
  const std::string stat = statistic == "p50" ? "median" : statistic;
  return stat + "_" + metric + "_ms";
}

SweepSpec parse_sweep(const std::string& text) {
  const auto eq = text.find('=');
  require(eq != std::string::npos, "--sweep: expected request-rate=a,b,... or max-concurrency=a,b,..., got '" + text + "'");
  SweepSpec spec;
  spec.variable = text.substr(0, eq);
  require(spec.variable == "request-rate" || spec.variable == "max-concurrency",
          "--sweep: unknown variable '" + spec.variable + "' (request-rate, max-concurrency)");
  std::stringstream list(text.substr(eq + 1));
  for (std::string item; std::getline(list, item, ',');) {
    double v = 0;
    if (item == "inf") {
      require(spec.variable == "request-rate", "--sweep: inf is a request rate, not a concurrency");
      v = std::numeric_limits<double>::infinity();
    } else {
      try {
        std::size_t used = 0;
        v = std::stod(item, &used);
        require(used == item.size(), "trailing characters");
      } catch (const std::exception&) {
        throw InvalidInput("--sweep: '" + item + "' is not a number");
      }
    }
    require(v > 0, "--sweep: every value must be positive, got " + item);
    require(spec.variable != "max-concurrency" || v == std::floor(v), "--sweep: a concurrency is a whole number");
    require(spec.values.empty() || v > spec.values.back(), "--sweep: values must be strictly increasing (" + text + ")");
    spec.values.push_back(v);
  }
  require(!spec.values.empty(), "--sweep: the list of values is empty");
  return spec;
}

std::vector<SloTerm> parse_slo(const std::string& text) {
  std::vector<SloTerm> terms;
  std::stringstream list(text);
  for (std::string item; std::getline(list, item, ',');) {
    const auto le = item.find("<=");
    const auto us = item.find('_');
    require(le != std::string::npos && us != std::string::npos && us < le,
            "--slo: expected metric_statistic<=ms (e.g. ttft_p99<=2000), got '" + item + "'");
    SloTerm t;
    t.metric = item.substr(0, us);
    t.statistic = item.substr(us + 1, le - us - 1);
    require(std::find(std::begin(kMetrics), std::end(kMetrics), t.metric) != std::end(kMetrics),
            "--slo: unknown metric '" + t.metric + "' in '" + item + "' (ttft, tpot, itl, e2el)");
    require(std::find(std::begin(kStatistics), std::end(kStatistics), t.statistic) != std::end(kStatistics),
            "--slo: unknown statistic '" + t.statistic + "' in '" + item + "' (mean, median, p50, p90, p95, p99)");
    try {
      std::size_t used = 0;
      t.limit_ms = std::stod(item.substr(le + 2), &used);
      require(used == item.size() - le - 2, "trailing");
    } catch (const std::exception&) {
      throw InvalidInput("--slo: the limit in '" + item + "' is not a number of milliseconds");
    }
    require(t.limit_ms > 0, "--slo: the limit in '" + item + "' must be positive");
    terms.push_back(t);
  }
  require(!terms.empty(), "--slo: no terms");
  return terms;
}

bool meets_slo(const std::vector<SloTerm>& slo, const nlohmann::json& serving) {
  if (serving.value("failed", 0) > 0 || serving.value("completed", 0) == 0) return false;
  for (const SloTerm& t : slo)
    if (!(serving.value(t.key(), std::numeric_limits<double>::infinity()) <= t.limit_ms)) return false;
  return true;
}

std::string describe(const std::vector<SloTerm>& slo) {
  std::string text;
  for (const SloTerm& t : slo) text += (text.empty() ? "" : ", ") + t.metric + " " + t.statistic + " <= " + number(t.limit_ms, 0) + " ms";
  return text;
}

namespace {

// The highest request rate at which `arm` meets the SLO at `seed`: double from 0.25 req/s until
// it fails (or 1024 req/s), then bisect. 0 when even the lowest rate fails.
double capacity(VirtualExperiment& experiment, std::size_t arm, const ClosedLoopOptions& o,
                const std::vector<SloTerm>& slo, std::uint64_t seed, int bisections) {
  const auto passes = [&](double rate) {
    return meets_slo(slo, experiment.run(arm, at_load(o, "request-rate", rate), seed).serving);
  };
  double good = 0, bad = 0.25;
  while (passes(bad)) {
    good = bad;
    bad *= 2;
    if (bad > 1024) return good;
  }
  if (good == 0) return 0;
  for (int i = 0; i < bisections; ++i) {
    const double mid = 0.5 * (good + bad);
    (passes(mid) ? good : bad) = mid;
  }
  return good;
}

nlohmann::json capacity_search(VirtualExperiment& experiment, const ClosedLoopOptions& o, const SweepOptions& w,
                               std::ostream& out, std::ostream& progress) {
  std::vector<std::vector<double>> per_arm(o.presets.size());
  std::vector<double> gains;
  for (int s = 0; s < o.seeds; ++s) {
    const std::uint64_t seed = o.seed + static_cast<std::uint64_t>(s);
    for (std::size_t a = 0; a < o.presets.size(); ++a)
      per_arm[a].push_back(capacity(experiment, a, o, w.slo, seed, w.capacity_bisections));
    progress << "[sweep] capacity at seed " << seed << ": " << o.presets[0] << " " << number(per_arm[0].back())
             << " req/s, " << o.presets[1] << " " << number(per_arm[1].back()) << " req/s" << std::endl;
    if (per_arm[0].back() > 0) gains.push_back(100.0 * (per_arm[1].back() / per_arm[0].back() - 1.0));
  }
  nlohmann::json j = {{"slo", describe(w.slo)}, {"arms", nlohmann::json::array()}};
  out << "\nCapacity at " << describe(w.slo) << " (highest request rate meeting it; " << o.seeds
      << " seed(s), 95 % CI over seeds)\n";
  for (std::size_t a = 0; a < o.presets.size(); ++a) {
    const Interval ci = mean_ci(per_arm[a]);
    out << "  " << std::left << std::setw(36) << o.presets[a] << number(ci.mean) << " req/s  [" << number(ci.low)
        << ", " << number(ci.high) << "]\n";
    j["arms"].push_back({{"preset", o.presets[a]}, {"per_seed", per_arm[a]}, {"capacity_req_s", to_json(ci)}});
  }
  if (!gains.empty()) {
    const Interval g = mean_ci(gains);
    out << "  " << o.presets[1] << ": " << (g.mean >= 0 ? "+" : "") << number(g.mean, 1) << " % capacity at "
        << describe(w.slo) << ", CI [" << number(g.low, 1) << ", " << number(g.high, 1) << "] (paired by seed)\n";
    j["gain_pct"] = to_json(g);
  }
  return j;
}

void print_point_row(std::ostream& out, const std::string& variable, double value, const nlohmann::json& point) {
  const auto& a = point["arms"][0];
  const auto& b = point["arms"][1];
  const auto& v = point["verdicts"];
  const auto get = [](const nlohmann::json& arm, const char* key) { return arm[key]["mean"].get<double>(); };
  out << "| " << std::setw(8) << number(value, variable == "request-rate" ? 2 : 0) << " | " << std::setw(7)
      << number(get(a, "request_throughput")) << " | " << std::setw(7) << number(get(b, "request_throughput"))
      << " | " << std::setw(9) << number(get(a, "mean_ttft_ms"), 0) << " | " << std::setw(9)
      << number(get(b, "mean_ttft_ms"), 0) << " | " << std::setw(8)
      << number(v.contains("mean_ttft_ms") ? v["mean_ttft_ms"]["change_pct"].get<double>() : 0.0, 1) << " % "
      << std::setw(7) << (v.contains("mean_ttft_ms") ? v["mean_ttft_ms"]["verdict"].get<std::string>() : "-")
      << " | " << std::setw(8) << number(get(a, "p99_ttft_ms"), 0) << " | " << std::setw(8)
      << number(get(b, "p99_ttft_ms"), 0) << " | " << std::setw(7) << number(get(a, "mean_tpot_ms"), 1) << " | "
      << std::setw(7) << number(get(b, "mean_tpot_ms"), 1) << " |";
  if (a.contains("goodput"))
    out << " " << std::setw(7) << number(a["goodput"]["mean"].get<double>()) << " | " << std::setw(7)
        << number(b["goodput"]["mean"].get<double>()) << " |";
  out << "\n";
}

}  // namespace

ClosedLoopRun run_virtual_sweep(const ClosedLoopOptions& o, const SweepOptions& w, const std::vector<std::string>& argv,
                                std::ostream& out, std::ostream& progress) {
  validate(o);
  require(o.clock == "virtual", "--sweep and --slo on `encbench run` need --clock virtual (a live server: "
                                "`encbench bench sweep`)");
  require(!w.sweep.values.empty() || !w.slo.empty(), "nothing to do: give --sweep, --slo or both");
  const std::filesystem::path result_path =
      o.result_file.empty() ? o.result_dir / ("sweep-" + o.name + ".json") : o.result_file;
  std::error_code ec;
  if (!result_path.parent_path().empty()) std::filesystem::create_directories(result_path.parent_path(), ec);
  require(!ec, "cannot create directory " + result_path.parent_path().string() + ": " + ec.message());
  VirtualExperiment experiment(o, argv);
  progress << "[sweep] virtual clock: " << experiment.description() << std::endl;
  nlohmann::json points = nlohmann::json::array();
  bool interrupted = false;
  if (!w.sweep.values.empty()) {
    out << "\nSweep of " << w.sweep.variable << " (VIRTUAL clock), " << o.presets[0] << " (A) vs " << o.presets[1]
        << " (B), " << o.seeds << " seed(s) x " << o.num_prompts << " requests per arm and point\n";
    out << "| " << std::setw(8) << w.sweep.variable.substr(0, 8) << " | A req/s | B req/s | A TTFT ms | B TTFT ms "
        << "| TTFT B vs A      | A p99 ms | B p99 ms | A TPOT  | B TPOT  |" << (w.slo.empty() ? "" : " A good  | B good  |")
        << "\n";
    for (const double value : w.sweep.values) {
      if (stop_requested(o.stop_fd)) {
        interrupted = true;
        break;
      }
      const ClosedLoopOptions load = at_load(o, w.sweep.variable, value);
      const auto by_arm = experiment.run_all(load, nullptr);
      nlohmann::json point = {{"variable", w.sweep.variable},
                              {"value", std::isinf(value) ? nlohmann::json("inf") : nlohmann::json(value)},
                              {"arms", nlohmann::json::array()}};
      for (const auto& seeds : by_arm) point["arms"].push_back(arm_point(seeds, w.slo));
      point["verdicts"] = point_verdicts(by_arm, o.presets);
      print_point_row(out, w.sweep.variable, value, point);
      progress << "[sweep] " << w.sweep.variable << " " << number(value) << " done" << std::endl;
      points.push_back(std::move(point));
    }
  }
  nlohmann::json capacity_json;
  if (!w.slo.empty() && !interrupted) capacity_json = capacity_search(experiment, o, w, out, progress);
  nlohmann::json doc = make_result_envelope("encbench-sweep", 1, argv, o.device);
  doc["clock"] = "virtual";
  doc["scenario"] = to_json(o);
  doc["model"] = {{"description", experiment.description()}};
  doc["presets"] = o.presets;
  doc["slo"] = describe(w.slo);
  doc["points"] = points;
  doc["interrupted"] = interrupted;
  if (!capacity_json.is_null()) doc["capacity"] = capacity_json;
  ClosedLoopRun run;
  run.result_path = result_path;
  write_json_file(result_path, doc);
  const std::filesystem::path html = w.html.empty() ? std::filesystem::path(result_path).replace_extension(".html") : w.html;
  reports::write_sweep_html(html, doc);
  progress << "[sweep] wrote " << result_path.string() << " and " << html.string()
           << (interrupted ? " (interrupted: the points finished so far)" : "") << std::endl;
  run.result = std::move(doc);
  return run;
}

}  // namespace encbench::scenario
