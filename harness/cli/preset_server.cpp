#include "harness/cli/preset_server.hpp"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/core/clock.hpp"
#include "harness/server/serve_command.hpp"
#include "harness/server/server.hpp"

namespace encbench::cli {
namespace {

// What the server's own counters say about one arm (engine stats after - before): the encoder
// forwards and their device time in exactly the benchmark's window.
nlohmann::json engine_delta(const server::EngineCoreStats& a, const server::EngineCoreStats& b) {
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
          {"late_submissions", b.late_submissions - a.late_submissions},
          {"step_lateness_mean_ms",
           b.timed_steps > a.timed_steps
               ? ns_to_ms(b.step_lateness_sum_ns - a.step_lateness_sum_ns) / static_cast<double>(b.timed_steps - a.timed_steps)
               : 0.0},
          {"prompt_tokens", b.prompt_tokens - a.prompt_tokens},
          {"generation_tokens", b.generation_tokens - a.generation_tokens}};
}

// The live API-server stage in the benchmark's window (after - before): what it modelled, what the
// server really spent parsing, and the requests whose parse outlasted their modelled window.
nlohmann::json api_server_delta(const server::ApiServerStats& a, const server::ApiServerStats& b) {
  return {{"requests", b.requests - a.requests},
          {"modelled_ms", ns_to_ms(b.modelled_ns - a.modelled_ns)},
          {"queue_ms", ns_to_ms(b.queue_ns - a.queue_ns)},
          {"parse_ms", ns_to_ms(b.parse_ns - a.parse_ns)},
          {"held_ms", ns_to_ms(b.held_ns - a.held_ns)},
          {"overruns", b.overruns - a.overruns}};
}

server::ServeOptions serve_options(const scenario::PresetServerSpec& spec) {
  server::ServeOptions so;
  so.port = 0;
  so.model = spec.model;
  so.device = spec.device;
  if (!spec.profiles_dir.empty()) so.profiles_dir = spec.profiles_dir;
  so.op_map = spec.op_map;
  so.encoder_preset = spec.encoder_preset;
  so.encoder_mlp = spec.encoder_mlp;
  so.max_num_seqs = spec.max_num_seqs;
  so.max_num_batched_tokens = spec.max_num_batched_tokens;
  so.max_num_encoder_input_tokens = spec.max_num_encoder_input_tokens;
  so.serving_model = spec.serving_model;
  so.async_scheduling = spec.async_scheduling;
  so.api_server_model = spec.api_server_model;
  so.api_server_count = spec.api_server_count;
  so.encoder_clock = spec.encoder_clock;
  so.seed = spec.seed;
  so.profile_dir = spec.profile_dir;
  so.enable_profiling = spec.enable_profiling;
  return so;
}

class PresetServer final : public scenario::InProcessServer {
 public:
  explicit PresetServer(const scenario::PresetServerSpec& spec) : srv_(server::build_server_config(serve_options(spec))) {
    srv_.start();
  }
  std::shared_ptr<const device::MeasuredOpTimes> measured_op_times() const { return srv_.config().measured_op_times; }
  std::string base_url() const override { return srv_.base_url(); }
  int port() const override { return srv_.port(); }
  void measured_run_starts() override {
    before_ = srv_.engine_stats();
    api_before_ = srv_.api_server_stats();
  }
  void measured_run_ended() override {
    after_ = srv_.engine_stats();
    api_after_ = srv_.api_server_stats();
  }
  void stop() override { srv_.stop(); }
  nlohmann::json round_record() const override {
    return {{"server_engine_delta", engine_delta(before_, after_)},
            {"server_api_server_delta", api_server_delta(api_before_, api_after_)}};
  }
  std::vector<std::string> round_guards(const std::string& where) const override;

 private:
  server::Server srv_;
  server::EngineCoreStats before_, after_;
  server::ApiServerStats api_before_, api_after_;
};

std::vector<std::string> PresetServer::round_guards(const std::string& where) const {
  std::vector<std::string> reasons = scenario::engine_delta_guards(engine_delta(before_, after_), where);
  // The API-server stage holds each request for its modelled cost; a parse that outlasts it
  // delays the request by this machine's decode, which the model does not have.
  const server::ApiServerStats& a = api_before_;
  const server::ApiServerStats& b = api_after_;
  if (b.overruns > a.overruns)
    reasons.push_back(where + "the server's own parse and decode outlasted the modelled API-server stage for " +
                      std::to_string(b.overruns - a.overruns) + " of " + std::to_string(b.requests - a.requests) +
                      " requests");
  return reasons;
}

}  // namespace

scenario::StartedPresetServer start_preset_server(const scenario::PresetServerSpec& spec) {
  auto srv = std::make_unique<PresetServer>(spec);
  scenario::StartedPresetServer started;
  started.measured_op_times = srv->measured_op_times();
  started.server = std::move(srv);
  return started;
}

}  // namespace encbench::cli
