#pragma once
// The engine core's host work per step split into the parts vLLM V1's code runs,
// as data in the serving-model file:
//
//   "engine_host_parts": {"source": "...", "parts": {
//      "<name>": {"base_share": 0..1, "per_seq_ms": 0..1000, "overlaps_async": bool,
//                 "overlaps_sync": bool, "code": "<where vLLM does it>", "source": "<the cost's source>"},
//      ...}}
//
// A part costs base_share * host_base_ms (the fitted per-step total, split by the shares, which
// sum to 1) + per_seq_ms * sequences (fixed from its source: the per-sequence costs are not
// fitted) each step. overlaps_async / overlaps_sync say whether it runs while the device executes
// a step with async scheduling on / off (serving/step_cost.hpp applies the rule).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace encbench::serving {

struct EngineHostPartSpec {
  std::string name;
  double base_share = 0;
  double per_seq_ms = 0;
  bool overlaps_async = true;
  bool overlaps_sync = false;
  std::string code;    // the vLLM code that runs it and orders it against the device step
  std::string source;  // where its cost comes from
};

struct EngineHostParts {
  std::string source;
  std::vector<EngineHostPartSpec> parts;  // empty: not given
};

// Throws InvalidInput naming `origin`, the key and the accepted range for an unknown key, a share
// outside [0, 1], shares that do not sum to 1, a per_seq_ms outside [0, 1000], a missing code or
// source, or an empty part list.
EngineHostParts parse_engine_host_parts(const nlohmann::json& value, const std::string& origin);
nlohmann::json to_json(const EngineHostParts& parts);

}  // namespace encbench::serving
