#include "harness/serving/serving_model.hpp"

#include <cmath>
#include <map>
#include <sstream>

#include "harness/core/error.hpp"
#include "harness/core/named_json.hpp"
#include "harness/core/result_json.hpp"

namespace encbench::serving {
namespace {

struct ServingModelField {
  SourcedValue ServingModel::*member;
  double min, max;
};

const std::map<std::string, ServingModelField>& fields() {
  static const std::map<std::string, ServingModelField> table = {
      {"achieved_flops_fraction", {&ServingModel::achieved_flops_fraction, 1e-3, 1.0}},
      {"achieved_bandwidth_fraction", {&ServingModel::achieved_bandwidth_fraction, 1e-3, 1.0}},
      {"lm_fixed_ms", {&ServingModel::lm_fixed_ms, 0, 1e4}},
      {"lm_per_seq_ms", {&ServingModel::lm_per_seq_ms, 0, 1e3}},
      {"host_base_ms", {&ServingModel::host_base_ms, 0, 1e4}},
      {"host_per_seq_ms", {&ServingModel::host_per_seq_ms, 0, 1e3}},
      {"encoder_dispatch_us_per_op", {&ServingModel::encoder_dispatch_us_per_op, 0, 1e5}},
      {"encoder_host_ms_per_step", {&ServingModel::encoder_host_ms_per_step, 0, 1e4}},
      {"encoder_host_post_forward_share", {&ServingModel::encoder_host_post_forward_share, 0, 1.0}},
      {"device_memory_gib", {&ServingModel::device_memory_gib, 0, 1e5}},
      {"gpu_memory_utilization", {&ServingModel::gpu_memory_utilization, 0.01, 1.0}},
      {"reserved_gib", {&ServingModel::reserved_gib, 0, 1e5}},
      {"step_time_cv", {&ServingModel::step_time_cv, 0, 0.5}},
      {"arrival_jitter_ms_per_request", {&ServingModel::arrival_jitter_ms_per_request, 0, 1e3}},
      {"arrival_jitter_sigma", {&ServingModel::arrival_jitter_sigma, 0, 4}},
      {"output_length_cv", {&ServingModel::output_length_cv, 0, 1.0}},
      {"output_length_redraw_share", {&ServingModel::output_length_redraw_share, 0, 1.0}},
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
  const ServingModelField& f = it->second;
  require(std::isfinite(value) && value >= f.min && value <= f.max,
          origin + ": " + key + " = " + std::to_string(value) + " is outside [" + std::to_string(f.min) + ", " +
              std::to_string(f.max) + "]");
  (model.*f.member).value = value;
}

// With engine_host_parts the per-sequence host costs are the parts' (each from its source); a
// host_per_seq_ms beside them would be counted twice.
void require_one_per_seq_host_cost(const ServingModel& model, const std::string& origin) {
  require(model.engine_host_parts.parts.empty() || model.host_per_seq_ms.value == 0,
          origin + ": host_per_seq_ms must be 0 when engine_host_parts is given (each part has its own per_seq_ms; "
                   "got " + std::to_string(model.host_per_seq_ms.value) + ")");
}

// {"name": non-empty string, "source": non-empty string} and nothing else.
bool is_named_reference(const nlohmann::json& value) {
  return value.is_object() && value.size() == 2 && value.contains("name") && value["name"].is_string() &&
         !value["name"].get<std::string>().empty() && value.contains("source") && value["source"].is_string() &&
         !value["source"].get<std::string>().empty();
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
    // "path": where a result file's copy (to_json) was read from; informational, as the others.
    if (key == "schema_version" || key == "description" || key == "calibration" || key == "predictions" ||
        key == "path")
      continue;
    if (key == "name") {
      require(value.is_string(), origin + ": name must be a string");
      model.name = value.get<std::string>();
      continue;
    }
    if (key == "encoder_host_model") {
      require(value.is_object() && value.contains("name") && value["name"].is_string() &&
                  !value["name"].get<std::string>().empty() && value.contains("source") &&
                  value["source"].is_string() && !value["source"].get<std::string>().empty() && value.size() == 2,
              origin + ": encoder_host_model must be {\"name\": \"<host model in scenarios/devices/host-models or a "
                       "path>\", \"source\": \"...\"}");
      model.encoder_host_model = value["name"].get<std::string>();
      model.encoder_host_model_source = value["source"].get<std::string>();
      continue;
    }
    if (key == "engine_host_parts") {
      model.engine_host_parts = parse_engine_host_parts(value, origin);
      continue;
    }
    if (key == "lm_step_ops") {
      model.lm_step_ops = parse_lm_step_ops(value, origin);
      continue;
    }
    if (key == "api_server") {
      require(is_named_reference(value),
              origin + ": api_server must be {\"name\": \"none, an API-server model in scenarios/serving/api-server or "
                       "a path\", \"source\": \"...\"}");
      model.api_server = value["name"].get<std::string>();
      model.api_server_source = value["source"].get<std::string>();
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
  require_one_per_seq_host_cost(model, origin);
  return model;
}

ServingModel load_serving_model(const std::filesystem::path& file) {
  require(std::filesystem::is_regular_file(file), "serving model file not found: " + file.string());
  const nlohmann::json doc = read_model_json(file, "serving model");
  ServingModel model = parse_serving_model(doc, file.string());
  model.path = file;
  if (model.name.empty()) model.name = file.stem().string();
  return model;
}

nlohmann::json to_json(const ServingModel& model) {
  nlohmann::json j = {{"name", model.name}, {"path", model.path.string()}};
  for (const auto& [name, field] : fields())
    j[name] = {{"value", (model.*field.member).value}, {"source", (model.*field.member).source}};
  j["encoder_host_model"] = {{"name", model.encoder_host_model}, {"source", model.encoder_host_model_source}};
  if (!model.engine_host_parts.parts.empty()) j["engine_host_parts"] = to_json(model.engine_host_parts);
  if (model.lm_step_ops.enabled()) j["lm_step_ops"] = to_json(model.lm_step_ops);
  j["api_server"] = {{"name", model.api_server}, {"source", model.api_server_source}};
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
  require_one_per_seq_host_cost(model, "--model-set");
}

void clear_run_noise(ServingModel& model) {
  for (SourcedValue* noise : {&model.step_time_cv, &model.arrival_jitter_ms_per_request, &model.output_length_cv,
                              &model.output_length_redraw_share}) {
    noise->value = 0;
    noise->source = "off: compared with a live round, which brings its own noise";
  }
}

}  // namespace encbench::serving
