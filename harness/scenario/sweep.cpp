#include "harness/core/number_format.hpp"
#include "harness/core/text_escape.hpp"
#include "harness/scenario/sweep.hpp"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <limits>
#include <map>
#include <ostream>
#include <sstream>
#include <tuple>

#include "harness/core/error.hpp"
#include "harness/core/result_json.hpp"
#include "harness/core/stats.hpp"
#include "harness/scenario/pooled.hpp"
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

// Load points and capacities (an offered rate may be inf, never -inf).
std::string number(double v, int digits = 2) { return numbers::fixed(v, digits); }

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
// with save_detailed, the requests of every seed.
nlohmann::json arm_point(const std::vector<ArmSeed>& seeds, const std::vector<SloTerm>& slo, bool save_detailed) {
  std::vector<nlohmann::json> serving;
  for (const ArmSeed& s : seeds) serving.push_back(serving_json(s));
  nlohmann::json p = nlohmann::json::object();
  for (const char* key : kPointKeys) {
    std::vector<double> xs;
    for (const nlohmann::json& s : serving) xs.push_back(s.value(key, 0.0));
    p[key] = {{"mean", stats::mean(xs)}, {"min", *std::min_element(xs.begin(), xs.end())},
              {"max", *std::max_element(xs.begin(), xs.end())}};
  }
  if (!slo.empty()) {
    std::vector<double> xs;
    bool all_meet = true;
    for (const nlohmann::json& s : serving) {
      xs.push_back(goodput(s, slo));
      all_meet = all_meet && meets_slo(slo, s);
    }
    p["goodput"] = {{"mean", stats::mean(xs)}};
    p["meets_slo"] = all_meet;
  }
  if (save_detailed) {
    p["detailed"] = nlohmann::json::array();
    for (std::size_t k = 0; k < seeds.size(); ++k) p["detailed"].push_back(detailed_requests(seeds[k].seed, serving[k]));
  }
  return p;
}

// The B-vs-A verdicts of one point (pooled seeds, the live loop's comparison).
nlohmann::json point_verdicts(const std::vector<std::vector<ArmSeed>>& by_arm, const std::vector<std::string>& presets) {
  const reports::Comparison c = compare_seeds(presets, by_arm);
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
    return meets_slo(slo, serving_json(experiment.run(arm, at_load(o, "request-rate", rate), seed)));
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
      o.result_file.empty() ? o.result_dir / ("sweep-" + safe_file_component(o.name) + ".json") : o.result_file;
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
      for (const auto& seeds : by_arm) point["arms"].push_back(arm_point(seeds, w.slo, w.save_detailed));
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

namespace encbench::scenario {
namespace {

// Requests in flight (sent, not finished) at time t, from the client's records.
std::size_t in_flight_at(const std::vector<client::RequestRecord>& records, Nanos t) {
  std::size_t n = 0;
  for (const auto& r : records)
    if (r.dispatched && r.dispatch_ns <= t && (r.end_ns == 0 || r.end_ns > t)) ++n;
  return n;
}

// Why a point is over-saturated ("" when it is not).
std::string over_saturation(const client::BenchConfig& c, const client::BenchResult& r) {
  const auto& m = r.metrics;
  std::ostringstream why;
  // Achieved rate with the drain taken out: completions over the run less one mean latency (the
  // last request's own service), so a short unsaturated run is not mistaken for a slow server.
  double mean_latency_s = 0;
  for (double l : m.latencies_s) mean_latency_s += l;
  if (!m.latencies_s.empty()) mean_latency_s /= static_cast<double>(m.latencies_s.size());
  const double window_s = m.duration_s - mean_latency_s;
  const double achieved = window_s > 0 ? static_cast<double>(m.completed) / window_s : 0;
  if (std::isfinite(c.request_rate) && c.max_concurrency == 0 && achieved < 0.95 * c.request_rate) {
    why << "achieved " << number(achieved) << " of " << number(c.request_rate)
        << " req/s offered (< 95 %, completions over the run less one mean latency)";
    return why.str();
  }
  // A growing queue: in flight at the last send more than twice what it was at the middle one.
  std::vector<Nanos> sends;
  for (const auto& rec : r.run.records)
    if (rec.dispatched) sends.push_back(rec.dispatch_ns);
  std::sort(sends.begin(), sends.end());
  if (sends.size() >= 16 && c.max_concurrency == 0) {
    const std::size_t mid = in_flight_at(r.run.records, sends[sends.size() / 2]);
    const std::size_t last = in_flight_at(r.run.records, sends.back());
    if (last > 8 && last > 2 * mid) {
      why << "requests in flight grew from " << mid << " at the middle send to " << last << " at the last";
      return why.str();
    }
  }
  return "";
}

}  // namespace

ClosedLoopRun run_live_sweep(const client::BenchConfig& base, const SweepOptions& w, const std::filesystem::path& result_path,
                             const std::vector<std::string>& argv, std::ostream& out, std::ostream& progress) {
  require(!w.sweep.values.empty(), "bench sweep needs --sweep");
  std::error_code ec;
  if (!result_path.parent_path().empty()) std::filesystem::create_directories(result_path.parent_path(), ec);
  require(!ec, "cannot create directory " + result_path.parent_path().string() + ": " + ec.message());
  const std::string label = base.label.empty() ? "server" : base.label;
  nlohmann::json points = nlohmann::json::array(), probes = nlohmann::json::array();
  bool interrupted = false;
  std::string stopped_because;
  double last_pass = 0, first_fail = 0;
  const auto run_point = [&](double value) {
    client::BenchConfig c = base;
    if (w.sweep.variable == "request-rate") c.request_rate = value;
    else c.max_concurrency = static_cast<int>(value);
    c.save_detailed = true;  // per-request arrays for goodput, kept only in this point's memory
    progress << "[sweep] " << w.sweep.variable << " " << number(value) << " against " << client::base_url(c) << std::endl;
    client::BenchResult r = client::run_benchmark(c);
    client::print_vllm_block(out, c, r);
    const std::string saturated = over_saturation(c, r);
    const bool was_interrupted = r.run.interrupted;
    ArmSeed arm;
    arm.config = c;
    arm.result = std::move(r);
    nlohmann::json point = {{"variable", w.sweep.variable},
                            {"value", std::isinf(value) ? nlohmann::json("inf") : nlohmann::json(value)},
                            {"arms", nlohmann::json::array({arm_point({arm}, w.slo, w.save_detailed)})},
                            {"verdicts", nlohmann::json::object()}};
    if (!saturated.empty()) point["over_saturated"] = saturated;
    return std::make_tuple(point, was_interrupted, saturated);
  };
  for (const double value : w.sweep.values) {
    auto [point, was_interrupted, saturated] = run_point(value);
    const bool pass = !w.slo.empty() && point["arms"][0].value("meets_slo", false);
    if (!w.slo.empty() && first_fail == 0) {
      if (pass) last_pass = value;
      else first_fail = value;
    }
    points.push_back(point);
    if (was_interrupted) {
      interrupted = true;
      break;
    }
    if (!saturated.empty()) {
      stopped_because = "over-saturated at " + w.sweep.variable + " " + number(value) + ": " + saturated;
      out << "\n" << stopped_because << "; the sweep stops here (higher loads would measure the queue)\n";
      break;
    }
  }
  // Between the last passing and the first failing request rate, bisect.
  if (!interrupted && !w.slo.empty() && w.sweep.variable == "request-rate" && last_pass > 0 && first_fail > last_pass &&
      std::isfinite(first_fail)) {
    double good = last_pass, bad = first_fail;
    for (int i = 0; i < w.capacity_bisections; ++i) {
      const double mid = 0.5 * (good + bad);
      auto [point, was_interrupted, saturated] = run_point(mid);
      const bool pass = point["arms"][0].value("meets_slo", false);
      probes.push_back({{"value", mid}, {"meets_slo", pass}, {"point", point}});
      (pass ? good : bad) = mid;
      if (was_interrupted) {
        interrupted = true;
        break;
      }
    }
    last_pass = good;
    first_fail = bad;
  }
  out << "\nSweep of " << label << " (" << w.sweep.variable << "): " << points.size() << " point(s)"
      << (stopped_because.empty() ? "" : ", stopped early") << "\n";
  for (const auto& p : points) {
    const auto& a = p["arms"][0];
    out << "  " << std::setw(8) << p["value"].dump() << ": " << number(a["request_throughput"]["mean"].get<double>())
        << " req/s, mean TTFT " << number(a["mean_ttft_ms"]["mean"].get<double>(), 1) << " ms, p99 TTFT "
        << number(a["p99_ttft_ms"]["mean"].get<double>(), 1) << " ms"
        << (a.contains("meets_slo") ? (a["meets_slo"].get<bool>() ? "  meets SLO" : "  misses SLO") : "") << "\n";
  }
  nlohmann::json doc = make_result_envelope("encbench-sweep", 1, argv, "live:" + client::base_url(base));
  doc["clock"] = "real";
  doc["target"] = client::base_url(base);
  doc["model"] = {{"description", "live server " + client::base_url(base)}};
  doc["presets"] = nlohmann::json::array({label});
  doc["slo"] = describe(w.slo);
  doc["points"] = points;
  doc["interrupted"] = interrupted;
  if (!stopped_because.empty()) doc["stopped_early"] = stopped_because;
  if (!w.slo.empty()) {
    doc["capacity"] = {{"slo", describe(w.slo)}, {"highest_passing", last_pass},
                       {"lowest_failing", first_fail > 0 ? nlohmann::json(first_fail) : nlohmann::json(nullptr)},
                       {"probes", probes}};
    out << "Highest " << w.sweep.variable << " meeting " << describe(w.slo) << ": " << number(last_pass)
        << (first_fail > 0 ? " (first failing: " + number(first_fail) + ")" : "") << "\n";
  }
  ClosedLoopRun run;
  run.result_path = result_path;
  write_json_file(result_path, doc);
  const auto html = std::filesystem::path(result_path).replace_extension(".html");
  reports::write_sweep_html(html, doc);
  progress << "[sweep] wrote " << result_path.string() << " and " << html.string() << std::endl;
  run.result = std::move(doc);
  return run;
}

}  // namespace encbench::scenario
