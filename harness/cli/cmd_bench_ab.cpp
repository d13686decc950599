// `encbench bench ab`: flags -> scenario::LiveAbOptions -> scenario::run_live_ab (live_ab.hpp).
#include "harness/cli/cmd_bench_ab.hpp"

#include <signal.h>
#include <unistd.h>

#include <iostream>

#include "harness/cli/command.hpp"
#include "harness/cli/judgement_flags.hpp"
#include "harness/core/error.hpp"
#include "harness/scenario/live_ab.hpp"

namespace encbench::cli {
void add_bench_ab_flags(CLI::App* ab, BenchAbFlags& f) {
  ab->add_option("--arm", f.arms,
                 "NAME=RECIPE, exactly twice (Before, then After). RECIPE: a running server's URL (http://host:port) "
                 "or a shell command line that starts one in the foreground, with {port} (a free port picked per "
                 "round), {round}, {arm}, {round_dir} placeholders")
      ->required();
  ab->add_option("--arm-env", f.arm_env, "NAME:KEY=VALUE: environment variable of arm NAME's command (repeatable)");
  ab->add_option("--arm-cwd", f.arm_cwd, "NAME:DIR: working directory of arm NAME's command");
  ab->add_option("--arm-port", f.arm_port,
                 "NAME:PORT: arm NAME's server listens on this fixed port (checked free before each start) "
                 "instead of a picked {port}");
  ab->add_option("--rounds", f.rounds, "Interleaved rounds (ABBA...; each arm once per round, on a fresh server)")
      ->capture_default_str();
  ab->add_option("--ready-timeout", f.ready_timeout,
                 "Seconds a started server (or a URL) has to answer GET /health or /v1/models with 200")
      ->capture_default_str();
  ab->add_option("--stop-grace", f.stop_grace, "Seconds after SIGTERM to the server's process group before SIGKILL")
      ->capture_default_str();
  ab->add_option("--round-warmups", f.warmups,
                 "Warm-up requests per round on each fresh server (used when --num-warmups is not given)")
      ->capture_default_str();
  ab->add_option("--plan", f.plan,
                 "e.g. 3%: from this run as a pilot (>= 2 rounds), how many rounds of how many prompts a change of "
                 "that size needs");
  add_judgement_flags(ab, f.judgement, "--min-change");
  ab->add_option("--ab-dir", f.ab_dir,
                 "Output directory: ab.json, ab.html, round-<r>-<arm>/ (server logs, serving.json); default "
                 "<--result-dir or .>/ab-<A>-vs-<B>");
}

int run_bench_ab(client::BenchConfig config, const BenchAbFlags& f, const CLI::App& ab,
                 const std::vector<std::string>& argv) {
  for (const char* target : {"--base-url", "--host", "--port"})
    require(ab.count(target) == 0, std::string("bench ab: ") + target + " does not apply (each --arm says where its server is)");
  scenario::LiveAbOptions o;
  for (const auto& spec : f.arms) o.arms.push_back(scenario::parse_arm(spec));
  for (const auto& spec : f.arm_env) scenario::apply_arm_env(o.arms, spec);
  for (const auto& spec : f.arm_cwd) scenario::apply_arm_cwd(o.arms, spec);
  for (const auto& spec : f.arm_port) scenario::apply_arm_port(o.arms, spec);
  o.rounds = f.rounds;
  o.ready_timeout_s = f.ready_timeout;
  o.stop_grace_s = f.stop_grace;
  o.judging = judgement_settings(f.judgement);
  if (!f.plan.empty()) o.plan_change = parse_percent("--plan", f.plan);
  require(f.warmups >= 0, "--round-warmups must be >= 0");
  if (ab.count("--num-warmups") == 0) config.num_warmups = f.warmups;
  scenario::validate(o);
  const std::filesystem::path parent = config.result_dir.empty() ? "." : config.result_dir;
  o.out_dir = !f.ab_dir.empty() ? std::filesystem::path(f.ab_dir) : parent / ("ab-" + o.arms[0].name + "-vs-" + o.arms[1].name);
  config.base_url = "http://127.0.0.1:1";  // replaced per round; validate() needs a target
  client::validate(config);
  // SIGINT/SIGTERM: a readable fd the rounds poll (stop the servers, write what finished).
  o.stop_fd = stop_signal_fd();
  signal(SIGPIPE, SIG_IGN);
  client::global_curl_init();
  const scenario::LiveAbRun run = scenario::run_live_ab(config, o, argv, std::cout, std::cerr);
  if (o.stop_fd >= 0) close(o.stop_fd);
  return run.exit_code();
}

}  // namespace encbench::cli
