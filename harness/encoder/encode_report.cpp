#include "harness/encoder/encode_report.hpp"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <map>
#include <ostream>
#include <sstream>

#include "harness/core/number_format.hpp"
#include "harness/core/result_json.hpp"
#include "harness/core/stats.hpp"
#include "harness/device/measured_op_times.hpp"

namespace encbench::encoder {

namespace {

std::string fmt(double v, int precision = 3) { return numbers::fixed(v, precision); }

std::vector<double> collect(const std::vector<ForwardReport>& fs, double (*get)(const ForwardReport&)) {
  std::vector<double> out;
  for (const auto& f : fs) out.push_back(get(f));
  return out;
}
double forward_ms(const ForwardReport& f) { return ns_to_ms(f.forward_ns); }
// The device work left when the host issued the forward's last op (what post-forward host work hides behind).
double end_wait_ms(const ForwardReport& f) { return ns_to_ms(f.end_wait_ns); }
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


}  // namespace

namespace {
void add_host_time(nlohmann::json& j, const device::DeviceInfo& info, const ResolvedRun& r) {
  if (info.host_time.empty()) return;
  j["host_time"] = info.host_time;
  j["device"]["host_time"] = info.host_time;
  if (r.device_options.host_model && info.host_time == "model") j["host_model"] = to_json(*r.device_options.host_model);
}

nlohmann::json gaps_json(const ForwardReport& last, Nanos origin, int max_gaps) {
  nlohmann::json gaps = nlohmann::json::array();
  for (const auto& g : largest_gaps(last, max_gaps))
    gaps.push_back({{"start_us", ns_to_us(g.start_ns - origin)},
                    {"end_us", ns_to_us(g.end_ns - origin)},
                    {"duration_us", ns_to_us(g.duration_ns())},
                    {"class", timeline::to_string(g.gap_class)},
                    {"cause", g.cause},
                    {"layer", g.layer}});
  return gaps;
}

nlohmann::json layers_json(const ForwardReport& last) {
  nlohmann::json layers = nlohmann::json::array();
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
  return layers;
}

// The last forward in detail: its largest gaps, idle per layer by class, its device ops and host
// spans (up to --max-ops each) and how each layer's attention got its lengths.
void add_last_forward(nlohmann::json& j, const RunOptions& o, const ConfigRun& run) {
  const ForwardReport& last = run.forwards.back();
  const Nanos origin = timeline_origin(run.last_timeline);
  j["gaps"] = gaps_json(last, origin, o.max_gaps);
  j["layers"] = layers_json(last);
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
  // report draws host and device one above the other (the host-bound forward's page).
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
  j["cuda_gemm_math"] = o.cuda_gemm_math;
  j["kernel_wait_threshold_us"] = o.kernel_wait_threshold_us;
  j["samples"] = {{"forward_ms", collect(run.forwards, forward_ms)},
                  {"idle_fraction", collect(run.forwards, idle_frac)},
                  {"device_busy_ms", collect(run.forwards, busy_ms)},
                  {"syncs", collect(run.forwards, syncs_of)},
                  {"end_wait_ms", collect(run.forwards, end_wait_ms)},
                  {"host_us_per_layer", collect(run.forwards, host_layer)},
                  {"peak_device_memory_bytes", collect(run.forwards, peak_in_use)},
                  {"bytes_allocated", collect(run.forwards, allocated)}};
  j["summary"] = summary_json(run);
  j["gaps"] = nlohmann::json::array();
  j["layers"] = nlohmann::json::array();
  if (!run.forwards.empty()) add_last_forward(j, o, run);
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
    << (o.mlp ? ", with MLP" : ", attention blocks only (--no-mlp)") << ")\n";
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
  s << "launch overhead: " << fmt(o.launch_overhead_us, 1) << " us per device op; alloc-mode " << o.alloc_mode;
  if (o.device.rfind("cuda", 0) == 0) s << "; GEMM math " << o.cuda_gemm_math;
  s << "\n";
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

void print_encode_sweep_head(std::ostream& out, const ResolvedRun& resolved, const RunOptions& o,
                             const device::DeviceInfo& info, std::size_t configurations) {
  out << "sweep: " << configurations << " valid toggle combinations on " << resolved.model.name << ", device "
      << info.kind << (info.modelled ? " (TIMES ARE MODELLED, " + info.clock + " clock)" : "") << ", launch overhead "
      << fmt(o.launch_overhead_us, 1) << " us\n";
  out << "| seq-lens | scale | pad-decision | pad-method | out-buffer | kernel | forward ms | idle % | syncs | "
         "peak device memory MB | bytes allocated per forward MB | accuracy |\n";
  out << "|---|---|---|---|---|---|---|---|---|---|---|---|\n";
}

void print_encode_sweep_row(std::ostream& out, const ConfigRun& run) {
  const Toggles& t = run.toggles;
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
}

nlohmann::json encode_json(const ResolvedRun& resolved, const RunOptions& o, const EncodeRecord& record,
                           const std::vector<std::string>& argv) {
  const device::DeviceInfo& info = record.info;
  nlohmann::json result = make_result_envelope("encbench-encode", 1, argv, info.kind);
  if (!record.sweep) {
    result.update(encode_body(resolved, o, info, record.runs.front()));
    return result;
  }
  nlohmann::json rows = nlohmann::json::array();
  for (const ConfigRun& run : record.runs) {
    nlohmann::json row = encode_body(resolved, o, info, run);
    row.erase("ops");
    rows.push_back(row);
  }
  result["model"] = to_json(resolved.model);
  result["device"] = {{"kind", info.kind}, {"name", info.name}, {"modelled", info.modelled}, {"clock", info.clock}};
  result["clock"] = info.clock;
  add_host_time(result, info, resolved);
  result["preset"] = "sweep";
  result["launch_overhead_us"] = o.launch_overhead_us;
  result["sweep"] = rows;
  return result;
}

std::vector<SideMetric> compare_sides(const ConfigRun& a, const ConfigRun& b, const judgement::Settings& settings) {
  // Comparison rows: metric, lower-is-better samples.
  struct ForwardMetricRow { const char *name, *key, *unit; double (*get)(const ForwardReport&); double scale; int precision; };
  const ForwardMetricRow rows[] = {{"Forward time", "forward_ms", "ms", forward_ms, 1.0, 3},
                      {"Device busy", "device_busy_ms", "ms", busy_ms, 1.0, 3},
                      {"Device idle", "idle_fraction", "%", idle_frac, 100.0, 1},
                      {"Syncs per forward", "syncs_per_forward", "", syncs_of, 1.0, 0},
                      {"Host time per layer", "host_us_per_layer", "us", host_layer, 1.0, 1},
                      {"Idle gaps per forward", "gap_count", "", gap_count, 1.0, 0},
                      {"Largest gap", "gap_max_us", "us", gap_max, 1.0, 1},
                      {"Peak device memory", "peak_device_memory_mb", "MB", peak_in_use, 1e-6, 1},
                      {"Bytes allocated per forward", "bytes_allocated_mb", "MB", allocated, 1e-6, 1}};
  std::vector<SideMetric> out;
  for (const ForwardMetricRow& row : rows) {
    std::vector<double> xa, xb;
    for (const auto& f : a.forwards) xa.push_back(row.get(f) * row.scale);
    for (const auto& f : b.forwards) xb.push_back(row.get(f) * row.scale);
    SideMetric m{row.name, row.key, row.unit, row.precision};
    m.a_median = stats::median(xa);
    m.b_median = stats::median(xb);
    m.a = stats::summarize(xa);
    m.b = stats::summarize(xb);
    m.constant = m.a.min == m.a.max && m.b.min == m.b.max;
    // The forwards are interleaved repetitions (ABAB...): each one a round of the judgement.
    // Constant samples (syncs, byte counts, virtual-clock times) are deterministic.
    judgement::Evidence ea, eb;
    ea.value = m.a_median;
    eb.value = m.b_median;
    ea.rounds = xa;
    eb.rounds = xb;
    ea.deterministic = eb.deterministic = m.constant;
    m.judgement = judgement::judge(ea, eb, {judgement::StatisticKind::Kind::median, 50}, false, settings);
    // Identical constant samples differ by nothing; different constants differ without noise.
    m.p_value = m.constant ? (m.a_median != m.b_median ? 0.0 : 1.0) : m.judgement.p_value.value_or(1.0);
    m.significant = m.constant ? m.a_median != m.b_median : m.p_value < settings.alpha;
    m.change_pct = m.a_median != 0 ? (m.b_median - m.a_median) / std::fabs(m.a_median) * 100.0 : 0.0;
    out.push_back(m);
  }
  return out;
}

namespace {

// The A/B table (markdown): per metric the sides' medians [min-max] over the repetitions, the
// change, and the judgement: its interval, p, MDE and verdict.
std::string ab_table(const AbRecord& r) {
  std::ostringstream table;
  table << "| Metric | Before (" << r.a.label << ") | After (" << r.b.label
        << ") | Change | Test's change [interval] | p-value | MDE | Verdict |\n";
  table << "|---|---|---|---|---|---|---|---|\n";
  for (const SideMetric& m : r.metrics) {
    auto cell = [&](double med, const stats::Summary& s) {
      return fmt(med, m.precision) + (m.unit.empty() ? "" : " " + m.unit) + " [" + fmt(s.min, m.precision) + "-" +
             fmt(s.max, m.precision) + "]";
    };
    table << "| " << m.name << " | " << cell(m.a_median, m.a) << " | " << cell(m.b_median, m.b) << " | "
          << (m.a_median != 0 ? std::string(m.change_pct >= 0 ? "+" : "").append(fmt(m.change_pct, 2)).append(" %")
                              : std::string("n/a"))
          << " | " << judgement::format_change(m.judgement) << " | " << (m.constant ? std::string("-") : fmt(m.p_value, 4))
          << " | " << judgement::format_mde(m.judgement) << " | " << judgement::to_string(m.judgement.verdict) << " |\n";
  }
  table << "| Accuracy | " << r.a.accuracy.verdict << " | " << r.b.accuracy.verdict << " | | | | | |\n";
  return table.str();
}

nlohmann::json comparison_json(const RunOptions& o, const AbRecord& r) {
  nlohmann::json comparison = nlohmann::json::object();
  for (const SideMetric& m : r.metrics)
    comparison[m.key] = {{"a_median", m.a_median}, {"b_median", m.b_median},   {"a_min", m.a.min},
                         {"a_max", m.a.max},       {"b_min", m.b.min},         {"b_max", m.b.max},
                         {"change_pct", m.change_pct}, {"p_value", m.p_value}, {"significant", m.significant},
                         {"verdict", judgement::to_string(m.judgement.verdict)}, {"test", m.judgement.test},
                         {"change", m.judgement.change ? nlohmann::json(*m.judgement.change) : nlohmann::json()},
                         {"change_interval", m.judgement.ci_low ? nlohmann::json({*m.judgement.ci_low, *m.judgement.ci_high})
                                                                : nlohmann::json()},
                         {"mde_relative", m.judgement.mde ? nlohmann::json(*m.judgement.mde) : nlohmann::json()},
                         {"reason", m.judgement.reason}};
  comparison["accuracy"] = {{"a", r.a.accuracy.verdict}, {"b", r.b.accuracy.verdict}};
  comparison["alpha"] = r.judging.alpha;
  comparison["judged_at"] = {{"threshold_relative", r.judging.threshold}, {"alpha", r.judging.alpha},
                             {"power", r.judging.power}, {"rule", judgement::describe(r.judging)}};
  comparison["test"] = "t on the forwards' log values (each forward a repetition; judgement.hpp)";
  comparison["repetitions"] = o.forwards;
  comparison["clock"] = r.info.clock;
  if (!r.info.host_time.empty()) comparison["host_time"] = r.info.host_time;
  return comparison;
}

}  // namespace

void print_ab(std::ostream& out, const ResolvedRun& resolved, const RunOptions& o, const AbRecord& r) {
  if (!r.failure.empty()) {
    out << "A/B: " << (!r.a.failure.empty() ? "A (" + r.a.label + ")" : "B (" + r.b.label + ")") << " FAIL: "
        << r.failure << "\n";
    return;
  }
  const device::DeviceInfo& info = r.info;
  out << "A/B: " << resolved.model.name << ", ";
  for (std::size_t i = 0; i < resolved.media.size(); ++i) out << (i ? ", " : "") << resolved.media[i].spec;
  out << ", device " << info.kind
      << (!info.modelled ? ""
          : info.clock == "virtual" ? " (VIRTUAL CLOCK: roofline per op; " + host_time_text(info) + ")"
                                    : " (TIMES ARE MODELLED on the real clock: roofline per op; host work real)")
      << ", launch overhead " << fmt(o.launch_overhead_us, 1) << " us per op, " << o.forwards
      << " interleaved repetitions (ABAB...) after " << o.warmup << " warm-up\n";
  out << "A = " << r.a.label << " [" << describe(r.a.toggles) << "]\n";
  out << "B = " << r.b.label << " [" << describe(r.b.toggles) << "]\n\n";
  out << ab_table(r) << "\n";
  out << "Values: median [min-max] over repetitions; verdicts by the project's one rule (docs/reports.md, Verdicts): "
         "t on the forwards' log values, judged at "
      << judgement::describe(r.judging) << "; constant samples by the threshold alone.\n";
  if (r.a.accuracy.verdict == "FAIL") out << "A accuracy FAIL: " << r.a.accuracy.reason << "\n";
  if (r.b.accuracy.verdict == "FAIL") out << "B accuracy FAIL: " << r.b.accuracy.reason << "\n";
}

nlohmann::json ab_json(const ResolvedRun& resolved, const RunOptions& o, const AbRecord& r,
                       const std::vector<std::string>& argv) {
  const device::DeviceInfo& info = r.info;
  nlohmann::json result = make_result_envelope("encbench-ab", 1, argv, info.kind);
  if (!r.failure.empty()) {
    result["a"] = {{"preset", r.a.label}, {"toggles", to_json(r.a.toggles)}, {"failure", r.a.failure}};
    result["b"] = {{"preset", r.b.label}, {"toggles", to_json(r.b.toggles)}, {"failure", r.b.failure}};
    result["failure"] = r.failure;
    return result;
  }
  nlohmann::json ja = make_result_envelope("encbench-encode", 1, argv, info.kind);
  ja.update(encode_body(resolved, o, info, r.a));
  nlohmann::json jb = make_result_envelope("encbench-encode", 1, argv, info.kind);
  jb.update(encode_body(resolved, o, info, r.b));
  result["a"] = ja;
  result["b"] = jb;
  result["comparison"] = comparison_json(o, r);
  result["markdown_table"] = ab_table(r);
  return result;
}

}  // namespace encbench::encoder
