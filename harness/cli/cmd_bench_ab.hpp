#pragma once
// `encbench bench ab`: the flags of its own (arms, rounds, readiness, statistics); every bench
// serve workload flag is registered by cmd_bench.cpp's add_serve_flags on the same subcommand.
#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "harness/cli/judgement_flags.hpp"
#include "harness/client/bench.hpp"

namespace encbench::cli {

struct BenchAbFlags {
  std::vector<std::string> arms, arm_env, arm_cwd, arm_port;
  int rounds = 3;
  double ready_timeout = 600, stop_grace = 30;
  std::string plan;
  JudgementFlags judgement;  // --threshold (alias --min-change), --alpha, --power
  int warmups = 3;
  std::string ab_dir;
};

void add_bench_ab_flags(CLI::App* ab, BenchAbFlags& flags);
// `config` holds the bench serve flags as given; `ab` is the parsed subcommand (to see which
// flags were given). Returns the exit status (0, 1 a round failed, 130 interrupted).
int run_bench_ab(client::BenchConfig config, const BenchAbFlags& flags, const CLI::App& ab,
                 const std::vector<std::string>& argv);

}  // namespace encbench::cli
