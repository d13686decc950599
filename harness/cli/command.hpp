#pragma once
// Wiring between main() and the subcommands: each cmd_*.cpp adds its CLI11 subcommand and, when
// it is chosen, stores the action to run. No logic beyond parsing and wiring lives in cli/.
#include <CLI/CLI.hpp>

#include <signal.h>

#include <functional>
#include <string>
#include <vector>

namespace encbench::cli {

struct CommandContext {
  std::vector<std::string> argv;   // the full command line, for result envelopes
  std::function<int()> action;     // set by the chosen subcommand's callback
};

// SIGINT and SIGTERM blocked in the calling thread (threads started later inherit the mask), so
// they arrive through a signalfd instead of ending the process. Returns the blocked set.
sigset_t block_stop_signals();
// block_stop_signals() and a non-blocking signalfd of the set: readable once Ctrl-C or SIGTERM
// arrived, so a run polls it to stop and write what finished (-1 when it cannot be made).
int stop_signal_fd();

// Each returns nothing; the subcommand's callback sets ctx.action.
void add_peak_command(CLI::App& app, CommandContext& ctx);
void add_encode_command(CLI::App& app, CommandContext& ctx);
void add_ab_command(CLI::App& app, CommandContext& ctx);
void add_bench_command(CLI::App& app, CommandContext& ctx);     // bench serve
void add_serve_command(CLI::App& app, CommandContext& ctx);
void add_compare_command(CLI::App& app, CommandContext& ctx);
void add_report_command(CLI::App& app, CommandContext& ctx);
void add_history_command(CLI::App& app, CommandContext& ctx);
void add_trace_command(CLI::App& app, CommandContext& ctx);     // trace analyze
void add_dataset_command(CLI::App& app, CommandContext& ctx);   // dataset generate
void add_run_command(CLI::App& app, CommandContext& ctx);       // the main job (scenarios)

}  // namespace encbench::cli
