#pragma once
// The records of `encbench encode` and `encbench ab` and their reporters: the runners
// (encode_run.cpp) resolve, run the forwards and verify; these turn what they recorded (per
// configuration: per-forward timings, device busy/idle, gaps, accuracy) into the terminal text
// and the result documents (encbench-encode/1, encbench-ab/1; docs/reports.md has their layout).
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/judgement/judgement.hpp"
#include "harness/core/stats.hpp"
#include "harness/encoder/encode_run.hpp"

namespace encbench::encoder {

// What `encbench encode` measured: one configuration, or every valid toggle combination (--sweep).
struct EncodeRecord {
  device::DeviceInfo info;
  std::vector<ConfigRun> runs;
  bool sweep = false;
};

// One metric of the A/B: each side's per-forward samples, their medians and range, and the
// judgement's verdict with the forwards as repetitions.
struct SideMetric {
  std::string name, key, unit;  // "Forward time", "forward_ms", "ms"
  int precision = 3;            // digits the table shows
  double a_median = 0, b_median = 0;
  stats::Summary a, b;
  double p_value = 1;           // 0 or 1 for constant samples (different or equal)
  bool constant = false;        // both sides' samples constant: judged by the threshold alone
  bool significant = false;     // p < alpha, or constant and different
  double change_pct = 0;        // (B - A) / |A| of the medians, 0 when A's median is 0
  judgement::Judgement judgement;  // the verdict: forwards as repetitions (judgement.hpp)
};

// What `encbench ab` measured: both sides (forwards interleaved ABAB...), their accuracy, and the
// comparison; `failure` when a side ran out of device memory (then no forwards and no comparison).
struct AbRecord {
  device::DeviceInfo info;
  ConfigRun a, b;
  std::vector<SideMetric> metrics;
  judgement::Settings judging;
  std::string failure;
};

// The comparison of the two sides' forwards, one row per metric the A/B reports.
std::vector<SideMetric> compare_sides(const ConfigRun& a, const ConfigRun& b, const judgement::Settings& settings);

// The "encbench-encode"/1 body (without the envelope) of one configuration.
nlohmann::json encode_body(const ResolvedRun& resolved, const RunOptions& options,
                           const device::DeviceInfo& info, const ConfigRun& run);
// The human summary of one configuration.
std::string encode_summary(const ResolvedRun& resolved, const RunOptions& options,
                           const device::DeviceInfo& info, const ConfigRun& run);

// `encode --sweep`'s table: its head, then one row per configuration as it finishes.
void print_encode_sweep_head(std::ostream& out, const ResolvedRun& resolved, const RunOptions& options,
                             const device::DeviceInfo& info, std::size_t configurations);
void print_encode_sweep_row(std::ostream& out, const ConfigRun& run);
// The encbench-encode/1 document of a run or a sweep.
nlohmann::json encode_json(const ResolvedRun& resolved, const RunOptions& options, const EncodeRecord& record,
                           const std::vector<std::string>& argv);

// The A/B report (what ran, both sides, the table, accuracy failures), or the failing side.
void print_ab(std::ostream& out, const ResolvedRun& resolved, const RunOptions& options, const AbRecord& record);
// The encbench-ab/1 document.
nlohmann::json ab_json(const ResolvedRun& resolved, const RunOptions& options, const AbRecord& record,
                       const std::vector<std::string>& argv);

}  // namespace encbench::encoder
