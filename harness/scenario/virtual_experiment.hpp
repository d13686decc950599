#pragma once
// The virtual-time experiment of a scenario: its serving model, workload and one encoder per arm
// (the live server's hook on the virtual-clock sim), built once and run at any load: one point of
// `encbench run --clock virtual`, every point of a sweep, every probe of a capacity search.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/client/bench.hpp"
#include "harness/scenario/preset_ab.hpp"
#include "harness/scenario/op_time_report.hpp"
#include "reports/compare.hpp"
#include "harness/serving/virtual_loop.hpp"
#include "harness/scenario/workload.hpp"
#include "harness/serving/serving_model.hpp"
#include "harness/vision/vision_geometry.hpp"

namespace encbench::scenario {

// One arm at one seed as measured: the client's configuration of the arm and vLLM's metrics of
// its requests (config + result are what vLLM's client would print and save; the reporters,
// serving_json and vllm_block below, turn them into those), and the engine and encoder counters.
struct ArmSeed {
  std::uint64_t seed = 0;
  client::BenchConfig config;     // the arm as vLLM's client runs it (percentiles, save_detailed)
  client::BenchResult result;     // result.metrics: vLLM's metrics, per-request samples included
  serving::VirtualEngineCounters engine;
  double wall_s = 0;
  serving::VirtualArmResult detail; // steps, traces and records: only with keep_detail
};

// vLLM's result keys of one arm and seed (bench serve --save-result; per-request arrays included).
nlohmann::json serving_json(const ArmSeed& arm);
// The same for each seed of each arm: [arm][seed].
std::vector<std::vector<nlohmann::json>> serving_json(const std::vector<std::vector<ArmSeed>>& by_arm);
// vLLM's printed block of one arm and seed.
std::string vllm_block(const ArmSeed& arm);

class VirtualExperiment {
 public:
  // Throws InvalidInput for what cannot run in virtual time (device, model, files).
  VirtualExperiment(const PresetAbOptions& options, const std::vector<std::string>& argv);
  ~VirtualExperiment();

  // One arm at one seed, at the load of `load` (request_rate, burstiness, max_concurrency,
  // num_prompts; everything else comes from the constructor's options).
  ArmSeed run(std::size_t arm, const PresetAbOptions& load, std::uint64_t seed, bool keep_detail = false);
  // Every seed of `load`, both arms: [arm][seed]; the first seed keeps its detail on request
  // (a timeline draws it; the other seeds keep summaries and samples only).
  std::vector<std::vector<ArmSeed>> run_all(const PresetAbOptions& load, std::ostream* progress,
                                            bool keep_first_seed_detail = false);

  const std::string& description() const;
  const serving::ServingModel& serving_model() const;
  const WorkloadModel* workload() const;
  // Per arm: the trace device's op-time table (empty on a sim: device); its counts grow with
  // every forward run.
  const std::vector<OpTimeTables>& op_times() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Arm 1 against arm 0 over their seeds pooled (compare_pooled_arms), each seed named
// "<preset> seed <n>".
reports::Comparison compare_seeds(const std::vector<std::string>& presets,
                                  const std::vector<std::vector<ArmSeed>>& by_arm, const judgement::Settings& settings);
// The same when the caller already has serving_json(by_arm).
reports::Comparison compare_seeds(const std::vector<std::string>& presets,
                                  const std::vector<std::vector<ArmSeed>>& by_arm,
                                  const std::vector<std::vector<nlohmann::json>>& serving,
                                  const judgement::Settings& settings);

// Scalar keys of a serving result (what files keep; per-request arrays dropped).
nlohmann::json summary_of(const nlohmann::json& serving);
nlohmann::json engine_json(const serving::VirtualEngineCounters& c);

}  // namespace encbench::scenario
