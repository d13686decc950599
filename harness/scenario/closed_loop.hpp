#pragma once
// The closed-loop scenario (`encbench run`): for each encoder preset, start the live server
// in-process on the chosen device, drive it with the project's vision-arena sample through the
// serving client, stop it. Arms run in interleaved rounds (ABBA...: round 1 A then B, round 2 B
// then A, ...), each arm of each round on a fresh server with its own warm-up, so drift of a
// shared machine falls on both arms alike. Then print the seeds' Before/After/Comparison table
// over the pooled rounds (round-to-round spread as the noise floor), the first round's serving
// blocks and the server-side encoder figures, and write one versioned JSON.
// Plain data in (ClosedLoopOptions, from the scenario file + flags), plain data out (JSON).
#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace encbench::client {
struct BenchConfig;  // harness/client/bench.hpp (the scenario file reader does not link the client)
}

namespace encbench::scenario {

struct ClosedLoopOptions {
  // Defaults = scenarios/closed-loop.json (kept in sync by tests/scenario).
  std::string name = "closed-loop";
  std::string model = "qwen3-vl-8b";
  std::string device = "sim:ascend-910b";
  std::vector<std::string> presets{"baseline", "optimized"};  // before, after
  int rounds = 3;                           // interleaved ABBA rounds (each arm once per round)
  int num_prompts = 100;
  double request_rate = 10;
  int max_concurrency = 0;                  // client-side cap on requests in flight; 0 = none
  double burstiness = 5;
  int output_len = 32;
  int image_width = 640, image_height = 480;
  std::uint64_t seed = 0;
  int max_num_seqs = 256;
  std::int64_t max_num_batched_tokens = 8192;
  bool encoder_mlp = true;
  bool profile = true;                      // /start_profile../stop_profile around each arm
  std::filesystem::path result_dir = "encbench-results";
  std::filesystem::path result_file;        // "" = result_dir/closed-loop-<A>-vs-<B>.json
  std::filesystem::path profiles_dir;       // device profiles ("" = default lookup)
  std::filesystem::path op_map;             // trace: devices: kernel-name map ("" = the shipped one)
  // Which clock (--clock): "real" runs the live server and the client in rounds; "virtual" runs
  // the same scheduler, encoder and metrics as a discrete-event simulation (virtual_loop.hpp),
  // `seeds` times per arm with workload/arrival seeds seed, seed+1, ...
  std::string clock = "real";
  int seeds = 1;
  // Request shapes: a workload distribution file (workload.hpp), or "" for the fixed sample
  // (image_width x image_height, output_len tokens with ignore_eos).
  std::filesystem::path workload;
  std::filesystem::path serving_model;      // server/serving_model.hpp; "" = the LM roofline
  std::string model_set;                    // name=value overrides of the serving model
  bool async_scheduling = true;
  // vLLM's encoder budget per step; 0 = max(max_num_batched_tokens, tokens of the largest image).
  std::int64_t max_num_encoder_input_tokens = 0;
  // Published numbers this scenario reproduces: {"source", "role", "before": {metric: value},
  // "after": {...}} with vLLM's result keys; printed beside the model's with the error.
  nlohmann::json published;
  // Readable => stop after the current seed or load point and write what finished (the CLI makes
  // it a signalfd of SIGINT/SIGTERM). -1: never.
  int stop_fd = -1;
  // Virtual clock: write vLLM's per-request timeline (with engine steps and the TTFT breakdown)
  // of the first seed here; "" = none.
  std::filesystem::path timeline_html;
  std::vector<double> timeline_itl_thresholds_ms{25, 50};
};

// True when `fd` (a stop_fd) is readable now; never blocks.
bool stop_requested(int fd);

// Reads a scenario file over `base` (keys absent keep base's values). Throws InvalidInput naming
// the file and key.
ClosedLoopOptions load_scenario(const std::filesystem::path& file, ClosedLoopOptions base = {});
ClosedLoopOptions apply_scenario_json(const nlohmann::json& doc, const std::string& origin,
                                      ClosedLoopOptions base = {});
void validate(const ClosedLoopOptions& options);  // throws InvalidInput
nlohmann::json to_json(const ClosedLoopOptions& options);

// The serving client's configuration of one arm (vLLM's bench serve flags as the scenario sets
// them), shared by both clocks; the live loop adds where the server is and what to scrape.
client::BenchConfig arm_bench_config(const ClosedLoopOptions& options, const std::string& label,
                                     const std::vector<std::string>& argv);

struct ClosedLoopRun {
  nlohmann::json result;             // schema "encbench-closed-loop" / 2
  std::filesystem::path result_path; // where it was written
  // False when a guard found that this machine could not keep up (client dispatch lag, failed
  // requests, or the sim device's lateness): the run printed no verdict; `encbench run` exits 2.
  bool verdict_valid = true;
  std::vector<std::string> invalid_reasons;
  bool interrupted = false;  // SIGINT/SIGTERM (stop_fd): only the rounds that finished are pooled
};

// Runs every arm; tables on `out`, progress on `progress`. Dispatches on options.clock.
ClosedLoopRun run_closed_loop(const ClosedLoopOptions& options, const std::vector<std::string>& argv,
                              std::ostream& out, std::ostream& progress);

// The virtual-clock closed loop (virtual_closed_loop.cpp).
ClosedLoopRun run_virtual_closed_loop(const ClosedLoopOptions& options, const std::vector<std::string>& argv,
                                      std::ostream& out, std::ostream& progress);

}  // namespace encbench::scenario
