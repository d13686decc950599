#pragma once
// `encbench bench multi-turn`: the rows' conversations as sessions (harness/client/sessions.hpp),
// with bench serve's connection and dataset flags; wiring only.
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "harness/client/bench.hpp"

namespace encbench::cli {

struct MultiTurnFlags {
  std::string think_time = "0";   // --think-time
  std::size_t max_turns = 0;      // --max-turns (0: every user turn of the row)
  std::string result_file;        // --multi-turn-result: versioned JSON
};

void add_multi_turn_flags(CLI::App* app, MultiTurnFlags& flags);
int run_bench_multi_turn(const client::BenchConfig& config, const MultiTurnFlags& flags);

}  // namespace encbench::cli
