#include "harness/scenario/closed_loop.hpp"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <ostream>
#include <sstream>

#include "harness/client/bench.hpp"
#include "harness/client/dataset.hpp"
#include "harness/core/clock.hpp"
#include "harness/core/error.hpp"
#include "harness/core/result_json.hpp"
#include "harness/server/serve_command.hpp"
#include "harness/server/server.hpp"
#include "reports/compare.hpp"
#include "reports/result.hpp"
#include "reports/tables.hpp"

namespace encbench::scenario {
namespace {

template <typename T>
void read_key(const nlohmann::json& doc, const char* key, T& into, const std::string& origin) {
  const auto it = doc.find(key);
  if (it == doc.end()) return;
  try {
    into = it->get<T>();
  } catch (const nlohmann::json::exception&) {
    throw InvalidInput(origin + ": key \"" + key + "\" has the wrong type (" + it->dump() + ")");
  }
}

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
          {"syncs_per_forward", forwards > 0 ? static_cast<double>(syncs) / static_cast<double>(forwards) : 0.0},
          {"prompt_tokens", b.prompt_tokens - a.prompt_tokens},
          {"generation_tokens", b.generation_tokens - a.generation_tokens}};
}

// snprintf into a string of the needed size: long labels and paths are never cut.
template <typename... Args>
std::string sformat(const char* fmt, Args... args) {
  const int n = std::snprintf(nullptr, 0, fmt, args...);
  if (n <= 0) return {};
  std::string out(static_cast<std::size_t>(n), '\0');
  std::snprintf(out.data(), out.size() + 1, fmt, args...);
  return out;
}

std::string fixed(double v, int digits) { return sformat("%.*f", digits, v); }

}  // namespace

ClosedLoopOptions apply_scenario_json(const nlohmann::json& doc, const std::string& origin, ClosedLoopOptions o) {
  require(doc.is_object(), origin + ": a scenario is a JSON object");
  if (doc.contains("schema"))
    require(doc["schema"] == "encbench-scenario", origin + ": schema must be \"encbench-scenario\"");
  read_key(doc, "name", o.name, origin);
  read_key(doc, "model", o.model, origin);
  read_key(doc, "device", o.device, origin);
  read_key(doc, "presets", o.presets, origin);
  read_key(doc, "num_prompts", o.num_prompts, origin);
  read_key(doc, "request_rate", o.request_rate, origin);
  read_key(doc, "burstiness", o.burstiness, origin);
  read_key(doc, "output_len", o.output_len, origin);
  read_key(doc, "image_width", o.image_width, origin);
  read_key(doc, "image_height", o.image_height, origin);
  read_key(doc, "seed", o.seed, origin);
  read_key(doc, "max_num_seqs", o.max_num_seqs, origin);
  read_key(doc, "max_num_batched_tokens", o.max_num_batched_tokens, origin);
  read_key(doc, "encoder_mlp", o.encoder_mlp, origin);
  read_key(doc, "profile", o.profile, origin);
  return o;
}

ClosedLoopOptions load_scenario(const std::filesystem::path& file, ClosedLoopOptions base) {
  std::ifstream in(file);
  require(static_cast<bool>(in), "cannot read scenario file " + file.string());
  const nlohmann::json doc = nlohmann::json::parse(in, nullptr, false);
  require(!doc.is_discarded(), "scenario file " + file.string() + " is not valid JSON");
  return apply_scenario_json(doc, file.string(), std::move(base));
}

void validate(const ClosedLoopOptions& o) {
  require(o.presets.size() == 2, "--presets needs exactly two presets (before,after)");
  require(o.num_prompts >= 1, "--num-prompts must be at least 1");
  require(o.request_rate > 0, "--request-rate must be positive (inf allowed)");
  require(o.burstiness > 0, "--burstiness must be positive");
  require(o.output_len >= 1, "--output-len must be at least 1");
  require(o.image_width >= 1 && o.image_height >= 1, "image size must be positive");
}

nlohmann::json to_json(const ClosedLoopOptions& o) {
  return {{"name", o.name},
          {"model", o.model},
          {"device", o.device},
          {"presets", o.presets},
          {"num_prompts", o.num_prompts},
          {"request_rate", std::isfinite(o.request_rate) ? nlohmann::json(o.request_rate) : nlohmann::json("inf")},
          {"burstiness", o.burstiness},
          {"output_len", o.output_len},
          {"image_width", o.image_width},
          {"image_height", o.image_height},
          {"seed", o.seed},
          {"max_num_seqs", o.max_num_seqs},
          {"max_num_batched_tokens", o.max_num_batched_tokens},
          {"encoder_mlp", o.encoder_mlp},
          {"profile", o.profile},
          {"result_dir", o.result_dir.string()}};
}

ClosedLoopRun run_closed_loop(const ClosedLoopOptions& o, const std::vector<std::string>& argv, std::ostream& out,
                              std::ostream& progress) {
  validate(o);
  // Where the result goes is checked before the arms run, not after minutes of serving.
  const std::filesystem::path result_path =
      o.result_file.empty() ? o.result_dir / ("closed-loop-" + o.presets[0] + "-vs-" + o.presets[1] + ".json")
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

  nlohmann::json arms = nlohmann::json::array();
  std::vector<nlohmann::json> serving;
  std::vector<std::string> blocks;
  for (const std::string& preset : o.presets) {
    server::ServeOptions so;
    so.port = 0;
    so.model = o.model;
    so.device = o.device;
    if (!o.profiles_dir.empty()) so.profiles_dir = o.profiles_dir;
    so.encoder_preset = preset;
    so.encoder_mlp = o.encoder_mlp;
    so.max_num_seqs = o.max_num_seqs;
    so.max_num_batched_tokens = o.max_num_batched_tokens;
    so.seed = o.seed;
    so.profile_dir = o.result_dir / ("profile-" + preset);
    server::Server srv(server::build_server_config(so));
    srv.start();
    progress << "[run] " << preset << ": server on " << srv.base_url() << " (" << o.model << ", " << o.device
             << "), " << o.num_prompts << " requests at " << o.request_rate << " req/s, burstiness " << o.burstiness
             << std::endl;

    client::BenchConfig bc;
    bc.backend = client::Backend::openai_chat;
    bc.endpoint = "/v1/chat/completions";
    bc.endpoint_given = true;
    bc.host = "127.0.0.1";
    bc.port = srv.port();
    bc.model = o.model;
    bc.label = preset;
    bc.dataset.name = "hf";
    bc.dataset.path = gen.out.string();
    bc.dataset.num_prompts = static_cast<std::size_t>(o.num_prompts);
    bc.dataset.seed = o.seed;
    bc.dataset.output_len = o.output_len;
    bc.request_rate = o.request_rate;
    bc.burstiness = o.burstiness;
    bc.seed = o.seed;
    bc.ignore_eos = true;  // same output length on both arms: only the encoder differs
    bc.save_detailed = true;
    bc.profile = o.profile;
    bc.scrape_metrics = true;
    bc.argv = argv;
    client::validate(bc);

    const server::EngineStats before = srv.engine_stats();
    const client::BenchResult result = client::run_benchmark(bc);
    const server::EngineStats after = srv.engine_stats();
    srv.stop();

    std::ostringstream block;
    client::print_errors(block, result);
    client::print_vllm_block(block, bc, result);
    client::print_server_sections(block, result);
    blocks.push_back(block.str());
    nlohmann::json json = client::to_vllm_json(bc, result);
    nlohmann::json arm = {{"preset", preset}, {"server_engine_delta", engine_delta(before, after)}};
    progress << "[run] " << preset << ": done, " << result.metrics.completed << " completed, mean TTFT "
             << fixed(result.metrics.latency.count("ttft") ? result.metrics.latency.at("ttft").mean_ms : 0.0, 2) << " ms" << std::endl;
    serving.push_back(json);
    arm["serving"] = std::move(json);
    arms.push_back(std::move(arm));
  }

  // The seeds' table from the reports library (Mann-Whitney on the per-request samples).
  const reports::RunResult base = reports::parse_result(serving[0], o.presets[0]);
  const reports::RunResult next = reports::parse_result(serving[1], o.presets[1]);
  const reports::Comparison comparison = reports::compare_runs(base, next, reports::default_gate());

  for (std::size_t i = 0; i < blocks.size(); ++i) out << "\n[" << o.presets[i] << "]\n" << blocks[i];
  out << "\nClosed loop: " << o.presets[0] << " (Before) vs " << o.presets[1] << " (After), " << o.model << " on "
      << o.device << (o.device.rfind("sim:", 0) == 0 ? " (device times MODELLED)" : "") << "\n";
  out << reports::render_terminal(comparison);
  // Encoder side of the same windows (server's counters; profile summary when --profile).
  const nlohmann::json& d0 = arms[0]["server_engine_delta"];
  const nlohmann::json& d1 = arms[1]["server_engine_delta"];
  auto row = [&](const std::string& label, const char* key, int digits) {
    const double a = d0[key].get<double>(), b = d1[key].get<double>();
    std::optional<double> change;
    if (a != 0) change = (b - a) / std::fabs(a);
    out << sformat("| %-34s | %12s | %12s | %-12s |\n", label.c_str(), fixed(a, digits).c_str(),
                   fixed(b, digits).c_str(), reports::format_change(change).c_str());
  };
  out << "\nEncoder device (server side, same window)\n";
  out << sformat("| %-34s | %12s | %12s | %-12s |\n", "Metric", "Before", "After", "Comparison");
  row("Encoder forwards", "encoder_forwards", 0);
  row("Images encoded", "images", 0);
  row("Encoder wall time (ms)", "encoder_wall_ms", 1);
  row("Encoder device busy (ms)", "device_busy_ms", 1);
  row("Encoder device idle (ms)", "device_idle_ms", 1);
  row("Encoder device idle (%)", "idle_pct", 2);
  row("Syncs per forward", "syncs_per_forward", 2);

  nlohmann::json doc = make_result_envelope("encbench-closed-loop", 1, argv, o.device);
  doc["scenario"] = to_json(o);
  doc["arms"] = arms;
  doc["comparison"] = reports::to_json(comparison);
  ClosedLoopRun run;
  run.result_path = result_path;
  write_json_file(run.result_path, doc);
  progress << "[run] wrote " << run.result_path.string() << std::endl;
  run.result = std::move(doc);
  return run;
}

}  // namespace encbench::scenario
