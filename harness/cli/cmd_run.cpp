// `encbench run`: the A/B of two encoder presets (flags only; logic in harness/scenario/preset_ab.hpp).
#include <iostream>
#include <memory>
#include <sstream>
#include <thread>

#include "harness/cli/command.hpp"
#include "harness/cli/judgement_flags.hpp"
#include "harness/cli/preset_server.hpp"
#include "harness/core/error.hpp"
#include "harness/core/result_json.hpp"
#include "harness/core/text_escape.hpp"
#include "harness/scenario/config_sweep_report.hpp"
#include "harness/scenario/preset_ab.hpp"
#include "harness/scenario/sweep.hpp"
#include "harness/scenario/virtual_grid.hpp"
#include "reports/config_sweep_html.hpp"
#include "harness/serving/api_server_model.hpp"
#include "harness/serving/serving_model_choice.hpp"

#include <signal.h>

namespace encbench::cli {
namespace {

struct RunFlags {
  std::string scenario_file;
  std::optional<int> rounds, num_prompts, output_len, max_num_seqs, image_width, image_height;
  std::optional<std::int64_t> max_num_batched_tokens;
  std::optional<bool> encoder_mlp;
  std::optional<double> request_rate, burstiness;
  std::optional<std::string> device, model, presets, result_dir, result_file, profiles_dir, op_map;
  std::optional<std::uint64_t> seed;
  std::optional<bool> profile;
  std::optional<std::string> clock, workload, serving_model, model_set;
  std::optional<int> seeds;
  std::optional<bool> async_scheduling;
  std::optional<std::string> api_server_model;
  std::optional<int> api_server_count;
  std::optional<std::string> live_encoder_clock;
  std::optional<std::int64_t> max_num_encoder_input_tokens;
  std::optional<int> max_concurrency;
  std::optional<std::int64_t> sample_text_tokens, sample_output_tokens;
  std::string sweep, slo;
  std::string grid, grid_result, rank_by = "mean_ttft_ms";
  int grid_jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  int capacity_bisections = 7;
  std::string sweep_html;
  std::string plot_timeline;
  std::vector<double> timeline_itl_thresholds;
  bool allow_no_verdict = false;
  bool save_detailed = false;
  JudgementFlags judgement;  // --threshold, --alpha, --power
};

void add_scenario_flags(CLI::App* sub, RunFlags& f) {
  sub->add_option("--scenario", f.scenario_file, "Scenario JSON (keys as in scenarios/preset-ab.json); flags override it");
  sub->add_option("--rounds", f.rounds,
                  "Interleaved rounds (ABBA...: each arm once per round on a fresh server; the comparison pools "
                  "them and needs a change to clear the round-to-round spread; default 3)");
  sub->add_option("--num-prompts", f.num_prompts, "Requests per arm and round (default 100)");
  sub->add_option("--request-rate", f.request_rate, "Requests per second, or inf (default 10)");
  sub->add_option("--burstiness", f.burstiness, "Gamma shape of the arrivals (default 5)");
  sub->add_option("--output-len", f.output_len, "Output tokens per request (ignore_eos; default 32)");
  sub->add_option("--device", f.device, "cpu | sim:<profile> (default sim:ascend-910b)");
  sub->add_option("--model", f.model, "Vision model preset or path.json (default qwen3-vl-8b)");
  sub->add_option("--presets", f.presets, "Encoder presets before,after (default baseline,optimized)");
  sub->add_option("--max-num-seqs", f.max_num_seqs, "Server batch seats (default 256)");
  sub->add_option("--max-num-batched-tokens", f.max_num_batched_tokens, "Server step token budget (default 8192)");
  sub->add_option("--image-width", f.image_width, "Width of the generated sample's images (default 640)");
  sub->add_option("--image-height", f.image_height, "Height of the generated sample's images (default 480)");
  sub->add_option("--encoder-mlp", f.encoder_mlp, "Encoder layers include norm2 + MLP (true|false; default true)");
  sub->add_option("--result-dir", f.result_dir, "Where the dataset, profiles and result JSON go (default ./encbench-results)");
  sub->add_option("--result", f.result_file, "Result JSON path (default <result-dir>/preset-ab-<A>-vs-<B>.json)");
  sub->add_option("--profiles-dir", f.profiles_dir, "Device profiles folder (default: scenarios/devices)");
  sub->add_option("--op-map", f.op_map,
                  "Kernel-name map for a trace:FILE device (JSON, schema encbench-op-name-map; default: "
                  "scenarios/devices/op-maps/op-name-map.json): gives the trace's kernels (FlashAttentionScore, "
                  "MatMulV2, flash_fwd_kernel, ...) the roles of encbench's ops");
  sub->add_option("--seed", f.seed, "Dataset, arrivals and server seed (default 0)");
  sub->add_option("--profile", f.profile, "Server-side encoder profile per arm (true|false; default true)");
  sub->add_option("--clock", f.clock,
                  "real: live server + client in rounds; virtual: the same scheduler, encoder and metrics as a "
                  "discrete-event simulation (sim: and trace: devices only; bit-reproducible; default real)");
  sub->add_option("--seeds", f.seeds, "Virtual clock: workload/arrival seeds per arm, pooled (default 1)");
  sub->add_option("--workload", f.workload,
                  "Request-shape distribution file (scenarios/workloads/*.json; virtual clock); default: the fixed "
                  "sample of --image-width x --image-height and --output-len");
  sub->add_option("--serving-model", f.serving_model,
                  "Serving-model coefficients (scenarios/serving/*.json); default: the calibrated one the project "
                  "ships for --device and --model (scenarios/serving/<profile>-<model>.json), else the LM roofline; "
                  "'roofline' = the roofline alone");
  sub->add_option("--model-set", f.model_set,
                  "Override serving-model coefficients: name=value,... (virtual clock; scripts/fit-seeds.py)");
  sub->add_option("--async-scheduling", f.async_scheduling,
                  "Engine-core host work overlaps the device step (true|false; vLLM >= 0.14 default true)");
  sub->add_option("--api-server-model", f.api_server_model,
                  "vLLM's API-server stage before the scheduler, both clocks: none | a name in "
                  "scenarios/serving/api-server | a JSON path (default: the serving model's api_server, else none)");
  sub->add_option("--api-server-count", f.api_server_count,
                  "API-server processes, one request at a time each (vLLM --api-server-count; 0 = no stage; "
                  "default: the API-server model's)")
      ->check(CLI::Range(0, serving::kMaxApiServers));
  sub->add_option("--max-num-encoder-input-tokens", f.max_num_encoder_input_tokens,
                  "Encoder budget per step (0 = vLLM's max(max-num-batched-tokens, largest image); default 0)");
  sub->add_option("--max-concurrency", f.max_concurrency,
                  "Client-side cap on requests in flight (vLLM --max-concurrency; 0 = none)");
  sub->add_option("--live-encoder-clock", f.live_encoder_clock,
                  "The live arms' encoder clock (encbench serve --encoder-clock): real | virtual (default: real with "
                  "--clock real, virtual with --clock both, so the agreement table measures what the real clock adds "
                  "to the engine loop, HTTP and the client)")
      ->check(CLI::IsMember({"real", "virtual"}));
  sub->add_option("--sample-text-tokens", f.sample_text_tokens,
                  "With --workload: the sample's known text tokens over all --num-prompts requests (vLLM bench's "
                  "'Total input tokens' of the run modelled); every row's draw is scaled to meet it (0 = draw "
                  "freely; default: the scenario's sample_totals when its request count matches)")
      ->check(CLI::Range(std::int64_t{0}, std::int64_t{1} << 40));
  sub->add_option("--sample-output-tokens", f.sample_output_tokens,
                  "With --workload: the sample's known generated tokens ('Total generated tokens'); the output "
                  "lengths are the nearest of 1024 draws (0 = draw freely; default: the scenario's sample_totals)")
      ->check(CLI::Range(std::int64_t{0}, std::int64_t{1} << 40));
}

void add_virtual_clock_flags(CLI::App* sub, RunFlags& f) {
  sub->add_option("--sweep", f.sweep,
                  "Virtual clock: request-rate=1,2,4,...,inf or max-concurrency=1,8,...: both arms at every load point "
                  "(--seeds each), the B-vs-A change per point; JSON + HTML curves");
  sub->add_option("--slo", f.slo,
                  "Virtual clock: e.g. 'ttft_p99<=2000,tpot_p99<=300' (metrics ttft|tpot|itl|e2el, statistics "
                  "mean|median|p50|p90|p95|p99): goodput per point, and each arm's capacity (bracket + bisect per seed) "
                  "with B's gain and its 95 % CI");
  sub->add_option("--capacity-bisections", f.capacity_bisections, "Bisection steps of the capacity search (default 7)")
      ->check(CLI::Range(1, 30));
  sub->add_option("--grid", f.grid,
                  "Virtual clock: configurations as the product of axes 'KEY=V1,V2;KEY=...' (preset, an encoder toggle "
                  "seq-lens|scale|pad-decision|pad-method|out-buffer|kernel, max-num-batched-tokens, max-num-seqs), each "
                  "at every --sweep load for --seeds seeds: per load the best by --rank-by and every other judged "
                  "against it, the Pareto fronts, capacity at --slo; JSON + HTML as bench sweep serve (docs/sweep.md)");
  sub->add_option("--grid-result", f.grid_result, "--grid's JSON path (default <result-dir>/grid-<name>.json; the page beside it)");
  sub->add_option("--rank-by", f.rank_by,
                  "--grid: the metric configurations are ranked and judged by at each load (the virtual results "
                  "carry ttft, tpot and itl statistics)")
      ->capture_default_str();
  sub->add_option("--grid-jobs", f.grid_jobs,
                  "--grid: worker processes (default: this machine's cores); the figures do not depend on it")
      ->capture_default_str();
  sub->add_option("--sweep-html", f.sweep_html, "Where the sweep's HTML page goes (default: beside the result JSON)");
  sub->add_flag("--save-detailed", f.save_detailed,
                "With --sweep: keep every point's per-request arrays (per arm and seed) in the sweep JSON; "
                "without it a point keeps its summaries only");
  sub->add_option("--plot-timeline", f.plot_timeline,
                  "Virtual clock: write vLLM's per-request timeline (TTFT and ITL bands) with the engine's steps and "
                  "each request's TTFT broken down (queue, encoder busy/idle by cause, prefill) to this HTML file");
  sub->add_option("--timeline-itl-thresholds", f.timeline_itl_thresholds,
                  "ITL colour thresholds of the timeline in ms (default 25,50 as vLLM)")
      ->delimiter(',');
  sub->add_flag("--allow-no-verdict", f.allow_no_verdict,
                "Exit 0 even when the guards refuse a verdict (the result JSON still says so and why): for "
                "harnesses such as scripts/ci-gate.sh that compare the results themselves");
}

// --sample-*-tokens describe the sample of the final --num-prompts. A scenario's totals describe
// its own request count: another --num-prompts draws freely, and says so.
void apply_sample_total_flags(const RunFlags& f, scenario::PresetAbOptions& o) {
  if (f.sample_text_tokens || f.sample_output_tokens) {
    if (o.sample_totals.requests != o.num_prompts) o.sample_totals = {};
    o.sample_totals.requests = o.num_prompts;
    if (f.sample_text_tokens) o.sample_totals.text_tokens = *f.sample_text_tokens;
    if (f.sample_output_tokens) o.sample_totals.output_tokens = *f.sample_output_tokens;
    o.sample_totals_source = "command line";
  } else if (o.sample_totals.any() && o.sample_totals.requests != o.num_prompts) {
    std::cerr << "[run] note: the scenario's sample_totals describe " << o.sample_totals.requests
              << " requests; --num-prompts " << o.num_prompts << " draws the workload freely\n";
  } else if (!o.sample_totals.any() && !o.workload.empty() && o.published.is_object()) {
    // Its own table says what the run sent: point at the flags rather than condition unasked (the
    // table's request count may not be --num-prompts).
    const nlohmann::json before = o.published.value("before", nlohmann::json::object());
    std::string given;  // only the totals the table has
    for (const auto& [key, label] : {std::pair{"total_input_tokens", "input "}, {"total_output_tokens", "generated "}})
      if (before.contains(key)) given += (given.empty() ? "" : ", ") + std::string(label) + before[key].dump();
    if (!given.empty())
      std::cerr << "[run] note: the published table gives this run's totals (" << given
                << "); --sample-text-tokens / --sample-output-tokens draw the workload to meet them\n";
  }
}

// The scenario: the file's keys, then every flag given on top.
scenario::PresetAbOptions options_from(const RunFlags& f) {
  scenario::PresetAbOptions o;
  if (!f.scenario_file.empty()) o = scenario::load_scenario(f.scenario_file, o);
  if (f.rounds) o.rounds = *f.rounds;
  if (f.num_prompts) o.num_prompts = *f.num_prompts;
  if (f.request_rate) o.request_rate = *f.request_rate;
  if (f.burstiness) o.burstiness = *f.burstiness;
  if (f.output_len) o.output_len = *f.output_len;
  if (f.device) o.device = *f.device;
  if (f.model) o.model = *f.model;
  if (f.max_num_seqs) o.max_num_seqs = *f.max_num_seqs;
  if (f.result_dir) o.outputs.result_dir = *f.result_dir;
  if (f.result_file) o.outputs.result_file = *f.result_file;
  if (f.max_num_batched_tokens) o.max_num_batched_tokens = *f.max_num_batched_tokens;
  if (f.image_width) o.image_width = *f.image_width;
  if (f.image_height) o.image_height = *f.image_height;
  if (f.encoder_mlp) o.encoder_mlp = *f.encoder_mlp;
  if (f.profiles_dir) o.profiles_dir = *f.profiles_dir;
  if (f.op_map) o.op_map = *f.op_map;
  if (f.seed) o.seed = *f.seed;
  if (f.profile) o.profile = *f.profile;
  if (f.clock) o.clock = scenario::parse_run_clock(*f.clock);
  if (f.seeds) o.seeds = *f.seeds;
  o.judging = judgement_settings(f.judgement);
  if (f.workload) o.workload = *f.workload;
  if (f.serving_model) o.serving_model = *f.serving_model;
  if (f.model_set) o.model_set = *f.model_set;
  if (f.async_scheduling) o.async_scheduling = *f.async_scheduling;
  if (f.api_server_model) o.api_server_model = *f.api_server_model;
  if (f.api_server_count) o.api_server_count = *f.api_server_count;
  if (f.max_num_encoder_input_tokens) o.max_num_encoder_input_tokens = *f.max_num_encoder_input_tokens;
  if (f.max_concurrency) o.max_concurrency = *f.max_concurrency;
  if (f.live_encoder_clock) o.live_encoder_clock = *f.live_encoder_clock;
  apply_sample_total_flags(f, o);
  if (!f.plot_timeline.empty()) {
    require(o.clock == scenario::RunClock::virtual_time, "--plot-timeline needs --clock virtual (for a live server: bench serve)");
    o.outputs.timeline_html = f.plot_timeline;
  }
  if (!f.timeline_itl_thresholds.empty()) {
    require(f.timeline_itl_thresholds.size() == 2 && f.timeline_itl_thresholds[0] > 0 &&
                f.timeline_itl_thresholds[1] > f.timeline_itl_thresholds[0],
            "--timeline-itl-thresholds needs two increasing positive values (ms)");
    o.outputs.timeline_itl_thresholds_ms = f.timeline_itl_thresholds;
  }
  if (f.presets) {
    o.presets.clear();
    std::stringstream in(*f.presets);
    for (std::string item; std::getline(in, item, ',');) o.presets.push_back(item);
  }
  return o;
}

// --grid: the configurations in virtual time, judged and written as bench sweep serve's.
int run_grid(const RunFlags& f, const scenario::PresetAbOptions& o, const std::vector<std::string>& argv) {
  require(f.plot_timeline.empty(), "--plot-timeline draws one run, not a grid");
  const auto axes = scenario::parse_grid(f.grid);
  scenario::SweepSpec loads;
  if (!f.sweep.empty()) loads = scenario::parse_sweep(f.sweep);
  scenario::ConfigSweepJudging judging;
  scenario::validate_rank_metric(f.rank_by);
  judging.rank_metric = f.rank_by;
  judging.settings = o.judging;
  judging.design = judgement::RoundDesign::paired;  // seed k: the same requests for every configuration
  if (!f.slo.empty()) judging.slo = scenario::parse_slo(f.slo);
  const auto run = scenario::run_virtual_grid(o, axes, loads, argv, f.grid_jobs, std::cerr);
  bool ranked = false;
  for (const auto& cell : run.record.outcomes) ranked = ranked || cell.serving.contains(f.rank_by);
  require(ranked || run.record.outcomes.empty(),
          "--rank-by " + f.rank_by + ": the virtual results do not carry it (ttft, tpot, itl statistics do)");
  nlohmann::json analysis = scenario::analyse_config_sweep(run.options, run.record, judging, argv);
  analysis["clock"] = "virtual";
  analysis["order_kind"] = "virtual time (no drift)";
  analysis["skipped"] = run.skipped;
  double total = 0;
  for (double s : run.seconds_per_configuration) total += s;
  analysis["timing"] = {{"wall_s", run.record.wall_s},
                        {"seconds_per_configuration", run.seconds_per_configuration},
                        {"mean_seconds_per_configuration", total / static_cast<double>(run.seconds_per_configuration.size())}};
  for (const auto& why : run.skipped) std::cout << "skipped " << why << "\n";
  scenario::print_config_sweep(analysis, std::cout);
  const std::filesystem::path json_path =
      !f.grid_result.empty() ? std::filesystem::path(f.grid_result)
                             : o.outputs.result_dir / ("grid-" + safe_file_component(o.name) + ".json");
  if (json_path.has_parent_path()) std::filesystem::create_directories(json_path.parent_path());
  write_json_file(json_path, analysis);
  const auto html = std::filesystem::path(json_path).replace_extension(".html");
  reports::write_config_sweep_html(html, analysis);
  std::cerr << "[grid] wrote " << json_path.string() << " and " << html.string() << "\n";
  return run.record.interrupted ? 130 : 0;
}

int run_command(const RunFlags& f, const std::vector<std::string>& argv) {
  scenario::PresetAbOptions o = options_from(f);
  // The calibrated serving model for the device and model by default; the run says which first.
  const serving::ServingModelChoice choice =
      serving::choose_serving_model(o.serving_model.string(), o.device, o.model, o.profiles_dir);
  o.serving_model = choice.file;
  o.serving_model_note = serving::describe(choice);
  // SIGINT/SIGTERM: finish the current seed or point (virtual clock), or stop the round's server
  // (real clock), and write what finished.
  o.wiring.stop_fd = stop_signal_fd();
  // --clock real / both: encbench serve in this process (the virtual clock starts no server).
  if (o.clock != scenario::RunClock::virtual_time) o.wiring.start_server = start_preset_server;
  signal(SIGPIPE, SIG_IGN);
  if (!f.grid.empty()) return run_grid(f, o, argv);
  if (!f.sweep.empty() || !f.slo.empty()) {
    // A timeline draws one run; a sweep is many, and none of them would be drawn.
    require(f.plot_timeline.empty(), "--plot-timeline draws one run, not a sweep: drop --sweep/--slo and run the "
                                     "load point to draw on its own (--request-rate R or --max-concurrency N)");
    scenario::SweepOptions w;
    if (!f.sweep.empty()) w.sweep = scenario::parse_sweep(f.sweep);
    if (!f.slo.empty()) w.slo = scenario::parse_slo(f.slo);
    w.capacity_bisections = f.capacity_bisections;
    w.html = f.sweep_html;
    w.save_detailed = f.save_detailed;
    (void)scenario::run_virtual_sweep(o, w, argv, std::cout, std::cerr);
    return 0;
  }
  require(!f.save_detailed, "--save-detailed is for --sweep (a preset A/B result keeps its requests already)");
  const scenario::PresetAbRun run = scenario::run_preset_ab(o, argv, std::cout, std::cerr);
  if (run.interrupted) return 130;
  // No verdict when the machine could not keep up: the figures would measure the machine.
  return run.verdict_valid || f.allow_no_verdict ? 0 : 2;
}

}  // namespace

void add_run_command(CLI::App& app, CommandContext& ctx) {
  auto flags = std::make_shared<RunFlags>();
  auto* sub = app.add_subcommand(
      "run", "A/B of two encoder presets against encbench's own server: with --clock real, bench ab's "
             "interleaved rounds (ABBA, a fresh in-process server per arm and round) with the presets as arms, "
             "vision-arena traffic from an open-loop client, the Before/After/Comparison table over the pooled "
             "rounds, verdict, MDE and ab.html; --clock virtual: the same as a discrete-event simulation. Exit 2 "
             "without a verdict when this machine could not keep up (defaults: scenarios/preset-ab.json)");
  add_scenario_flags(sub, *flags);
  add_virtual_clock_flags(sub, *flags);
  add_judgement_flags(sub, flags->judgement);
  sub->callback([&ctx, flags] { ctx.action = [&ctx, flags] { return run_command(*flags, ctx.argv); }; });
}

}  // namespace encbench::cli
