#include "harness/scenario/config_sweep.hpp"

#include <algorithm>
#include <chrono>
#include <ostream>
#include <random>
#include <thread>

#include "harness/core/error.hpp"
#include "harness/core/result_json.hpp"
#include "harness/scenario/preset_ab.hpp"
#include "harness/scenario/server_recipe.hpp"

namespace encbench::scenario {
namespace {

bool cell_linked(const ConfigSweepOptions& o, std::size_t c, std::size_t l) {
  return o.linked.empty() || o.linked[c][l];
}

std::filesystem::path cell_file(const ConfigSweepOptions& o, const SweepCell& cell) {
  return o.out_dir / "cells" / ("r" + std::to_string(cell.round) + "-" + cell_label(cell) + ".json");
}

// What a resumed run must agree with: the configurations, loads, rounds and order.
nlohmann::json plan_json(const ConfigSweepOptions& o) {
  nlohmann::json plan = {{"order_seed", o.order_seed}, {"sequential", o.sequential}, {"rounds", o.rounds}};
  plan["configurations"] = nlohmann::json::array();
  for (const auto& c : o.configurations)
    plan["configurations"].push_back({{"name", c.name}, {"params", nlohmann::json::parse(c.params.dump())}, {"command", c.command}});
  plan["loads"] = nlohmann::json::array();
  for (const auto& l : o.loads) plan["loads"].push_back({{"name", l.name}, {"params", nlohmann::json::parse(l.params.dump())}});
  return plan;
}

// --after-bench-cmd while the cell's server runs: its exit and wall time, output in the round's
// directory. A command that does not end within the ready timeout is stopped.
nlohmann::json run_after_bench(const ConfigSweepOptions& o, int port, int round, const std::string& cell,
                               const std::filesystem::path& round_dir) {
  ServerProcess::Launch launch;
  launch.command = expand_recipe(o.after_bench_cmd, port, round, cell, round_dir);
  launch.stdout_path = round_dir / "after-bench.stdout.log";
  launch.stderr_path = round_dir / "after-bench.stderr.log";
  const auto t0 = std::chrono::steady_clock::now();
  ServerProcess process(launch);
  std::optional<std::string> exit;
  while (!(exit = process.exited()) &&
         std::chrono::steady_clock::now() - t0 < std::chrono::duration<double>(o.ready_timeout_s))
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  if (!exit) exit = "stopped after " + std::to_string(static_cast<int>(o.ready_timeout_s)) + " s";
  process.stop(o.stop_grace_s);
  return {{"command", launch.command},
          {"exit", *exit},
          {"wall_ms", std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count()}};
}

LiveAbOptions round_options(const ConfigSweepOptions& o) {
  LiveAbOptions live;
  live.rounds = o.rounds;
  live.ready_timeout_s = o.ready_timeout_s;
  live.stop_grace_s = o.stop_grace_s;
  live.out_dir = o.out_dir;
  live.stop_fd = o.stop_fd;
  live.on_ready = o.on_ready;
  live.progress_tag = "[sweep]";
  if (!o.after_bench_cmd.empty())
    live.after_measured = [&o](const std::string& cell, int round, const std::string& url,
                               const std::filesystem::path& round_dir) {
      const int port = std::stoi(url.substr(url.rfind(':') + 1));
      return run_after_bench(o, port, round, cell, round_dir);
    };
  return live;
}

// A cell file of an earlier run, when it is this cell of this plan; nullopt otherwise.
std::optional<CellOutcome> resumed_cell(const ConfigSweepOptions& o, const SweepCell& cell) {
  const auto path = cell_file(o, cell);
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::nullopt;
  const nlohmann::json j = read_json_file(path);
  CellOutcome out;
  out.cell = cell;
  out.resumed = true;
  out.serving = j.at("serving");
  out.server = j.at("server");
  out.invalid = j.value("invalid", std::vector<std::string>{});
  return out;
}

}  // namespace

std::string cell_label(const SweepCell& cell) {
  return "c" + std::to_string(cell.configuration + 1) + "-l" + std::to_string(cell.load + 1);
}

std::vector<SweepCell> plan_sweep_order(const ConfigSweepOptions& o) {
  std::vector<SweepCell> block;
  for (std::size_t c = 0; c < o.configurations.size(); ++c)
    for (std::size_t l = 0; l < o.loads.size(); ++l)
      if (cell_linked(o, c, l)) block.push_back({c, l, 1});
  std::vector<SweepCell> order;
  if (o.sequential) {
    for (const auto& cell : block)
      for (int r = 1; r <= o.rounds; ++r) order.push_back({cell.configuration, cell.load, r});
    return order;
  }
  std::mt19937_64 rng(o.order_seed);
  for (int r = 1; r <= o.rounds; ++r) {
    if (r % 2 == 1) {
      std::shuffle(block.begin(), block.end(), rng);
    } else {
      std::reverse(block.begin(), block.end());  // the mirror of the block before: linear drift cancels
    }
    for (const auto& cell : block) order.push_back({cell.configuration, cell.load, r});
  }
  return order;
}

void validate(const ConfigSweepOptions& o) {
  require(!o.configurations.empty(), "bench sweep serve: no server configuration to run");
  require(!o.loads.empty(), "bench sweep serve: no load to run");
  require(o.rounds >= 1 && o.rounds <= 1000, "--num-runs must be 1..1000, got " + std::to_string(o.rounds));
  require(o.ready_timeout_s > 0, "--server-ready-timeout must be > 0 seconds");
  require(!plan_sweep_order(o).empty(), "--link-vars: no (serve, bench) combination has equal linked values");
  for (const auto& c : o.configurations)
    require(c.command.find("{port}") != std::string::npos,
            "bench sweep serve: the server command of '" + c.name + "' has no {port}");
  std::error_code ec;
  const bool exists = std::filesystem::exists(o.out_dir, ec);
  if (!o.resume) {
    require(!exists || std::filesystem::is_empty(o.out_dir, ec),
            "cannot overwrite the existing experiment directory " + o.out_dir.string() + " (--resume continues it)");
    return;
  }
  require(exists, "cannot resume from the missing experiment directory " + o.out_dir.string());
  const auto plan_path = o.out_dir / "plan.json";
  require(std::filesystem::exists(plan_path, ec), "cannot resume: " + plan_path.string() + " is missing");
  const nlohmann::json before = read_json_file(plan_path), now = plan_json(o);
  for (const char* key : {"configurations", "loads", "rounds", "sequential", "order_seed"})
    require(before.value(key, nlohmann::json()) == now[key],
            "cannot resume " + o.out_dir.string() + ": its " + key + " differ from this command's (plan.json)");
}

ConfigSweepRecord run_config_sweep(const ConfigSweepOptions& o, std::ostream& progress) {
  validate(o);
  std::filesystem::create_directories(o.out_dir / "cells");
  write_json_file(o.out_dir / "plan.json", plan_json(o));
  const LiveAbOptions live = round_options(o);
  ConfigSweepRecord record;
  record.order = plan_sweep_order(o);
  const auto t0 = std::chrono::steady_clock::now();
  for (std::size_t position = 0; position < record.order.size() && !record.interrupted; ++position) {
    const SweepCell cell = record.order[position];
    if (o.resume)
      if (auto done = resumed_cell(o, cell)) {
        done->position = position;
        record.outcomes.push_back(std::move(*done));
        continue;
      }
    if (stop_requested(o.stop_fd)) {
      record.interrupted = true;
      break;
    }
    const SweepConfiguration& conf = o.configurations[cell.configuration];
    ArmRecipe arm;
    arm.name = cell_label(cell);
    arm.command = conf.command;
    CellOutcome out;
    out.cell = cell;
    out.position = position;
    try {
      LiveArmRound round = run_arm_round(o.loads[cell.load].bench, arm, cell.round, 0, live, progress);
      out.serving = std::move(round.serving);
      out.server = std::move(round.server);
      out.invalid = std::move(round.invalid);
      write_json_file(cell_file(o, cell), {{"configuration", conf.name},
                                           {"load", o.loads[cell.load].name},
                                           {"round", cell.round},
                                           {"serving", out.serving},
                                           {"server", out.server},
                                           {"invalid", out.invalid}});
    } catch (const RoundInterrupted& e) {
      progress << "[sweep] " << e.what() << std::endl;
      record.interrupted = true;
      break;
    } catch (const RoundFailure& e) {
      // Named with its parameters and round; the other cells go on.
      out.failure = "configuration '" + conf.name + "' (" + conf.params.dump() + "), load '" +
                    o.loads[cell.load].name + "', round " + std::to_string(cell.round) + ": " + e.what();
      progress << "[sweep] FAILED " << out.failure << std::endl;
    }
    record.outcomes.push_back(std::move(out));
  }
  record.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return record;
}

}  // namespace encbench::scenario
