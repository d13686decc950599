// `encbench bench sweep serve`: flags -> scenario::ConfigSweepOptions -> run_config_sweep ->
// analyse_config_sweep -> tables, sweep.json, sweep.html (docs/sweep.md).
#include "harness/cli/cmd_bench_sweep_serve.hpp"

#include <signal.h>
#include <unistd.h>

#include <cmath>
#include <ctime>
#include <iostream>

#include "harness/cli/command.hpp"
#include "harness/core/error.hpp"
#include "harness/core/result_json.hpp"
#include "harness/scenario/config_sweep.hpp"
#include "harness/scenario/config_sweep_report.hpp"
#include "harness/scenario/sweep_params.hpp"
#include "reports/config_sweep_html.hpp"

namespace encbench::cli {
namespace {

using scenario::ParamCombination;

std::vector<ParamCombination> read_or_default(const std::string& path) {
  if (path.empty()) return {ParamCombination{"", nlohmann::ordered_json::object()}};  // the command unchanged
  return scenario::read_param_sweep(path);
}

// The words after the program's own ("vllm bench serve", "encbench bench serve"): its flags.
std::vector<std::string> bench_flag_words(const std::string& bench_cmd) {
  std::vector<std::string> words = scenario::split_command(bench_cmd, "--bench-cmd");
  std::size_t first_flag = 0;
  while (first_flag < words.size() && words[first_flag].rfind("-", 0) != 0) ++first_flag;
  return {words.begin() + static_cast<std::ptrdiff_t>(first_flag), words.end()};
}

bool is_encbench_serve(const std::vector<std::string>& words) {
  if (words.size() < 2 || words[1] != "serve") return false;
  const std::string program = words[0].substr(words[0].rfind('/') == std::string::npos ? 0 : words[0].rfind('/') + 1);
  return program == "encbench";
}

// encbench serve's own parser refuses the words (an unknown flag, a value of the wrong type).
void check_encbench_serve(const std::vector<std::string>& words) {
  CLI::App app;
  CommandContext ignored;
  add_serve_command(app, ignored);
  std::vector<std::string> args(words.begin() + 1, words.end());
  for (auto& w : args)
    if (w == "{port}") w = "0";
  std::reverse(args.begin(), args.end());
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    throw InvalidInput(e.what());
  }
}

// The server's command line of one configuration, with {port}: vLLM's --port (if the command
// has one) takes the port picked for each round, else --port {port} is appended.
std::string server_command(const std::vector<std::string>& serve_words, const ParamCombination& c) {
  std::vector<std::string> words = scenario::apply_params(serve_words, c.params);
  std::string joined = scenario::join_command(words);
  if (joined.find("{port}") != std::string::npos) return joined;
  for (std::size_t i = 0; i + 1 < words.size(); ++i)
    if (words[i] == "--port") {
      words[i + 1] = "{port}";
      return scenario::join_command(words);
    }
  words.insert(words.end(), {"--port", "{port}"});
  return scenario::join_command(words);
}

std::vector<scenario::SweepLoad> sweep_loads(
    const SweepServeFlags& f, const std::vector<ParamCombination>& bench_params,
    const std::function<client::BenchConfig(const std::vector<std::string>&)>& bench_config) {
  const std::vector<std::string> bench_words = bench_flag_words(f.bench_cmd);
  std::vector<scenario::SweepLoad> loads;
  for (const auto& b : bench_params) {
    scenario::SweepLoad load;
    load.name = b.name.empty() ? "default" : b.name;
    load.params = b.params;
    // vLLM's sweep adds these to every benchmark command (E2EL is judged too).
    std::vector<std::string> words = scenario::apply_params(bench_words, b.params);
    words.insert(words.end(), {"--percentile-metrics", "ttft,tpot,itl,e2el"});
    load.bench = bench_config(words);
    load.bench.base_url = "http://127.0.0.1:1";  // replaced per round
    if (load.bench.num_warmups == 0) load.bench.num_warmups = f.warmup_num_prompts;
    client::validate(load.bench);
    loads.push_back(std::move(load));
  }
  bool all_concurrency = true;
  for (const auto& l : loads) all_concurrency = all_concurrency && l.bench.max_concurrency > 0;
  for (auto& l : loads) l.load = all_concurrency ? l.bench.max_concurrency : l.bench.request_rate;
  return loads;
}

std::string timestamp_name() {
  char text[32];
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  std::strftime(text, sizeof text, "%Y%m%d_%H%M%S", &local);
  return text;
}

scenario::ConfigSweepOptions sweep_options(
    const SweepServeFlags& f, const std::function<client::BenchConfig(const std::vector<std::string>&)>& bench_config) {
  require(!f.serve_cmd.empty(), "--serve-cmd is required");
  require(f.order == "balanced" || f.order == "sequential", "--order must be balanced or sequential, got '" + f.order + "'");
  const std::vector<std::string> serve_words = scenario::split_command(f.serve_cmd, "--serve-cmd");
  require(!serve_words.empty(), "--serve-cmd is empty");
  const auto serve_params = read_or_default(f.serve_params);
  const auto bench_params = read_or_default(f.bench_params);
  // Keys checked against the parser of the command they go to, before anything starts.
  if (!f.serve_params.empty() && is_encbench_serve(serve_words))
    scenario::check_entries(f.serve_params, serve_params, serve_words, check_encbench_serve);
  if (!f.bench_params.empty())
    scenario::check_entries(f.bench_params, bench_params, bench_flag_words(f.bench_cmd),
                            [&](const std::vector<std::string>& words) { bench_config(words); });
  scenario::ConfigSweepOptions o;
  for (const auto& s : serve_params)
    o.configurations.push_back({s.name.empty() ? "default" : s.name, s.params, server_command(serve_words, s)});
  o.loads = sweep_loads(f, bench_params, bench_config);
  const auto links = scenario::parse_link_vars(f.link_vars);
  if (!links.empty())
    for (const auto& s : serve_params) {
      o.linked.emplace_back();
      for (const auto& b : bench_params) o.linked.back().push_back(scenario::combination_linked(s, b, links));
    }
  o.rounds = f.num_runs;
  o.order_seed = f.order_seed;
  o.sequential = f.order == "sequential";
  o.out_dir = std::filesystem::path(f.output_dir) / (f.experiment_name.empty() ? timestamp_name() : f.experiment_name);
  o.resume = f.resume;
  o.after_bench_cmd = f.after_bench_cmd;
  o.ready_timeout_s = f.server_ready_timeout;
  o.stop_grace_s = f.stop_grace;
  return o;
}

}  // namespace

void add_sweep_serve_flags(CLI::App* c, SweepServeFlags& f) {
  c->add_option("--serve-cmd", f.serve_cmd,
                "The server's command line (vLLM's: `vllm serve MODEL ...`, or `encbench serve ...`); {port} or its --port "
                "value becomes a free port per round, else --port {port} is appended")
      ->required();
  c->add_option("--bench-cmd", f.bench_cmd,
                "The benchmark's command line (`vllm bench serve ...` or `encbench bench serve ...`): its flags are bench "
                "serve's, run in this process against each round's server")
      ->capture_default_str();
  c->add_option("--after-bench-cmd", f.after_bench_cmd,
                "Shell command run after each measured run while that round's server still runs ({port}, {round_dir})");
  c->add_option("--serve-params", f.serve_params,
                "vLLM's JSON file of server parameter combinations (a list of objects, or an object of named objects); "
                "each is a configuration");
  c->add_option("--bench-params", f.bench_params,
                "vLLM's JSON file of benchmark parameter combinations; each is a load (request_rate or max_concurrency)");
  c->add_option("--link-vars", f.link_vars,
                "serve_key=bench_key,...: a (configuration, load) pair runs only when both hold the key with equal values");
  c->add_option("-o,--output-dir", f.output_dir, "Main output directory")->capture_default_str();
  c->add_option("-e,--experiment-name", f.experiment_name,
                "Results go to OUTPUT_DIR/EXPERIMENT_NAME (default: the local time, YYYYmmdd_HHMMSS)");
  c->add_option("--num-runs", f.num_runs, "Rounds per (configuration, load), each on a freshly started server")->capture_default_str();
  c->add_option("--warmup-num-prompts", f.warmup_num_prompts,
                "Unmeasured requests (at rate inf) on each fresh server before its measured run (when the bench command "
                "gives no --num-warmups)")
      ->capture_default_str();
  c->add_option("--server-ready-timeout", f.server_ready_timeout,
                "Seconds a started server has to answer GET /health or /v1/models with 200")
      ->capture_default_str();
  c->add_option("--stop-grace", f.stop_grace, "Seconds after SIGTERM to a server's process group before SIGKILL")->capture_default_str();
  c->add_flag("--resume", f.resume, "Continue OUTPUT_DIR/EXPERIMENT_NAME: rounds already finished there are kept, not rerun");
  c->add_flag("--dry-run", f.dry_run, "Print each configuration's server command, the loads and the order; run nothing");
  c->add_flag("--show-stdout", f.show_stdout, "Accepted (vLLM's); servers' output is always in round-<r>-<cell>/server.*.log");
  c->add_flag("--continue-on-error", f.continue_on_error,
              "Accepted (vLLM's); a failing round is always recorded with its configuration and round, and the rest go on");
  c->add_option("--order", f.order,
                "balanced: rounds interleaved across configurations in a seeded random order, every other block reversed "
                "(drift falls on all alike); sequential: vLLM's order, configuration after configuration")
      ->capture_default_str();
  c->add_option("--order-seed", f.order_seed, "Seed of the balanced order (recorded in sweep.json)")->capture_default_str();
  c->add_option("--slo", f.slo, "e.g. 'ttft_p99<=2000,tpot_p99<=300': each configuration's capacity, bracketed between loads");
  c->add_option("--rank-by", f.rank_by, "The metric configurations are ranked and judged by at each load")->capture_default_str();
  add_judgement_flags(c, f.judgement);
}

int run_sweep_serve(const SweepServeFlags& f,
                    const std::function<client::BenchConfig(const std::vector<std::string>&)>& bench_config,
                    const std::vector<std::string>& argv) {
  scenario::ConfigSweepJudging judging;
  scenario::validate_rank_metric(f.rank_by);
  judging.rank_metric = f.rank_by;
  judging.settings = judgement_settings(f.judgement);
  if (!f.slo.empty()) judging.slo = scenario::parse_slo(f.slo);
  scenario::ConfigSweepOptions o = sweep_options(f, bench_config);
  scenario::validate(o);
  if (f.dry_run) {
    for (const auto& c : o.configurations) std::cout << "configuration " << c.name << ": " << c.command << "\n";
    for (const auto& l : o.loads) std::cout << "load " << l.name << ": " << client::python_float(l.load) << "\n";
    for (const auto& cell : scenario::plan_sweep_order(o))
      std::cout << "round " << cell.round << " " << scenario::cell_label(cell) << "\n";
    return 0;
  }
  o.stop_fd = stop_signal_fd();
  signal(SIGPIPE, SIG_IGN);
  client::global_curl_init();
  const auto record = scenario::run_config_sweep(o, std::cerr);
  if (o.stop_fd >= 0) close(o.stop_fd);
  const nlohmann::json analysis = scenario::analyse_config_sweep(o, record, judging, argv);
  scenario::print_config_sweep(analysis, std::cout);
  write_json_file(o.out_dir / "sweep.json", analysis);
  reports::write_config_sweep_html(o.out_dir / "sweep.html", analysis);
  std::cerr << "encbench: sweep written to " << (o.out_dir / "sweep.json").string() << " and sweep.html\n";
  if (record.interrupted) return 130;
  return analysis["failures"].empty() ? 0 : 1;
}

}  // namespace encbench::cli
