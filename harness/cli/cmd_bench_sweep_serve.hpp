#pragma once
// `encbench bench sweep serve`: vLLM's `vllm bench sweep serve` flags (--serve-cmd, --bench-cmd,
// --serve-params, --bench-params, --link-vars, --after-bench-cmd, --num-runs, --resume, -o, -e)
// plus the verdicts' own (--order, --order-seed, --slo, --rank-by, --threshold/--alpha/--power).
#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

#include "harness/cli/judgement_flags.hpp"
#include "harness/client/bench.hpp"

namespace encbench::cli {

struct SweepServeFlags {
  std::string serve_cmd, bench_cmd = "encbench bench serve", after_bench_cmd;
  std::string serve_params, bench_params, link_vars;
  std::string output_dir = "results", experiment_name;
  int num_runs = 3, warmup_num_prompts = 0, server_ready_timeout = 300;
  double stop_grace = 30;
  bool resume = false, dry_run = false, show_stdout = false, continue_on_error = false;
  std::string order = "balanced", slo, rank_by = "mean_e2el_ms";
  std::uint64_t order_seed = 0;
  JudgementFlags judgement;
};

void add_sweep_serve_flags(CLI::App* command, SweepServeFlags& flags);

// `bench_config`: bench serve's flags (words as on its command line) -> its configuration;
// throws InvalidInput with the parser's reason. Returns the exit status (0; 1 when a round
// failed; 130 interrupted).
int run_sweep_serve(const SweepServeFlags& flags,
                    const std::function<client::BenchConfig(const std::vector<std::string>&)>& bench_config,
                    const std::vector<std::string>& argv);

}  // namespace encbench::cli
