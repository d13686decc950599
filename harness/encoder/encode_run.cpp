#include "harness/core/number_format.hpp"
#include "harness/encoder/encode_run.hpp"

#include "harness/device/measured_op_times.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <map>
#include <ostream>
#include <sstream>

#include "harness/core/error.hpp"
#include "harness/core/result_json.hpp"
#include "harness/core/stats.hpp"
#include "harness/device/measured_op_times.hpp"
#include "harness/device/sim_profile.hpp"
#include "kernels/thread_pool.hpp"
#include "harness/timeline/chrome_trace.hpp"

namespace encbench::encoder {

namespace {

std::string fmt(double v, int precision = 3) { return numbers::fixed(v, precision); }

std::vector<double> collect(const std::vector<ForwardReport>& fs, double (*get)(const ForwardReport&)) {
  std::vector<double> out;
  for (const auto& f : fs) out.push_back(get(f));
  return out;
}
double forward_ms(const ForwardReport& f) { return ns_to_ms(f.forward_ns); }
double busy_ms(const ForwardReport& f) { return ns_to_ms(f.device_busy_ns); }
double idle_frac(const ForwardReport& f) { return f.idle_fraction; }
double merger_ms(const ForwardReport& f) { return ns_to_ms(f.merger_busy_ns); }
// The mergers' share of the forward's device time.
double merger_frac(const ForwardReport& f) {
  return f.device_busy_ns > 0 ? static_cast<double>(f.merger_busy_ns) / static_cast<double>(f.device_busy_ns) : 0.0;
}
double syncs_of(const ForwardReport& f) { return static_cast<double>(f.syncs); }
double host_layer(const ForwardReport& f) { return f.host_us_per_layer; }
double gap_count(const ForwardReport& f) { return static_cast<double>(f.gaps.gaps.size()); }
double gap_max(const ForwardReport& f) { return f.gaps.gap_max_us; }
double peak_in_use(const ForwardReport& f) { return static_cast<double>(f.peak_bytes_in_use); }
double peak_reserved(const ForwardReport& f) { return static_cast<double>(f.peak_bytes_reserved); }
double allocated(const ForwardReport& f) { return static_cast<double>(f.bytes_allocated); }
double lateness_p99(const ForwardReport& f) { return f.lateness.p99_us; }
double lateness_max(const ForwardReport& f) { return f.lateness.max_us; }

double max_of(const std::vector<double>& v) { return v.empty() ? 0.0 : *std::max_element(v.begin(), v.end()); }

std::string layers_text(const std::vector<int>& v) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) { if (i) s += ","; s += std::to_string(v[i]); }
  return s.empty() ? "-" : s;
}

Nanos timeline_origin(const timeline::Timeline& tl) {
  Nanos origin = 0;
  bool first = true;
  for (const auto& op : tl.device_ops) {
    const Nanos t = std::min(op.submit_ns, op.start_ns);
    if (first || t < origin) origin = t, first = false;
  }
  for (const auto& sp : tl.host_spans)
    if (first || sp.start_ns < origin) origin = sp.start_ns, first = false;
  return origin;
}

nlohmann::json summary_json(const ConfigRun& run) {
  const auto& fs = run.forwards;
  std::map<timeline::GapClass, double> class_ms;
  std::vector<double> all_gaps_us;
  for (const auto& f : fs) {
    for (const auto& [cls, ns] : f.gaps.idle_ns_by_class) class_ms[cls] += ns_to_ms(ns);
    for (const auto& g : f.gaps.gaps) all_gaps_us.push_back(ns_to_us(g.duration_ns()));
  }
  nlohmann::json by_class = nlohmann::json::object();
  for (auto cls : timeline::kAllGapClasses)
    by_class[std::string(timeline::to_string(cls))] = fs.empty() ? 0.0 : class_ms[cls] / static_cast<double>(fs.size());
  const auto fwd = collect(fs, forward_ms);
  // Lateness (sim on the real clock): the worst forward's p99 against its own forward time.
  double worst_late_share = 0;
  for (const auto& f : fs)
    if (f.forward_ns > 0) worst_late_share = std::max(worst_late_share, f.lateness.p99_us * 1e3 / static_cast<double>(f.forward_ns));
  const bool lateness_measured = !fs.empty() && fs.front().lateness.ops > 0;
  return {{"forward_ms", stats::median(fwd)},
          {"peak_device_memory_bytes", max_of(collect(fs, peak_in_use))},
          {"peak_device_memory_reserved_bytes", max_of(collect(fs, peak_reserved))},
          {"bytes_allocated_per_forward", stats::median(collect(fs, allocated))},
          {"peak_device_memory_layer", fs.empty() ? -1 : fs.back().peak_memory_layer},
          {"lateness_measured", lateness_measured},
          {"lateness_p99_us", max_of(collect(fs, lateness_p99))},
          {"lateness_max_us", max_of(collect(fs, lateness_max))},
          // The model's times hold only if the machine kept up: p99 lateness <= 10 % of a forward.
          {"kept_up", !lateness_measured || worst_late_share <= 0.10},
          {"forward_ms_min", fwd.empty() ? 0.0 : *std::min_element(fwd.begin(), fwd.end())},
          {"forward_ms_max", fwd.empty() ? 0.0 : *std::max_element(fwd.begin(), fwd.end())},
          {"idle_fraction", stats::median(collect(fs, idle_frac))},
          {"syncs_per_forward", stats::median(collect(fs, syncs_of))},
          {"host_us_per_layer", stats::median(collect(fs, host_layer))},
          {"device_busy_ms", stats::median(collect(fs, busy_ms))},
          {"gap_count", stats::median(collect(fs, gap_count))},
          {"gap_p50_us", stats::percentile(all_gaps_us, 50)},
          {"gap_p99_us", stats::percentile(all_gaps_us, 99)},
          {"gap_max_us", all_gaps_us.empty() ? 0.0 : *std::max_element(all_gaps_us.begin(), all_gaps_us.end())},
          {"idle_ms_by_class", by_class},
          {"output_tokens", fs.empty() ? 0LL : fs.back().output_tokens},
          {"merger_ms", stats::median(collect(fs, merger_ms))},
          {"merger_fraction", stats::median(collect(fs, merger_frac))}};
}

std::vector<timeline::Gap> largest_gaps(const ForwardReport& f, int max_gaps) {
  std::vector<timeline::Gap> gaps = f.gaps.gaps;
  std::stable_sort(gaps.begin(), gaps.end(),
                   [](const timeline::Gap& a, const timeline::Gap& b) { return a.duration_ns() > b.duration_ns(); });
  if (max_gaps >= 0 && gaps.size() > static_cast<std::size_t>(max_gaps)) gaps.resize(static_cast<std::size_t>(max_gaps));
  return gaps;
}

// --virtual-host-time and --host-model into the device options (virtual clock only).
void resolve_host_time(const RunOptions& o, device::DeviceOptions& d) {
  d.host_time = device::parse_virtual_host_time_flag(o.virtual_host_time);
  const bool virtual_clock = d.clock == device::ClockMode::virtual_time;
  require(d.host_time == device::HostTime::model || virtual_clock,
          "--virtual-host-time " + o.virtual_host_time + " needs the virtual clock (a sim device with --clock virtual)");
  if (!o.profiles_dir.empty()) d.profiles_dir = o.profiles_dir;
  if (virtual_clock && d.host_time == device::HostTime::model) {
    const auto dir = d.profiles_dir.empty() ? device::default_profiles_dir() : d.profiles_dir;
    d.host_model = std::make_shared<const device::HostModel>(device::load_host_model(o.host_model, dir));
  }
}

}  // namespace

ResolvedRun resolve(const RunOptions& o) {
  require(o.forwards >= 1 && o.forwards <= 100000, "--forwards must be in [1, 100000]");
  require(o.warmup >= 0 && o.warmup <= 10000, "--warmup must be in [0, 10000]");
  require(o.launch_overhead_us >= 0 && o.launch_overhead_us <= 1e6, "--launch-overhead-us must be in [0, 1e6]");
  require(o.kernel_wait_threshold_us >= 0, "--kernel-wait-threshold-us must be >= 0");
  require(o.tolerance > 0, "--tolerance must be positive");
  require(o.alloc_mode == "fresh" || o.alloc_mode == "caching",
          "--alloc-mode: unknown value '" + o.alloc_mode + "'; valid values: fresh, caching");
  ResolvedRun r;
  r.model = load_model(o.model);
  for (const auto& s : o.images) r.media.push_back(parse_image_spec(s));
  for (const auto& s : o.videos) r.media.push_back(parse_video_spec(s));
  require(!r.media.empty(), "no inputs: pass at least one --image WxH or --video FxWxH");
  for (const auto& m : r.media) r.grids.push_back(grid_for(m, r.model));
  r.plan = plan_inputs(r.grids, r.model);
  // Keeps one forward's activations within reason on a shared machine (~4 GiB of fp32 qkv).
  require(r.plan.num_patches <= 262144,
          "too many patches in one forward: " + std::to_string(r.plan.num_patches) + " (limit 262144)");
  r.device_options.spec = o.device;
  r.device_options.op_map = o.op_map;
  r.device_options.device_threads = o.threads;
  r.device_options.alloc_mode = o.alloc_mode == "fresh" ? device::AllocMode::fresh : device::AllocMode::caching;
  // Measured forwards never compute on a sim device; verification gets its own device.
  r.device_options.verify = false;
  r.device_options.record = true;
  r.device_options.launch_overhead_ns = static_cast<Nanos>(std::llround(o.launch_overhead_us * 1e3));
  const bool sim = device::parse_device_spec(o.device).backend == device::DeviceSpec::Backend::sim;
  r.device_options.clock = o.clock.empty() ? (sim ? device::ClockMode::virtual_time : device::ClockMode::real)
                                           : device::parse_clock_mode(o.clock);
  resolve_host_time(o, r.device_options);
  require(std::isfinite(o.device_memory_gb) && o.device_memory_gb >= 0 && o.device_memory_gb <= 1e6,
          "--device-memory-gb must be in [0, 1e6] (0: the sim profile's memory size, unlimited on cpu)");
  r.device_options.memory_budget_bytes = static_cast<std::uint64_t>(o.device_memory_gb * 1e9);
  return r;
}

std::unique_ptr<device::Device> make_run_device(const ResolvedRun& resolved) {
  return device::make_device(resolved.device_options);
}

std::pair<std::string, Toggles> resolve_toggles(const std::string& preset_name, const ToggleOverrides& o) {
  const Toggles base = preset(preset_name);
  const Toggles t = apply_overrides(base, o);
  validate(t);
  return {t == base ? preset_name : std::string("custom"), t};
}

std::unique_ptr<device::Device> make_verify_device(const ResolvedRun& resolved, device::Device& measured) {
  if (measured.info().computes_results) return nullptr;  // verify on the measured device itself
  device::DeviceOptions vopt = resolved.device_options;
  vopt.verify = true;
  vopt.launch_overhead_ns = 0;
  return device::make_device(vopt);
}

namespace {
AccuracyReport verify_with(EncoderRunner& runner, const ResolvedRun& resolved, const RunOptions& options) {
  LayerSnapshots snaps;
  const ForwardReport vr = runner.forward_with_snapshots(resolved.grids, snaps);
  kernels::ThreadPool pool(options.threads);
  return verify_forward(pool, runner, resolved.plan, snaps, vr.attention, options.tolerance);
}
AccuracyReport verify_config(device::Device& device, const ResolvedRun& resolved, const RunOptions& options,
                             EncoderConfig cfg) {
  cfg.keep_host_weights = true;
  EncoderRunner runner(cfg, device);
  return verify_with(runner, resolved, options);
}
}  // namespace

ConfigRun run_config(device::Device& device, device::Device* verify_device, const ResolvedRun& resolved,
                     const RunOptions& options, const std::string& label, const Toggles& toggles) {
  EncoderConfig cfg;
  cfg.model = resolved.model;
  cfg.toggles = toggles;
  cfg.mlp = options.mlp;
  cfg.seed = options.seed;
  cfg.kernel_wait_threshold_ns = static_cast<Nanos>(std::llround(options.kernel_wait_threshold_us * 1e3));
  // Host weights are only needed by the reference path, on the device that verifies.
  cfg.keep_host_weights = options.verify && verify_device == nullptr;
  ConfigRun run;
  run.label = label;
  run.toggles = toggles;
  try {
    EncoderRunner runner(cfg, device);
    for (int i = 0; i < options.warmup; ++i) (void)runner.forward(resolved.grids);
    for (int i = 0; i < options.forwards; ++i) run.forwards.push_back(runner.forward(resolved.grids));
    run.last_timeline = runner.last_timeline();
    if (options.verify && verify_device == nullptr) run.accuracy = verify_with(runner, resolved, options);
  } catch (const OutOfDeviceMemoryAt& oom) {
    run.failure = oom.what();
    run.forwards.clear();
    run.accuracy = skipped_accuracy("not run: " + run.failure);
    run.accuracy.verdict = "FAIL";
    return run;
  }
  if (!options.verify) run.accuracy = skipped_accuracy("not verified (pass --verify)");
  else if (verify_device != nullptr) run.accuracy = verify_config(*verify_device, resolved, options, cfg);
  return run;
}

namespace {
void add_host_time(nlohmann::json& j, const device::DeviceInfo& info, const ResolvedRun& r) {
  if (info.host_time.empty()) return;
  j["host_time"] = info.host_time;
  j["device"]["host_time"] = info.host_time;
  if (r.device_options.host_model && info.host_time == "model") j["host_model"] = to_json(*r.device_options.host_model);
}
}  // namespace

nlohmann::json encode_body(const ResolvedRun& r, const RunOptions& o, const device::DeviceInfo& info,
                           const ConfigRun& run) {
  nlohmann::json j;
  j["model"] = to_json(r.model);
  j["device"] = {{"kind", info.kind},
                 {"name", info.name},
                 {"modelled", info.modelled},
                 {"clock", info.clock},
                 {"materialized", info.materialized},
                 {"memory_budget_bytes", info.memory_budget_bytes}};
  if (info.measured_op_times) j["device"]["measured_op_times"] = to_json(*info.measured_op_times);
  // Which clock every time in this file is on: virtual (sim model) or real; on the virtual clock
  // where its host time comes from: "model" (declared costs, host_model below) or "measured"
  // (this machine's CPU time: reports/ names those metrics as measurements) or "none".
  j["clock"] = info.clock;
  add_host_time(j, info, r);
  j["preset"] = run.label;
  j["toggles"] = to_json(run.toggles);
  nlohmann::json images = nlohmann::json::array(), videos = nlohmann::json::array();
  for (const auto& m : r.media) (m.is_video ? videos : images).push_back(m.spec);
  j["inputs"] = {{"images", images},
                 {"videos", videos},
                 {"grid_thw", to_json(r.grids)},
                 {"num_patches", r.plan.num_patches},
                 {"cu_seqlens_len", r.plan.cu_seqlens.size()},
                 {"cu_window_seqlens_len", r.plan.cu_window_seqlens.size()}};
  j["launch_overhead_us"] = o.launch_overhead_us;
  j["mlp"] = o.mlp;
  j["seed"] = o.seed;
  j["forwards"] = o.forwards;
  j["warmup"] = o.warmup;
  j["alloc_mode"] = o.alloc_mode;
  j["kernel_wait_threshold_us"] = o.kernel_wait_threshold_us;
  j["samples"] = {{"forward_ms", collect(run.forwards, forward_ms)},
                  {"idle_fraction", collect(run.forwards, idle_frac)},
                  {"device_busy_ms", collect(run.forwards, busy_ms)},
                  {"syncs", collect(run.forwards, syncs_of)},
                  {"host_us_per_layer", collect(run.forwards, host_layer)},
                  {"peak_device_memory_bytes", collect(run.forwards, peak_in_use)},
                  {"bytes_allocated", collect(run.forwards, allocated)}};
  j["summary"] = summary_json(run);
  nlohmann::json gaps = nlohmann::json::array();
  nlohmann::json layers = nlohmann::json::array();
  if (!run.forwards.empty()) {
    const ForwardReport& last = run.forwards.back();
    const Nanos origin = timeline_origin(run.last_timeline);
    for (const auto& g : largest_gaps(last, o.max_gaps))
      gaps.push_back({{"start_us", ns_to_us(g.start_ns - origin)},
                      {"end_us", ns_to_us(g.end_ns - origin)},
                      {"duration_us", ns_to_us(g.duration_ns())},
                      {"class", timeline::to_string(g.gap_class)},
                      {"cause", g.cause},
                      {"layer", g.layer}});
    // Idle per layer split by class (every gap of the last forward, not only the largest).
    std::map<int, std::map<timeline::GapClass, Nanos>> layer_class_ns;
    for (const auto& g : last.gaps.gaps) layer_class_ns[g.layer][g.gap_class] += g.duration_ns();
    for (const auto& lb : last.gaps.layers) {
      nlohmann::json by_class = nlohmann::json::object();
      for (auto cls : timeline::kAllGapClasses)
        by_class[std::string(timeline::to_string(cls))] = ns_to_us(layer_class_ns[lb.layer][cls]);
      layers.push_back({{"layer", lb.layer},
                        {"device_busy_us", ns_to_us(lb.device_busy_ns)},
                        {"idle_us", ns_to_us(lb.idle_ns)},
                        {"idle_by_class_us", by_class},
                        {"host_us", ns_to_us(lb.host_ns)},
                        {"syncs", lb.syncs}});
    }
    nlohmann::json ops = nlohmann::json::array();
    int count = 0;
    for (const auto& op : run.last_timeline.device_ops) {
      if (count++ >= o.max_ops) break;
      ops.push_back({{"name", op.name},
                     {"stream", op.stream},
                     {"start_us", ns_to_us(op.start_ns - origin)},
                     {"end_us", ns_to_us(op.end_ns - origin)},
                     {"category", timeline::to_string(op.category)},
                     {"layer", op.layer}});
    }
    j["ops"] = ops;
    // The host row of the same forward (torch calls, views, allocations, host steps, waits), so a
    // report draws host and device one above the other (issue 35's page).
    nlohmann::json host_spans = nlohmann::json::array();
    count = 0;
    for (const auto& sp : run.last_timeline.host_spans) {
      if (count++ >= o.max_ops) break;
      host_spans.push_back({{"name", sp.name},
                            {"kind", timeline::to_string(sp.kind)},
                            {"start_us", ns_to_us(sp.start_ns - origin)},
                            {"end_us", ns_to_us(sp.end_ns - origin)},
                            {"layer", sp.layer}});
    }
    j["host_spans"] = host_spans;
    nlohmann::json attn = nlohmann::json::array();
    for (const auto& a : last.attention)
      attn.push_back({{"layer", a.layer},
                      {"full_attention", a.full_attention},
                      {"lengths_source", a.lengths_source},
                      {"segments", a.lengths_used.size()},
                      {"used_full_set", a.used_full_set},
                      {"used_window_set", a.used_window_set}});
    j["attention_layers"] = attn;
  }
  j["gaps"] = gaps;
  j["layers"] = layers;
  j["accuracy"] = to_json(run.accuracy);
  if (!run.failure.empty()) j["failure"] = run.failure;
  return j;
}

namespace {
std::string host_time_text(const device::DeviceInfo& info) {
  if (info.host_time == "measured")
    return "host time is MEASURED:\n          this thread's CPU time between device calls + the launch overhead "
           "(it moves with the machine, build and load)";
  if (info.host_time == "none") return "host time is the launch overhead alone (no host work)";
  return "host time is MODELLED:\n          host model '" + info.host_model +
         "' per device call and host step + the launch overhead (no machine clock is read)";
}
}  // namespace

std::string encode_summary(const ResolvedRun& r, const RunOptions& o, const device::DeviceInfo& info,
                           const ConfigRun& run) {
  std::ostringstream s;
  const ModelConfig& m = r.model;
  s << "model:    " << m.name << " (depth " << m.depth << ", hidden " << m.hidden_size << ", " << m.num_heads
    << " heads x " << m.head_dim << (m.needs_head_pad() ? " (padded to 128)" : " (no padding)")
    << (m.has_windows() ? ", window " + std::to_string(m.window_size) + " px, full-attention layers " +
                              layers_text(m.fullatt_block_indexes)
                        : std::string(", full attention in every layer"))
    << (o.mlp ? ", with MLP" : ", attention blocks only (no --mlp)") << ")\n";
  s << "inputs:   ";
  for (std::size_t i = 0; i < r.media.size(); ++i)
    s << (i ? ", " : "") << (r.media[i].is_video ? "video " : "image ") << r.media[i].spec << " -> grid ("
      << r.grids[i].t << "," << r.grids[i].h << "," << r.grids[i].w << ")";
  s << "; " << r.plan.num_patches << " patches, " << r.plan.cu_seqlens.size() - 1 << " full segment(s)";
  if (m.has_windows()) s << ", " << r.plan.cu_window_seqlens.size() - 1 << " windows";
  s << "\n";
  s << "device:   " << info.kind << " (" << info.name << ")";
  if (info.modelled && info.clock == "virtual")
    s << "\n          VIRTUAL CLOCK: device op durations come from "
      << (info.measured_op_times ? "the trace's measured op times (roofline where it lacks the op)"
                                 : "a roofline of each op's FLOPs/bytes")
      << "; " << host_time_text(info);
  else if (info.modelled)
    s << "\n          TIMES ARE MODELLED (real clock): device op durations come from a roofline; host work and waits are real";
  if (info.measured_op_times) s << "\n          " << describe(*info.measured_op_times);
  s << "\n";
  s << "toggles:  " << run.label << " [" << describe(run.toggles) << "]\n";
  s << "launch overhead: " << fmt(o.launch_overhead_us, 1) << " us per device op; alloc-mode " << o.alloc_mode << "\n";
  if (!run.failure.empty()) {
    s << "FAIL: " << run.failure << "\n";
    return s.str();
  }
  const auto sum = summary_json(run);
  s << "forwards: " << run.forwards.size() << " measured after " << o.warmup << " warm-up\n";
  s << "  forward time      median " << fmt(sum["forward_ms"].get<double>()) << " ms (min "
    << fmt(sum["forward_ms_min"].get<double>()) << ", max " << fmt(sum["forward_ms_max"].get<double>()) << ")\n";
  s << "  device busy       median " << fmt(sum["device_busy_ms"].get<double>()) << " ms\n";
  s << "  output tokens     " << sum["output_tokens"].get<long long>() << " (after the " << m.spatial_merge_size << "x"
    << m.spatial_merge_size << " patch merger, width " << m.out_hidden_size << ")"
    << (m.deepstack_visual_indexes.empty() ? std::string()
                                            : " + deepstack features after layers " + layers_text(m.deepstack_visual_indexes))
    << "; mergers " << fmt(sum["merger_ms"].get<double>()) << " ms = "
    << fmt(100.0 * sum["merger_fraction"].get<double>(), 1) << " % of device busy\n";
  s << "  device idle       " << fmt(100.0 * sum["idle_fraction"].get<double>(), 1) << " % of the device span; per forward:";
  for (auto cls : timeline::kAllGapClasses)
    s << " " << timeline::to_string(cls) << " " << fmt(sum["idle_ms_by_class"][std::string(timeline::to_string(cls))].get<double>()) << " ms";
  s << "\n";
  s << "  syncs/forward     " << fmt(sum["syncs_per_forward"].get<double>(), 0) << "\n";
  s << "  device memory     peak " << fmt(sum["peak_device_memory_bytes"].get<double>() / 1e6, 1) << " MB in use, "
    << fmt(sum["peak_device_memory_reserved_bytes"].get<double>() / 1e6, 1) << " MB reserved; "
    << fmt(sum["bytes_allocated_per_forward"].get<double>() / 1e6, 1) << " MB allocated per forward; peak "
    << (sum["peak_device_memory_layer"].get<int>() >= 0
            ? "in layer " + std::to_string(sum["peak_device_memory_layer"].get<int>())
            : std::string("outside the layers"))
    << (info.memory_budget_bytes ? "; budget " + fmt(static_cast<double>(info.memory_budget_bytes) / 1e9, 1) + " GB" : "")
    << "\n";
  if (sum["lateness_measured"].get<bool>()) {
    s << "  sim lateness      p99 " << fmt(sum["lateness_p99_us"].get<double>(), 1) << " us, max "
      << fmt(sum["lateness_max_us"].get<double>(), 1) << " us per op (real completion after the modelled end)\n";
    if (!sum["kept_up"].get<bool>())
      s << "  WARNING: this machine could not keep up with the model (p99 lateness > 10 % of a forward);"
           " use --clock virtual for figures that load cannot move\n";
  }
  s << "  host us/layer     " << fmt(sum["host_us_per_layer"].get<double>(), 1) << "\n";
  s << "  gaps              " << fmt(sum["gap_count"].get<double>(), 0) << " per forward (p50 "
    << fmt(sum["gap_p50_us"].get<double>(), 1) << " us, p99 " << fmt(sum["gap_p99_us"].get<double>(), 1)
    << " us, max " << fmt(sum["gap_max_us"].get<double>(), 1) << " us)\n";
  if (!run.forwards.empty()) {
    const auto gaps = largest_gaps(run.forwards.back(), std::min(o.max_gaps, 5));
    if (!gaps.empty()) s << "  largest gaps (last forward):\n";
    for (const auto& g : gaps)
      s << "    " << std::setw(10) << fmt(ns_to_us(g.duration_ns()), 1) << " us  " << std::left << std::setw(11)
        << timeline::to_string(g.gap_class) << std::right << " " << (g.cause.empty() ? "-" : g.cause)
        << (g.layer >= 0 ? "" : " (before/after the layers)") << "\n";
  }
  s << "accuracy: " << run.accuracy.verdict;
  if (run.accuracy.verdict != "SKIPPED") s << " (max rel error " << run.accuracy.max_rel_error << ")";
  s << ": " << run.accuracy.reason << "\n";
  return s.str();
}

namespace {

void write_trace(const std::string& path, const ConfigRun& run, const nlohmann::json& meta) {
  if (path.empty() || run.forwards.empty()) return;
  timeline::ChromeTraceOptions topt;
  topt.gaps = &run.forwards.back().gaps;
  topt.metadata = meta;
  timeline::write_chrome_trace(path, run.last_timeline, topt);
}

int exit_code_for(const ConfigRun& run) { return run.accuracy.verdict == "FAIL" || !run.failure.empty() ? 1 : 0; }

}  // namespace

int run_encode(const EncodeOptions& options, const std::vector<std::string>& argv, std::ostream& out) {
  const ResolvedRun resolved = resolve(options.run);
  std::vector<std::pair<std::string, Toggles>> configs;
  if (options.sweep) {
    for (const auto& t : all_valid_toggles()) configs.emplace_back("sweep", t);
  } else {
    configs.push_back(resolve_toggles(options.preset, options.overrides));
  }
  auto device = make_run_device(resolved);
  const device::DeviceInfo info = device->info();
  auto verify_device = options.run.verify ? make_verify_device(resolved, *device) : nullptr;
  nlohmann::json result = make_result_envelope("encbench-encode", 1, argv, info.kind);
  int exit_code = 0;
  if (!options.sweep) {
    const ConfigRun run = run_config(*device, verify_device.get(), resolved, options.run, configs[0].first,
                                     configs[0].second);
    out << encode_summary(resolved, options.run, info, run);
    result.update(encode_body(resolved, options.run, info, run));
    write_trace(options.run.trace_path, run,
                {{"encbench", {{"schema", "encbench-encode"}, {"preset", run.label}, {"toggles", to_json(run.toggles)},
                               {"model", resolved.model.name}, {"device", info.kind}, {"modelled", info.modelled},
                               {"launch_overhead_us", options.run.launch_overhead_us}}}});
    exit_code = exit_code_for(run);
  } else {
    out << "sweep: " << configs.size() << " valid toggle combinations on " << resolved.model.name << ", device "
        << info.kind << (info.modelled ? " (TIMES ARE MODELLED, " + info.clock + " clock)" : "") << ", launch overhead "
        << fmt(options.run.launch_overhead_us, 1) << " us\n";
    out << "| seq-lens | scale | pad-decision | pad-method | out-buffer | kernel | forward ms | idle % | syncs | "
           "peak device memory MB | bytes allocated per forward MB | accuracy |\n";
    out << "|---|---|---|---|---|---|---|---|---|---|---|---|\n";
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& [label, t] : configs) {
      const ConfigRun run = run_config(*device, verify_device.get(), resolved, options.run, label, t);
      out << "| " << to_string(t.seq_lens) << " | " << to_string(t.scale) << " | " << to_string(t.pad_decision)
          << " | " << to_string(t.pad_method) << " | " << to_string(t.out_buffer) << " | " << to_string(t.kernel);
      if (run.failure.empty()) {
        const auto sum = summary_json(run);
        out << " | " << fmt(sum["forward_ms"].get<double>()) << " | " << fmt(100 * sum["idle_fraction"].get<double>(), 1)
            << " | " << fmt(sum["syncs_per_forward"].get<double>(), 0) << " | "
            << fmt(sum["peak_device_memory_bytes"].get<double>() / 1e6, 1) << " | "
            << fmt(sum["bytes_allocated_per_forward"].get<double>() / 1e6, 1) << " | " << run.accuracy.verdict << " |\n";
      } else {
        out << " | - | - | - | - | - | FAIL: " << run.failure << " |\n";
      }
      nlohmann::json row = encode_body(resolved, options.run, info, run);
      row.erase("ops");
      rows.push_back(row);
      if (exit_code_for(run) != 0) exit_code = 1;
    }
    result["model"] = to_json(resolved.model);
    result["device"] = {{"kind", info.kind}, {"name", info.name}, {"modelled", info.modelled}, {"clock", info.clock}};
    result["clock"] = info.clock;
    add_host_time(result, info, resolved);
    result["preset"] = "sweep";
    result["launch_overhead_us"] = options.run.launch_overhead_us;
    result["sweep"] = rows;
  }
  if (!options.run.json_path.empty()) write_json_file(options.run.json_path, result);
  return exit_code;
}

namespace {

// The A/B table and its JSON: per metric, the sides' medians [min-max] over the repetitions and a
// two-sided Mann-Whitney U test at `alpha` (identical constants differ by nothing).
struct SideComparison {
  nlohmann::json json;
  std::string table;  // markdown
};

SideComparison compare_sides(const ConfigRun& a, const ConfigRun& b, double alpha) {
  // Comparison rows: metric, lower-is-better samples.
  struct Row { std::string name, key, unit; double (*get)(const ForwardReport&); double scale; int precision; };
  const Row rows[] = {{"Forward time", "forward_ms", "ms", forward_ms, 1.0, 3},
                      {"Device busy", "device_busy_ms", "ms", busy_ms, 1.0, 3},
                      {"Device idle", "idle_fraction", "%", idle_frac, 100.0, 1},
                      {"Syncs per forward", "syncs_per_forward", "", syncs_of, 1.0, 0},
                      {"Host time per layer", "host_us_per_layer", "us", host_layer, 1.0, 1},
                      {"Idle gaps per forward", "gap_count", "", gap_count, 1.0, 0},
                      {"Largest gap", "gap_max_us", "us", gap_max, 1.0, 1},
                      {"Peak device memory", "peak_device_memory_mb", "MB", peak_in_use, 1e-6, 1},
                      {"Bytes allocated per forward", "bytes_allocated_mb", "MB", allocated, 1e-6, 1}};
  nlohmann::json comparison = nlohmann::json::object();
  std::ostringstream table;
  table << "| Metric | Before (" << a.label << ") | After (" << b.label << ") | Change | p-value | Above noise |\n";
  table << "|---|---|---|---|---|---|\n";
  for (const Row& row : rows) {
    std::vector<double> xa, xb;
    for (const auto& f : a.forwards) xa.push_back(row.get(f) * row.scale);
    for (const auto& f : b.forwards) xb.push_back(row.get(f) * row.scale);
    const double ma = stats::median(xa), mb = stats::median(xb);
    const auto sa = stats::summarize(xa), sb = stats::summarize(xb);
    const stats::MannWhitney mw = stats::mann_whitney_u(xa, xb);
    const bool constant = sa.min == sa.max && sb.min == sb.max;
    // Identical constant samples differ by nothing; different constants differ without noise.
    const bool significant = constant ? ma != mb : mw.p_value < alpha;
    const double change = ma != 0 ? (mb - ma) / std::fabs(ma) * 100.0 : 0.0;
    comparison[row.key] = {{"a_median", ma},        {"b_median", mb},
                           {"a_min", sa.min},       {"a_max", sa.max},
                           {"b_min", sb.min},       {"b_max", sb.max},
                           {"change_pct", change},  {"p_value", constant ? (ma != mb ? 0.0 : 1.0) : mw.p_value},
                           {"significant", significant}};
    auto cell = [&](double med, const stats::Summary& s) {
      return fmt(med, row.precision) + (row.unit.empty() ? "" : " " + row.unit) + " [" + fmt(s.min, row.precision) +
             "-" + fmt(s.max, row.precision) + "]";
    };
    table << "| " << row.name << " | " << cell(ma, sa) << " | " << cell(mb, sb) << " | "
          << (ma != 0 ? std::string(change >= 0 ? "+" : "").append(fmt(change, 2)).append(" %") : std::string("n/a")) << " | "
          << (constant ? std::string("-") : fmt(mw.p_value, 4)) << " | " << (significant ? "yes" : "no") << " |\n";
  }
  table << "| Accuracy | " << a.accuracy.verdict << " | " << b.accuracy.verdict << " | | | |\n";
  comparison["accuracy"] = {{"a", a.accuracy.verdict}, {"b", b.accuracy.verdict}};
  comparison["alpha"] = alpha;
  comparison["test"] = "mann-whitney-u two-sided";

  return {comparison, table.str()};
}

// What ran (model, inputs, device and its clock, repetitions), the sides, the table and any
// accuracy failure.
void print_ab_report(std::ostream& out, const ResolvedRun& resolved, const RunOptions& o, const device::DeviceInfo& info,
                     const ConfigRun& a, const ConfigRun& b, const SideComparison& compared, double alpha) {
  const ModelConfig& m = resolved.model;
  out << "A/B: " << m.name << ", ";
  for (std::size_t i = 0; i < resolved.media.size(); ++i) out << (i ? ", " : "") << resolved.media[i].spec;
  out << ", device " << info.kind
      << (!info.modelled ? ""
          : info.clock == "virtual" ? " (VIRTUAL CLOCK: roofline per op; " + host_time_text(info) + ")"
                                    : " (TIMES ARE MODELLED on the real clock: roofline per op; host work real)")
      << ", launch overhead " << fmt(o.launch_overhead_us, 1) << " us per op, " << o.forwards
      << " interleaved repetitions (ABAB...) after " << o.warmup << " warm-up\n";
  out << "A = " << a.label << " [" << describe(a.toggles) << "]\n";
  out << "B = " << b.label << " [" << describe(b.toggles) << "]\n\n";
  out << compared.table << "\n";
  out << "Values: median [min-max] over repetitions; 'Above noise' = two-sided Mann-Whitney U p < " << alpha
      << ".\n";
  if (a.accuracy.verdict == "FAIL") out << "A accuracy FAIL: " << a.accuracy.reason << "\n";
  if (b.accuracy.verdict == "FAIL") out << "B accuracy FAIL: " << b.accuracy.reason << "\n";
}

}  // namespace

int run_ab(const AbOptions& options, const std::vector<std::string>& argv, std::ostream& out) {
  const ResolvedRun resolved = resolve(options.run);
  require(options.alpha > 0 && options.alpha < 1, "--alpha must be in (0, 1)");
  const auto [label_a, toggles_a] = resolve_toggles(options.a, options.a_overrides);
  const auto [label_b, toggles_b] = resolve_toggles(options.b, options.b_overrides);
  // One device per side: each side's memory figures (weights, workspaces, caches) are its own,
  // and neither side's allocator state leaks into the other's forwards. Sides still alternate.
  auto device = make_run_device(resolved);
  auto device_b = make_run_device(resolved);
  const device::DeviceInfo info = device->info();
  const RunOptions& o = options.run;

  auto make_cfg = [&](const Toggles& t) {
    EncoderConfig cfg;
    cfg.model = resolved.model;
    cfg.toggles = t;
    cfg.mlp = o.mlp;
    cfg.seed = o.seed;
    cfg.kernel_wait_threshold_ns = static_cast<Nanos>(std::llround(o.kernel_wait_threshold_us * 1e3));
    cfg.keep_host_weights = false;  // verification builds its own runner
    return cfg;
  };
  ConfigRun a, b;
  a.label = label_a == options.a ? options.a : options.a + "+overrides";
  b.label = label_b == options.b ? options.b : options.b + "+overrides";
  a.toggles = toggles_a;
  b.toggles = toggles_b;
  ConfigRun* running = &a;  // the side whose call is under way, for an out-of-memory verdict
  try {
    EncoderRunner runner_a(make_cfg(toggles_a), *device);
    running = &b;
    EncoderRunner runner_b(make_cfg(toggles_b), *device_b);
    for (int i = 0; i < o.warmup; ++i) {
      running = &a;
      (void)runner_a.forward(resolved.grids);
      running = &b;
      (void)runner_b.forward(resolved.grids);
    }
    // Interleaved ABAB... so drift on a shared machine hits both sides alike.
    for (int i = 0; i < o.forwards; ++i) {
      running = &a;
      a.forwards.push_back(runner_a.forward(resolved.grids));
      running = &b;
      b.forwards.push_back(runner_b.forward(resolved.grids));
    }
    a.last_timeline = runner_a.last_timeline();
    b.last_timeline = runner_b.last_timeline();
  } catch (const OutOfDeviceMemoryAt& oom) {
    // Both runners are freed here. A configuration that does not fit is a FAIL row, not a crash.
    running->failure = oom.what();
    out << "A/B: " << (running == &a ? "A (" + a.label + ")" : "B (" + b.label + ")") << " FAIL: " << oom.what()
        << "\n";
    nlohmann::json result = make_result_envelope("encbench-ab", 1, argv, info.kind);
    result["a"] = {{"preset", a.label}, {"toggles", to_json(a.toggles)}, {"failure", a.failure}};
    result["b"] = {{"preset", b.label}, {"toggles", to_json(b.toggles)}, {"failure", b.failure}};
    result["failure"] = oom.what();
    if (!o.json_path.empty()) write_json_file(o.json_path, result);
    return 1;
  }  // both runners freed before verification builds its own (memory of real shapes)
  auto verify_device = o.verify ? make_verify_device(resolved, *device) : nullptr;
  auto verify_side = [&](const Toggles& t, ConfigRun& run) {
    run.accuracy = o.verify ? verify_config(verify_device ? *verify_device : *device, resolved, o, make_cfg(t))
                            : skipped_accuracy("not verified (pass --verify)");
  };
  verify_side(toggles_a, a);
  verify_side(toggles_b, b);

  SideComparison compared = compare_sides(a, b, options.alpha);
  nlohmann::json& comparison = compared.json;
  comparison["repetitions"] = o.forwards;
  comparison["clock"] = info.clock;
  if (!info.host_time.empty()) comparison["host_time"] = info.host_time;

  print_ab_report(out, resolved, o, info, a, b, compared, options.alpha);

  nlohmann::json result = make_result_envelope("encbench-ab", 1, argv, info.kind);
  nlohmann::json ja = make_result_envelope("encbench-encode", 1, argv, info.kind);
  ja.update(encode_body(resolved, o, info, a));
  nlohmann::json jb = make_result_envelope("encbench-encode", 1, argv, info.kind);
  jb.update(encode_body(resolved, o, info, b));
  result["a"] = ja;
  result["b"] = jb;
  result["comparison"] = comparison;
  result["markdown_table"] = compared.table;
  if (!o.json_path.empty()) write_json_file(o.json_path, result);
  if (!o.trace_path.empty()) {
    // Two traces: <path> for B (after) and <path>.a.json for A (before).
    write_trace(o.trace_path, b, {{"encbench", {{"schema", "encbench-ab"}, {"side", "b"}, {"toggles", to_json(b.toggles)}}}});
    write_trace(o.trace_path + ".a.json", a, {{"encbench", {{"schema", "encbench-ab"}, {"side", "a"}, {"toggles", to_json(a.toggles)}}}});
  }
  return (a.accuracy.verdict == "FAIL" || b.accuracy.verdict == "FAIL") ? 1 : 0;
}

}  // namespace encbench::encoder
