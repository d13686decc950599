#include "harness/scenario/virtual_grid.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <map>
#include <optional>
#include <ostream>
#include <set>
#include <sstream>

#include "harness/client/bench.hpp"
#include "harness/core/error.hpp"
#include "harness/core/result_json.hpp"
#include "harness/encoder/toggles.hpp"
#include "harness/scenario/virtual_experiment.hpp"

namespace encbench::scenario {
namespace {

const std::set<std::string>& toggle_keys() {
  static const std::set<std::string> keys = {"seq-lens", "scale", "pad-decision", "pad-method", "out-buffer", "kernel"};
  return keys;
}
const std::set<std::string>& serving_keys() {
  static const std::set<std::string> keys = {"max-num-batched-tokens", "max-num-seqs"};
  return keys;
}

std::string trim(std::string s) {
  s.erase(0, s.find_first_not_of(" \t"));
  s.erase(s.find_last_not_of(" \t") + 1);
  return s;
}

// One combination of the axes' values: (key, value) in axis order.
using Combination = std::vector<std::pair<std::string, std::string>>;

std::vector<Combination> cartesian(const std::vector<GridAxis>& axes) {
  std::vector<Combination> out{{}};
  for (const auto& axis : axes) {
    std::vector<Combination> next;
    for (const auto& partial : out)
      for (const auto& value : axis.values) {
        Combination c = partial;
        c.emplace_back(axis.key, value);
        next.push_back(std::move(c));
      }
    out = std::move(next);
  }
  return out;
}

struct GridConfiguration {
  std::string preset_spec;                   // "pr7104+seq-lens=d2h-per-layer+scale=init"
  std::int64_t max_num_batched_tokens = 0;
  int max_num_seqs = 0;
  SweepConfiguration description;
};

std::int64_t parse_integer(const std::string& key, const std::string& value) {
  std::size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(value, &used);
  } catch (...) {
    used = 0;
  }
  require(used == value.size() && v > 0, "--grid " + key + ": expected a positive integer, got '" + value + "'");
  return v;
}

// The configuration of one combination; nullopt (with the reason in `skipped`) when the toggles
// forbid it.
std::optional<GridConfiguration> configuration_of(const PresetAbOptions& base, const Combination& combo,
                                                  std::vector<std::string>& skipped) {
  GridConfiguration g;
  g.max_num_batched_tokens = base.max_num_batched_tokens;
  g.max_num_seqs = base.max_num_seqs;
  std::string preset = base.presets.back(), toggles;
  nlohmann::ordered_json params = nlohmann::ordered_json::object();
  std::string name;
  for (const auto& [key, value] : combo) {
    params[key] = value;
    name += (name.empty() ? "" : " ") + key + "=" + value;
    if (key == "preset") preset = value;
    else if (key == "max-num-batched-tokens") g.max_num_batched_tokens = parse_integer(key, value);
    else if (key == "max-num-seqs") g.max_num_seqs = static_cast<int>(parse_integer(key, value));
    else toggles += "+" + key + "=" + value;
  }
  g.preset_spec = preset + toggles;
  try {
    encoder::parse_preset_spec(g.preset_spec);
  } catch (const InvalidInput& e) {
    skipped.push_back(name + ": " + e.what());
    return std::nullopt;
  }
  g.description = {name.empty() ? g.preset_spec : name, params, ""};
  return g;
}

std::vector<SweepLoad> grid_loads(const PresetAbOptions& base, const SweepSpec& loads) {
  std::vector<SweepLoad> out;
  const std::string variable = loads.values.empty() ? "request-rate" : loads.variable;
  const std::vector<double> values = loads.values.empty() ? std::vector<double>{base.request_rate} : loads.values;
  for (double v : values) {
    SweepLoad l;
    const std::string key = variable == "request-rate" ? "request_rate" : "max_concurrency";
    l.name = key + "=" + client::python_float(v);
    l.params = {{key, v}};
    l.bench.request_rate = variable == "request-rate" ? v : base.request_rate;
    l.bench.max_concurrency = variable == "request-rate" ? base.max_concurrency : static_cast<int>(v);
    l.load = v;
    out.push_back(std::move(l));
  }
  return out;
}

PresetAbOptions at_grid_load(const PresetAbOptions& o, const SweepLoad& load) {
  PresetAbOptions at = o;
  at.request_rate = load.bench.request_rate;
  at.max_concurrency = load.bench.max_concurrency;
  return at;
}

// What a worker returns of one cell: bench serve's summary keys and the run's wall time.
struct GridCell {
  nlohmann::json serving;
  double wall_s = 0;
};
using CellResults = std::vector<std::vector<std::vector<std::optional<GridCell>>>>;

// One worker's share (arms w, w + workers, ...) of a serving group at every load and seed. The
// worker builds the whole group's experiment (every preset an arm), so arm a's noise seed is the
// same whatever the number of workers.
nlohmann::json run_share(const PresetAbOptions& o, std::size_t members, const std::vector<SweepLoad>& loads,
                         const std::vector<std::string>& argv, std::size_t w, std::size_t workers) {
  nlohmann::json cells = nlohmann::json::array();
  VirtualExperiment experiment(o, argv);
  for (std::size_t l = 0; l < loads.size(); ++l) {
    if (stop_requested(o.stop_fd)) break;
    const PresetAbOptions at = at_grid_load(o, loads[l]);
    for (int s = 0; s < o.seeds; ++s)
      for (std::size_t a = w; a < members; a += workers) {
        const ArmSeed arm = experiment.run(a, at, o.seed + static_cast<std::uint64_t>(s));
        cells.push_back({{"arm", a}, {"load", l}, {"seed", s}, {"serving", summary_of(serving_json(arm))}, {"wall_s", arm.wall_s}});
      }
  }
  return cells;
}

// Every arm of one serving group, dealt out to `jobs` worker processes (processes, not threads:
// the experiment's parts are not made to run beside each other in one process). Each child writes
// its cells as JSON into `scratch`; an error there is raised here.
void run_group(const PresetAbOptions& o, const std::vector<std::size_t>& members, const std::vector<SweepLoad>& loads,
               const std::vector<std::string>& argv, int jobs, CellResults& results) {
  const std::size_t workers = std::min<std::size_t>(static_cast<std::size_t>(jobs), members.size());
  const auto scratch = std::filesystem::temp_directory_path() / ("encbench-grid-" + std::to_string(::getpid()));
  std::filesystem::create_directories(scratch);
  std::vector<pid_t> children;
  for (std::size_t w = 0; w < workers; ++w) {
    const pid_t pid = workers == 1 ? 0 : ::fork();
    require(pid >= 0, "--grid-jobs: cannot start a worker process");
    if (pid > 0) {
      children.push_back(pid);
      continue;
    }
    nlohmann::json out;
    try {
      out = {{"cells", run_share(o, members.size(), loads, argv, w, workers)}};
    } catch (const std::exception& e) {
      out = {{"error", e.what()}, {"invalid_input", dynamic_cast<const InvalidInput*>(&e) != nullptr}};
    }
    write_json_file(scratch / ("worker-" + std::to_string(w) + ".json"), out);
    if (workers > 1) ::_exit(0);
  }
  for (pid_t child : children) ::waitpid(child, nullptr, 0);
  for (std::size_t w = 0; w < workers; ++w) {
    const auto path = scratch / ("worker-" + std::to_string(w) + ".json");
    std::error_code ec;
    require(std::filesystem::exists(path, ec), "--grid: worker " + std::to_string(w) + " ended without its results");
    const nlohmann::json out = read_json_file(path);
    if (out.contains("error")) {
      if (out["invalid_input"].get<bool>()) throw InvalidInput(out["error"].get<std::string>());
      throw std::runtime_error(out["error"].get<std::string>());
    }
    for (const auto& c : out["cells"])
      results[members[c["arm"].get<std::size_t>()]][c["load"].get<std::size_t>()][c["seed"].get<std::size_t>()] =
          GridCell{c["serving"], c["wall_s"].get<double>()};
  }
  std::filesystem::remove_all(scratch);
}

// The finished cells in (configuration, load, seed) order; a load some worker did not reach
// (interrupted) is left out, and the run marked interrupted.
void collect_cells(const CellResults& results, VirtualGridRun& run) {
  run.seconds_per_configuration.assign(results.size(), 0.0);
  for (std::size_t c = 0; c < results.size(); ++c)
    for (std::size_t l = 0; l < results[c].size(); ++l)
      for (std::size_t s = 0; s < results[c][l].size(); ++s) {
        const auto& arm = results[c][l][s];
        if (!arm) {
          run.record.interrupted = true;
          continue;
        }
        CellOutcome cell;
        cell.cell = {c, l, static_cast<int>(s) + 1};
        cell.position = run.record.outcomes.size();
        cell.serving = arm->serving;
        cell.server = {{"virtual_wall_s", arm->wall_s}};
        run.seconds_per_configuration[c] += arm->wall_s;
        run.record.order.push_back(cell.cell);
        run.record.outcomes.push_back(std::move(cell));
      }
}

}  // namespace

std::vector<GridAxis> parse_grid(const std::string& text) {
  std::vector<GridAxis> axes;
  std::stringstream in(text);
  std::set<std::string> seen;
  for (std::string part; std::getline(in, part, ';');) {
    part = trim(part);
    if (part.empty()) continue;
    const auto eq = part.find('=');
    require(eq != std::string::npos && eq > 0, "--grid expects KEY=V1,V2;KEY=...; got '" + part + "'");
    GridAxis axis{trim(part.substr(0, eq)), {}};
    require(axis.key == "preset" || toggle_keys().count(axis.key) || serving_keys().count(axis.key),
            "--grid: unknown axis '" + axis.key + "' (preset, seq-lens, scale, pad-decision, pad-method, out-buffer, "
            "kernel, max-num-batched-tokens, max-num-seqs)");
    require(seen.insert(axis.key).second, "--grid: axis '" + axis.key + "' given twice");
    std::stringstream values(part.substr(eq + 1));
    for (std::string v; std::getline(values, v, ',');)
      if (!trim(v).empty()) axis.values.push_back(trim(v));
    require(!axis.values.empty(), "--grid: axis '" + axis.key + "' has no values");
    axes.push_back(std::move(axis));
  }
  require(!axes.empty(), "--grid: no axis given");
  return axes;
}

VirtualGridRun run_virtual_grid(const PresetAbOptions& base, const std::vector<GridAxis>& axes, const SweepSpec& loads,
                                const std::vector<std::string>& argv, int jobs, std::ostream& progress) {
  require(base.clock == "virtual", "--grid runs in virtual time: give --clock virtual (live: bench sweep serve)");
  require(jobs >= 1 && jobs <= 256, "--grid-jobs must be 1..256");
  VirtualGridRun run;
  std::vector<GridConfiguration> configurations;
  for (const auto& combo : cartesian(axes))
    if (auto g = configuration_of(base, combo, run.skipped)) configurations.push_back(std::move(*g));
  require(!configurations.empty(), "--grid: every combination is forbidden by the toggles");
  for (const auto& g : configurations) run.options.configurations.push_back(g.description);
  run.options.loads = grid_loads(base, loads);
  run.options.rounds = base.seeds;
  const auto t0 = std::chrono::steady_clock::now();
  // One experiment per serving-parameter pair, its configurations' presets as its arms.
  std::map<std::pair<std::int64_t, int>, std::vector<std::size_t>> groups;
  for (std::size_t c = 0; c < configurations.size(); ++c)
    groups[{configurations[c].max_num_batched_tokens, configurations[c].max_num_seqs}].push_back(c);
  // results[c][l][s]: every cell, filled by the worker threads, read in this fixed order after.
  CellResults results(configurations.size(), std::vector<std::vector<std::optional<GridCell>>>(
                                                run.options.loads.size(), std::vector<std::optional<GridCell>>(base.seeds)));
  for (const auto& [serving, members] : groups) {
    PresetAbOptions o = base;
    std::tie(o.max_num_batched_tokens, o.max_num_seqs) = serving;
    o.presets.clear();
    for (std::size_t c : members) o.presets.push_back(configurations[c].preset_spec);
    run_group(o, members, run.options.loads, argv, jobs, results);
    progress << "[grid] " << members.size() << " configuration(s) at max-num-batched-tokens " << serving.first
             << ", max-num-seqs " << serving.second << ": done" << std::endl;
  }
  collect_cells(results, run);
  run.record.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return run;
}

}  // namespace encbench::scenario
