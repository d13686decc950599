// The scenario file half of preset_ab.hpp: reading, validating and writing PresetAbOptions.
// Kept apart from the runner so that it links only core + nlohmann_json (the fuzz target
// tests/fuzz/fuzz_scenario_json.cpp builds it alone).
#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <type_traits>

#include "harness/core/error.hpp"
#include "harness/core/json_read.hpp"
#include "harness/scenario/preset_ab.hpp"

namespace encbench::scenario {
namespace {

template <typename T>
void read_key(const nlohmann::json& doc, const char* key, T& into, const std::string& origin) {
  const auto it = doc.find(key);
  if (it == doc.end()) return;
  const auto wrong = [&](const char* what) {
    return InvalidInput(origin + ": key \"" + key + "\" " + what + " (" + it->dump() + ")");
  };
  // json_read::as: only integers in T's range (nlohmann's get<int> of 4.9e21 was a cast with
  // undefined behaviour, found by tests/fuzz/fuzz_scenario_json), any number for a float.
  std::optional<T> value = json_read::as<T>(*it);
  if (!value) {
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)
      throw wrong(it->is_number_integer() ? "is out of range" : "must be an integer");
    else if constexpr (std::is_floating_point_v<T>)
      throw wrong("must be a number");
    else
      throw wrong("has the wrong type");
  }
  into = std::move(*value);
}

// {"requests": R, "text_tokens": N, "output_tokens": M, "source": "..."}: either total may be absent
// (not known); the request count and the source may not (the totals are data about one published
// run of R requests, so they say which).
void read_sample_totals(const nlohmann::json& j, const std::string& where, PresetAbOptions& o) {
  require(j.is_object(), where + " must be an object {requests, text_tokens, output_tokens, source}");
  for (const auto& [key, value] : j.items())
    require(key == "requests" || key == "text_tokens" || key == "output_tokens" || key == "source",
            where + ": unknown key \"" + key + "\" (known: requests, text_tokens, output_tokens, source)");
  require(j.contains("requests"), where + ": requests is missing (how many requests the totals count)");
  read_key(j, "requests", o.sample_totals.requests, where);
  require(o.sample_totals.requests >= 1 && o.sample_totals.requests <= 1'000'000,
          where + ": requests must be in [1, 1000000]");
  read_key(j, "text_tokens", o.sample_totals.text_tokens, where);
  read_key(j, "output_tokens", o.sample_totals.output_tokens, where);
  read_key(j, "source", o.sample_totals_source, where);
  require(o.sample_totals.text_tokens >= 0 && o.sample_totals.output_tokens >= 0,
          where + ": text_tokens and output_tokens must not be negative (0 = not known)");
  require(!o.sample_totals_source.empty(), where + ": source is missing (which published table the totals come from)");
}

}  // namespace

PresetAbOptions apply_scenario_json(const nlohmann::json& doc, const std::string& origin, PresetAbOptions o) {
  require(doc.is_object(), origin + ": a scenario is a JSON object");
  static const std::vector<std::string> known = {
      "schema", "version", "name", "description", "model", "device", "presets", "rounds", "num_prompts",
      "request_rate", "burstiness", "output_len", "image_width", "image_height", "seed", "max_num_seqs",
      "max_num_batched_tokens", "encoder_mlp", "profile", "clock", "seeds", "workload", "serving_model",
      "async_scheduling", "max_num_encoder_input_tokens", "published", "max_concurrency", "api_server_model",
      "api_server_count", "sample_totals"};
  for (const auto& [key, value] : doc.items())
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      throw InvalidInput(origin + ": unknown key \"" + key + "\" (known: " + list + ")");
    }
  if (doc.contains("schema"))
    require(doc["schema"] == "encbench-scenario", origin + ": schema must be \"encbench-scenario\"");
  read_key(doc, "name", o.name, origin);
  read_key(doc, "model", o.model, origin);
  read_key(doc, "device", o.device, origin);
  read_key(doc, "presets", o.presets, origin);
  read_key(doc, "rounds", o.rounds, origin);
  read_key(doc, "num_prompts", o.num_prompts, origin);
  if (doc.contains("request_rate") && doc["request_rate"] == "inf") {
    o.request_rate = std::numeric_limits<double>::infinity();  // vLLM's spelling: all at once
  } else {
    read_key(doc, "request_rate", o.request_rate, origin);
  }
  read_key(doc, "burstiness", o.burstiness, origin);
  read_key(doc, "output_len", o.output_len, origin);
  read_key(doc, "image_width", o.image_width, origin);
  read_key(doc, "image_height", o.image_height, origin);
  read_key(doc, "seed", o.seed, origin);
  read_key(doc, "max_num_seqs", o.max_num_seqs, origin);
  read_key(doc, "max_num_batched_tokens", o.max_num_batched_tokens, origin);
  read_key(doc, "encoder_mlp", o.encoder_mlp, origin);
  read_key(doc, "profile", o.profile, origin);
  if (doc.contains("clock")) {
    std::string clock;
    read_key(doc, "clock", clock, origin);
    o.clock = parse_run_clock(clock);
  }
  read_key(doc, "max_concurrency", o.max_concurrency, origin);
  read_key(doc, "seeds", o.seeds, origin);
  read_key(doc, "async_scheduling", o.async_scheduling, origin);
  read_key(doc, "max_num_encoder_input_tokens", o.max_num_encoder_input_tokens, origin);
  read_key(doc, "api_server_model", o.api_server_model, origin);
  read_key(doc, "api_server_count", o.api_server_count, origin);
  // Paths in a scenario file are relative to the project root (where scenarios/ lives), as the
  // other scenario paths are; an absolute path is kept.
  std::string path;
  if (doc.contains("workload")) {
    read_key(doc, "workload", path, origin);
    o.workload = path;
  }
  if (doc.contains("serving_model")) {
    read_key(doc, "serving_model", path, origin);
    o.serving_model = path;
  }
  if (doc.contains("sample_totals")) read_sample_totals(doc["sample_totals"], origin + ": sample_totals", o);
  if (doc.contains("published")) {
    require(doc["published"].is_object(), origin + ": published must be an object");
    o.published = doc["published"];
  }
  return o;
}

PresetAbOptions load_scenario(const std::filesystem::path& file, PresetAbOptions base) {
  std::ifstream in(file);
  require(static_cast<bool>(in), "cannot read scenario file " + file.string());
  const nlohmann::json doc = nlohmann::json::parse(in, nullptr, false);
  require(!doc.is_discarded(), "scenario file " + file.string() + " is not valid JSON");
  PresetAbOptions o = apply_scenario_json(doc, file.string(), std::move(base));
  // Relative paths in a scenario name files of the project (scenarios/...): found from the working
  // directory, else from the folders above the scenario file, so any working directory works.
  const auto resolve = [&](std::filesystem::path& path) {
    if (path.empty() || path.is_absolute() || std::filesystem::exists(path)) return;
    for (auto dir = std::filesystem::absolute(file).parent_path(); !dir.empty() && dir != dir.root_path();
         dir = dir.parent_path())
      if (std::filesystem::exists(dir / path)) {
        path = dir / path;
        return;
      }
  };
  resolve(o.workload);
  resolve(o.serving_model);
  return o;
}

void validate(const PresetAbOptions& o) {
  require(o.presets.size() == 2, "--presets needs exactly two presets (before,after)");
  require(o.rounds >= 1 && o.rounds <= 100, "--rounds must be in [1, 100]");
  require(o.num_prompts >= 1 && o.num_prompts <= 1'000'000, "--num-prompts must be in [1, 1000000]");
  require(o.request_rate > 0, "--request-rate must be positive (inf allowed)");
  require(o.burstiness > 0, "--burstiness must be positive");
  require(o.output_len >= 1, "--output-len must be at least 1");
  require(o.image_width >= 1 && o.image_height >= 1, "image size must be positive");
  require(o.seeds >= 1 && o.seeds <= 1000, "--seeds must be in [1, 1000]");
  require(o.clock == RunClock::virtual_time || o.seeds == 1, "--seeds needs --clock virtual (the real clock repeats with --rounds)");
  require(o.clock == RunClock::real || o.device.rfind("sim:", 0) == 0 || o.device.rfind("trace:", 0) == 0,
          "--clock virtual needs a sim:<profile> or trace:<file>[@<profile>] device (a modelled device has a virtual "
          "clock; cpu and cuda "
          "run in real time: use --clock real), got '" + o.device + "'");
  require(o.max_num_encoder_input_tokens >= 0, "--max-num-encoder-input-tokens must not be negative");
  require(o.max_concurrency >= 0, "--max-concurrency must not be negative");
  require(o.api_server_count >= -1 && o.api_server_count <= 1024,
          "api_server_count must be in [0, 1024] (-1: the API-server model's), got " + std::to_string(o.api_server_count));
  require(o.clock == RunClock::virtual_time || o.workload.empty(),
          "--workload needs --clock virtual (the live round sends the fixed sample: --image-width/--image-height, "
          "--output-len)");
  require(o.clock == RunClock::virtual_time || o.model_set.empty(), "--model-set needs --clock virtual");
  require(o.sample_totals.text_tokens >= 0 && o.sample_totals.output_tokens >= 0,
          "--sample-text-tokens and --sample-output-tokens must not be negative (0 = not known)");
  require(!o.sample_totals.any() || !o.workload.empty(),
          "--sample-text-tokens/--sample-output-tokens condition a workload's draws: they need --workload");
  // Each request sends at least one text token and generates at least one (the output's upper
  // bound is the workload's cap: checked when it draws).
  const auto at_least_one_each = [&](std::int64_t total) {
    return total == 0 || o.sample_totals.requests != o.num_prompts || total >= o.num_prompts;
  };
  require(at_least_one_each(o.sample_totals.text_tokens) && at_least_one_each(o.sample_totals.output_tokens),
          "--sample-text-tokens and --sample-output-tokens count at least one token for each of the " +
              std::to_string(o.num_prompts) + " requests (0 = not known)");
}

RunClock parse_run_clock(const std::string& text) {
  if (text == "real") return RunClock::real;
  if (text == "virtual") return RunClock::virtual_time;
  if (text == "both") return RunClock::both;
  throw InvalidInput("--clock must be real, virtual or both, got '" + text + "'");
}

std::string to_string(RunClock clock) {
  switch (clock) {
    case RunClock::real: return "real";
    case RunClock::virtual_time: return "virtual";
    case RunClock::both: return "both";
  }
  return "real";
}

nlohmann::json to_json(const PresetAbOptions& o) {
  nlohmann::json j = {{"name", o.name},
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
          {"clock", to_string(o.clock)},
          {"seeds", o.seeds},
          {"workload", o.workload.string()},
          {"serving_model", o.serving_model.string()},
          {"model_set", o.model_set},
          {"async_scheduling", o.async_scheduling},
          {"max_num_encoder_input_tokens", o.max_num_encoder_input_tokens},
          {"max_concurrency", o.max_concurrency},
          {"api_server_model", o.api_server_model},
          {"api_server_count", o.api_server_count},
          {"result_dir", o.outputs.result_dir.string()}};
  // Written only when known, in the scenario key's own form (it reads back as one).
  if (o.sample_totals.any())
    j["sample_totals"] = {{"requests", o.sample_totals.requests},
                          {"text_tokens", o.sample_totals.text_tokens},
                          {"output_tokens", o.sample_totals.output_tokens},
                          {"source", o.sample_totals_source}};
  return j;
}

}  // namespace encbench::scenario
