#pragma once
// `encbench bench sweep serve`: which server configuration wins, at which load (docs/sweep.md).
//
// Configurations (vLLM's --serve-params combinations applied to --serve-cmd) x loads (its
// --bench-params combinations applied to --bench-cmd, each a bench serve run) x rounds. Every
// cell (configuration, load, round) runs on a freshly started server through bench ab's round
// (live_ab.hpp: start, readiness, warm-ups, /metrics, stop, logs, faults). The cells run in a
// randomised balanced order: each block of rounds holds every (configuration, load) once, in a
// seeded random order, and the next block runs it backwards, so a drift of the machine that is
// linear in time falls on every configuration alike (vLLM's order, one configuration after
// another, is `sequential`, kept for comparison). A finished cell is written at once
// (cells/r<R>-c<C>-l<L>.json), so --resume and Ctrl-C keep it; a cell whose server fails is
// recorded with its configuration, parameters and round, and the others go on.
// The runner returns records; config_sweep_report.hpp judges and prints them.
#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/client/bench.hpp"
#include "harness/scenario/live_ab.hpp"

namespace encbench::scenario {

struct SweepConfiguration {
  std::string name;               // the --serve-params combination's name ("" params: "default")
  nlohmann::ordered_json params;  // as written in the file
  std::string command;            // the server's /bin/sh command line, with {port}
};

struct SweepLoad {
  std::string name;               // the --bench-params combination's name
  nlohmann::ordered_json params;
  client::BenchConfig bench;      // bench serve's configuration of this load's runs
  double load = 0;                // its request rate (inf allowed) or concurrency
};

struct SweepCell {
  std::size_t configuration = 0, load = 0;
  int round = 1;
};

struct ConfigSweepOptions {
  std::vector<SweepConfiguration> configurations;
  std::vector<SweepLoad> loads;
  std::vector<std::vector<bool>> linked;  // [configuration][load]: runs (--link-vars); empty = all
  int rounds = 3;                          // --num-runs
  std::uint64_t order_seed = 0;
  bool sequential = false;                 // vLLM's order instead of the balanced one
  std::filesystem::path out_dir;           // sweep.json, sweep.html, cells/, round-<r>-<cell>/
  bool resume = false;
  std::string after_bench_cmd;             // /bin/sh command after each measured run ({port}, {round_dir})
  double ready_timeout_s = 300, stop_grace_s = 30;
  int stop_fd = -1;
  std::function<void(const std::string& cell, int round, pid_t pgid)> on_ready;  // tests
};

// The order the cells run in. Balanced: block r (every linked (configuration, load) once) in a
// seeded shuffled order for odd r, the previous block reversed for even r. Sequential:
// configuration by configuration, load by load, round by round.
std::vector<SweepCell> plan_sweep_order(const ConfigSweepOptions& options);

struct CellOutcome {
  SweepCell cell;
  std::size_t position = 0;           // index in the order
  bool resumed = false;               // read back from a previous run's cell file
  nlohmann::json serving, server;     // bench serve's result keys; the server's start/stop record
  std::vector<std::string> invalid;   // guard failures (failed requests, client lag)
  std::string failure;                // "" = finished
};

struct ConfigSweepRecord {
  std::vector<SweepCell> order;
  std::vector<CellOutcome> outcomes;  // in order (resumed ones included); failed cells too
  bool interrupted = false;
  double wall_s = 0;                  // the run, start to end (resumed cells not included)
};

// "c<C>-l<L>" (1-based), the cell's directory and file name part.
std::string cell_label(const SweepCell& cell);

// Throws InvalidInput for bad options (before anything starts): no configuration or load, rounds
// out of 1..1000, an output directory that exists without --resume (or is missing with it), a
// resumed directory whose plan differs.
void validate(const ConfigSweepOptions& options);

ConfigSweepRecord run_config_sweep(const ConfigSweepOptions& options, std::ostream& progress);

}  // namespace encbench::scenario
