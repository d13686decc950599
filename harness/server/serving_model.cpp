#include "harness/server/serving_model.hpp"

#include <cmath>
#include <map>
#include <sstream>

#include "harness/core/error.hpp"
#include "harness/core/result_json.hpp"

namespace encbench::server {
namespace {

struct Field {
  SourcedValue ServingModel::*member;
  double min, max;
};

const std::map<std::string, Field>& fields() {
  static const std::map<std::string, Field> table = {
      {"achieved_flops_fraction", {&ServingModel::achieved_flops_fraction, 1e-3, 1.0}},
      {"achieved_bandwidth_fraction", {&ServingModel::achieved_bandwidth_fraction, 1e-3, 1.0}},
      {"lm_fixed_ms", {&ServingModel::lm_fixed_ms, 0, 1e4}},
      {"lm_per_seq_ms", {&ServingModel::lm_per_seq_ms, 0, 1e3}},
      {"host_base_ms", {&ServingModel::host_base_ms, 0, 1e4}},
      {"host_per_seq_ms", {&ServingModel::host_per_seq_ms, 0, 1e3}},
      {"encoder_dispatch_us_per_op", {&ServingModel::encoder_dispatch_us_per_op, 0, 1e5}},
      {"encoder_host_ms_per_step", {&ServingModel::encoder_host_ms_per_step, 0, 1e4}},
      {"device_memory_gib", {&ServingModel::device_memory_gib, 0, 1e5}},
      {"gpu_memory_utilization", {&ServingModel::gpu_memory_utilization, 0.01, 1.0}},
      {"reserved_gib", {&ServingModel::reserved_gib, 0, 1e5}},
  };
  return table;
}

std::string known_keys() {
  std::string keys;
  for (const auto& [name, field] : fields()) keys += (keys.empty() ? "" : ", ") + name;
  return keys;
}

void set_value(ServingModel& model, const std::string& key, double value, const std::string& origin) {
  const auto it = fields().find(key);
  require(it != fields().end(), origin + ": unknown serving-model key \"" + key + "\" (known: " + known_keys() + ")");
  const Field& f = it->second;
  require(std::isfinite(value) && value >= f.min && value <= f.max,
          origin + ": " + key + " = " + std::to_string(value) + " is outside [" + std::to_string(f.min) + ", " +
              std::to_string(f.max) + "]");
  (model.*f.member).value = value;
}

}  // namespace

ServingModel parse_serving_model(const nlohmann::json& doc, const std::string& origin) {
  require(doc.is_object(), origin + ": a serving model is a JSON object");
  ServingModel model;
  for (const auto& [key, value] : doc.items()) {
    if (key == "schema") {
      require(value == "encbench-serving-model", origin + ": schema must be \"encbench-serving-model\"");
      continue;
    }
    if (key == "schema_version" || key == "description" || key == "calibration" || key == "predictions") continue;
    if (key == "name") {
      require(value.is_string(), origin + ": name must be a string");
      model.name = value.get<std::string>();
      continue;
    }
    require(value.is_object() && value.contains("value") && value["value"].is_number(),
            origin + ": " + key + " must be {\"value\": number, \"source\": \"...\"}" +
                (fields().contains(key) ? "" : " (and is not a known key: " + known_keys() + ")"));
    set_value(model, key, value["value"].get<double>(), origin);
    const auto source = value.find("source");
    require(source != value.end() && source->is_string() && !source->get<std::string>().empty(),
            origin + ": " + key + " needs a \"source\" (datasheet, config, measurement or fit)");
    (model.*fields().at(key).member).source = source->get<std::string>();
  }
  return model;
}

ServingModel load_serving_model(const std::filesystem::path& file) {
  require(std::filesystem::is_regular_file(file), "serving model file not found: " + file.string());
  nlohmann::json doc;
  try {
    doc = read_json_file(file);
  } catch (const std::exception& e) {
    throw InvalidInput("serving model " + file.string() + ": " + e.what());
  }
  ServingModel model = parse_serving_model(doc, file.string());
  model.path = file;
  if (model.name.empty()) model.name = file.stem().string();
  return model;
}

nlohmann::json to_json(const ServingModel& model) {
  nlohmann::json j = {{"name", model.name}, {"path", model.path.string()}};
  for (const auto& [name, field] : fields())
    j[name] = {{"value", (model.*field.member).value}, {"source", (model.*field.member).source}};
  return j;
}

void apply_overrides(ServingModel& model, const std::string& overrides) {
  std::stringstream list(overrides);
  std::string item;
  while (std::getline(list, item, ',')) {
    if (item.empty()) continue;
    const auto eq = item.find('=');
    require(eq != std::string::npos, "--model-set: expected name=value, got '" + item + "'");
    const std::string key = item.substr(0, eq);
    double value = 0;
    try {
      std::size_t used = 0;
      value = std::stod(item.substr(eq + 1), &used);
      require(used == item.size() - eq - 1, "trailing characters");
    } catch (const std::exception&) {
      throw InvalidInput("--model-set: " + key + " needs a number, got '" + item.substr(eq + 1) + "'");
    }
    set_value(model, key, value, "--model-set");
    (model.*fields().at(key).member).source = "--model-set " + item;
  }
}

engine::StepCostModel step_cost_model(const ServingModel& m, const LanguageModelDims& dims,
                                      const device::SimProfile& profile, bool async_scheduling) {
  const LmRoofline r = lm_roofline(dims, profile, m.lm_fixed_ms.value);
  const double f = m.achieved_flops_fraction.value, b = m.achieved_bandwidth_fraction.value;
  engine::StepCostModel c;
  c.base_ms = r.fixed_ms + r.weights_ms / b;
  c.per_seq_ms = m.lm_per_seq_ms.value;
  c.per_prefill_token_ms = r.prefill_ms_per_token / f;
  c.per_context_token_ms = r.context_ms_per_token / b;
  c.host_base_ms = m.host_base_ms.value;
  c.host_per_seq_ms = m.host_per_seq_ms.value;
  c.async_scheduling = async_scheduling;
  std::ostringstream s;
  s << "serving model " << (m.path.empty() ? m.name : m.path.string()) << ": roofline of " << dims.source << " on "
    << profile.name << " at " << f * 100 << " % of peak FLOP/s and " << b * 100 << " % of bandwidth ("
    << r.derivation << "); host " << c.host_base_ms << " ms + " << c.host_per_seq_ms << " ms/seq per step, "
    << (async_scheduling ? "overlapped (async scheduling)" : "serial (no async scheduling)");
  c.source = s.str();
  return c;
}

std::int64_t kv_capacity_tokens(const ServingModel& m, const LanguageModelDims& dims) {
  if (m.device_memory_gib.value <= 0) return 0;
  const double bytes = (m.device_memory_gib.value * m.gpu_memory_utilization.value - m.reserved_gib.value) *
                       1073741824.0;
  require(bytes > 0, "serving model " + m.name + ": nothing is left for the KV cache (device_memory_gib * " +
                         "gpu_memory_utilization <= reserved_gib)");
  return static_cast<std::int64_t>(bytes / dims.kv_bytes_per_token());
}

}  // namespace encbench::server
