#include "harness/core/text_escape.hpp"
#include "harness/scenario/preset_ab.hpp"
#include "harness/scenario/pooled.hpp"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <cstdio>
#include <fstream>
#include <limits>

#include <poll.h>
#include <ostream>
#include <sstream>
#include <stdexcept>

#include "harness/client/bench.hpp"
#include "harness/client/dataset.hpp"
#include "harness/core/clock.hpp"
#include "harness/core/error.hpp"
#include "harness/core/result_json.hpp"
#include "harness/encoder/toggles.hpp"
#include "harness/scenario/live_ab.hpp"
#include "harness/scenario/op_time_report.hpp"
#include "reports/compare.hpp"
#include "reports/result.hpp"
#include "reports/tables.hpp"

namespace encbench::scenario {
namespace {

// Counters of several windows added up; the ratios recomputed from the sums.
nlohmann::json sum_engine_deltas(const std::vector<nlohmann::json>& deltas) {
  nlohmann::json total = nlohmann::json::object();
  for (const auto& d : deltas)
    for (const auto& [key, value] : d.items())
      if (value.is_number()) total[key] = total.value(key, 0.0) + value.get<double>();
  const double busy = total.value("device_busy_ms", 0.0), idle = total.value("device_idle_ms", 0.0);
  const double forwards = total.value("encoder_forwards", 0.0);
  total["idle_pct"] = busy + idle > 0 ? 100.0 * idle / (busy + idle) : 0.0;
  total["syncs_per_forward"] = forwards > 0 ? total.value("syncs", 0.0) / forwards : 0.0;
  double late_weighted = 0;  // forward-weighted mean of the rounds' means
  for (const auto& d : deltas)
    late_weighted += d.value("encoder_lateness_p99_us_mean", 0.0) * d.value("encoder_forwards", 0.0);
  total["encoder_lateness_p99_us_mean"] = forwards > 0 ? late_weighted / forwards : 0.0;
  return total;
}

std::string table_row(const std::string& metric, const std::string& before, const std::string& after,
                      const std::string& change, std::size_t metric_width = 34) {
  std::ostringstream row;
  row << "| " << std::left << std::setw(static_cast<int>(metric_width)) << metric << " | " << std::right << std::setw(12) << before << " | "
      << std::setw(12) << after << " | " << std::left << std::setw(12) << change << " |\n";
  return row.str();
}

std::string fixed(double v, int digits) {
  std::ostringstream text;
  text << std::fixed << std::setprecision(digits) << v;
  return text.str();
}

}  // namespace

namespace {

// --clock both: the live round, then the same scenario in virtual time, and how far apart they are
// (the virtual clock is only as good as its agreement with the real one where both can run).
PresetAbRun run_both_clocks(const PresetAbOptions& o, const std::vector<std::string>& argv, std::ostream& out,
                              std::ostream& progress) {
  const std::filesystem::path base =
      o.outputs.result_file.empty() ? o.outputs.result_dir / ("preset-ab-" + safe_file_component(o.name)) : o.outputs.result_file.parent_path() / o.outputs.result_file.stem();
  PresetAbOptions real = o, virt = o;
  real.clock = RunClock::real;
  real.outputs.result_file = base.string() + "-real.json";
  if (real.live_encoder_clock.empty()) real.live_encoder_clock = "virtual";
  virt.clock = RunClock::virtual_time;
  virt.seeds = 1;
  // The live server adds no modelled run-to-run noise (the real clock brings its own), so its
  // virtual counterpart runs without it: like with like.
  virt.modelled_run_noise = false;
  virt.outputs.result_file = base.string() + "-virtual.json";
  PresetAbRun live = run_preset_ab(real, argv, out, progress);
  if (live.interrupted) return live;
  const PresetAbRun modelled = run_preset_ab(virt, argv, out, progress);
  out << "\nAgreement of the clocks (same scenario, same requests; live round 1 vs virtual seed " << o.seed << ")\n";
  // The label is "<preset> <metric>": a preset with overrides (pr7104+seq-lens=...) is long.
  std::size_t width = 34;
  for (const auto& preset : o.presets) width = std::max(width, preset.size() + 1 + std::string("request_throughput").size());
  out << table_row("Metric", "real", "virtual", "virtual/real", width);
  nlohmann::json rows = nlohmann::json::array();
  for (std::size_t a = 0; a < o.presets.size(); ++a) {
    const nlohmann::json& r = live.result["arms"][a]["rounds"][0]["serving"];
    const nlohmann::json& v = modelled.result["arms"][a]["seeds"][0]["serving"];
    for (const char* key : {"mean_ttft_ms", "median_ttft_ms", "mean_tpot_ms", "median_tpot_ms", "mean_itl_ms",
                            "median_itl_ms", "request_throughput"}) {
      const double rv = r.value(key, 0.0), vv = v.value(key, 0.0);
      const double ratio = rv != 0 ? vv / rv : 0.0;
      out << table_row(o.presets[a] + " " + key, fixed(rv, 2), fixed(vv, 2), fixed(ratio, 3), width);
      rows.push_back({{"preset", o.presets[a]}, {"metric", key}, {"real", rv}, {"virtual", vv}, {"ratio", ratio}});
    }
  }
  nlohmann::json doc = make_result_envelope("encbench-clock-agreement", 1, argv, o.device);
  doc["real_result"] = live.result_path.string();
  doc["virtual_result"] = modelled.result_path.string();
  doc["rows"] = rows;
  live.result_path = base.string() + "-agreement.json";
  write_json_file(live.result_path, doc);
  progress << "[run] wrote " << live.result_path.string() << std::endl;
  return live;
}

}  // namespace

reports::RunResult pool_repeats(const std::vector<nlohmann::json>& serving, const std::vector<std::string>& names) {
  std::vector<reports::RunResult> runs;
  for (std::size_t k = 0; k < serving.size(); ++k) runs.push_back(reports::parse_result(serving[k], names[k]));
  return runs.size() == 1 ? runs.front() : reports::merge_runs(runs);
}

reports::Comparison compare_pooled_arms(const std::vector<std::vector<nlohmann::json>>& serving_by_arm,
                                        const std::vector<std::vector<std::string>>& repeat_names,
                                        const judgement::Settings& settings, judgement::RoundDesign design) {
  require(serving_by_arm.size() == 2, "a preset A/B comparison needs two arms");
  std::vector<reports::RunResult> pooled;
  for (std::size_t a = 0; a < serving_by_arm.size(); ++a) {
    require(!serving_by_arm[a].empty(), "arm " + std::to_string(a) + " has no finished repeat to compare");
    pooled.push_back(pool_repeats(serving_by_arm[a], repeat_names[a]));
  }
  reports::Comparison c = reports::compare_runs(pooled[0], pooled[1], reports::default_gate(settings), design);
  c.gate_requested = false;
  return c;
}

std::vector<std::string> engine_delta_guards(const nlohmann::json& d, const std::string& where) {
  std::vector<std::string> reasons;
  // The engine thread's own lateness: every step waits out a modelled time on this machine's
  // clock; waking late stretches every step, and the comparison would measure the scheduler.
  const double steps = d.value("steps", 0.0);
  const double step_ms = steps > 0 ? d.value("lm_modelled_ms", 0.0) / steps : 0.0;
  const double step_late_ms = d.value("step_lateness_mean_ms", 0.0);
  if (steps > 0 && step_late_ms > std::max(1.0, 0.02 * step_ms))
    reasons.push_back(where + "the engine thread could not keep its schedule (it woke a mean " + fixed(step_late_ms, 2) +
                      " ms after each step's modelled end, > max(1 ms, 2 % of a " + fixed(step_ms, 1) + " ms step))");
  const double late_p99_us = d.value("encoder_lateness_p99_us_mean", 0.0);
  const double forward_ms = d.value("encoder_wall_ms", 0.0) / std::max<double>(1.0, d.value("encoder_forwards", 0.0));
  if (late_p99_us > 0 && late_p99_us * 1e-3 > 0.10 * forward_ms)
    reasons.push_back(where + "the sim device could not keep up with its model (mean p99 lateness " +
                      fixed(late_p99_us, 0) + " us per forward > 10 % of a forward)");
  return reasons;
}

bool stop_requested(int fd) {
  if (fd < 0) return false;
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 0) > 0 && (p.revents & POLLIN) != 0;
}

client::BenchConfig arm_bench_config(const PresetAbOptions& o, const std::string& label,
                                     const std::vector<std::string>& argv) {
  client::BenchConfig bc;
  bc.backend = client::Backend::openai_chat;
  bc.endpoint = "/v1/chat/completions";
  bc.model = o.model;
  bc.label = label;
  bc.dataset.name = "hf";
  bc.dataset.num_prompts = static_cast<std::size_t>(o.num_prompts);
  bc.dataset.seed = o.seed;
  bc.dataset.output_len = o.output_len;
  bc.request_rate = o.request_rate;
  bc.max_concurrency = o.max_concurrency;
  bc.burstiness = o.burstiness;
  bc.seed = o.seed;
  // The fixed sample sends the same output length on both arms (only the encoder differs); a
  // workload draws each request's length, ended by EOS as vision-arena's are.
  bc.ignore_eos = o.workload.empty();
  bc.save_detailed = true;  // per-request samples: each round's own statistics (the judgement's rounds)
  bc.argv = argv;
  return bc;
}

namespace {

// What `run --clock real` measured and how it compares (run_real_clock fills it;
// report_real_clock_ab prints it and writes the result): the live A/B's arms and rounds, its
// assessment (comparison, verdicts, MDE), and per arm the server's encoder counters summed over its
// rounds and the measured op times its device model loaded.
struct RealClockAbRecord {
  LiveAbOptions live_options;
  LiveAbRounds rounds;
  LiveAbReport live;
  std::vector<nlohmann::json> encoder_totals;
  std::vector<OpTimeTables> op_times;
};

// One arm of one round: the caller's server (encbench serve's, in this process, so the round can
// read the engine's own counters around the measured run, encoder forwards, device busy/idle,
// syncs, and its guards, engine-thread and sim-device lateness, which /metrics lacks).
PresetServerSpec preset_server_spec(const PresetAbOptions& o, const std::string& preset,
                                    const std::filesystem::path& round_dir) {
  PresetServerSpec spec;
  spec.model = o.model;
  spec.device = o.device;
  spec.profiles_dir = o.profiles_dir;
  spec.op_map = o.op_map;
  spec.encoder_preset = preset;
  spec.encoder_mlp = o.encoder_mlp;
  spec.max_num_seqs = o.max_num_seqs;
  spec.max_num_batched_tokens = o.max_num_batched_tokens;
  spec.max_num_encoder_input_tokens = o.max_num_encoder_input_tokens;
  spec.serving_model = o.serving_model;
  spec.async_scheduling = o.async_scheduling;
  spec.api_server_model = o.api_server_model;
  spec.api_server_count = o.api_server_count;
  spec.encoder_clock = o.live_encoder_clock.empty() ? "real" : o.live_encoder_clock;
  spec.seed = o.seed;
  // In the round's directory: the A/B picks the trace up for its idle-gap analysis.
  spec.profile_dir = round_dir / "profile";
  spec.enable_profiling = o.profile;
  return spec;
}

// The two presets as in-process arms of the live A/B (`encbench bench ab`'s rounds, readiness,
// warm-ups, stop and report): one implementation of interleaved rounds, not two.
LiveAbOptions preset_arms(const PresetAbOptions& o, const std::filesystem::path& out_dir,
                          std::vector<OpTimeTables>& op_times) {
  LiveAbOptions lo;
  lo.rounds = o.rounds;
  lo.judging = o.judging;
  lo.out_dir = out_dir;
  lo.stop_fd = o.wiring.stop_fd;
  lo.ready_timeout_s = 120;  // the server is listening once constructed; this bounds a stuck poll
  lo.stop_grace_s = 10;
  for (std::size_t a = 0; a < 2; ++a) {
    ArmRecipe arm;
    arm.name = safe_file_component(o.presets[a]);
    if (o.presets[0] == o.presets[1]) arm.name += a == 0 ? "-A" : "-B";  // an A/A run
    arm.in_process = [&o, &op_times, a](const std::string&, int, const std::filesystem::path& round_dir) {
      StartedPresetServer started = o.wiring.start_server(preset_server_spec(o, o.presets[a], round_dir));
      require(started.server != nullptr, "the server of preset " + o.presets[a] + " did not start");
      if (started.measured_op_times) op_times[a].push_back(std::move(started.measured_op_times));
      return std::move(started.server);
    };
    lo.arms.push_back(std::move(arm));
  }
  return lo;
}

// The project's vision-arena sample, generated once and shared by both arms; the client's
// configuration of every round reads it.
client::BenchConfig preset_bench_config(const PresetAbOptions& o, const std::vector<std::string>& argv,
                                        std::ostream& progress) {
  client::GenerateConfig gen;
  gen.layout = "vision-arena-bench";
  gen.num = static_cast<std::size_t>(o.num_prompts);
  gen.seed = o.seed;
  gen.width = o.image_width;
  gen.height = o.image_height;
  gen.image_format = "jpeg";
  gen.out = o.outputs.result_dir / ("vision-arena-" + std::to_string(o.num_prompts) + ".jsonl");
  if (!o.serving_model_note.empty()) progress << "[run] serving model: " << o.serving_model_note << std::endl;
  progress << "[run] generating " << o.num_prompts << " vision-arena prompts (" << o.image_width << "x"
           << o.image_height << ") -> " << gen.out.string() << std::endl;
  client::generate_dataset(gen);
  client::BenchConfig bc = arm_bench_config(o, "", argv);
  bc.endpoint_given = true;
  bc.base_url = "http://127.0.0.1:1";  // replaced per round
  bc.dataset.path = gen.out.string();
  bc.profile = o.profile;
  bc.scrape_metrics = true;
  client::validate(bc);
  return bc;
}

// Encoder side of the measured windows: the server's counters summed over each arm's rounds.
std::vector<nlohmann::json> encoder_totals(const std::vector<std::vector<LiveArmRound>>& by_arm) {
  std::vector<nlohmann::json> totals;
  for (const auto& rounds : by_arm) {
    std::vector<nlohmann::json> deltas;
    for (const LiveArmRound& r : rounds) deltas.push_back(r.server_side.value("server_engine_delta", nlohmann::json::object()));
    totals.push_back(sum_engine_deltas(deltas));
  }
  return totals;
}

void print_encoder_totals(std::ostream& out, const std::vector<nlohmann::json>& totals) {
  auto row = [&](const std::string& label, const char* key, int digits) {
    const double a = totals[0].value(key, 0.0), b = totals[1].value(key, 0.0);
    std::optional<double> change;
    if (a != 0) change = (b - a) / std::fabs(a);
    out << table_row(label, fixed(a, digits), fixed(b, digits), reports::format_relative_change(change));
  };
  out << "\nEncoder device (server side, same windows, all rounds)\n";
  out << table_row("Metric", "Before", "After", "Comparison");
  row("Encoder forwards", "encoder_forwards", 0);
  row("Images encoded", "images", 0);
  row("Encoder wall time (ms)", "encoder_wall_ms", 1);
  row("Encoder device busy (ms)", "device_busy_ms", 1);
  row("Encoder device idle (ms)", "device_idle_ms", 1);
  row("Encoder device idle (%)", "idle_pct", 2);
  row("Syncs per forward", "syncs_per_forward", 2);
}

// The result (schema encbench-preset-ab/3, which `encbench compare` reads) from
// the A/B's rounds; `ab` carries the live A/B's own document and where it was written.
nlohmann::json preset_result_json(const PresetAbOptions& o, const RealClockAbRecord& record, const LiveAbRun& ab,
                                  const std::vector<std::string>& argv) {
  const auto& by_arm = record.rounds.by_arm;
  nlohmann::json arms = nlohmann::json::array();
  for (std::size_t a = 0; a < by_arm.size(); ++a) {
    nlohmann::json list = nlohmann::json::array();
    for (const LiveArmRound& r : by_arm[a])
      list.push_back({{"round", r.round}, {"position", r.position}, {"serving", r.serving},
                      {"server_engine_delta", r.server_side.value("server_engine_delta", nlohmann::json::object())},
                      {"server_api_server_delta",
                       r.server_side.value("server_api_server_delta", nlohmann::json::object())},
                      {"server", r.server}});
    arms.push_back({{"preset", o.presets[a]}, {"rounds", list}, {"server_engine_delta", record.encoder_totals[a]}});
    if (!record.op_times[a].empty()) arms.back()["measured_op_times"] = op_time_counts_json(record.op_times[a]);
  }
  const auto invalid = ab.result.value("invalid_reasons", std::vector<std::string>{});
  const bool valid = invalid.empty() && ab.result.contains("comparison");
  nlohmann::json doc = make_result_envelope("encbench-preset-ab", kPresetAbSchemaVersion, argv, o.device);
  doc["clock"] = "real";
  doc["scenario"] = to_json(o);
  doc["arms"] = arms;
  doc["verdict_valid"] = valid;
  doc["invalid_reasons"] = invalid;
  if (valid) doc["comparison"] = ab.result["comparison"];
  for (const char* key : {"verdicts", "mde", "plan", "overhead", "headline"})
    if (ab.result.contains(key)) doc[key] = ab.result[key];
  doc["live_ab"] = {{"json", ab.json_path.string()}, {"html", ab.html_path.string()}};
  if (ab.interrupted) doc["invalid_reasons"].push_back("interrupted: only the rounds that finished are pooled");
  doc["verdict_valid"] = doc["verdict_valid"].get<bool>() && !ab.interrupted;
  return doc;
}

std::filesystem::path preset_result_path(const PresetAbOptions& o) {
  const std::filesystem::path result_path =
      o.outputs.result_file.empty() ? o.outputs.result_dir / ("preset-ab-" + safe_file_component(o.presets[0]) + "-vs-" +
                                              safe_file_component(o.presets[1]) + ".json")
                            : o.outputs.result_file;
  for (const auto& dir : {o.outputs.result_dir, result_path.parent_path()}) {
    std::error_code ec;
    if (!dir.empty()) std::filesystem::create_directories(dir, ec);
    require(!ec, "cannot create directory " + dir.string() + " for the results: " + ec.message());
  }
  return result_path;
}

// Each --presets entry (a preset, optionally +toggle=value overrides) must start with an encoder
// preset, refused with the flag the user typed (the encoder's own message names encode's --preset).
void require_known_presets(const std::vector<std::string>& presets) {
  const std::vector<std::string> known = encoder::preset_names();
  for (const std::string& spec : presets) {
    const std::string name = spec.substr(0, spec.find('+'));
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      std::string valid;
      for (const auto& k : known) valid += (valid.empty() ? "" : ", ") + k;
      throw InvalidInput("--presets: unknown preset '" + name + "'; valid presets: " + valid);
    }
    (void)encoder::parse_preset_spec(spec);  // the overrides, with their own messages
  }
}

// --clock real: the live A/B of the two presets (live_ab.hpp), plus the server's encoder counters.
// Measures and assesses; prints nothing (report_real_clock_ab does).
RealClockAbRecord run_real_clock(const PresetAbOptions& o, const std::filesystem::path& result_path,
                                 const std::vector<std::string>& argv, std::ostream& progress) {
  // A caller's wiring fault, not the user's input: the CLI and the tests always set it.
  if (!o.wiring.start_server) throw std::logic_error("the real clock needs PresetAbOptions::start_server");
  const client::BenchConfig base = preset_bench_config(o, argv, progress);
  RealClockAbRecord record;
  record.op_times.resize(2);
  record.live_options = preset_arms(o, result_path.parent_path() / result_path.stem(), record.op_times);
  record.rounds = run_live_ab_rounds(base, record.live_options, progress);
  // The servers are gone: the arms keep their names and settings, not the starters (which refer
  // to this call's options and to record.op_times where it was built).
  for (ArmRecipe& arm : record.live_options.arms) arm.in_process = nullptr;
  record.live = assess_live_ab(record.live_options, record.rounds.by_arm, record.rounds.run, argv);
  record.encoder_totals = encoder_totals(record.rounds.by_arm);
  return record;
}

// The real clock's reporter: the first round of each arm as vLLM prints it, the live A/B's report
// (its own JSON and HTML written), the encoder totals and op times; then the result document.
PresetAbRun report_real_clock_ab(const PresetAbOptions& o, const RealClockAbRecord& record,
                                 std::filesystem::path result_path, const std::vector<std::string>& argv,
                                 std::ostream& out, std::ostream& progress) {
  const auto& by_arm = record.rounds.by_arm;
  for (std::size_t a = 0; a < by_arm.size(); ++a)
    if (!by_arm[a].empty()) out << "\n[" << o.presets[a] << ", round 1 of " << o.rounds << "]\n" << by_arm[a].front().block;
  out << "\nA/B of encoder presets: " << o.presets[0] << " (Before) vs " << o.presets[1] << " (After), " << o.model
      << " on " << o.device << (o.device.rfind("sim:", 0) == 0 ? " (device times MODELLED)" : "") << ", "
      << o.num_prompts << " requests per arm and round\n";
  print_live_ab(out, record.live_options, by_arm, record.rounds.run, record.live);
  const LiveAbRun ab = write_live_ab(record.live_options, by_arm, record.rounds.run, record.live, progress);
  if (!ab.failure.empty()) throw std::runtime_error(ab.failure + " (finished rounds: " + ab.json_path.string() + ")");
  PresetAbRun run;
  run.interrupted = ab.interrupted;
  if (by_arm[0].empty() || by_arm[1].empty()) {  // interrupted before both finished a round
    run.verdict_valid = false;
    run.invalid_reasons = {"interrupted before both presets finished a round"};
    run.result_path = ab.json_path;
    run.result = ab.result;
    return run;
  }
  print_encoder_totals(out, record.encoder_totals);
  print_op_time_counts(out, o.presets, record.op_times);
  nlohmann::json doc = preset_result_json(o, record, ab, argv);
  run.verdict_valid = doc["verdict_valid"].get<bool>();
  run.invalid_reasons = doc["invalid_reasons"].get<std::vector<std::string>>();
  run.result_path = std::move(result_path);
  write_json_file(run.result_path, doc);
  progress << "[run] wrote " << run.result_path.string() << std::endl;
  run.result = std::move(doc);
  return run;
}

}  // namespace

PresetAbRun run_preset_ab(const PresetAbOptions& o, const std::vector<std::string>& argv, std::ostream& out,
                              std::ostream& progress) {
  validate(o);
  require_known_presets(o.presets);
  if (o.clock == RunClock::virtual_time) return run_virtual_preset_ab(o, argv, out, progress);
  if (o.clock == RunClock::both) return run_both_clocks(o, argv, out, progress);
  // Where the result goes is checked before the arms run, not after minutes of serving.
  const std::filesystem::path result_path = preset_result_path(o);
  const RealClockAbRecord record = run_real_clock(o, result_path, argv, progress);
  return report_real_clock_ab(o, record, result_path, argv, out, progress);
}

}  // namespace encbench::scenario
