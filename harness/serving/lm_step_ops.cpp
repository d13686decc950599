#include "harness/serving/lm_step_ops.hpp"

#include <cmath>

#include "harness/core/error.hpp"

namespace encbench::serving {
namespace {

std::string text(const nlohmann::json& object, const char* key, const std::string& where) {
  const auto it = object.find(key);
  require(it != object.end() && it->is_string() && !it->get<std::string>().empty(),
          where + "." + key + " must be a non-empty string");
  return it->get<std::string>();
}

void only_keys(const nlohmann::json& object, std::initializer_list<const char*> known, const std::string& where) {
  std::string list;
  for (const char* k : known) list += (list.empty() ? "" : ", ") + std::string(k);
  for (const auto& [key, unused] : object.items()) {
    bool found = false;
    for (const char* k : known) found = found || key == k;
    require(found, where + ": unknown key \"" + key + "\" (known: " + list + ")");
  }
}

double count(const nlohmann::json& value, const std::string& where) {
  require(value.is_number() && std::isfinite(value.get<double>()) && value.get<double>() >= 0 &&
              value.get<double>() <= kMaxLmOpCount,
          where + " must be a number in [0, " + std::to_string(static_cast<long long>(kMaxLmOpCount)) + "]");
  return value.get<double>();
}

// {"name": "...", "source": "..."}
std::pair<std::string, std::string> named(const nlohmann::json& object, const char* key, const std::string& where) {
  const auto it = object.find(key);
  const std::string at = where + "." + key;
  require(it != object.end() && it->is_object(), at + " must be {\"name\": \"...\", \"source\": \"...\"}");
  only_keys(*it, {"name", "source"}, at);
  return {text(*it, "name", at), text(*it, "source", at)};
}

HostOpCalls calls(const nlohmann::json& object, const char* key, const std::string& where) {
  HostOpCalls out;
  const auto it = object.find(key);
  if (it == object.end()) return out;
  const std::string at = where + "." + key;
  require(it->is_object(), at + " must be {\"<host op class>\": calls, ...}");
  for (const auto& [name, value] : it->items()) out[name] = count(value, at + "." + name);
  return out;
}

LmOpSet parse_set(const std::string& name, const nlohmann::json& value, const std::string& where) {
  require(value.is_object(), where + " must be an object");
  only_keys(value, {"per_layer", "per_layer_qk_norm", "per_step", "source"}, where);
  LmOpSet set;
  set.name = name;
  set.per_layer = calls(value, "per_layer", where);
  set.per_layer_qk_norm = calls(value, "per_layer_qk_norm", where);
  set.per_step = calls(value, "per_step", where);
  set.source = text(value, "source", where);
  return set;
}

nlohmann::json calls_json(const HostOpCalls& calls) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [name, n] : calls) out[name] = n;
  return out;
}

}  // namespace

LmStepOps parse_lm_step_ops(const nlohmann::json& value, const std::string& origin) {
  const std::string where = origin + ": lm_step_ops";
  require(value.is_object(), where + " must be an object");
  only_keys(value, {"source", "host_model", "decode_step", "mixed_step", "device_kernels", "op_sets"}, where);
  LmStepOps ops;
  ops.origin = origin;
  ops.source = text(value, "source", where);
  std::tie(ops.host_model, ops.host_model_source) = named(value, "host_model", where);
  std::tie(ops.decode_step, ops.decode_step_source) = named(value, "decode_step", where);
  std::tie(ops.mixed_step, ops.mixed_step_source) = named(value, "mixed_step", where);
  const auto kernels = value.find("device_kernels");
  require(kernels != value.end() && kernels->is_object(),
          where + ".device_kernels must be {\"per_layer\", \"per_layer_qk_norm\", \"per_step\", \"source\"}");
  only_keys(*kernels, {"per_layer", "per_layer_qk_norm", "per_step", "source"}, where + ".device_kernels");
  for (const char* key : {"per_layer", "per_layer_qk_norm", "per_step"})
    require(kernels->contains(key), where + ".device_kernels." + key + " is missing");
  ops.kernels_per_layer = count((*kernels)["per_layer"], where + ".device_kernels.per_layer");
  ops.kernels_per_layer_qk_norm = count((*kernels)["per_layer_qk_norm"], where + ".device_kernels.per_layer_qk_norm");
  ops.kernels_per_step = count((*kernels)["per_step"], where + ".device_kernels.per_step");
  ops.kernels_source = text(*kernels, "source", where + ".device_kernels");
  const auto sets = value.find("op_sets");
  require(sets != value.end() && sets->is_object() && !sets->empty(),
          where + ".op_sets must be {\"<name>\": {...}, ...} with at least one set");
  for (const auto& [name, set] : sets->items()) ops.op_sets[name] = parse_set(name, set, where + ".op_sets." + name);
  for (const auto& [key, name] : {std::pair{"decode_step", ops.decode_step}, std::pair{"mixed_step", ops.mixed_step}}) {
    std::string known;
    for (const auto& [set_name, unused] : ops.op_sets) known += (known.empty() ? "" : ", ") + set_name;
    require(ops.op_sets.contains(name),
            where + "." + key + ".name \"" + name + "\" is not an op set (known: " + known + ")");
  }
  return ops;
}

nlohmann::json to_json(const LmStepOps& ops) {
  nlohmann::json sets = nlohmann::json::object();
  for (const auto& [name, set] : ops.op_sets)
    sets[name] = {{"per_layer", calls_json(set.per_layer)}, {"per_layer_qk_norm", calls_json(set.per_layer_qk_norm)},
                  {"per_step", calls_json(set.per_step)}, {"source", set.source}};
  return {{"source", ops.source},
          {"host_model", {{"name", ops.host_model}, {"source", ops.host_model_source}}},
          {"decode_step", {{"name", ops.decode_step}, {"source", ops.decode_step_source}}},
          {"mixed_step", {{"name", ops.mixed_step}, {"source", ops.mixed_step_source}}},
          {"device_kernels",
           {{"per_layer", ops.kernels_per_layer}, {"per_layer_qk_norm", ops.kernels_per_layer_qk_norm},
            {"per_step", ops.kernels_per_step}, {"source", ops.kernels_source}}},
          {"op_sets", sets}};
}

}  // namespace encbench::serving
