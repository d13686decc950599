// `encbench run --clock virtual`: both arms through the virtual-time loop (virtual_loop.hpp) for
// each seed, then the same Before/After comparison as the live loop, and the published numbers of
// the scenario beside the model's with their errors.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <iomanip>
#include <map>
#include <ostream>
#include <sstream>

#include "harness/core/number_format.hpp"
#include "harness/core/text_escape.hpp"
#include "harness/client/bench.hpp"
#include "harness/client/dataset.hpp"
#include "harness/client/request_builder.hpp"
#include "harness/server/openai_request.hpp"
#include "harness/client/metrics.hpp"
#include "harness/client/schedule.hpp"
#include "harness/core/error.hpp"
#include "harness/core/result_json.hpp"
#include "harness/device/device.hpp"
#include "harness/device/sim_profile.hpp"
#include "harness/encoder/model_config.hpp"
#include "harness/scenario/preset_ab.hpp"
#include "harness/scenario/op_time_report.hpp"
#include "harness/scenario/pooled.hpp"
#include "harness/scenario/timeline_page.hpp"
#include "harness/scenario/virtual_ab_report.hpp"
#include "harness/scenario/virtual_experiment.hpp"
#include "harness/serving/virtual_loop.hpp"
#include "harness/scenario/workload.hpp"
#include "harness/serving/lm_roofline.hpp"
#include "harness/serving/encoder_step.hpp"
#include "harness/serving/scheduler_counters_json.hpp"
#include "harness/serving/serving_model.hpp"
#include "harness/vision/vision_geometry.hpp"
#include "reports/compare.hpp"
#include "reports/result.hpp"
#include "reports/tables.hpp"

namespace encbench::scenario {
namespace {

using numbers::fixed;

// Everything both arms share: the step cost, the scheduler's limits, the geometry.
struct SharedModel {
  vision::VisionGeometry geometry;
  serving::ServingModel serving;
  serving::ApiServerModel api_server;  // vLLM's API-server stage, as the serving model names it
  serving::StepCostModel cost;
  serving::SchedulerConfig scheduler;
  std::string description;
};

// The run-to-run noise each arm draws (docs/calibration.md "Run-to-run noise"), so a reader of the
// header knows the intervals' assumptions.
std::string run_noise_description(const serving::ServingModel& m) {
  auto num = [](double v) {
    std::ostringstream out;
    out << v;
    return out.str();
  };
  return "; run-to-run noise: step time CV " + num(m.step_time_cv.value) + ", arrival " +
         num(m.arrival_jitter_ms_per_request.value) + " ms a body in transit (sigma " + num(m.arrival_jitter_sigma.value) +
         "), early-stop length CV " + num(m.output_length_cv.value) +
         (m.output_length_redraw_share.value > 0 ? ", length redrawn for " + num(m.output_length_redraw_share.value) +
                                                       " of requests"
                                                 : std::string());
}

SharedModel build_shared_model(const PresetAbOptions& o) {
  SharedModel m;
  m.geometry = vision::vision_geometry_for(o.model);
  if (!o.serving_model.empty()) m.serving = serving::load_serving_model(o.serving_model);
  serving::apply_overrides(m.serving, o.model_set);
  if (!o.modelled_run_noise) serving::clear_run_noise(m.serving);
  const std::filesystem::path profiles =
      o.profiles_dir.empty() ? device::default_profiles_dir() : o.profiles_dir;
  // sim:<profile> or trace:FILE[@PROFILE]: the LM step's roofline uses the device's profile.
  const device::SimProfile profile = device::load_sim_profile(device::sim_profile_name(o.device), profiles);
  m.api_server = serving::load_api_server_model(
      o.api_server_model.empty() ? m.serving.api_server : o.api_server_model, profiles.parent_path(),
      device::default_profiles_dir().parent_path());
  if (o.api_server_count != -1) serving::set_api_server_count(m.api_server, o.api_server_count, "--api-server-count");
  const std::filesystem::path model_file = encoder::find_model_file(o.model);
  serving::LanguageModelDims dims;
  require(serving::read_language_model(read_json_file(model_file), model_file.string(), dims),
          "--clock virtual needs a model preset with a language_model block; " + model_file.string() + " has none");
  m.cost = serving::step_cost_model(m.serving, dims, profile, o.async_scheduling, profiles);
  m.scheduler.max_num_seqs = o.max_num_seqs;
  m.scheduler.max_num_batched_tokens = o.max_num_batched_tokens;
  // vLLM: encoder compute budget = cache size = max(max_num_batched_tokens, the largest item).
  const auto side = static_cast<std::int64_t>(std::sqrt(static_cast<double>(m.geometry.max_pixels)));
  const std::int64_t largest =
      vision::image_token_count(m.geometry, vision::image_grid(m.geometry, side, side));
  m.scheduler.encoder_budget_tokens = o.max_num_encoder_input_tokens > 0
                                          ? o.max_num_encoder_input_tokens
                                          : std::max(o.max_num_batched_tokens, largest);
  m.scheduler.kv_capacity_tokens = serving::kv_capacity_tokens(m.serving, dims);
  m.description = m.cost.source + "; KV cache " +
                  (m.scheduler.kv_capacity_tokens > 0 ? std::to_string(m.scheduler.kv_capacity_tokens) + " tokens"
                                                       : std::string("unlimited")) +
                  "; encoder budget " + std::to_string(m.scheduler.encoder_budget_tokens) + " tokens/step" +
                  (m.api_server.enabled() ? "; API server " + m.api_server.name + " x" +
                                                std::to_string(m.api_server.processes())
                                          : std::string("; no API-server stage")) +
                  run_noise_description(m.serving);
  return m;
}

// One image as the API server gets it: its pixels as sent, its mm_hash, and what vLLM's processor
// cache counts for it (api_server_pipeline.hpp).
serving::ProcessorItem sent_image(const SharedModel& m, std::int64_t pixels, const serving::SchedImage& image) {
  return {pixels, image.hash,
          serving::processor_item_bytes(image.grid.patches(), static_cast<int>(m.geometry.patch_size),
                                        static_cast<int>(m.geometry.temporal_patch_size),
                                        m.api_server.processor_bytes_per_element.value)};
}

// The fixed sample: the very requests the live client would send (the same generated dataset,
// loaded, shuffled and built by the client's code), as the live server would parse them; no
// arrival times yet.
std::vector<serving::VirtualRequest> fixed_sample_requests(const PresetAbOptions& o, const SharedModel& m,
                                                  std::uint64_t seed) {
  client::GenerateConfig gen;
  gen.layout = "vision-arena-bench";
  gen.num = static_cast<std::size_t>(o.num_prompts);
  gen.seed = seed;
  gen.width = o.image_width;
  gen.height = o.image_height;
  gen.image_format = "jpeg";
  gen.out = o.result_dir / ("vision-arena-" + std::to_string(o.num_prompts) + "-seed" + std::to_string(seed) + ".jsonl");
  client::generate_dataset(gen);
  client::DatasetConfig dc;
  dc.name = "hf";
  dc.path = gen.out.string();
  dc.num_prompts = gen.num;
  dc.seed = seed;
  dc.output_len = o.output_len;
  client::RequestOptions ro;
  ro.model = o.model;
  ro.ignore_eos = true;
  const std::vector<client::PreparedRequest> prepared = client::prepare_requests(client::load_dataset(dc).samples, ro);
  server::RequestParseOptions parse;
  parse.served_model_name = o.model;
  parse.geometry = m.geometry;
  std::vector<serving::VirtualRequest> out(prepared.size());
  for (std::size_t i = 0; i < prepared.size(); ++i) {
    const server::GenerationRequest g =
        server::parse_generation_request(server::Endpoint::chat_completions, prepared[i].body, parse);
    serving::VirtualRequest& r = out[i];
    r.client_prompt_tokens = prepared[i].prompt_len_client;
    r.request.prompt_tokens = g.prompt_tokens();
    r.request.image_offset = g.prompt_tokens() - g.image_tokens;  // as the live engine places them
    for (const server::ImageInput& image : g.images) {
      r.request.images.push_back({image.tokens, image.grid, image.mm_hash});
      r.images_sent.push_back(sent_image(m, std::int64_t{image.width} * image.height, r.request.images.back()));
    }
    r.request.output_tokens = g.max_tokens;
    r.request.content_hash = g.prompt_hash;  // what the live server gives its scheduler for this body
  }
  return out;
}

// The requests of one seed in send order, without arrival times: they depend on the seed and the
// number of prompts only, so a sweep or capacity search builds them once per seed.
std::vector<serving::VirtualRequest> request_shapes(const PresetAbOptions& o, const SharedModel& m,
                                           const WorkloadModel* workload, std::uint64_t seed) {
  if (workload == nullptr) return fixed_sample_requests(o, m, seed);
  const auto n = static_cast<std::size_t>(o.num_prompts);
  const std::vector<WorkloadRequest> shapes = sample_workload(*workload, n, seed, o.sample_totals);
  const std::int64_t template_tokens = workload->template_tokens;
  std::vector<serving::VirtualRequest> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    const WorkloadRequest& w = shapes[i];
    serving::VirtualRequest& r = out[i];
    r.client_prompt_tokens = w.text_tokens;  // vLLM's client counts the question text only
    std::int64_t image_tokens = 0;
    if (w.image_width > 0) {
      const vision::GridTHW grid = vision::image_grid(m.geometry, w.image_height, w.image_width);
      image_tokens = vision::image_token_count(m.geometry, grid);
      r.request.images.push_back({image_tokens, grid, w.image_hash});  // duplicates of a row share its image
      r.images_sent.push_back(sent_image(m, std::int64_t{w.image_width} * w.image_height, r.request.images.back()));
    }
    r.request.prompt_tokens = w.text_tokens + template_tokens + image_tokens;
    // Content order [text, image]: the image follows the question and the template's opening.
    r.request.image_offset = template_tokens / 2 + w.text_tokens;
    r.request.output_tokens = w.output_tokens;
    r.request.content_hash = w.content_hash;  // duplicates of a row (vLLM's oversampling) share it
  }
  return out;
}

// One line per arm and seed while the seeds run.
void print_seed_progress(std::ostream& progress, const PresetAbOptions& load, std::size_t arm, int index,
                         const ArmSeed& r) {
  const client::ServingMetrics& m = r.result.metrics;
  progress << "[run] seed " << r.seed << " (" << index + 1 << "/" << load.seeds << "), " << load.presets[arm] << ": "
           << m.completed << " completed, mean TTFT " << fixed(m.latency.at("ttft").mean_ms, 1) << " ms, "
           << fixed(m.request_throughput, 2) << " req/s (virtual), " << fixed(r.wall_s, 2) << " s wall" << std::endl;
}

}  // namespace

reports::Comparison compare_seeds(const std::vector<std::string>& presets,
                                  const std::vector<std::vector<ArmSeed>>& by_arm,
                                  const std::vector<std::vector<nlohmann::json>>& serving,
                                  const judgement::Settings& settings) {
  std::vector<std::vector<std::string>> names(by_arm.size());
  for (std::size_t a = 0; a < by_arm.size(); ++a)
    for (const ArmSeed& r : by_arm[a]) names[a].push_back(presets[a] + " seed " + std::to_string(r.seed));
  // Seed k of both arms drew the same prompts and arrivals: paired rounds.
  bool same_seeds = by_arm.size() == 2 && by_arm[0].size() == by_arm[1].size();
  for (std::size_t k = 0; same_seeds && k < by_arm[0].size(); ++k) same_seeds = by_arm[0][k].seed == by_arm[1][k].seed;
  return compare_pooled_arms(serving, names, settings,
                             same_seeds ? judgement::RoundDesign::paired : judgement::RoundDesign::independent);
}

reports::Comparison compare_seeds(const std::vector<std::string>& presets,
                                  const std::vector<std::vector<ArmSeed>>& by_arm, const judgement::Settings& settings) {
  return compare_seeds(presets, by_arm, serving_json(by_arm), settings);
}

nlohmann::json engine_json(const serving::VirtualEngineCounters& c) {
  nlohmann::json engine{{"steps", c.scheduler.steps},
                        {"preemptions", c.scheduler.preemptions},
                        {"max_running", c.scheduler.max_running},
                        {"max_waiting", c.scheduler.max_waiting},
                        {"max_kv_blocks_used", c.scheduler.max_kv_blocks_used},
                        {"images", c.images},
                        {"encoder_steps", c.encoder_steps},
                        {"encoder_failures", c.encoder_failures},
                        {"encoder_ms", ns_to_ms(c.encoder_ns)},
                        {"encoder_device_busy_ms", ns_to_ms(c.encoder_device_busy_ns)},
                        {"encoder_device_idle_ms", ns_to_ms(c.encoder_device_idle_ns)},
                        {"encoder_syncs", c.encoder_syncs},
                        {"lm_ms", ns_to_ms(c.lm_ns)},
                        {"api_server_ms", ns_to_ms(c.api_server_ns)},
                        {"api_server_queue_ms", ns_to_ms(c.api_server_queue_ns)},
                        {"api_server_decode_ms", ns_to_ms(c.api_server_decode_ns)},
                        {"api_server_cache_hits", c.api_server_cache_hits},
                        {"api_server_cache_evictions", c.api_server_cache_evictions}};
  serving::add_cache_counters(engine, c.scheduler);
  return engine;
}

nlohmann::json summary_of(const nlohmann::json& serving) {
  nlohmann::json s = nlohmann::json::object();
  for (const auto& [key, value] : serving.items())
    if (!value.is_array() && !value.is_object()) s[key] = value;
  return s;
}

struct VirtualExperiment::Impl {
  PresetAbOptions options;
  std::vector<std::string> argv;
  SharedModel shared;
  std::optional<WorkloadModel> workload;
  std::vector<serving::EncoderHook> encoders;  // one per arm, reused across seeds and loads
  std::vector<OpTimeTables> op_times;         // per arm: its trace device's table (trace: devices)
  // Request shapes per (seed, num_prompts): both arms, every load point and every capacity probe
  // of a seed send the same requests (the fixed sample costs a dataset file and JPEG encodes).
  std::map<std::pair<std::uint64_t, int>, std::vector<serving::VirtualRequest>> shapes;

  // The requests of one seed at one load, in arrival order (arrivals as vLLM's client draws them).
  std::vector<serving::VirtualRequest> requests(const PresetAbOptions& o, std::uint64_t seed) {
    auto [it, added] = shapes.try_emplace({seed, o.num_prompts});
    if (added) it->second = request_shapes(o, shared, workload ? &*workload : nullptr, seed);
    std::vector<serving::VirtualRequest> out = it->second;
    const std::vector<Nanos> offsets = client::arrival_offsets_ns(out.size(), o.request_rate, o.burstiness, seed);
    for (std::size_t i = 0; i < out.size(); ++i) out[i].arrival_ns = offsets[i];
    return out;
  }

  // One run's output lengths (output_length_cv, output_length_redraw_share): only a workload has
  // early stops to move; the fixed sample sends ignore_eos, so every run generates the cap.
  void sample_output_lengths(std::vector<serving::VirtualRequest>& requests, std::uint64_t noise_seed) const {
    const RunOutputNoise noise{shared.serving.output_length_redraw_share.value, shared.serving.output_length_cv.value};
    if (!workload || !noise.any()) return;
    for (std::size_t i = 0; i < requests.size(); ++i) {
      std::int64_t& tokens = requests[i].request.output_tokens;
      tokens = run_output_tokens(*workload, tokens, noise, noise_seed, i);
    }
  }
};

VirtualExperiment::VirtualExperiment(const PresetAbOptions& o, const std::vector<std::string>& argv)
    : impl_(std::make_unique<Impl>()) {
  impl_->options = o;
  impl_->argv = argv;
  impl_->shared = build_shared_model(o);
  if (!o.workload.empty()) impl_->workload = load_workload(o.workload);
  for (const std::string& preset : o.presets) {
    serving::EncoderStepOptions so;
    so.model = o.model;
    so.device = o.device;
    if (!o.profiles_dir.empty()) so.profiles_dir = o.profiles_dir;
    so.op_map = o.op_map;
    so.encoder_preset = preset;
    so.encoder_mlp = o.encoder_mlp;
    so.seed = o.seed;
    so.virtual_clock = true;
    so.dispatch_us_per_op = impl_->shared.serving.encoder_dispatch_us_per_op.value;
    so.host_ms_per_step = impl_->shared.serving.encoder_host_ms_per_step.value;
    so.host_post_forward_share = impl_->shared.serving.encoder_host_post_forward_share.value;
    so.host_model = impl_->shared.serving.encoder_host_model;
    serving::EncoderStep real = serving::make_encoder_step(so);
    impl_->encoders.push_back(std::move(real.hook));
    impl_->op_times.emplace_back();
    if (real.measured_op_times) impl_->op_times.back().push_back(real.measured_op_times);
  }
}

VirtualExperiment::~VirtualExperiment() = default;

const std::string& VirtualExperiment::description() const { return impl_->shared.description; }
const serving::ServingModel& VirtualExperiment::serving_model() const { return impl_->shared.serving; }
const std::vector<OpTimeTables>& VirtualExperiment::op_times() const { return impl_->op_times; }
const WorkloadModel* VirtualExperiment::workload() const { return impl_->workload ? &*impl_->workload : nullptr; }

ArmSeed VirtualExperiment::run(std::size_t arm, const PresetAbOptions& load, std::uint64_t seed, bool keep_detail) {
  PresetAbOptions o = impl_->options;
  o.request_rate = load.request_rate;
  o.burstiness = load.burstiness;
  o.max_concurrency = load.max_concurrency;
  o.num_prompts = load.num_prompts;
  // Each arm of a seed is its own run of a real server: the same requests (vLLM's client with the
  // same --seed), its own step-time jitter and its own sampled output lengths.
  const std::uint64_t noise_seed = seed * 1000003ULL + arm;
  std::vector<serving::VirtualRequest> requests = impl_->requests(o, seed);
  impl_->sample_output_lengths(requests, noise_seed);
  const auto wall_start = std::chrono::steady_clock::now();
  serving::VirtualArmOptions arm_options;
  arm_options.max_concurrency = o.max_concurrency;
  arm_options.keep_steps = keep_detail;
  arm_options.step_time_cv = impl_->shared.serving.step_time_cv.value;
  arm_options.jitter_seed = noise_seed;
  arm_options.arrival_jitter_per_request_ns =
      static_cast<Nanos>(impl_->shared.serving.arrival_jitter_ms_per_request.value * 1e6);
  arm_options.arrival_jitter_sigma = impl_->shared.serving.arrival_jitter_sigma.value;
  arm_options.api_server = impl_->shared.api_server;
  serving::VirtualArmResult result = serving::run_virtual_arm(requests, impl_->shared.scheduler, impl_->shared.cost,
                                            impl_->encoders.at(arm), arm_options);
  const std::string& preset = o.presets.at(arm);
  client::BenchConfig bc = arm_bench_config(o, preset, impl_->argv);
  bc.metric_percentiles = {50, 90, 95, 99};  // SLOs and sweeps need more than vLLM's default 99
  client::BenchResult br;
  br.model_id = o.model;
  br.api_url = "virtual://" + o.device;
  br.date = "virtual";
  br.ignore_eos = bc.ignore_eos;
  client::MetricsOptions mopts;
  mopts.percentiles = bc.metric_percentiles;
  mopts.finite_rate = std::isfinite(o.request_rate);
  br.metrics = client::calculate_metrics(result.records, result.end_ns - result.start_ns, mopts, result.start_ns);
  ArmSeed out;
  out.seed = seed;
  out.config = std::move(bc);
  out.result = std::move(br);
  out.engine = result.engine;
  if (keep_detail) out.detail = std::move(result);
  out.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return out;
}

std::vector<std::vector<ArmSeed>> VirtualExperiment::run_all(const PresetAbOptions& load, std::ostream* progress,
                                                             bool keep_first_seed_detail) {
  std::vector<std::vector<ArmSeed>> by_arm(impl_->options.presets.size());
  for (int s = 0; s < load.seeds; ++s) {
    // Interrupted: stop after a whole seed (both arms), so what is written is comparable.
    if (s > 0 && stop_requested(load.stop_fd)) {
      if (progress != nullptr) *progress << "[run] interrupted after " << s << " seed(s)" << std::endl;
      break;
    }
    const std::uint64_t seed = load.seed + static_cast<std::uint64_t>(s);
    for (std::size_t a = 0; a < by_arm.size(); ++a) {
      ArmSeed arm = run(a, load, seed, keep_first_seed_detail && s == 0);
      if (progress != nullptr) print_seed_progress(*progress, load, a, s, arm);
      by_arm[a].push_back(std::move(arm));
    }
  }
  return by_arm;
}

PresetAbRun run_virtual_closed_loop(const PresetAbOptions& o, const std::vector<std::string>& argv,
                                      std::ostream& out, std::ostream& progress) {
  const std::filesystem::path result_path =
      o.result_file.empty() ? o.result_dir / ("closed-loop-" + safe_file_component(o.name) + "-virtual.json") : o.result_file;
  std::error_code ec;
  if (!result_path.parent_path().empty()) std::filesystem::create_directories(result_path.parent_path(), ec);
  require(!ec, "cannot create directory " + result_path.parent_path().string() + " for the results: " + ec.message());
  VirtualExperiment experiment(o, argv);
  if (!o.serving_model_note.empty()) progress << "[run] serving model: " << o.serving_model_note << std::endl;
  progress << "[run] virtual clock: " << o.model << " on " << o.device << ", " << experiment.description() << std::endl;
  VirtualAbRecord record;
  record.by_arm = experiment.run_all(o, &progress, !o.timeline_html.empty());
  record.op_times = experiment.op_times();
  record.description = experiment.description();
  record.model = {{"description", experiment.description()},
                  {"serving_model", serving::to_json(experiment.serving_model())},
                  {"workload", experiment.workload() ? to_json(*experiment.workload()) : nlohmann::json(nullptr)}};
  // vLLM's keys of every seed, once for the comparison and both reporters.
  const std::vector<std::vector<nlohmann::json>> serving = serving_json(record.by_arm);
  // Pooled comparison over the seeds, as the live loop pools its rounds.
  const reports::Comparison comparison = compare_seeds(o.presets, record.by_arm, serving, o.judging);
  const nlohmann::json published = print_virtual_ab(out, o, record, serving, comparison);
  nlohmann::json doc = virtual_ab_json(o, record, serving, comparison, published, argv);
  if (!o.timeline_html.empty()) {
    // The first seed, whose steps and traces run_all kept.
    std::vector<ArmSeed> detailed;
    for (auto& seeds : record.by_arm) detailed.push_back(std::move(seeds.front()));
    TimelineOptions t;
    t.itl_thresholds_ms = o.timeline_itl_thresholds_ms;
    write_timeline_html(o.timeline_html, o.presets, detailed, t);
    nlohmann::json breakdown = nlohmann::json::object();
    for (std::size_t a = 0; a < detailed.size(); ++a) breakdown[o.presets[a]] = ttft_breakdown(detailed[a]);
    doc["ttft_breakdown_ms"] = breakdown;
    doc["timeline_html"] = o.timeline_html.string();
    out << "\nMean TTFT broken down (seed " << o.seed << ", ms): " << breakdown.dump() << "\n";
    progress << "[run] wrote " << o.timeline_html.string() << std::endl;
  }
  PresetAbRun run;
  run.result_path = result_path;
  write_json_file(result_path, doc);
  progress << "[run] wrote " << result_path.string() << std::endl;
  run.result = std::move(doc);
  return run;
}

}  // namespace encbench::scenario
