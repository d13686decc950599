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
#include "harness/scenario/sweep_report.hpp"
#include "harness/scenario/virtual_experiment.hpp"
#include "reports/compare.hpp"
#include "reports/result.hpp"
#include "reports/sweep_html.hpp"

namespace encbench::scenario {
namespace {

constexpr const char* kStatistics[] = {"mean", "median", "p50", "p90", "p95", "p99"};
constexpr const char* kMetrics[] = {"ttft", "tpot", "itl", "e2el"};
// The virtual capacity search's highest rate (req/s): passing there, the capacity is a bound.
constexpr double kCapacityCeiling = 1024;

// Load points and capacities (an offered rate may be inf, never -inf).
std::string number(double v, int digits = 2) { return numbers::fixed(v, digits); }

// Requests that met every per-request limit of the SLO (vLLM's goodput: TTFT, TPOT, E2EL),
// per second of the run, from one seed's per-request samples.
double goodput(const client::ServingMetrics& m, const std::vector<SloTerm>& slo) {
  std::map<std::string, double> limit_s;
  for (const SloTerm& t : slo)
    if (t.metric != "itl" && !limit_s.contains(t.metric)) limit_s[t.metric] = t.limit_ms / 1e3;
  const double duration = m.duration_s;
  if (duration <= 0 || m.ttfts_s.size() != m.latencies_s.size() || m.ttfts_s.size() != m.output_lens.size()) return 0;
  std::size_t good = 0;
  for (std::size_t i = 0; i < m.ttfts_s.size(); ++i) {
    const double ttft = m.ttfts_s[i], latency = m.latencies_s[i];
    const std::int64_t out = m.output_lens[i];
    if (out <= 0) continue;  // failed
    const double tpot = out > 1 ? (latency - ttft) / static_cast<double>(out - 1) : 0;
    const auto within = [&](const char* metric, double v) { return !limit_s.contains(metric) || v <= limit_s[metric]; };
    if (within("ttft", ttft) && within("tpot", tpot) && within("e2el", latency)) ++good;
  }
  return static_cast<double>(good) / duration;
}

// One arm at one load point as the record keeps it: goodput measured while the per-request samples
// are there, which are then dropped unless the sweep keeps them (memory grows with points, not
// requests).
SweepArmPoint record_arm(std::vector<ArmSeed> seeds, const std::vector<SloTerm>& slo, bool save_detailed) {
  SweepArmPoint arm;
  arm.keep_requests = save_detailed;
  for (ArmSeed& s : seeds) {
    if (!slo.empty()) arm.goodput.push_back(goodput(s.result.metrics, slo));
    if (!save_detailed) drop_requests(s);
    arm.seeds.push_back(std::move(s));
  }
  return arm;
}

// The B-vs-A verdicts of one point (pooled seeds, the live loop's comparison).
std::vector<PointVerdict> point_verdicts(const std::vector<std::vector<ArmSeed>>& by_arm,
                                         const std::vector<std::string>& presets, const judgement::Settings& settings) {
  const reports::Comparison c = compare_seeds(presets, by_arm, settings);
  std::vector<PointVerdict> out;
  for (const auto& row : c.rows) {
    if (row.name != "mean_ttft_ms" && row.name != "p99_ttft_ms" && row.name != "mean_tpot_ms" &&
        row.name != "request_throughput")
      continue;
    out.push_back({row.name, row.relative_change ? 100.0 * *row.relative_change : 0.0,
                   reports::to_string(row.verdict), row.p_value, judgement::format_change(row.judgement),
                   row.judgement.mde});
  }
  return out;
}

bool meets_slo(const std::vector<SloTerm>& slo, const SweepArmPoint& arm) {
  bool all_meet = true;
  for (const ArmSeed& s : arm.seeds) all_meet = all_meet && meets_slo(slo, serving_json(s));
  return all_meet;
}

// Each arm's capacity as the load points bracket it (a live sweep's probes are points too).
std::vector<reports::CapacityBracket> points_brackets(const SweepRecord& record) {
  std::vector<reports::CapacityBracket> out(record.presets.size());
  if (record.slo.empty()) return out;
  for (std::size_t a = 0; a < record.presets.size(); ++a) {
    std::vector<reports::SloOutcome> outcomes;
    for (const SweepPoint& p : record.points) outcomes.push_back({p.value, meets_slo(record.slo, p.arms[a])});
    for (const CapacityProbe& p : record.probes) outcomes.push_back({p.value, p.meets_slo});
    out[a] = reports::bracket_capacity(std::move(outcomes));
  }
  return out;
}

PresetAbOptions at_load(const PresetAbOptions& o, const std::string& variable, double value) {
  PresetAbOptions load = o;
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

// Where `arm` meets the SLO at `seed`, as the search brackets it: double the request rate from
// 0.25 req/s until it fails (at 1024 req/s passing, a bound: at least that), then bisect between
// the last passing and the first failing rate. Every rate tried is an outcome of the bracket.
reports::CapacityBracket capacity(VirtualExperiment& experiment, std::size_t arm, const PresetAbOptions& o,
                                  const std::vector<SloTerm>& slo, std::uint64_t seed, int bisections) {
  std::vector<reports::SloOutcome> tried;
  const auto passes = [&](double rate) {
    const bool pass = meets_slo(slo, serving_json(experiment.run(arm, at_load(o, "request-rate", rate), seed)));
    tried.push_back({rate, pass});
    return pass;
  };
  double good = 0, bad = 0.25;
  while (passes(bad)) {
    good = bad;
    bad *= 2;
    if (bad > kCapacityCeiling) return reports::bracket_capacity(tried);
  }
  if (good == 0) return reports::bracket_capacity(tried);
  for (int i = 0; i < bisections; ++i) {
    const double mid = 0.5 * (good + bad);
    (passes(mid) ? good : bad) = mid;
  }
  return reports::bracket_capacity(tried);
}

CapacityRecord capacity_search(VirtualExperiment& experiment, const PresetAbOptions& o, const SweepOptions& w,
                               std::ostream& progress) {
  CapacityRecord c;
  c.per_arm.resize(o.presets.size());
  c.brackets.resize(o.presets.size());
  for (int s = 0; s < o.seeds; ++s) {
    const std::uint64_t seed = o.seed + static_cast<std::uint64_t>(s);
    for (std::size_t a = 0; a < o.presets.size(); ++a) {
      c.brackets[a].push_back(capacity(experiment, a, o, w.slo, seed, w.capacity_bisections));
      c.per_arm[a].push_back(c.brackets[a].back().low.value_or(0.0));
    }
    progress << "[sweep] capacity at seed " << seed << ": " << o.presets[0] << " " << number(c.per_arm[0].back())
             << " req/s, " << o.presets[1] << " " << number(c.per_arm[1].back()) << " req/s" << std::endl;
    if (c.per_arm[0].back() > 0) c.gains_pct.push_back(100.0 * (c.per_arm[1].back() / c.per_arm[0].back() - 1.0));
  }
  return c;
}

// Where a sweep's result goes (its directory created).
std::filesystem::path prepare_result_path(const std::filesystem::path& result_path) {
  std::error_code ec;
  if (!result_path.parent_path().empty()) std::filesystem::create_directories(result_path.parent_path(), ec);
  require(!ec, "cannot create directory " + result_path.parent_path().string() + ": " + ec.message());
  return result_path;
}

// Writes the document and its page; the run returned holds both.
PresetAbRun write_sweep(const std::filesystem::path& result_path, const std::filesystem::path& html,
                          nlohmann::json doc) {
  PresetAbRun run;
  run.result_path = result_path;
  write_json_file(result_path, doc);
  reports::write_sweep_html(html, doc);
  run.result = std::move(doc);
  return run;
}

}  // namespace

PresetAbRun run_virtual_sweep(const PresetAbOptions& o, const SweepOptions& w, const std::vector<std::string>& argv,
                                std::ostream& out, std::ostream& progress) {
  validate(o);
  require(o.clock == RunClock::virtual_time, "--sweep and --slo on `encbench run` need --clock virtual (a live server: "
                                "`encbench bench sweep`)");
  require(!w.sweep.values.empty() || !w.slo.empty(), "nothing to do: give --sweep, --slo or both");
  const std::filesystem::path result_path = prepare_result_path(
      o.outputs.result_file.empty() ? o.outputs.result_dir / ("sweep-" + safe_file_component(o.name) + ".json") : o.outputs.result_file);
  VirtualExperiment experiment(o, argv);
  if (!o.serving_model_note.empty()) progress << "[sweep] serving model: " << o.serving_model_note << std::endl;
  progress << "[sweep] virtual clock: " << experiment.description() << std::endl;
  SweepRecord record;
  record.presets = o.presets;
  record.slo = w.slo;
  if (!w.sweep.values.empty()) {
    print_sweep_head(out, o, w);
    for (const double value : w.sweep.values) {
      if (stop_requested(o.wiring.stop_fd)) {
        record.interrupted = true;
        break;
      }
      auto by_arm = experiment.run_all(at_load(o, w.sweep.variable, value), nullptr);
      SweepPoint point{w.sweep.variable, value, {}, point_verdicts(by_arm, o.presets, o.judging), ""};
      for (auto& seeds : by_arm) point.arms.push_back(record_arm(std::move(seeds), w.slo, w.save_detailed));
      print_point_row(out, point);
      progress << "[sweep] " << w.sweep.variable << " " << number(value) << " done" << std::endl;
      record.points.push_back(std::move(point));
    }
  }
  record.brackets = points_brackets(record);
  if (!w.slo.empty() && !record.points.empty()) print_points_capacity(out, o.presets, record);
  if (!w.slo.empty() && !record.interrupted) {
    record.capacity = capacity_search(experiment, o, w, progress);
    print_capacity(out, o, w.slo, *record.capacity);
  }
  const std::filesystem::path html = w.html.empty() ? std::filesystem::path(result_path).replace_extension(".html") : w.html;
  PresetAbRun run = write_sweep(result_path, html, virtual_sweep_json(o, record, experiment.description(), argv));
  progress << "[sweep] wrote " << result_path.string() << " and " << html.string()
           << (record.interrupted ? " (interrupted: the points finished so far)" : "") << std::endl;
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

namespace {

// One load point of a live sweep: bench serve at `value`, its block printed; `interrupted` says
// whether the run was cut short. The first point also says how the prompts were counted (every
// point sends the same dataset).
SweepPoint live_point(const client::BenchConfig& base, const SweepOptions& w, double value, bool first_point,
                      std::ostream& out, std::ostream& progress, bool& interrupted) {
  client::BenchConfig c = base;
  if (w.sweep.variable == "request-rate") c.request_rate = value;
  else c.max_concurrency = static_cast<int>(value);
  c.save_detailed = true;  // per-request arrays for goodput, kept only in this point's memory
  progress << "[sweep] " << w.sweep.variable << " " << number(value) << " against " << client::base_url(c) << std::endl;
  client::BenchResult r = client::run_benchmark(c);
  if (first_point && !r.tokenizer_note.empty()) progress << "[sweep] " << r.tokenizer_note << std::endl;
  client::print_vllm_block(out, c, r);
  SweepPoint point{w.sweep.variable, value, {}, {}, over_saturation(c, r)};
  interrupted = r.run.interrupted;
  ArmSeed arm;
  arm.config = std::move(c);
  arm.result = std::move(r);
  std::vector<ArmSeed> seeds;
  seeds.push_back(std::move(arm));
  point.arms.push_back(record_arm(std::move(seeds), w.slo, w.save_detailed));
  return point;
}

// Between the last passing and the first failing request rate, bisect (the record's probes).
void bisect_capacity(const client::BenchConfig& base, const SweepOptions& w, SweepRecord& record, std::ostream& out,
                     std::ostream& progress) {
  double good = record.highest_passing, bad = record.lowest_failing;
  for (int i = 0; i < w.capacity_bisections; ++i) {
    const double mid = 0.5 * (good + bad);
    bool was_interrupted = false;
    SweepPoint point = live_point(base, w, mid, false, out, progress, was_interrupted);
    const bool pass = meets_slo(w.slo, point.arms[0]);
    record.probes.push_back({mid, pass, std::move(point)});
    (pass ? good : bad) = mid;
    if (was_interrupted) {
      record.interrupted = true;
      break;
    }
  }
  record.highest_passing = good;
  record.lowest_failing = bad;
}

}  // namespace

PresetAbRun run_live_sweep(const client::BenchConfig& base, const SweepOptions& w, const std::filesystem::path& result_path,
                             const std::vector<std::string>& argv, std::ostream& out, std::ostream& progress) {
  require(!w.sweep.values.empty(), "bench sweep needs --sweep");
  prepare_result_path(result_path);
  const std::string label = base.label.empty() ? "server" : base.label;
  SweepRecord record;
  record.presets = {label};
  record.slo = w.slo;
  for (const double value : w.sweep.values) {
    bool was_interrupted = false;
    SweepPoint point = live_point(base, w, value, record.points.empty(), out, progress, was_interrupted);
    const bool pass = !w.slo.empty() && meets_slo(w.slo, point.arms[0]);
    if (!w.slo.empty() && record.lowest_failing == 0) {
      if (pass) record.highest_passing = value;
      else record.lowest_failing = value;
    }
    const std::string saturated = point.over_saturated;
    record.points.push_back(std::move(point));
    if (was_interrupted) {
      record.interrupted = true;
      break;
    }
    if (!saturated.empty()) {
      record.stopped_early = "over-saturated at " + w.sweep.variable + " " + number(value) + ": " + saturated;
      out << "\n" << record.stopped_early << "; the sweep stops here (higher loads would measure the queue)\n";
      break;
    }
  }
  if (!record.interrupted && !w.slo.empty() && w.sweep.variable == "request-rate" && record.highest_passing > 0 &&
      record.lowest_failing > record.highest_passing && std::isfinite(record.lowest_failing))
    bisect_capacity(base, w, record, out, progress);
  record.brackets = points_brackets(record);
  print_live_summary(out, label, w.sweep.variable, record);
  const auto html = std::filesystem::path(result_path).replace_extension(".html");
  PresetAbRun run = write_sweep(result_path, html, live_sweep_json(client::base_url(base), record, argv));
  progress << "[sweep] wrote " << result_path.string() << " and " << html.string() << std::endl;
  return run;
}

}  // namespace encbench::scenario
