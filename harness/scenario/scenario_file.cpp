// The scenario file half of closed_loop.hpp: reading, validating and writing ClosedLoopOptions.
// Kept apart from the runner so that it links only core + nlohmann_json (the fuzz target
// tests/fuzz/fuzz_scenario_json.cpp builds it alone).
#include <cmath>
#include <fstream>

#include "harness/core/error.hpp"
#include "harness/scenario/closed_loop.hpp"

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

}  // namespace

ClosedLoopOptions apply_scenario_json(const nlohmann::json& doc, const std::string& origin, ClosedLoopOptions o) {
  require(doc.is_object(), origin + ": a scenario is a JSON object");
  if (doc.contains("schema"))
    require(doc["schema"] == "encbench-scenario", origin + ": schema must be \"encbench-scenario\"");
  read_key(doc, "name", o.name, origin);
  read_key(doc, "model", o.model, origin);
  read_key(doc, "device", o.device, origin);
  read_key(doc, "presets", o.presets, origin);
  read_key(doc, "rounds", o.rounds, origin);
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
  require(o.rounds >= 1 && o.rounds <= 100, "--rounds must be in [1, 100]");
  require(o.num_prompts >= 1 && o.num_prompts <= 1'000'000, "--num-prompts must be in [1, 1000000]");
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
          {"rounds", o.rounds},
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

}  // namespace encbench::scenario
