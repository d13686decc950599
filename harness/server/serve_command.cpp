#include "harness/server/serve_command.hpp"

#include "harness/core/result_json.hpp"
#include "harness/device/sim_profile.hpp"
#include "harness/serving/lm_roofline.hpp"

#include <nlohmann/json.hpp>

#include <sys/resource.h>

#include <algorithm>
#include <csignal>
#include <ostream>

#include "harness/core/error.hpp"
#include "harness/core/result_json.hpp"
#include "harness/device/device.hpp"
#include "harness/device/measured_op_times.hpp"
#include "harness/device/sim_profile.hpp"
#include "harness/encoder/encoder.hpp"
#include "harness/encoder/model_config.hpp"
#include "harness/encoder/toggles.hpp"
#include "harness/server/encoder_profiler.hpp"
#include "harness/serving/lm_roofline.hpp"
#include "harness/serving/scheduler_counters_json.hpp"
#include "harness/serving/serving_model.hpp"

#include <optional>

namespace encbench::server {

int parse_image_limit(const std::string& text) {
  nlohmann::json value;
  try {
    value = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception&) {  // parse_error, or out_of_range for 1e400
    throw InvalidInput("--limit-mm-per-prompt must be an integer or JSON like '{\"image\": 4}', got '" + text + "'");
  }
  if (value.is_object()) {
    const auto it = value.find("image");
    require(it != value.end(), "--limit-mm-per-prompt JSON needs an \"image\" key");
    value = *it;
  }
  require(value.is_number_integer() && value.get<std::int64_t>() >= 0 && value.get<std::int64_t>() < 100000,
          "--limit-mm-per-prompt image limit must be a non-negative integer");
  return static_cast<int>(value.get<std::int64_t>());
}

void apply_mm_processor_kwargs(const std::string& text, vision::VisionGeometry& geometry) {
  if (text.empty()) return;
  nlohmann::json value;
  try {
    value = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception&) {  // parse_error, or out_of_range for 1e400
    throw InvalidInput("--mm-processor-kwargs must be a JSON object like '{\"max_pixels\": 1003520}', got '" +
                       text + "'");
  }
  require(value.is_object(), "--mm-processor-kwargs must be a JSON object");
  constexpr std::int64_t kLimit = std::int64_t{1} << 31;
  for (const auto& [key, v] : value.items()) {
    std::int64_t* target = key == "min_pixels" ? &geometry.min_pixels
                           : key == "max_pixels" ? &geometry.max_pixels
                                                 : nullptr;
    require(target != nullptr, "--mm-processor-kwargs: unsupported key '" + key +
                                   "' (supported: min_pixels, max_pixels)");
    require(v.is_number_integer() && v.get<std::int64_t>() >= 1 && v.get<std::int64_t>() <= kLimit,
            "--mm-processor-kwargs: " + key + " must be an integer in [1, 2^31]");
    *target = v.get<std::int64_t>();
  }
  require(geometry.min_pixels <= geometry.max_pixels,
          "--mm-processor-kwargs: min_pixels (" + std::to_string(geometry.min_pixels) +
              ") must not exceed max_pixels (" + std::to_string(geometry.max_pixels) + ")");
}

namespace {

// Server geometry: the built-in serving geometry when the model has one (it carries vLLM's serving
// pixel cap), else the encoder model file's patch/merge/pixel limits (tiny test models, user files).
vision::VisionGeometry geometry_for_model(const std::string& model) {
  for (const auto& known : vision::known_vision_models())
    if (known == model) return vision::vision_geometry_for(model);
  const encoder::ModelConfig m = encoder::load_model(model);
  vision::VisionGeometry g;
  g.model = m.name;
  g.patch_size = m.patch_size;
  g.temporal_patch_size = m.temporal_patch_size;
  g.merge_size = m.spatial_merge_size;
  g.min_pixels = m.image_min_pixels;
  g.max_pixels = m.image_max_pixels;
  return g;
}

}  // namespace

serving::EncoderStepOptions encoder_step_options(const ServeOptions& o) {
  serving::EncoderStepOptions e;
  e.model = o.model;
  e.device = o.device;
  e.profiles_dir = o.profiles_dir;
  e.op_map = o.op_map;
  e.encoder_preset = o.encoder_preset;
  e.encoder_mlp = o.encoder_mlp;
  e.device_threads = o.device_threads;
  e.device_memory_gb = o.device_memory_gb;
  e.device_cache_keep_mb = o.device_cache_keep_mb;
  e.dispatch_us_per_op = o.encoder_dispatch_us;
  e.host_ms_per_step = o.encoder_host_ms_per_step;
  e.host_post_forward_share = std::max(0.0, o.encoder_host_post_forward_share);
  e.seed = o.seed;
  // The live server's forward on this machine's clock, or (--encoder-clock virtual) on the
  // virtual one with the host model the virtual loop charges.
  e.virtual_clock = o.encoder_clock == "virtual";
  if (e.virtual_clock && !o.encoder_host_model.empty()) e.host_model = o.encoder_host_model;
  return e;
}

namespace {

// Where the request parser and the HTTP layer stop: address, limits, timeouts, decode lanes, faults.
void apply_http_options(const ServeOptions& o, ServerConfig& config) {
  require(o.port >= 0 && o.port <= 65535, "--port must be in [0, 65535]");
  config.host = o.host;
  config.port = static_cast<std::uint16_t>(o.port);
  config.request.geometry = geometry_for_model(o.model);
  apply_mm_processor_kwargs(o.mm_processor_kwargs, config.request.geometry);
  config.request.served_model_name = o.served_model_name.empty() ? o.model : o.served_model_name;
  config.request.limit_images_per_prompt = parse_image_limit(o.limit_mm_per_prompt);
  config.request.max_model_len = o.max_model_len;
  if (!o.allowed_local_media_path.empty()) {
    std::error_code ec;
    const auto root = std::filesystem::canonical(o.allowed_local_media_path, ec);
    require(!ec && std::filesystem::is_directory(root),
            "--allowed-local-media-path '" + o.allowed_local_media_path + "' is not a directory");
    config.request.image_policy.allowed_local_media_path = root;
  }
  require(o.max_body_bytes >= 1, "--max-body-bytes must be at least 1");
  config.max_body_bytes = static_cast<std::size_t>(o.max_body_bytes);
  require(o.max_inflight_bytes >= o.max_body_bytes,
          "--max-inflight-bytes must be at least --max-body-bytes (" + std::to_string(o.max_body_bytes) + ")");
  config.max_inflight_bytes = static_cast<std::size_t>(o.max_inflight_bytes);
  config.request.image_policy.max_file_bytes = o.max_body_bytes;
  require(o.header_timeout_s > 0, "--header-timeout-s must be positive");
  config.header_timeout_ns = static_cast<Nanos>(o.header_timeout_s * 1e9);
  config.decode_threads = o.decode_threads;
  config.max_decode_queue = o.max_decode_queue;
  require(o.decode_timeout_s > 0 && o.decode_timeout_s <= 86400, "--decode-timeout-s must be in (0, 86400]");
  config.decode_timeout_ns = static_cast<Nanos>(o.decode_timeout_s * 1e9);
  require(o.max_unsent_bytes >= 1024 && o.max_unsent_bytes <= (std::int64_t{1} << 32),
          "--max-unsent-bytes must be in [1024, 4294967296]");
  config.max_unsent_bytes = static_cast<std::size_t>(o.max_unsent_bytes);
  config.eos_mean_tokens = o.eos_mean_tokens;
  config.seed = o.seed;
  config.faults = FaultConfig{o.fail_rate, o.disconnect_rate, o.stall_ms, o.seed};
}

// The scheduler's limits: batch, encoder budget (bounded by one forward's patches), waiting queue.
void apply_engine_limits(const ServeOptions& o, ServerConfig& config) {
  config.engine.max_num_seqs = o.max_num_seqs;
  config.engine.max_num_batched_tokens = o.max_num_batched_tokens;
  require(o.max_num_batched_tokens >= 1, "--max-num-batched-tokens must be at least 1");
  require(o.max_num_encoder_input_tokens >= 0, "--max-num-encoder-input-tokens must not be negative");
  // One encoder step is one forward: its patches (tokens * merge^2) stay within encbench
  // encode's limit of 262144 per forward. The default (vLLM's: --max-num-batched-tokens) is
  // clamped to it; an explicit value above it is an error.
  const std::int64_t merge2 = config.request.geometry.merge_size * config.request.geometry.merge_size;
  const std::int64_t cap = kMaxPatchesPerForward / std::max<std::int64_t>(1, merge2);
  require(o.max_num_encoder_input_tokens <= cap,
          "--max-num-encoder-input-tokens " + std::to_string(o.max_num_encoder_input_tokens) + " would allow " +
              std::to_string(o.max_num_encoder_input_tokens * merge2) + " patches in one encoder forward; the limit is " +
              std::to_string(kMaxPatchesPerForward) + " (at most " + std::to_string(cap) + " tokens for this model)");
  config.engine.max_num_encoder_input_tokens =
      o.max_num_encoder_input_tokens > 0 ? o.max_num_encoder_input_tokens : std::min(o.max_num_batched_tokens, cap);
  config.request.max_num_encoder_input_tokens = config.engine.max_num_encoder_input_tokens;
  require(o.max_waiting >= 1, "--max-waiting must be at least 1");
  config.engine.max_waiting = o.max_waiting;
  require(o.device_memory_gb >= 0 && o.device_memory_gb <= 1e6, "--device-memory-gb must be in [0, 1e6]");
  require(o.device_cache_keep_mb >= 0 && o.device_cache_keep_mb <= 1e9, "--device-cache-keep-mb must be in [0, 1e9]");
  config.engine.null_mode = o.null_mode;
  require(o.device == "cpu" || o.device.rfind("sim:", 0) == 0 || o.device.rfind("trace:", 0) == 0,
          "--device must be cpu or sim:<profile> (or trace:<file>[@<profile>]), got '" + o.device + "'");
}

// A sim device's profile file: the name in --profiles-dir (or the device library's lookup, so
// any working directory works), or a path.
std::filesystem::path sim_profile_file(const ServeOptions& o, const std::string& sim_profile) {
  const std::filesystem::path dir = !o.profiles_dir.empty() && std::filesystem::is_directory(o.profiles_dir)
                                        ? o.profiles_dir
                                        : device::default_profiles_dir();
  // The device library's lookup: an unknown profile is refused with the known ones listed, as by
  // encode and run.
  return device::load_sim_profile(sim_profile, dir).path;
}

// The LM step's cost on a sim device: the profile's lm_cost_model, else a roofline of the model's
// published dimensions, else the serving model's coefficients; then the --lm-* overrides.
void apply_lm_cost(const ServeOptions& o, const std::optional<serving::ServingModel>& serving, ServerConfig& config) {
  require(o.lm_fixed_ms >= 0 && o.lm_fixed_ms <= 1e4, "--lm-fixed-ms must be in [0, 1e4]");
  if (const std::string sim_profile = device::sim_profile_name(o.device); !sim_profile.empty()) {
    const std::filesystem::path profile = sim_profile_file(o, sim_profile);
    const nlohmann::json profile_doc = read_json_file(profile);
    config.engine.lm = serving::step_cost_from_profile(profile_doc, profile.string());
    // (null mode has no LM step, and its --model need not name a preset.)
    serving::LanguageModelDims dims;
    if (!o.null_mode && !profile_doc.contains("lm_cost_model")) {
      const std::filesystem::path model_file = encoder::find_model_file(o.model);
      if (serving::read_language_model(read_json_file(model_file), model_file.string(), dims)) {
        const serving::LmRoofline r =
            lm_roofline(dims, device::parse_sim_profile(profile_doc, profile.string()), o.lm_fixed_ms);
        config.engine.lm.base_ms = r.fixed_ms + r.weights_ms;
        config.engine.lm.per_seq_ms = 0;
        config.engine.lm.per_prefill_token_ms = r.prefill_ms_per_token;
        config.engine.lm.per_context_token_ms = r.context_ms_per_token;
        config.engine.lm.source = "roofline of " + dims.source + " on " + profile.string() + ": " + r.derivation;
      }
    }
    if (serving && !o.null_mode) {
      const std::filesystem::path model_file = encoder::find_model_file(o.model);
      require(serving::read_language_model(read_json_file(model_file), model_file.string(), dims),
              "--serving-model needs a model preset with a language_model block; " + model_file.string() + " has none");
      const device::SimProfile sim = device::parse_sim_profile(profile_doc, profile.string());
      config.engine.lm = serving::step_cost_model(*serving, dims, sim, o.async_scheduling, profile.parent_path());
      if (o.kv_cache_tokens < 0) config.engine.kv_capacity_tokens = serving::kv_capacity_tokens(*serving, dims);
    }
  } else {
    require(!serving, "--serving-model needs a sim device (its coefficients are modelled device times)");
  }
  config.engine.lm.async_scheduling = o.async_scheduling;
  require(o.kv_cache_tokens >= -1, "--kv-cache-tokens must be 0 (unlimited) or positive");
  if (o.kv_cache_tokens >= 0) config.engine.kv_capacity_tokens = o.kv_cache_tokens;
  if (o.lm_per_context_token_ms >= 0) config.engine.lm.per_context_token_ms = o.lm_per_context_token_ms;
  if (o.lm_base_ms >= 0) config.engine.lm.base_ms = o.lm_base_ms;
  if (o.lm_per_seq_ms >= 0) config.engine.lm.per_seq_ms = o.lm_per_seq_ms;
  if (o.lm_per_prefill_token_ms >= 0) config.engine.lm.per_prefill_token_ms = o.lm_per_prefill_token_ms;
}

// /stop_profile's answer also names the server's encoder preset and model, so that a client's
// page (bench serve --plot-timeline) can call the run by them rather than by its backend.
ProfileReply with_server_identity(ProfileReply reply, ProfileAction action, const std::string& preset,
                                  const std::string& model) {
  if (action != ProfileAction::stop || reply.status != 200) return reply;
  nlohmann::json body = nlohmann::json::parse(reply.body, nullptr, false);
  if (!body.is_object()) return reply;
  body["server"] = {{"encoder_preset", preset}, {"model", model}};
  reply.body = body.dump();
  return reply;
}

// The encoder step: the real encoder path on --device with its profiler, or the cost model.
void apply_encoder(const ServeOptions& o, ServerConfig& config) {
  (void)encoder::parse_preset_spec(o.encoder_preset);  // throws InvalidInput listing the presets
  require(o.encoder == "real" || o.encoder == "cost-model",
          "--encoder must be real or cost-model, got '" + o.encoder + "'");
  if (o.null_mode) return;
  require(o.encoder_clock == "real" || o.encoder_clock == "virtual",
          "--encoder-clock must be real or virtual, got '" + o.encoder_clock + "'");
  require(o.encoder_clock == "real" || (o.encoder == "real" && o.device.rfind("sim:", 0) == 0),
          "--encoder-clock virtual needs --encoder real on a sim:<profile> device, got --encoder " + o.encoder +
              " --device " + o.device);
  if (o.encoder != "real") {
    config.engine.encoder = make_cost_model_encoder(EncoderCostModel{});
    return;
  }
  if (o.encoder_clock == "virtual") config.engine.encoder_time = EngineCoreConfig::EncoderTime::modelled;
  require(o.profile_max_forwards >= 1, "--profile-max-forwards must be at least 1");
  require(o.profile_max_steps >= 1 && o.profile_max_requests >= 1,
          "--profile-max-steps and --profile-max-requests must be at least 1");
  config.engine.timeline = std::make_shared<EngineTimelineRecorder>(static_cast<std::size_t>(o.profile_max_steps),
                                                                    static_cast<std::size_t>(o.profile_max_requests));
  require(o.profile_max_kept >= 1, "--profile-max-kept must be at least 1");
  auto profiler = std::make_shared<EncoderProfiler>(o.profile_dir, static_cast<std::size_t>(o.profile_max_forwards),
                                                    config.engine.timeline, static_cast<std::size_t>(o.profile_max_kept));
  serving::EncoderStep real = serving::make_encoder_step(encoder_step_options(o), profiler);
  config.engine.encoder = std::move(real.hook);
  config.engine.on_idle = std::move(real.on_idle);
  config.measured_op_times = std::move(real.measured_op_times);
  // vLLM's practice: the profiler endpoints exist only when asked for (anyone who can reach
  // the port could otherwise fill the profile directory).
  if (o.enable_profiling)
    config.profile = [profiler, preset = o.encoder_preset, model = o.model](ProfileAction action) {
      return with_server_identity(profiler->handle(action), action, preset, model);
    };
}

// vLLM's API-server stage: --api-server-model, else the serving model's, else none; then
// --api-server-count. Null mode (no engine) has none.
void apply_api_server(const ServeOptions& o, const std::optional<serving::ServingModel>& serving,
                      ServerConfig& config) {
  const std::string name = !o.api_server_model.empty() ? o.api_server_model : serving ? serving->api_server : "none";
  const std::filesystem::path profiles = !o.profiles_dir.empty() && std::filesystem::is_directory(o.profiles_dir)
                                             ? o.profiles_dir
                                             : device::default_profiles_dir();
  config.api_server =
      serving::load_api_server_model(name, profiles.parent_path(), device::default_profiles_dir().parent_path());
  if (o.api_server_count != -1) serving::set_api_server_count(config.api_server, o.api_server_count, "--api-server-count");
  require(o.max_api_server_queue >= 1 && o.max_api_server_queue <= kMaxApiServerQueue,
          "--max-api-server-queue must be in [1, " + std::to_string(kMaxApiServerQueue) + "], got " +
              std::to_string(o.max_api_server_queue));
  config.max_api_server_queue = o.max_api_server_queue;
  require(!(o.null_mode && config.api_server.enabled()), "--null has no engine: it takes no API-server stage "
                                                         "(--api-server-model none or --api-server-count 0)");
}

}  // namespace

ServerConfig build_server_config(const ServeOptions& options) {
  ServerConfig config;
  ServeOptions o = options;
  if (!o.null_mode) config.device = o.device;
  std::optional<serving::ServingModel> serving;
  if (!o.serving_model.empty()) {
    serving = serving::load_serving_model(o.serving_model);
    if (o.encoder_dispatch_us < 0) o.encoder_dispatch_us = serving->encoder_dispatch_us_per_op.value;
    if (o.encoder_host_ms_per_step < 0) o.encoder_host_ms_per_step = serving->encoder_host_ms_per_step.value;
    if (o.encoder_host_post_forward_share < 0)
      o.encoder_host_post_forward_share = serving->encoder_host_post_forward_share.value;
    if (o.encoder_host_model.empty()) o.encoder_host_model = serving->encoder_host_model;
  }
  require(o.encoder_dispatch_us <= 1e5, "--encoder-dispatch-us must be at most 1e5");
  require(o.encoder_host_ms_per_step <= 1e4, "--encoder-host-ms-per-step must be at most 1e4");
  require(o.encoder_host_post_forward_share <= 1, "--encoder-host-post-forward-share must be in [0, 1]");
  apply_http_options(o, config);
  apply_engine_limits(o, config);
  apply_lm_cost(o, serving, config);
  apply_encoder(o, config);
  apply_api_server(o, serving, config);
  return config;
}

namespace {

// The API-server stage: its model, and what it held against what the server really spent.
nlohmann::json api_server_json(const Server& server) {
  const ApiServerStats a = server.api_server_stats();
  return {{"model", serving::to_json(server.config().api_server)},
          {"requests", a.requests},
          {"modelled_s", ns_to_s(a.modelled_ns)},
          {"queue_s", ns_to_s(a.queue_ns)},
          {"parse_s", ns_to_s(a.parse_ns)},
          {"held_s", ns_to_s(a.held_ns)},
          {"overruns", a.overruns},
          {"processor_cache_hits", a.processor_cache_hits},
          {"processor_cache_evictions", a.processor_cache_evictions}};
}

// The engine core's counters; the scheduler's cache counters by the function the virtual engine
// JSON uses too, so the two list the same keys.
nlohmann::json engine_summary_json(const EngineCoreStats& e) {
  nlohmann::json engine = {{"steps", e.scheduler.steps},
                           {"requests_admitted", e.requests_admitted},
                           {"requests_finished", e.requests_finished},
                           {"requests_aborted", e.requests_aborted},
                           {"requests_failed", e.requests_failed},
                           {"prompt_tokens", e.prompt_tokens},
                           {"generation_tokens", e.generation_tokens},
                           {"images", e.images},
                           {"encoder_forwards", e.encoder_forwards},
                           {"encoder_forward_s", ns_to_s(e.encoder_wall_ns)},
                           {"encoder_device_busy_s", ns_to_s(e.encoder_device_busy_ns)},
                           {"encoder_device_idle_s", ns_to_s(e.encoder_device_idle_ns)},
                           {"encoder_lateness_p99_us_sum", e.encoder_lateness_p99_us_sum},
                           {"lm_modelled_s", ns_to_s(e.lm_modelled_ns)},
                           {"encoder_modelled_s", ns_to_s(e.encoder_modelled_ns)},
                           {"steps_timed", e.timed_steps},
                           {"step_lateness_mean_ms",
                            e.timed_steps > 0 ? ns_to_ms(e.step_lateness_sum_ns) / static_cast<double>(e.timed_steps) : 0.0},
                           {"step_lateness_max_ms", ns_to_ms(e.step_lateness_max_ns)},
                           {"late_submissions", e.late_submissions},
                           {"max_running_seen", e.scheduler.max_running},
                           {"max_step_tokens_seen", e.scheduler.max_step_tokens},
                           {"uptime_s", ns_to_s(e.uptime_ns)}};
  serving::add_cache_counters(engine, e.scheduler);
  return engine;
}

nlohmann::json summary_json(const Server& server) {
  const EngineCoreStats e = server.engine_stats();
  const HttpStats h = server.http_stats();
  nlohmann::json requests = nlohmann::json::object();
  for (const auto& [route, by_status] : h.requests)
    for (const auto& [status, count] : by_status) requests[route][std::to_string(status)] = count;
  return {{"http",
           {{"requests", requests},
            {"connections_total", h.connections_total},
            {"header_timeouts", h.header_timeouts},
            {"body_timeouts", h.body_timeouts},
            {"write_timeouts", h.write_timeouts},
            {"client_disconnects", h.client_disconnects},
            {"malformed_requests", h.malformed_requests},
            {"inflight_rejections", h.inflight_rejections},
            {"decode_queue_rejections", h.decode_queue_rejections},
            {"stream_backpressure_waits", h.stream_backpressure_waits},
            {"usage_prompt_tokens", h.prompt_tokens_served},
            {"usage_completion_tokens", h.completion_tokens_sent},
            {"faults", {{"fail", h.faults_failed}, {"disconnect", h.faults_disconnected}, {"stall", h.faults_stalled}}}}},
          {"engine", engine_summary_json(e)},
          {"api_server", api_server_json(server)}};
}

}  // namespace

int run_serve(const ServeOptions& options, const std::vector<std::string>& argv, std::ostream& out) {
  const ServerConfig config = build_server_config(options);
  // Block SIGINT/SIGTERM before any thread starts (threads inherit the mask), so a signal sent
  // right after the "listening" line is never lost and is taken only by sigwait below.
  // A shell starts background jobs with SIGINT ignored, and an ignored signal is discarded even
  // while blocked: restore the default action first.
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  sigset_t shutdown_signals;
  sigemptyset(&shutdown_signals);
  sigaddset(&shutdown_signals, SIGINT);
  sigaddset(&shutdown_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &shutdown_signals, nullptr);
  // One descriptor per connection: raise the soft limit to the hard one for thousands of streams.
  rlimit files{};
  if (getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    setrlimit(RLIMIT_NOFILE, &files);
  }
  Server server(config);
  server.start();
  // One parseable line first (key=value words); the serving model by its file, or "roofline".
  out << "encbench-serve listening url=" << server.base_url() << " port=" << server.port()
      << " model=" << config.request.served_model_name << " mode=" << (options.null_mode ? "null" : "engine");
  if (!options.null_mode)
    out << " serving_model=" << (options.serving_model.empty() ? "roofline" : options.serving_model.string());
  out << std::endl;
  if (!options.null_mode && !options.serving_model_description.empty())
    out << "encbench-serve serving model: " << options.serving_model_description << std::endl;
  if (!options.null_mode) out << "encbench-serve lm step cost: " << config.engine.lm.source << std::endl;
  if (config.engine.encoder_time == EngineCoreConfig::EncoderTime::modelled)
    out << "encbench-serve encoder clock: virtual (each step waits out the virtual-clock forward)" << std::endl;
  if (config.api_server.enabled())
    out << "encbench-serve api server: " << config.api_server.name << " x" << config.api_server.processes()
        << " (each request held until its modelled input processing ends)" << std::endl;
  int signal_number = 0;
  sigwait(&shutdown_signals, &signal_number);
  server.stop();
  if (!options.result_json.empty()) {
    nlohmann::json result = make_result_envelope("encbench-serve", 1, argv, options.device);
    result["config"] = {{"model", options.model},
                        {"served_model_name", config.request.served_model_name},
                        {"null", options.null_mode},
                        {"encoder", options.encoder},
                        {"encoder_preset", options.encoder_preset},
                        {"encoder_mlp", options.encoder_mlp},
                        {"max_num_seqs", options.max_num_seqs},
                        {"max_num_batched_tokens", options.max_num_batched_tokens},
                        {"max_num_encoder_input_tokens", config.engine.max_num_encoder_input_tokens},
                        {"max_waiting", options.max_waiting},
                        {"max_inflight_bytes", options.max_inflight_bytes},
                        {"max_unsent_bytes", options.max_unsent_bytes},
                        {"max_decode_queue", options.max_decode_queue},
                        {"decode_timeout_s", options.decode_timeout_s},
                        {"enable_profiling", options.enable_profiling},
                        {"min_pixels", config.request.geometry.min_pixels},
                        {"max_pixels", config.request.geometry.max_pixels},
                        {"lm_cost_model",
                         {{"base_ms", config.engine.lm.base_ms},
                          {"per_seq_ms", config.engine.lm.per_seq_ms},
                          {"per_prefill_token_ms", config.engine.lm.per_prefill_token_ms},
                          {"per_context_token_ms", config.engine.lm.per_context_token_ms},
                          {"source", config.engine.lm.source}}}};
    result["summary"] = summary_json(server);
    if (config.measured_op_times) result["measured_op_times"] = device::to_json(*config.measured_op_times);
    write_json_file(options.result_json, result);
  }
  // After stop(): the engine thread ran its last forward, so the counts are final.
  if (config.measured_op_times) out << "encbench-serve " << device::describe(*config.measured_op_times) << std::endl;
  out << "encbench-serve stopped" << std::endl;
  return 0;
}

}  // namespace encbench::server
