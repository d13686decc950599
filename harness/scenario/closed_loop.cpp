#include "harness/core/text_escape.hpp"
#include "harness/scenario/closed_loop.hpp"
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

#include "harness/client/bench.hpp"
#include "harness/client/dataset.hpp"
#include "harness/core/clock.hpp"
#include "harness/core/error.hpp"
#include "harness/core/result_json.hpp"
#include "harness/scenario/op_time_report.hpp"
#include "harness/server/serve_command.hpp"
#include "harness/server/server.hpp"
#include "reports/compare.hpp"
#include "reports/result.hpp"
#include "reports/tables.hpp"

namespace encbench::scenario {
namespace {

// What the server's own counters say about one arm (engine stats after - before): the encoder
// forwards and their device time in exactly the benchmark's window.
nlohmann::json engine_delta(const server::EngineStats& a, const server::EngineStats& b) {
  const std::int64_t forwards = b.encoder_forwards - a.encoder_forwards;
  const Nanos busy = b.encoder_device_busy_ns - a.encoder_device_busy_ns;
  const Nanos idle = b.encoder_device_idle_ns - a.encoder_device_idle_ns;
  const std::int64_t syncs = b.encoder_syncs - a.encoder_syncs;
  return {{"requests_finished", b.requests_finished - a.requests_finished},
          {"images", b.images - a.images},
          {"encoder_forwards", forwards},
          {"encoder_wall_ms", ns_to_ms(b.encoder_wall_ns - a.encoder_wall_ns)},
          {"device_busy_ms", ns_to_ms(busy)},
          {"device_idle_ms", ns_to_ms(idle)},
          {"idle_pct", busy + idle > 0 ? 100.0 * static_cast<double>(idle) / static_cast<double>(busy + idle) : 0.0},
          {"syncs", syncs},
          {"encoder_lateness_p99_us_mean",
           forwards > 0 ? (b.encoder_lateness_p99_us_sum - a.encoder_lateness_p99_us_sum) / static_cast<double>(forwards)
                        : 0.0},
          {"syncs_per_forward", forwards > 0 ? static_cast<double>(syncs) / static_cast<double>(forwards) : 0.0},
          {"steps", b.timed_steps - a.timed_steps},
          {"lm_modelled_ms", ns_to_ms(b.lm_modelled_ns - a.lm_modelled_ns)},
          {"step_lateness_mean_ms",
           b.timed_steps > a.timed_steps
               ? ns_to_ms(b.step_lateness_sum_ns - a.step_lateness_sum_ns) / static_cast<double>(b.timed_steps - a.timed_steps)
               : 0.0},
          {"prompt_tokens", b.prompt_tokens - a.prompt_tokens},
          {"generation_tokens", b.generation_tokens - a.generation_tokens}};
}

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
                      const std::string& change) {
  std::ostringstream row;
  row << "| " << std::left << std::setw(34) << metric << " | " << std::right << std::setw(12) << before << " | "
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
ClosedLoopRun run_both_clocks(const ClosedLoopOptions& o, const std::vector<std::string>& argv, std::ostream& out,
                              std::ostream& progress) {
  const std::filesystem::path base =
      o.result_file.empty() ? o.result_dir / ("closed-loop-" + safe_file_component(o.name)) : o.result_file.parent_path() / o.result_file.stem();
  ClosedLoopOptions real = o, virt = o;
  real.clock = "real";
  real.result_file = base.string() + "-real.json";
  virt.clock = "virtual";
  virt.seeds = 1;
  virt.result_file = base.string() + "-virtual.json";
  ClosedLoopRun live = run_closed_loop(real, argv, out, progress);
  const ClosedLoopRun modelled = run_closed_loop(virt, argv, out, progress);
  out << "\nAgreement of the clocks (same scenario, same requests; live round 1 vs virtual seed " << o.seed << ")\n";
  out << table_row("Metric", "real", "virtual", "virtual/real");
  nlohmann::json rows = nlohmann::json::array();
  for (std::size_t a = 0; a < o.presets.size(); ++a) {
    const nlohmann::json& r = live.result["arms"][a]["rounds"][0]["serving"];
    const nlohmann::json& v = modelled.result["arms"][a]["seeds"][0]["serving"];
    for (const char* key : {"mean_ttft_ms", "median_ttft_ms", "mean_tpot_ms", "request_throughput"}) {
      const double rv = r.value(key, 0.0), vv = v.value(key, 0.0);
      const double ratio = rv != 0 ? vv / rv : 0.0;
      out << table_row(o.presets[a] + " " + key, fixed(rv, 2), fixed(vv, 2), fixed(ratio, 3));
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
                                        const reports::Gate& gate) {
  require(serving_by_arm.size() == 2, "a closed-loop comparison needs two arms");
  std::vector<reports::RunResult> pooled;
  for (std::size_t a = 0; a < serving_by_arm.size(); ++a) {
    require(!serving_by_arm[a].empty(), "arm " + std::to_string(a) + " has no finished repeat to compare");
    pooled.push_back(pool_repeats(serving_by_arm[a], repeat_names[a]));
  }
  return reports::compare_runs(pooled[0], pooled[1], gate);
}

bool stop_requested(int fd) {
  if (fd < 0) return false;
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 0) > 0 && (p.revents & POLLIN) != 0;
}

client::BenchConfig arm_bench_config(const ClosedLoopOptions& o, const std::string& label,
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
  bc.save_detailed = true;  // per-request samples for the comparison's U test
  bc.argv = argv;
  return bc;
}

ClosedLoopRun run_closed_loop(const ClosedLoopOptions& o, const std::vector<std::string>& argv, std::ostream& out,
                              std::ostream& progress) {
  validate(o);
  if (o.clock == "virtual") return run_virtual_closed_loop(o, argv, out, progress);
  if (o.clock == "both") return run_both_clocks(o, argv, out, progress);
  // Where the result goes is checked before the arms run, not after minutes of serving.
  const std::filesystem::path result_path =
      o.result_file.empty() ? o.result_dir / ("closed-loop-" + safe_file_component(o.presets[0]) + "-vs-" + safe_file_component(o.presets[1]) + ".json")
                            : o.result_file;
  for (const auto& dir : {o.result_dir, result_path.parent_path()}) {
    std::error_code ec;
    if (!dir.empty()) std::filesystem::create_directories(dir, ec);
    require(!ec, "cannot create directory " + dir.string() + " for the results: " + ec.message());
  }
  // The project's vision-arena sample, generated once and shared by both arms.
  client::GenerateConfig gen;
  gen.layout = "vision-arena-bench";
  gen.num = static_cast<std::size_t>(o.num_prompts);
  gen.seed = o.seed;
  gen.width = o.image_width;
  gen.height = o.image_height;
  gen.image_format = "jpeg";
  gen.out = o.result_dir / ("vision-arena-" + std::to_string(o.num_prompts) + ".jsonl");
  progress << "[run] generating " << o.num_prompts << " vision-arena prompts (" << o.image_width << "x"
           << o.image_height << ") -> " << gen.out.string() << std::endl;
  client::generate_dataset(gen);

  // Interleaved rounds: ABBA... so drift hits both arms alike; a fresh server per arm and round.
  struct ArmRound {
    int round = 0;
    int position = 0;  // 0: ran first in its round
    nlohmann::json serving;
    nlohmann::json engine_delta;
    std::string block;
    std::shared_ptr<const device::MeasuredOpTimes> op_times;  // trace: devices (a fresh table per server)
  };
  std::vector<std::vector<ArmRound>> by_arm(o.presets.size());
  std::vector<std::string> invalid_reasons;
  for (int round = 0; round < o.rounds; ++round) {
    const bool reversed = round % 2 == 1;
    for (int position = 0; position < 2; ++position) {
      const std::size_t arm_index = static_cast<std::size_t>(reversed ? 1 - position : position);
      const std::string& preset = o.presets[arm_index];
      server::ServeOptions so;
      so.port = 0;
      so.model = o.model;
      so.device = o.device;
      if (!o.profiles_dir.empty()) so.profiles_dir = o.profiles_dir;
      so.op_map = o.op_map;
      so.encoder_preset = preset;
      so.encoder_mlp = o.encoder_mlp;
      so.max_num_seqs = o.max_num_seqs;
      so.max_num_batched_tokens = o.max_num_batched_tokens;
      so.max_num_encoder_input_tokens = o.max_num_encoder_input_tokens;
      so.serving_model = o.serving_model;
      so.async_scheduling = o.async_scheduling;
      so.seed = o.seed;
      so.profile_dir = o.result_dir / ("profile-" + safe_file_component(preset) + "-round" + std::to_string(round + 1));
      so.enable_profiling = o.profile;  // the endpoints exist only when asked for
      server::Server srv(server::build_server_config(so));
      const auto op_times = srv.config().measured_op_times;
      srv.start();
      progress << "[run] round " << round + 1 << "/" << o.rounds << ", " << preset << ": server on " << srv.base_url()
               << " (" << o.model << ", " << o.device << "), " << o.num_prompts << " requests at " << o.request_rate
               << " req/s, burstiness " << o.burstiness << std::endl;

      client::BenchConfig bc = arm_bench_config(o, preset, argv);
      bc.endpoint_given = true;
      bc.host = "127.0.0.1";
      bc.port = srv.port();
      bc.dataset.path = gen.out.string();
      bc.profile = o.profile;
      bc.scrape_metrics = true;
      client::validate(bc);

      const server::EngineStats before = srv.engine_stats();
      const client::BenchResult result = client::run_benchmark(bc);
      const server::EngineStats after = srv.engine_stats();
      srv.stop();

      ArmRound arm;
      arm.op_times = op_times;
      arm.round = round + 1;
      arm.position = position;
      std::ostringstream block;
      client::print_errors(block, result);
      client::print_vllm_block(block, bc, result);
      client::print_server_sections(block, result);
      arm.block = block.str();
      arm.serving = client::to_vllm_json(bc, result);
      arm.engine_delta = engine_delta(before, after);
      const auto& m = result.metrics;
      const double ttft_mean = m.latency.count("ttft") ? m.latency.at("ttft").mean_ms : 0.0;
      progress << "[run] round " << round + 1 << ", " << preset << ": done, " << m.completed << " completed, "
               << m.failed << " failed, mean TTFT " << fixed(ttft_mean, 2) << " ms" << std::endl;
      // Guards: a verdict needs every request served and a client that kept its schedule.
      const std::string where = "round " + std::to_string(round + 1) + ", " + preset + ": ";
      if (m.failed > 0 || m.completed < o.num_prompts)
        invalid_reasons.push_back(where + std::to_string(m.failed) + " failed / " + std::to_string(m.completed) +
                                  " of " + std::to_string(o.num_prompts) + " completed");
      // The client's lag delays every request by that much: fatal for the comparison once it is
      // no longer small against the TTFTs compared (at least 5 ms, or 10 % of the median TTFT).
      double lag_p99_ms = m.client_lag.max_ms;
      for (const auto& [p, value] : m.client_lag.percentiles_ms)
        if (p == 99) lag_p99_ms = value;
      const double ttft_median = m.latency.count("ttft") ? m.latency.at("ttft").median_ms : 0.0;
      const double lag_limit_ms = std::max(5.0, 0.10 * ttft_median);
      if (m.client_lag.count > 0 && lag_p99_ms > lag_limit_ms)
        invalid_reasons.push_back(where + "the client could not keep its schedule (client lag p99 " +
                                  fixed(lag_p99_ms, 2) + " ms > " + fixed(lag_limit_ms, 2) + " ms)");
      const double late_p99_us = arm.engine_delta.value("encoder_lateness_p99_us_mean", 0.0);
      const double forward_ms = arm.engine_delta.value("encoder_wall_ms", 0.0) /
                                std::max<double>(1.0, arm.engine_delta.value("encoder_forwards", 0.0));
      // The engine thread's own lateness: every step waits out a modelled time on this machine's
      // clock; waking late stretches every step, and the comparison would measure the scheduler.
      const double steps = arm.engine_delta.value("steps", 0.0);
      const double step_ms = steps > 0 ? arm.engine_delta.value("lm_modelled_ms", 0.0) / steps : 0.0;
      const double step_late_ms = arm.engine_delta.value("step_lateness_mean_ms", 0.0);
      if (steps > 0 && step_late_ms > std::max(1.0, 0.02 * step_ms))
        invalid_reasons.push_back(where + "the engine thread could not keep its schedule (it woke a mean " +
                                  fixed(step_late_ms, 2) + " ms after each step's modelled end, > max(1 ms, 2 % of a " +
                                  fixed(step_ms, 1) + " ms step))");
      if (late_p99_us > 0 && late_p99_us * 1e-3 > 0.10 * forward_ms)
        invalid_reasons.push_back(where + "the sim device could not keep up with its model (mean p99 lateness " +
                                  fixed(late_p99_us, 0) + " us per forward > 10 % of a forward)");
      by_arm[arm_index].push_back(std::move(arm));
    }
  }

  // The seeds' table over the pooled rounds (reports: Mann-Whitney on per-request samples, and a
  // change must also clear the spread between rounds).
  std::vector<std::vector<nlohmann::json>> serving(by_arm.size());
  std::vector<std::vector<std::string>> names(by_arm.size());
  for (std::size_t a = 0; a < by_arm.size(); ++a)
    for (const ArmRound& r : by_arm[a]) {
      serving[a].push_back(r.serving);
      names[a].push_back(o.presets[a] + " round " + std::to_string(r.round));
    }
  const reports::Comparison comparison = compare_pooled_arms(serving, names);

  for (std::size_t a = 0; a < by_arm.size(); ++a)
    out << "\n[" << o.presets[a] << ", round 1 of " << o.rounds << "]\n" << by_arm[a].front().block;
  out << "\nClosed loop: " << o.presets[0] << " (Before) vs " << o.presets[1] << " (After), " << o.model << " on "
      << o.device << (o.device.rfind("sim:", 0) == 0 ? " (device times MODELLED)" : "") << ", " << o.rounds
      << " interleaved round(s) of " << o.num_prompts << " requests per arm, pooled\n";
  const bool valid = invalid_reasons.empty();
  if (valid) {
    out << reports::render_terminal(comparison);
  } else {
    out << "NO VERDICT: this machine could not keep up, so the comparison would measure the machine:\n";
    for (const auto& reason : invalid_reasons) out << "  - " << reason << "\n";
  }
  // Encoder side of the same windows (server's counters summed over the rounds).
  std::vector<nlohmann::json> totals;
  for (const auto& rounds : by_arm) {
    std::vector<nlohmann::json> deltas;
    for (const ArmRound& r : rounds) deltas.push_back(r.engine_delta);
    totals.push_back(sum_engine_deltas(deltas));
  }
  const nlohmann::json& d0 = totals[0];
  const nlohmann::json& d1 = totals[1];
  auto row = [&](const std::string& label, const char* key, int digits) {
    const double a = d0[key].get<double>(), b = d1[key].get<double>();
    std::optional<double> change;
    if (a != 0) change = (b - a) / std::fabs(a);
    out << table_row(label, fixed(a, digits), fixed(b, digits), reports::format_change(change));
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
  std::vector<OpTimeTables> op_times(by_arm.size());
  for (std::size_t a = 0; a < by_arm.size(); ++a)
    for (const ArmRound& r : by_arm[a])
      if (r.op_times) op_times[a].push_back(r.op_times);
  print_op_time_counts(out, o.presets, op_times);

  nlohmann::json arms = nlohmann::json::array();
  for (std::size_t a = 0; a < by_arm.size(); ++a) {
    nlohmann::json rounds = nlohmann::json::array();
    for (const ArmRound& r : by_arm[a])
      rounds.push_back({{"round", r.round}, {"position", r.position}, {"serving", r.serving},
                        {"server_engine_delta", r.engine_delta}});
    arms.push_back({{"preset", o.presets[a]}, {"rounds", rounds}, {"server_engine_delta", totals[a]}});
    if (!op_times[a].empty()) arms.back()["measured_op_times"] = op_time_counts_json(op_times[a]);
  }
  nlohmann::json doc = make_result_envelope("encbench-closed-loop", 2, argv, o.device);
  doc["scenario"] = to_json(o);
  doc["arms"] = arms;
  doc["verdict_valid"] = valid;
  doc["invalid_reasons"] = invalid_reasons;
  if (valid) doc["comparison"] = reports::to_json(comparison);
  ClosedLoopRun run;
  run.result_path = result_path;
  run.verdict_valid = valid;
  run.invalid_reasons = invalid_reasons;
  write_json_file(run.result_path, doc);
  progress << "[run] wrote " << run.result_path.string() << std::endl;
  run.result = std::move(doc);
  return run;
}

}  // namespace encbench::scenario
