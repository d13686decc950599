#include "harness/core/number_format.hpp"
#include "harness/scenario/live_ab.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iomanip>
#include <memory>
#include <ostream>
#include <sstream>
#include <thread>

#include <unistd.h>

#include "harness/core/error.hpp"
#include "harness/core/result_json.hpp"
#include "harness/core/stats.hpp"
#include "harness/scenario/preset_ab.hpp"
#include "harness/scenario/pooled.hpp"
#include "harness/scenario/round_traces.hpp"
#include "reports/compare.hpp"
#include "reports/tables.hpp"

namespace encbench::scenario {

namespace {

// An arm's port is held by another process: thrown before the round's directory is made or any
// server started, so a run whose first arm meets it has left nothing behind.
class ArmPortTaken : public RoundFailure {
 public:
  using RoundFailure::RoundFailure;
};

// The port a command arm's server gets this round (--arm-port, else a free one); 0 for in-process
// and URL arms, which bring their own.
int choose_arm_port(const ArmRecipe& arm, const std::string& where) {
  if (arm.in_process || !arm.started()) return 0;
  const int port = arm.fixed_port ? arm.fixed_port : pick_free_port();
  if (port_in_use(port))
    throw ArmPortTaken(where + "port " + std::to_string(port) +
                       " is already in use by another process; stop it or choose another --arm-port");
  return port;
}

// The nearest existing folder on the way to `dir` must be a writable directory: a bad --ab-dir is
// refused before any server starts, and nothing is created until a round has a server to log.
void require_creatable_directory(const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::path existing = std::filesystem::absolute(dir, ec);
  while (!std::filesystem::exists(existing, ec) && existing.has_parent_path() && existing != existing.parent_path())
    existing = existing.parent_path();
  require(std::filesystem::is_directory(existing, ec) && ::access(existing.c_str(), W_OK) == 0,
          "cannot create the result directory " + dir.string() + ": " + existing.string() + " is not a writable directory");
}

using numbers::fixed;

// vLLM's Prometheus counters worth reading beside a round (names as vLLM exports them; labelled
// series of one name are summed). Histograms give the server-side mean as _sum / _count.
nlohmann::json vllm_metrics_summary(const nlohmann::json& delta) {
  nlohmann::json out = nlohmann::json::object();
  if (!delta.is_object()) return out;
  auto sum_of = [&](const std::string& name) -> std::optional<double> {
    std::optional<double> total;
    for (const auto& [key, value] : delta.items()) {
      const std::string base = key.substr(0, key.find('{'));
      if (base == name && value.is_number()) total = total.value_or(0) + value.get<double>();
    }
    return total;
  };
  for (const char* counter : {"vllm:num_preemptions_total", "vllm:prompt_tokens_total", "vllm:generation_tokens_total",
                              "vllm:request_success_total", "vllm:prefix_cache_hits_total", "vllm:prefix_cache_queries_total"})
    if (auto v = sum_of(counter)) out[counter] = *v;
  for (const char* histogram : {"vllm:time_to_first_token_seconds", "vllm:inter_token_latency_seconds",
                                "vllm:request_queue_time_seconds", "vllm:request_prefill_time_seconds",
                                "vllm:e2e_request_latency_seconds"}) {
    const auto sum = sum_of(std::string(histogram) + "_sum"), count = sum_of(std::string(histogram) + "_count");
    if (sum && count && *count > 0) out[std::string(histogram) + ":mean_ms"] = *sum / *count * 1e3;
  }
  return out;
}

// Guards as `encbench run` applies them: every request served, a client that kept its schedule.
std::vector<std::string> round_guards(const client::BenchConfig& bc, const client::BenchResult& result,
                                      const std::string& where) {
  std::vector<std::string> reasons;
  const auto& m = result.metrics;
  if (m.failed > 0 || m.completed < static_cast<std::int64_t>(bc.dataset.num_prompts))
    reasons.push_back(where + std::to_string(m.failed) + " failed / " + std::to_string(m.completed) + " of " +
                      std::to_string(bc.dataset.num_prompts) + " completed");
  double lag_p99_ms = m.client_lag.max_ms;
  for (const auto& [p, value] : m.client_lag.percentiles_ms)
    if (p == 99) lag_p99_ms = value;
  const double ttft_median = m.latency.count("ttft") ? m.latency.at("ttft").median_ms : 0.0;
  const double lag_limit_ms = std::max(5.0, 0.10 * ttft_median);
  if (m.client_lag.count > 0 && lag_p99_ms > lag_limit_ms)
    reasons.push_back(where + "the client could not keep its schedule (client lag p99 " + fixed(lag_p99_ms, 2) +
                      " ms > " + fixed(lag_limit_ms, 2) + " ms)");
  return reasons;
}

// Waits (bounded by the grace period) until nothing listens on the port the server had.
bool wait_port_free(int port, double grace_s) {
  const auto t0 = std::chrono::steady_clock::now();
  while (port_in_use(port)) {
    if (std::chrono::steady_clock::now() - t0 > std::chrono::duration<double>(grace_s)) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

struct StartedServer {
  std::unique_ptr<ServerProcess> process;  // set for a command arm
  std::unique_ptr<InProcessServer> in_process;  // set for an in-process arm; both null: a URL arm
  std::string url;
  int port = 0;
  nlohmann::json info;
  Nanos started_ns = 0;  // when the start began (the process forked, the in-process server built)
};

// Starts (command arms, on `port` from choose_arm_port) and waits for readiness; throws
// RoundFailure / RoundInterrupted.
StartedServer start_server(const ArmRecipe& arm, int round, int port, const std::filesystem::path& round_dir,
                           const LiveAbOptions& o) {
  const std::string where = "arm '" + arm.name + "', round " + std::to_string(round) + ": ";
  StartedServer s;
  s.info = nlohmann::json::object();
  std::function<std::optional<std::string>()> died;
  const auto stdout_path = round_dir / "server.stdout.log", stderr_path = round_dir / "server.stderr.log";
  const auto t0 = std::chrono::steady_clock::now();
  s.started_ns = now_ns();
  if (arm.in_process) {
    try {
      s.in_process = arm.in_process(arm.name, round, round_dir);
    } catch (const InvalidInput&) {
      throw;  // bad settings (a preset, a device): exit 2, not a round failure
    } catch (const std::exception& e) {
      throw RoundFailure(where + "cannot start the in-process server: " + e.what());
    }
    s.url = s.in_process->base_url();
    s.port = s.in_process->port();
    s.info = {{"in_process", true}, {"port", s.port}};
  } else if (arm.started()) {
    s.port = port;
    ServerProcess::Launch launch;
    launch.command = expand_recipe(arm.command, s.port, round, arm.name, round_dir);
    for (const auto& [key, value] : arm.env)  // placeholders work in values too (profiler directories)
      launch.env.emplace_back(key, expand_recipe(value, s.port, round, arm.name, round_dir));
    launch.cwd = arm.cwd;
    launch.stdout_path = stdout_path;
    launch.stderr_path = stderr_path;
    try {
      s.process = std::make_unique<ServerProcess>(launch);
    } catch (const std::exception& e) {
      throw RoundFailure(where + "cannot start the server: " + e.what());
    }
    s.url = "http://127.0.0.1:" + std::to_string(s.port);
    s.info = {{"command", launch.command}, {"port", s.port}, {"pgid", s.process->pgid()},
              {"stdout", stdout_path.string()}, {"stderr", stderr_path.string()}};
    died = [&s] { return s.process->exited(); };
  } else {
    s.url = arm.url;
    s.info = {{"url", arm.url}};
  }
  const ReadyCheck ready = wait_until_ready(s.url, o.ready_timeout_s, o.stop_fd, died);
  // Start to ready: an in-process server is built (model, device) before its port answers.
  s.info["ready_ms"] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  s.info["ready_endpoint"] = ready.endpoint;
  // Ready, but our process gone: another process answered on that port.
  if (ready.ready && s.process)
    if (auto why = s.process->exited())
      throw RoundFailure(where + "the server process " + *why + " but something else answered on port " +
                         std::to_string(s.port) + " (port taken?); log " + stderr_path.string());
  if (ready.ready) return s;
  if (s.process) s.process->stop(o.stop_grace_s);
  if (s.in_process) s.in_process->stop();
  if (ready.interrupted) throw RoundInterrupted(where + "interrupted while waiting for the server");
  std::string message = where + ready.failure + " (" + s.url + ")";
  if (s.process) {
    const std::string tail = log_tail(stderr_path);
    message += "; stderr " + stderr_path.string() + (tail.empty() ? " is empty" : ": " + tail);
  }
  throw RoundFailure(message);
}

// Stops a started server and records how long that took; the port must come free.
void stop_server(StartedServer& s, const LiveAbOptions& o) {
  if (s.in_process) {
    const auto t0 = std::chrono::steady_clock::now();
    s.in_process->stop();
    s.info["stop_ms"] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    s.info["port_free_after_stop"] = wait_port_free(s.port, o.stop_grace_s);
    return;
  }
  if (!s.process) return;
  const StopReport stop = s.process->stop(o.stop_grace_s);
  s.info["stop_ms"] = stop.stop_ms;
  s.info["killed_after_grace"] = stop.killed;
  s.info["exit"] = stop.exit;
  s.info["group_left"] = s.process->group_alive();
  s.info["port_free_after_stop"] = wait_port_free(s.port, o.stop_grace_s);
}

// Start-up to the first token the fresh server served (its first request's first choices
// event), once per round: the warm-ups' if there were any, else the measured run's.
void note_first_token(StartedServer& server, const client::BenchResult& result) {
  if (server.info.contains("first_token_ms")) return;
  Nanos first = 0;
  for (const auto& r : result.run.records)
    if (r.first_choices_ns > 0 && (first == 0 || r.first_choices_ns < first)) first = r.first_choices_ns;
  if (first > 0) server.info["first_token_ms"] = ns_to_ms(first - server.started_ns);
}

// The warm-ups (a short run of the same workload at rate inf, discarded) and the measured run.
// Warm-ups are not bench's own (copies of the first request): its run shares the stop fd and would
// swallow a Ctrl-C that arrives during them. Connection errors come back in `client_error`.
client::BenchResult measure_round(const client::BenchConfig& base, client::BenchConfig& bc, StartedServer& server,
                                  std::string& client_error) {
  client::BenchResult result;
  try {
    if (base.num_warmups > 0) {
      client::BenchConfig warm = bc;
      warm.num_warmups = 0;
      warm.dataset.num_prompts = static_cast<std::size_t>(base.num_warmups);
      warm.request_rate = INFINITY;
      warm.profile = warm.scrape_metrics = warm.save_detailed = false;
      warm.goodput_slo_ms.clear();
      bc.num_warmups = 0;
      const auto w0 = std::chrono::steady_clock::now();
      const client::BenchResult warmed = client::run_benchmark(warm);
      if (warmed.run.interrupted) result.run.interrupted = true;
      server.info["warmup_ms"] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - w0).count();
      note_first_token(server, warmed);
    }
    if (!result.run.interrupted) {
      if (server.in_process) server.in_process->measured_run_starts();
      result = client::run_benchmark(bc);
      if (server.in_process) server.in_process->measured_run_ended();
      // What the arm's server ran on, for the record (the client asks only when it looks up the
      // model); a server that does not say (vLLM) leaves it empty, and a failed ask changes nothing.
      if (result.server_device.empty()) try {
          (void)client::first_model_id_and_root(client::base_url(bc), {}, 5, &result.server_device);
        } catch (const std::exception&) {
          result.server_device.clear();
        }
      note_first_token(server, result);
    }
  } catch (const client::ServerUnreachable& e) {
    client_error = e.what();
  }
  return result;
}

// The finished round as recorded: vLLM's result keys, the server block, guards; serving.json written.
LiveArmRound record_round(const client::BenchConfig& bc, const client::BenchResult& result, const StartedServer& server,
                          int round, int position, const std::filesystem::path& round_dir, const std::string& where) {
  LiveArmRound r;
  r.round = round;
  r.position = position;
  r.serving = client::to_vllm_json(bc, result);
  r.serving["server_metrics_summary"] = vllm_metrics_summary(result.server_metrics_delta);
  r.server = server.info;
  r.server["prepare_ms"] = static_cast<double>(result.prepare_ns) / 1e6;  // dataset + requests, untimed
  r.server["traces"] = analyze_round_traces(round_dir);  // profiler traces the server wrote there
  r.server["metrics_message"] = result.metrics_message;
  r.server["profile_message"] = result.profile_message;
  std::ostringstream block;
  client::print_errors(block, result);
  client::print_vllm_block(block, bc, result);
  client::print_server_sections(block, result);
  r.block = block.str();
  r.invalid = round_guards(bc, result, where);
  if (server.in_process) {
    r.server_side = server.in_process->round_record();
    for (auto& reason : server.in_process->round_guards(where)) r.invalid.push_back(std::move(reason));
  }
  write_json_file(round_dir / "serving.json", r.serving);
  return r;
}

}  // namespace

LiveArmRound run_arm_round(const client::BenchConfig& base, const ArmRecipe& arm, int round, int position,
                           const LiveAbOptions& o, std::ostream& progress) {
  const std::string where = "arm '" + arm.name + "', round " + std::to_string(round) + ": ";
  const std::filesystem::path round_dir = o.out_dir / ("round-" + std::to_string(round) + "-" + arm.name);
  const int port = choose_arm_port(arm, where);
  std::error_code ec;
  std::filesystem::create_directories(round_dir, ec);
  if (ec) throw RoundFailure(where + "cannot create " + round_dir.string() + ": " + ec.message());
  const auto t0 = std::chrono::steady_clock::now();
  StartedServer server = start_server(arm, round, port, round_dir, o);
  progress << o.progress_tag << " round " << round << "/" << o.rounds << ", " << arm.name << ": ready on " << server.url << " after "
           << fixed(server.info["ready_ms"].get<double>(), 0) << " ms (" << server.info["ready_endpoint"].get<std::string>()
           << ")" << std::endl;
  if (o.on_ready) o.on_ready(arm.name, round, server.process ? server.process->pgid() : 0);

  client::BenchConfig bc = base;
  bc.base_url = server.url;
  bc.label = arm.name;
  bc.save_detailed = true;   // per-request samples: each round's own statistics (the judgement's rounds)
  bc.save_result = false;
  bc.append_result = false;
  bc.scrape_metrics = true;  // what a server lacks is noted in metrics_message
  bc.stop_fd = o.stop_fd;
  bc.progress = false;
  std::string client_error;
  const client::BenchResult result = measure_round(base, bc, server, client_error);
  if (o.after_measured && client_error.empty() && !result.run.interrupted)
    server.info["after_bench"] = o.after_measured(arm.name, round, server.url, round_dir);
  // Every round sends the same dataset: how its prompts were counted is said once, by the first.
  if (round == 1 && position == 0 && !result.tokenizer_note.empty())
    progress << o.progress_tag << " " << result.tokenizer_note << std::endl;
  std::optional<std::string> died = server.process ? server.process->exited() : std::nullopt;
  // The client failed to reach a server that was ready: if it is dying, say so rather than
  // quote the connection error (its exit shows a moment after its sockets closed).
  for (int i = 0; i < 200 && !died && server.process && !client_error.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    died = server.process->exited();
  }
  stop_server(server, o);
  server.info["round_wall_ms"] =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (result.run.interrupted) throw RoundInterrupted(where + "interrupted during the measured run");
  if (died)
    throw RoundFailure(where + "the server process " + *died + " during the round; stderr " +
                       server.info.value("stderr", std::string()) + ": " +
                       log_tail(server.info.value("stderr", std::string())));
  if (!client_error.empty()) throw RoundFailure(where + client_error);
  LiveArmRound r = record_round(bc, result, server, round, position, round_dir, where);
  const auto& m = result.metrics;
  progress << o.progress_tag << " round " << round << ", " << arm.name << ": " << m.completed << " completed, " << m.failed
           << " failed, mean TTFT " << fixed(m.latency.count("ttft") ? m.latency.at("ttft").mean_ms : 0.0, 2)
           << " ms; stopped in " << fixed(server.info.value("stop_ms", 0.0), 0) << " ms" << std::endl;
  return r;
}

void validate(const LiveAbOptions& o) {
  validate_arms(o.arms);
  require(o.rounds >= 1 && o.rounds <= 1000, "--rounds must be 1..1000, got " + std::to_string(o.rounds));
  require(o.ready_timeout_s > 0 && o.ready_timeout_s <= 86400, "--ready-timeout must be in (0, 86400] seconds");
  require(o.stop_grace_s >= 0 && o.stop_grace_s <= 3600, "--stop-grace must be 0..3600 seconds");
  judgement::validate(o.judging);
  if (o.plan_change) {
    require(*o.plan_change > 0 && *o.plan_change < 1, "--plan expects a change in (0, 100) %");
    require(o.rounds >= 2, "--plan needs a pilot of at least 2 rounds (--rounds 2 or more)");
  }
}

LiveAbRounds run_live_ab_rounds(const client::BenchConfig& base, const LiveAbOptions& o, std::ostream& progress) {
  validate(o);
  require_creatable_directory(o.out_dir);
  LiveAbRounds rounds;
  rounds.by_arm.resize(2);
  LiveAbRun& run = rounds.run;
  for (int round = 1; round <= o.rounds && run.failure.empty() && !run.interrupted; ++round) {
    const bool reversed = round % 2 == 0;  // ABBA: A first in odd rounds
    for (int position = 0; position < 2; ++position) {
      const std::size_t a = static_cast<std::size_t>(reversed ? 1 - position : position);
      if (stop_requested(o.stop_fd)) {
        run.interrupted = true;
        break;
      }
      try {
        rounds.by_arm[a].push_back(run_arm_round(base, o.arms[a], round, position, o, progress));
      } catch (const RoundInterrupted& e) {
        run.interrupted = true;
        progress << "[ab] " << e.what() << std::endl;
        break;
      } catch (const ArmPortTaken& e) {
        // The run never started: one error (exit 2, as `serve` on a taken port) and no directory.
        if (round == 1 && position == 0) throw InvalidInput(e.what());
        run.failure = e.what();  // the report says it, once
        break;
      } catch (const RoundFailure& e) {
        run.failure = e.what();  // the report says it, once
        break;
      }
    }
  }
  return rounds;
}

LiveAbRun run_live_ab(const client::BenchConfig& base, const LiveAbOptions& o, const std::vector<std::string>& argv,
                      std::ostream& out, std::ostream& progress) {
  LiveAbRounds rounds = run_live_ab_rounds(base, o, progress);
  return report_live_ab(o, rounds.by_arm, std::move(rounds.run), argv, out, progress);
}

}  // namespace encbench::scenario
