#pragma once
// The A/B of two encoder presets (`encbench run`): an open-loop client (requests at a set rate,
// not waiting on answers) against encbench's own server, once with preset A and once with B.
// On the real clock the presets are in-process arms of the live A/B (live_ab.hpp: the same
// interleaved ABBA rounds on fresh servers, readiness, warm-ups, stop, pooled comparison, MDE,
// per-round values, HTML) with the server's encoder counters beside it; on the virtual clock the
// same scheduler, encoder and metrics run as a discrete-event simulation
// (virtual_preset_ab.cpp). Both write one versioned JSON (schema "encbench-preset-ab", which
// `encbench compare` and the CI gate read).
// Plain data in (PresetAbOptions, from the scenario file + flags), plain data out (JSON).
#include <cstdint>
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/judgement/judgement.hpp"
#include "harness/scenario/server_recipe.hpp"
#include "harness/scenario/workload.hpp"

namespace encbench::client {
struct BenchConfig;  // harness/client/bench.hpp (the scenario file reader does not link the client)
}
namespace encbench::device {
class MeasuredOpTimes;  // harness/device/measured_op_times.hpp
}

namespace encbench::scenario {

// One arm's server on the real clock, as the preset A/B wants it started (plain data: the
// scenario's settings with the arm's preset). The caller maps it onto `encbench serve`'s options;
// scenario/ does not link server/ (the layering: scenario defines, the CLI wires the server in).
struct PresetServerSpec {
  std::string model;
  std::string device;
  std::filesystem::path profiles_dir;       // "" = the server's default lookup
  std::filesystem::path op_map;
  std::string encoder_preset;
  bool encoder_mlp = true;
  int max_num_seqs = 256;
  std::int64_t max_num_batched_tokens = 8192;
  std::int64_t max_num_encoder_input_tokens = 0;
  std::filesystem::path serving_model;
  bool async_scheduling = true;
  std::string api_server_model;  // PresetAbOptions::api_server_model
  int api_server_count = -1;
  std::string encoder_clock = "real";  // `encbench serve --encoder-clock`
  std::uint64_t seed = 0;
  std::filesystem::path profile_dir;        // the round's directory: the A/B reads the trace there
  bool enable_profiling = false;            // /start_profile and /stop_profile exist only when asked
};

// A started arm server: the handle the live A/B drives (url, port, stop, the engine's counters
// around the measured run as round_record()'s "server_engine_delta", whose keys
// engine_delta_guards reads), and the measured op times its device model loaded (null: none).
struct StartedPresetServer {
  std::unique_ptr<InProcessServer> server;
  std::shared_ptr<const device::MeasuredOpTimes> measured_op_times;
};
using PresetServerStarter = std::function<StartedPresetServer(const PresetServerSpec&)>;

// The guards over one round's "server_engine_delta" (keys steps, lm_modelled_ms,
// step_lateness_mean_ms, encoder_lateness_p99_us_mean, encoder_wall_ms, encoder_forwards): the
// engine thread fell behind its modelled schedule, or the sim device behind its model. Each
// reason starts with `where`; none = the round can be compared.
std::vector<std::string> engine_delta_guards(const nlohmann::json& delta, const std::string& where);

// Which clock the A/B runs on (--clock): the live server and the client in rounds; the same
// scheduler, encoder and metrics as a discrete-event simulation (virtual_loop.hpp); or the live
// round, then its virtual twin and how far apart they are.
enum class RunClock { real, virtual_time, both };
// "real" | "virtual" | "both"; throws InvalidInput ("--clock must be real, virtual or both, got '...'").
RunClock parse_run_clock(const std::string& text);
std::string to_string(RunClock clock);

// Where the results go.
struct PresetAbOutputs {
  std::filesystem::path result_dir = "encbench-results";  // the dataset, profiles and result JSON
  std::filesystem::path result_file;  // "" = result_dir/preset-ab-<A>-vs-<B>.json (virtual: -<name>-virtual)
  // Virtual clock: vLLM's per-request timeline (with engine steps and the TTFT breakdown) of the
  // first seed goes here; "" = none.
  std::filesystem::path timeline_html;
  std::vector<double> timeline_itl_thresholds_ms{25, 50};
};

// How it runs in this process: the caller's wiring, never a scenario key.
struct PresetAbWiring {
  // --clock real / both: starts one arm's server in this process for each round (the CLI's is
  // encbench serve's Server, cli/preset_server.hpp). Required on those clocks, unused on the
  // virtual one.
  PresetServerStarter start_server;
  // Readable => stop after the current seed, round or load point and write what finished (the CLI
  // makes it a signalfd of SIGINT/SIGTERM). -1: never.
  int stop_fd = -1;
};

// The preset A/B's options by role: what to run (the scenario: its file's keys with the flags
// over them), where the results go, and how it is wired in this process.
struct PresetAbOptions {
  // ---- what to run. Defaults = scenarios/preset-ab.json (kept in sync by tests/scenario).
  std::string name = "preset-ab";
  // The arms: two encoder presets on one model, device and server configuration.
  std::string model = "qwen3-vl-8b";
  std::string device = "sim:ascend-910b";
  std::vector<std::string> presets{"baseline", "optimized"};  // before, after
  std::filesystem::path profiles_dir;       // device profiles ("" = default lookup)
  std::filesystem::path op_map;             // trace: devices: kernel-name map ("" = the shipped one)
  bool encoder_mlp = true;
  int max_num_seqs = 256;
  std::int64_t max_num_batched_tokens = 8192;
  // vLLM's encoder budget per step; 0 = max(max_num_batched_tokens, tokens of the largest image).
  std::int64_t max_num_encoder_input_tokens = 0;
  bool async_scheduling = true;
  std::filesystem::path serving_model;      // serving/serving_model.hpp; "" = the LM roofline
  // Which serving model this is and why (the CLI's serving::describe of its choice: the calibrated
  // default, the file asked for, or the roofline), said on the run's first progress line; "" = none.
  std::string serving_model_note;
  std::string model_set;                    // name=value overrides of the serving model
  // vLLM's API-server stage (serving/api_server_model.hpp), both clocks: "" = the serving model's
  // (none without one), else none | a name in scenarios/serving/api-server | a path; processes:
  // -1 = the model's.
  std::string api_server_model;
  int api_server_count = -1;
  // The live arms' encoder clock (`encbench serve --encoder-clock`): "" = real for --clock real,
  // virtual for --clock both (whose comparison then isolates what the real clock adds to the
  // engine loop, the API-server stage, HTTP and the client, from the sim device's real-clock run).
  std::string live_encoder_clock;
  bool profile = true;                      // /start_profile../stop_profile around each arm
  // The workload: the open-loop client's requests.
  int num_prompts = 100;
  double request_rate = 10;
  int max_concurrency = 0;                  // client-side cap on requests in flight; 0 = none
  double burstiness = 5;
  int output_len = 32;
  int image_width = 640, image_height = 480;
  // Request shapes: a workload distribution file (workload.hpp), or "" for the fixed sample
  // (image_width x image_height, output_len tokens with ignore_eos).
  std::filesystem::path workload;
  // With a workload: what the published run's own table says of the sample it sent (vLLM bench's
  // "Total input tokens" and "Total generated tokens"), so the draws are conditioned on it
  // (workload.hpp SampleTotals); zeros = not known. Scenario key "sample_totals" {requests,
  // text_tokens, output_tokens, source}; the source stays here (the draws do not need it).
  SampleTotals sample_totals;
  std::string sample_totals_source;
  // Repetitions and clock: `rounds` interleaved ABBA rounds on the real clock (each arm once per
  // round); `seeds` runs per arm on the virtual one, with workload/arrival seeds seed, seed+1, ...
  RunClock clock = RunClock::real;
  std::uint64_t seed = 0;
  int rounds = 3;
  int seeds = 1;
  // Virtual clock: draw the serving model's run-to-run noise (step time, arrival, output lengths)
  // in each arm. Off for --clock both's virtual twin: the live round brings its own noise.
  bool modelled_run_noise = true;
  judgement::Settings judging;  // --threshold, --alpha, --power of the B-vs-A verdicts
  // Published numbers this scenario reproduces: {"source", "role", "before": {metric: value},
  // "after": {...}} with vLLM's result keys; printed beside the model's with the error.
  nlohmann::json published;

  // ---- where the results go
  PresetAbOutputs outputs;
  // ---- how it runs in this process (not scenario keys)
  PresetAbWiring wiring;
};

// True when `fd` (a stop_fd) is readable now; never blocks.
bool stop_requested(int fd);

// Reads a scenario file over `base` (keys absent keep base's values). Throws InvalidInput naming
// the file and key.
PresetAbOptions load_scenario(const std::filesystem::path& file, PresetAbOptions base = {});
PresetAbOptions apply_scenario_json(const nlohmann::json& doc, const std::string& origin,
                                      PresetAbOptions base = {});
void validate(const PresetAbOptions& options);  // throws InvalidInput
nlohmann::json to_json(const PresetAbOptions& options);

// The serving client's configuration of one arm (vLLM's bench serve flags as the scenario sets
// them), shared by both clocks; the live loop adds where the server is and what to scrape.
client::BenchConfig arm_bench_config(const PresetAbOptions& options, const std::string& label,
                                     const std::vector<std::string>& argv);

// The result documents' schema version, both clocks: 3 (version 2 was the real clock's before the
// two clocks shared one; `encbench compare` and `report` read 1 to 3).
inline constexpr int kPresetAbSchemaVersion = 3;

struct PresetAbRun {
  nlohmann::json result;             // schema "encbench-preset-ab" / kPresetAbSchemaVersion
  std::filesystem::path result_path; // where it was written
  // False when a guard found that this machine could not keep up (client dispatch lag, failed
  // requests, or the sim device's lateness): the run printed no verdict; `encbench run` exits 2.
  bool verdict_valid = true;
  std::vector<std::string> invalid_reasons;
  bool interrupted = false;  // SIGINT/SIGTERM (stop_fd): only the rounds that finished are pooled
};

// Runs every arm; tables on `out`, progress on `progress`. Dispatches on options.clock.
PresetAbRun run_preset_ab(const PresetAbOptions& options, const std::vector<std::string>& argv,
                              std::ostream& out, std::ostream& progress);

// The virtual-clock preset A/B (virtual_preset_ab.cpp).
PresetAbRun run_virtual_preset_ab(const PresetAbOptions& options, const std::vector<std::string>& argv,
                                      std::ostream& out, std::ostream& progress);

}  // namespace encbench::scenario
