#pragma once
// Run history in SQLite: each recorded run with git sha, machine context, its identity (kind,
// model, device, dataset, scenario = the "series") and its metric values. A baseline reset marks
// where a series' accepted state starts again (after an intended performance change).
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "reports/result.hpp"

struct sqlite3;

namespace encbench::reports {

// $XDG_DATA_HOME/encbench/history.sqlite, else ~/.local/share/encbench/history.sqlite.
std::filesystem::path default_history_path();

// kind|model|device|dataset|scenario: runs of one series may be compared with each other.
std::string series_key(const RunResult& run);

struct HistoryRun {
  std::int64_t id = 0;
  std::string recorded_utc, created_utc, git_sha, series, source, hostname, gate_status;
  RunResult run;  // identity and metric values (no samples)
  bool before_reset = false;  // recorded before the latest baseline reset of its series
};

struct TrendPoint {
  std::int64_t run_id = 0;
  std::string recorded_utc, git_sha, series;
  double value = 0;
  bool before_reset = false;
};

class History {
 public:
  explicit History(const std::filesystem::path& path);  // creates file and tables as needed
  ~History();
  History(const History&) = delete;
  History& operator=(const History&) = delete;

  // Records a run's point values; returns its id. `git_sha` overrides the result's own.
  // `gate_status` is "pass" / "fail" when recorded by compare: runs that failed their gate never
  // become part of a history:N baseline (a regression must not drag the baseline with it).
  std::int64_t record(const RunResult& run, const std::string& git_sha = "",
                      const std::string& gate_status = "");
  // Most recent runs first when listing; `series` filters with a glob ('*' all).
  std::vector<HistoryRun> list(const std::string& series_glob = "*", std::size_t last_n = 0) const;
  // The last N runs of `run`'s series since its latest baseline reset, oldest first.
  std::vector<RunResult> baseline_for(const RunResult& run, std::size_t last_n) const;
  // Marks a reset for every series matching the glob; returns how many series it covered.
  std::size_t reset_baseline(const std::string& series_glob, const std::string& reason);
  std::vector<TrendPoint> trend(const std::string& metric, const std::string& series_glob = "*") const;
  // The metric key of `name_or_label`: itself when recorded under that key, else the key whose
  // label (as `compare` prints it, "Mean TTFT (ms)") matches; nullopt when neither.
  std::optional<std::string> resolve_metric(const std::string& name_or_label) const;
  std::vector<std::string> metric_names() const;  // every recorded numeric metric key, sorted

  const std::filesystem::path& path() const { return path_; }

 private:
  std::int64_t reset_point(const std::string& series) const;  // runs with id <= this are before
  std::filesystem::path path_;
  sqlite3* db_ = nullptr;
};

}  // namespace encbench::reports
