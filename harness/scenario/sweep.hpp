#pragma once
// Load sweeps and capacity at an SLO, on the virtual clock (`encbench run --sweep`, `--slo`):
// both arms at every load point (several seeds each), the B-vs-A change per point with its
// verdict, and each arm's highest request rate that meets the SLO (bracket, then bisect, per
// seed; the seeds' spread gives the confidence interval), with the gain of B over A.
// Memory grows with the points kept, not with requests: a point keeps its summaries only
// (unless save_detailed). The runners fill a SweepRecord; sweep_report.hpp prints and writes it.
#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/client/bench.hpp"
#include "harness/scenario/preset_ab.hpp"

namespace encbench::scenario {

struct SweepSpec {
  std::string variable;        // "request-rate" | "max-concurrency"
  std::vector<double> values;  // ascending, > 0 (inf allowed last for request-rate)
};
// "request-rate=1,2,4,inf" | "max-concurrency=1,8,64". Throws InvalidInput: empty, unsorted,
// <= 0, unknown variable, inf for a concurrency.
SweepSpec parse_sweep(const std::string& text);

// "ttft_p99<=2000,tpot_p99<=300": metric_statistic<=ms. Metrics ttft, tpot, itl, e2el; statistics
// mean, median, p50, p90, p95, p99. Throws InvalidInput naming the term and the accepted ones.
struct SloTerm {
  std::string metric;     // ttft | tpot | itl | e2el
  std::string statistic;  // mean | median | p50 | p90 | p95 | p99
  double limit_ms = 0;
  std::string key() const;  // vLLM's result key: "p99_ttft_ms", "mean_tpot_ms"
};
std::vector<SloTerm> parse_slo(const std::string& text);
bool meets_slo(const std::vector<SloTerm>& slo, const nlohmann::json& serving);
std::string describe(const std::vector<SloTerm>& slo);

struct SweepOptions {
  SweepSpec sweep;                 // empty values: no sweep (capacity search only)
  std::vector<SloTerm> slo;        // empty: no capacity search
  int capacity_bisections = 7;     // after bracketing
  std::filesystem::path html;      // "" = <result>.html
  // Keep each point's per-request arrays (per arm and seed: vLLM's --save-detailed keys) in the
  // JSON. Off, a point keeps its summaries only and memory grows with points, not requests.
  bool save_detailed = false;
};

// `encbench bench sweep`: the serving client (bench serve) at every load point against one live
// server `base` points at; stops at the first over-saturated point (achieved < 95 % of the offered
// rate, or requests in flight still growing at the end of the sending window). With an SLO: each
// point's goodput and pass/fail, then `capacity_bisections` runs between the last passing and the
// first failing request rate. Writes `result_path` (encbench-sweep/1) and its HTML page.
PresetAbRun run_live_sweep(const client::BenchConfig& base, const SweepOptions& sweep,
                             const std::filesystem::path& result_path, const std::vector<std::string>& argv,
                             std::ostream& out, std::ostream& progress);

PresetAbRun run_virtual_sweep(const PresetAbOptions& options, const SweepOptions& sweep,
                                const std::vector<std::string>& argv, std::ostream& out, std::ostream& progress);

}  // namespace encbench::scenario
