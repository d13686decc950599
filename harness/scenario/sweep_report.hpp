#pragma once
// The sweep runners' record and its reporters: run_virtual_sweep and run_live_sweep (sweep.cpp)
// run the load points and the capacity search and record what they measured; these turn the
// record into the terminal table and the result document (encbench-sweep/1), which
// `encbench report` and the sweep page (reports/sweep_html.cpp) draw.
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/scenario/sweep.hpp"
#include "harness/scenario/virtual_experiment.hpp"
#include "reports/capacity_bracket.hpp"

namespace encbench::scenario {

// One arm at one load point: its seeds (vLLM's metrics and the engine counters; the per-request
// samples dropped unless the sweep keeps them, see keep_requests) and, with an SLO, each seed's
// goodput, measured before the samples were dropped.
struct SweepArmPoint {
  std::vector<ArmSeed> seeds;
  std::vector<double> goodput;  // req/s per seed; empty without an SLO
  bool keep_requests = false;   // seeds keep their per-request arrays (--save-detailed)
};

// B against A at one load point (pooled seeds), for the metrics the table and the page show.
struct PointVerdict {
  std::string metric;  // vLLM's key: mean_ttft_ms, p99_ttft_ms, mean_tpot_ms, request_throughput
  double change_pct = 0;
  std::string verdict;
  std::optional<double> p_value;
  std::string change_text;     // the judgement's change and interval, "-1.30 % [-4.10, +1.50]"
  std::optional<double> mde;   // relative, of the verdict's own test
};

struct SweepPoint {
  std::string variable;  // request-rate | max-concurrency
  double value = 0;      // may be inf (request-rate)
  std::vector<SweepArmPoint> arms;
  std::vector<PointVerdict> verdicts;  // empty for one arm (a live sweep)
  std::string over_saturated;          // live: why the point is over-saturated ("" when it is not)
};

// Capacity at an SLO (virtual): per arm, each seed's highest passing request rate, in seed order
// (0 when even the lowest rate tried failed; the search's ceiling when none failed), and the
// bracket its search ended with (brackets[arm][seed]: bracketed, or a bound at either end).
struct CapacityRecord {
  std::vector<std::vector<double>> per_arm;
  std::vector<std::vector<reports::CapacityBracket>> brackets;
  std::vector<double> gains_pct;  // B over A per seed where A's capacity > 0 (paired by seed)
};

// A live sweep's bisection between the last passing and the first failing rate.
struct CapacityProbe {
  double value = 0;
  bool meets_slo = false;
  SweepPoint point;
};

struct SweepRecord {
  std::vector<std::string> presets;  // one per arm (live: the server's label)
  std::vector<SloTerm> slo;
  std::vector<SweepPoint> points;
  bool interrupted = false;
  std::optional<CapacityRecord> capacity;  // virtual, with an SLO, not interrupted
  // Live only.
  std::string stopped_early;               // "over-saturated at ...: why"
  std::vector<CapacityProbe> probes;
  // The highest passing load below the first failing point of the sweep (after the bisection:
  // the highest passing probe) and that failing load; 0: none. The bisection runs between them.
  double highest_passing = 0, lowest_failing = 0;
  // With an SLO, per arm: the capacity as the points (and a live sweep's probes) bracket it.
  std::vector<reports::CapacityBracket> brackets;
};

// Drops a seed's per-request samples (what grows with requests), keeping vLLM's summaries.
void drop_requests(ArmSeed& seed);

// Terminal reporters of the virtual sweep: the table's head, one row per point as it finishes,
// and the capacities with their 95 % intervals over seeds and B's gain.
void print_sweep_head(std::ostream& out, const PresetAbOptions& options, const SweepOptions& sweep);
void print_point_row(std::ostream& out, const SweepPoint& point);
void print_capacity(std::ostream& out, const PresetAbOptions& options, const std::vector<SloTerm>& slo,
                    const CapacityRecord& capacity);
// Each arm's capacity as the sweep's points bracket it (virtual, with --sweep and --slo).
void print_points_capacity(std::ostream& out, const std::vector<std::string>& presets, const SweepRecord& record);
// The live sweep's summary: one line per point, and the capacity bracketed or bounded.
void print_live_summary(std::ostream& out, const std::string& label, const std::string& variable,
                        const SweepRecord& record);

// The result documents (encbench-sweep/1).
nlohmann::json virtual_sweep_json(const PresetAbOptions& options, const SweepRecord& record,
                                   const std::string& model_description, const std::vector<std::string>& argv);
nlohmann::json live_sweep_json(const std::string& target, const SweepRecord& record,
                               const std::vector<std::string>& argv);
// One point as the document holds it.
nlohmann::json point_json(const SweepPoint& point, const std::vector<SloTerm>& slo);

}  // namespace encbench::scenario
