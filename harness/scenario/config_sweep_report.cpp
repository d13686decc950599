#include "harness/scenario/config_sweep_report.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <ostream>

#include "harness/core/error.hpp"
#include "harness/core/number_format.hpp"
#include "harness/core/result_json.hpp"
#include "harness/core/stats.hpp"
#include "reports/capacity_bracket.hpp"

namespace encbench::scenario {
namespace {

using numbers::fixed;

// The metrics of each point's curve: bench serve's result keys (vLLM's), means over rounds.
const std::vector<std::string>& curve_metrics() {
  static const std::vector<std::string> keys = {"output_throughput", "request_throughput", "mean_ttft_ms",
                                                "median_ttft_ms",   "p99_ttft_ms",        "mean_tpot_ms",
                                                "p99_tpot_ms",      "mean_itl_ms",        "mean_e2el_ms",
                                                "p99_e2el_ms"};
  return keys;
}

bool higher_is_better(const std::string& key) { return key.find("throughput") != std::string::npos; }

judgement::StatisticKind statistic_of(const std::string& key) {
  judgement::StatisticKind s;
  if (key.rfind("mean_", 0) == 0) s.kind = judgement::StatisticKind::Kind::mean;
  else if (key.rfind("median_", 0) == 0) s.kind = judgement::StatisticKind::Kind::median;
  else if (key.size() > 1 && key[0] == 'p' && std::isdigit(static_cast<unsigned char>(key[1]))) {
    s.kind = judgement::StatisticKind::Kind::percentile;
    s.q = std::stod(key.substr(1, key.find('_') - 1));
  }
  return s;
}

double mean_of(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return v.empty() ? 0.0 : sum / static_cast<double>(v.size());
}

std::vector<double> json_numbers(const nlohmann::json& j) {
  std::vector<double> out;
  for (const auto& v : j)
    if (v.is_number()) out.push_back(v.get<double>());
  return out;
}

// vLLM's plot_pareto: devices = tensor x pipeline x data parallel sizes of the serve parameters.
double device_count(const nlohmann::ordered_json& params) {
  double devices = 1;
  for (const char* key : {"tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size"}) {
    std::string dashed = key;
    std::replace(dashed.begin(), dashed.end(), '_', '-');
    for (const std::string& k : {std::string(key), dashed})
      if (params.contains(k) && params[k].is_number() && params[k].get<double>() > 0) devices *= params[k].get<double>();
  }
  return devices;
}

// vLLM's plot_pareto: users = the load's concurrency, else its request rate, else the observed
// peak of requests in flight.
double user_count(const SweepLoad& load, const nlohmann::json& serving) {
  if (load.bench.max_concurrency > 0) return load.bench.max_concurrency;
  if (std::isfinite(load.bench.request_rate) && load.bench.request_rate > 0) return load.bench.request_rate;
  return serving.value("max_concurrent_requests", 0.0);
}

struct PointRounds {
  std::vector<const CellOutcome*> finished;
};

// [configuration][load] -> the finished cells.
std::vector<std::vector<PointRounds>> group_cells(const ConfigSweepOptions& o, const ConfigSweepRecord& r) {
  std::vector<std::vector<PointRounds>> grid(o.configurations.size(), std::vector<PointRounds>(o.loads.size()));
  for (const auto& cell : r.outcomes)
    if (cell.failure.empty()) grid[cell.cell.configuration][cell.cell.load].finished.push_back(&cell);
  return grid;
}

judgement::Evidence evidence(const PointRounds& p, const std::string& key) {
  judgement::Evidence e;
  for (const auto* cell : p.finished)
    if (cell->serving.contains(key) && cell->serving[key].is_number()) e.rounds.push_back(cell->serving[key].get<double>());
  e.value = mean_of(e.rounds);
  if (!p.finished.empty()) e.requests_per_round = p.finished.front()->serving.value("completed", std::size_t{0});
  // One round: the requests themselves (TTFT is the one vLLM keeps per request, in seconds).
  if (p.finished.size() == 1 && key.find("ttft") != std::string::npos)
    for (double s : json_numbers(p.finished.front()->serving.value("ttfts", nlohmann::json::array())))
      e.requests.push_back(s * 1e3);
  return e;
}

nlohmann::json point_json(const ConfigSweepOptions& o, std::size_t c, std::size_t l, const PointRounds& p,
                          const ConfigSweepJudging& judging) {
  nlohmann::json j = {{"load", o.loads[l].name}, {"load_value", o.loads[l].load}, {"rounds", p.finished.size()}};
  for (const auto& key : curve_metrics()) {
    const auto e = evidence(p, key);
    j[key] = e.rounds.empty() ? nlohmann::json(nullptr) : nlohmann::json(e.value);
  }
  nlohmann::json meets = nlohmann::json::array(), metrics = nlohmann::json::array(), users = nlohmann::json::array();
  for (const auto* cell : p.finished) {
    if (!judging.slo.empty()) meets.push_back(meets_slo(judging.slo, cell->serving) && cell->invalid.empty());
    metrics.push_back(cell->serving.value("server_metrics_summary", nlohmann::json::object()));
    users.push_back(user_count(o.loads[l], cell->serving));
  }
  j["meets_slo"] = meets;
  j["server_metrics"] = metrics;  // /metrics per round
  const double throughput = j["output_throughput"].is_number() ? j["output_throughput"].get<double>() : 0.0;
  const double users_mean = mean_of(json_numbers(users));
  j["tokens_per_device"] = throughput / device_count(o.configurations[c].params);
  j["tokens_per_user"] = users_mean > 0 ? nlohmann::json(throughput / users_mean) : nlohmann::json(nullptr);
  return j;
}

nlohmann::json startup_json(const std::vector<PointRounds>& points) {
  std::vector<double> ready, first;
  for (const auto& p : points)
    for (const auto* cell : p.finished) {
      if (cell->server.contains("ready_ms")) ready.push_back(cell->server["ready_ms"].get<double>());
      if (cell->server.contains("first_token_ms")) first.push_back(cell->server["first_token_ms"].get<double>());
    }
  auto median = [](std::vector<double> v) { return v.empty() ? nlohmann::json(nullptr) : nlohmann::json(stats::median(v)); };
  return {{"ready_ms", ready}, {"first_token_ms", first}, {"ready_ms_median", median(ready)},
          {"first_token_ms_median", median(first)}};
}

nlohmann::json configuration_json(const ConfigSweepOptions& o, std::size_t c, const std::vector<PointRounds>& points,
                                  const ConfigSweepJudging& judging, const std::string& variable) {
  const auto& conf = o.configurations[c];
  nlohmann::json j = {{"name", conf.name}, {"params", nlohmann::json::parse(conf.params.dump())}, {"command", conf.command},
                      {"devices", device_count(conf.params)}};
  j["points"] = nlohmann::json::array();
  std::vector<reports::SloOutcome> outcomes;
  for (std::size_t l = 0; l < o.loads.size(); ++l) {
    if (points[l].finished.empty()) continue;
    j["points"].push_back(point_json(o, c, l, points[l], judging));
    for (const auto& m : j["points"].back()["meets_slo"]) outcomes.push_back({o.loads[l].load, m.get<bool>()});
  }
  j["startup"] = startup_json(points);
  if (!judging.slo.empty()) {
    const auto bracket = reports::bracket_capacity(outcomes);
    j["capacity"] = reports::to_json(bracket);
    j["capacity_text"] = reports::describe_bracket(bracket, reports::load_unit(variable), "add a higher load");
  }
  return j;
}

// At one load: the best configuration by the ranking metric, every other judged against it.
nlohmann::json load_verdicts(const ConfigSweepOptions& o, std::size_t l, const std::vector<std::vector<PointRounds>>& grid,
                             const ConfigSweepJudging& judging) {
  const std::string& key = judging.rank_metric;
  const bool up = higher_is_better(key);
  nlohmann::json j = {{"load", o.loads[l].name}, {"load_value", o.loads[l].load}, {"best", nullptr}, {"winner", nullptr}};
  std::optional<std::size_t> best;
  for (std::size_t c = 0; c < o.configurations.size(); ++c) {
    const auto e = evidence(grid[c][l], key);
    if (e.rounds.empty()) continue;
    if (!best || (up ? e.value > evidence(grid[*best][l], key).value : e.value < evidence(grid[*best][l], key).value)) best = c;
  }
  j["verdicts"] = nlohmann::json::array();
  if (!best) return j;
  j["best"] = o.configurations[*best].name;
  const auto best_evidence = evidence(grid[*best][l], key);
  bool every_other_worse = true;
  for (std::size_t c = 0; c < o.configurations.size(); ++c) {
    if (c == *best || grid[c][l].finished.empty()) continue;
    const auto jd = judgement::judge(best_evidence, evidence(grid[c][l], key), statistic_of(key), up, judging.settings,
                                     judging.design);
    every_other_worse = every_other_worse && jd.verdict == judgement::Verdict::slower;
    j["verdicts"].push_back({{"configuration", o.configurations[c].name}, {"verdict", judgement::to_string(jd.verdict)},
                             {"change", judgement::format_change(jd)}, {"value", jd.value_b}, {"reason", jd.reason}});
  }
  j["best_value"] = best_evidence.value;
  if (every_other_worse) j["winner"] = o.configurations[*best].name;
  return j;
}

// Points not dominated by another (both coordinates at least as good, one better); `x_up`/`y_up`:
// larger is better.
void mark_front(nlohmann::json& points, const char* x, const char* y, bool x_up, bool y_up) {
  auto better_or_equal = [](double a, double b, bool up) { return up ? a >= b : a <= b; };
  for (auto& p : points) {
    p["on_front"] = p[x].is_number() && p[y].is_number();
    if (!p["on_front"].get<bool>()) continue;
    const double px = p[x].get<double>(), py = p[y].get<double>();
    for (const auto& q : points) {
      if (!q[x].is_number() || !q[y].is_number()) continue;
      const double qx = q[x].get<double>(), qy = q[y].get<double>();
      if (better_or_equal(qx, px, x_up) && better_or_equal(qy, py, y_up) && (qx != px || qy != py)) p["on_front"] = false;
    }
  }
}

nlohmann::json pareto_fronts(const nlohmann::json& configurations) {
  nlohmann::json throughput = nlohmann::json::array(), capacity = nlohmann::json::array();
  for (const auto& c : configurations) {
    for (const auto& p : c["points"])
      throughput.push_back({{"configuration", c["name"]}, {"load", p["load"]}, {"tokens_per_device", p["tokens_per_device"]},
                            {"tokens_per_user", p["tokens_per_user"]}});
    if (c.contains("capacity") && !c["points"].empty()) {
      const auto& cap = c["capacity"];
      // The capacity's lower end: what the configuration is shown to carry.
      capacity.push_back({{"configuration", c["name"]}, {"capacity", cap["low"].is_number() ? cap["low"] : nlohmann::json(nullptr)},
                          {"light_load_ttft_ms", c["points"][0]["mean_ttft_ms"]}});
    }
  }
  mark_front(throughput, "tokens_per_user", "tokens_per_device", true, true);
  mark_front(capacity, "capacity", "light_load_ttft_ms", true, false);
  return {{"throughput", throughput}, {"capacity", capacity}};
}

// The run's time against the sum of its rounds: what the servers' starts and stops, warm-ups
// and the sweep itself cost beyond the measured runs.
nlohmann::json timing_json(const ConfigSweepRecord& r) {
  double rounds_ms = 0, measured_s = 0;
  std::size_t ran = 0, resumed = 0;
  for (const auto& cell : r.outcomes) {
    resumed += cell.resumed ? 1 : 0;
    if (cell.resumed || !cell.failure.empty()) continue;
    ++ran;
    rounds_ms += cell.server.value("round_wall_ms", 0.0);
    measured_s += cell.serving.value("duration", 0.0);
  }
  return {{"wall_s", r.wall_s}, {"cells_run", ran}, {"cells_resumed", resumed}, {"rounds_wall_s", rounds_ms / 1e3},
          {"measured_s", measured_s},
          {"overhead_s", r.wall_s - measured_s},
          {"overhead_fraction", r.wall_s > 0 ? (r.wall_s - measured_s) / r.wall_s : 0.0}};
}

}  // namespace

void validate_rank_metric(const std::string& key) {
  const auto& keys = curve_metrics();
  std::string known;
  for (const auto& k : keys) known += (known.empty() ? "" : ", ") + k;
  require(std::find(keys.begin(), keys.end(), key) != keys.end(), "--rank-by: unknown metric '" + key + "' (" + known + ")");
}

nlohmann::json analyse_config_sweep(const ConfigSweepOptions& o, const ConfigSweepRecord& r,
                                    const ConfigSweepJudging& judging, const std::vector<std::string>& argv) {
  nlohmann::json j = make_result_envelope("encbench-config-sweep", 1, argv, "live");
  const bool concurrency = std::all_of(o.loads.begin(), o.loads.end(), [](const SweepLoad& l) { return l.bench.max_concurrency > 0; }) &&
                           o.loads.size() > 1 && o.loads.front().bench.max_concurrency != o.loads.back().bench.max_concurrency;
  const std::string variable = concurrency ? "max-concurrency" : "request-rate";
  j["clock"] = "live";
  j["load_variable"] = variable;
  j["rank_metric"] = judging.rank_metric;
  j["higher_is_better"] = higher_is_better(judging.rank_metric);
  j["judgement"] = judgement::describe(judging.settings);
  j["slo"] = judging.slo.empty() ? nlohmann::json(nullptr) : nlohmann::json(describe(judging.slo));
  j["rounds"] = o.rounds;
  j["order_kind"] = o.sequential ? "sequential" : "balanced";
  j["order_seed"] = o.order_seed;
  j["order"] = nlohmann::json::array();
  for (const auto& cell : r.order) j["order"].push_back(nlohmann::json::array({cell.configuration, cell.load, cell.round}));
  const auto grid = group_cells(o, r);
  j["configurations"] = nlohmann::json::array();
  for (std::size_t c = 0; c < o.configurations.size(); ++c)
    j["configurations"].push_back(configuration_json(o, c, grid[c], judging, variable));
  j["loads"] = nlohmann::json::array();
  for (std::size_t l = 0; l < o.loads.size(); ++l) j["loads"].push_back(load_verdicts(o, l, grid, judging));
  j["pareto"] = pareto_fronts(j["configurations"]);
  j["failures"] = nlohmann::json::array();
  for (const auto& cell : r.outcomes)
    if (!cell.failure.empty())
      j["failures"].push_back({{"configuration", o.configurations[cell.cell.configuration].name},
                               {"load", o.loads[cell.cell.load].name}, {"round", cell.cell.round}, {"message", cell.failure}});
  j["timing"] = timing_json(r);
  j["interrupted"] = r.interrupted;
  return j;
}

void print_config_sweep(const nlohmann::json& a, std::ostream& out) {
  out << "\nConfigurations judged at each load by " << a["rank_metric"].get<std::string>() << " ("
      << a["judgement"].get<std::string>() << "; rounds as the unit, " << a["order_kind"].get<std::string>()
      << " order, seed " << a["order_seed"] << ")\n";
  for (const auto& l : a["loads"]) {
    out << "load " << l["load"].get<std::string>() << ": ";
    if (l["best"].is_null()) {
      out << "no finished round\n";
      continue;
    }
    out << "best " << l["best"].get<std::string>() << " (" << fixed(l["best_value"].get<double>(), 2) << "); winner: "
        << (l["winner"].is_null() ? std::string("none (not every other configuration is judged worse)") : l["winner"].get<std::string>())
        << "\n";
    for (const auto& v : l["verdicts"])
      out << "  " << v["configuration"].get<std::string>() << ": " << v["verdict"].get<std::string>() << "  "
          << v["change"].get<std::string>() << "  (" << v["reason"].get<std::string>() << ")\n";
  }
  for (const auto& c : a["configurations"]) {
    out << "configuration " << c["name"].get<std::string>() << ": start-up to ready (median) ";
    out << (c["startup"]["ready_ms_median"].is_number() ? fixed(c["startup"]["ready_ms_median"].get<double>(), 0) + " ms" : "-");
    out << ", to first token " << (c["startup"]["first_token_ms_median"].is_number()
                                        ? fixed(c["startup"]["first_token_ms_median"].get<double>(), 0) + " ms" : "-");
    if (c.contains("capacity_text")) out << "; capacity at the SLO " << c["capacity_text"].get<std::string>();
    out << "\n";
  }
  out << "Pareto front (tokens/s/device vs tokens/s/user):";
  for (const auto& p : a["pareto"]["throughput"])
    if (p["on_front"].get<bool>()) out << " " << p["configuration"].get<std::string>() << "@" << p["load"].get<std::string>();
  out << "\n";
  for (const auto& f : a["failures"]) out << "FAILED " << f["message"].get<std::string>() << "\n";
  const auto& t = a["timing"];
  if (!t.contains("cells_run")) {  // virtual time: what the model cost to run
    out << "time: " << fixed(t["wall_s"].get<double>(), 1) << " s wall for " << a["configurations"].size()
        << " configurations x " << a["loads"].size() << " loads x " << a["rounds"] << " seeds ("
        << fixed(t["mean_seconds_per_configuration"].get<double>(), 2) << " s per configuration)\n";
    return;
  }
  if (t["cells_run"].get<int>() == 0) {
    out << "time: no round run here (" << t["cells_resumed"] << " resumed from an earlier run)\n";
    return;
  }
  out << "time: " << fixed(t["wall_s"].get<double>(), 1) << " s for " << t["cells_run"] << " rounds; measured runs "
      << fixed(t["measured_s"].get<double>(), 1) << " s, rounds (start to stop) " << fixed(t["rounds_wall_s"].get<double>(), 1)
      << " s; overhead " << fixed(100 * t["overhead_fraction"].get<double>(), 1) << " %\n";
}

}  // namespace encbench::scenario
