#include "harness/device/host_model.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "harness/core/error.hpp"
#include "harness/core/named_json.hpp"
#include "harness/core/result_json.hpp"

namespace encbench::device {

namespace fs = std::filesystem;

namespace {

constexpr std::array<std::string_view, kHostOpClassCount> kClassNames = {
    "kernel_launch", "memset",      "h2d_copy",    "d2h_copy",  "stream_sync", "event_record",
    "event_wait",    "allocation",  "host_tensor", "host_scalar", "host_math", "input_prep",
    "torch_dispatch", "tensor_view"};

std::string class_list() {
  std::string s;
  for (std::string_view n : kClassNames) s += (s.empty() ? "" : ", ") + std::string(n);
  return s;
}

HostOpCost read_cost(const nlohmann::json& entry, const std::string& key, const std::string& origin) {
  const std::string where = origin + ": \"op_classes." + key + "\"";
  require(entry.is_object(), where + " must be an object {\"ns\": 0..1e9, \"source\": \"...\"}");
  for (const auto& [field, value] : entry.items()) {
    (void)value;
    require(field == "ns" || field == "source", where + ": unknown key \"" + field + "\" (ns, source)");
  }
  const auto ns = entry.find("ns");
  require(ns != entry.end() && ns->is_number(), where + ".ns must be a number of nanoseconds in [0, 1e9]");
  const double v = ns->get<double>();
  require(std::isfinite(v) && v >= 0 && v <= static_cast<double>(kMaxHostOpCostNs) && v == std::floor(v),
          where + ".ns must be a whole number of nanoseconds in [0, 1e9], got " + ns->dump());
  const auto source = entry.find("source");
  require(source != entry.end() && source->is_string() && !source->get<std::string>().empty(),
          where + ".source must be a non-empty string naming where the cost comes from");
  return HostOpCost{static_cast<Nanos>(v), source->get<std::string>()};
}

std::string string_field(const nlohmann::json& json, const std::string& key, const std::string& origin,
                         bool required) {
  const auto it = json.find(key);
  if (it == json.end()) {
    require(!required, origin + ": missing string field \"" + key + "\"");
    return {};
  }
  require(it->is_string() && (!required || !it->get<std::string>().empty()),
          origin + ": \"" + key + "\" must be a " + (required ? "non-empty " : "") + "string");
  return it->get<std::string>();
}

void check_envelope(const nlohmann::json& json, const std::string& origin) {
  require(json.is_object(), origin + ": a host model must be a JSON object");
  for (const auto& [key, value] : json.items()) {
    (void)value;
    require(key == "schema" || key == "schema_version" || key == "name" || key == "description" ||
                key == "op_classes",
            origin + ": unknown key \"" + key + "\" (schema, schema_version, name, description, op_classes)");
  }
  require(string_field(json, "schema", origin, true) == "encbench-host-model",
          origin + ": \"schema\" must be \"encbench-host-model\"");
  const auto version = json.find("schema_version");
  require(version != json.end() && version->is_number_integer() && version->get<long long>() == 1,
          origin + ": \"schema_version\" must be 1");
}

}  // namespace

std::string_view to_string(HostOpClass op_class) { return kClassNames[static_cast<std::size_t>(op_class)]; }

std::optional<HostOpClass> parse_host_op_class(std::string_view text) {
  for (std::size_t i = 0; i < kClassNames.size(); ++i)
    if (kClassNames[i] == text) return kHostOpClasses[i];
  return std::nullopt;
}

HostModel zero_host_model(std::string name, std::string source) {
  HostModel model;
  model.name = std::move(name);
  for (auto& cost : model.costs) cost = HostOpCost{0, source};
  return model;
}

HostModel parse_host_model(const nlohmann::json& json, const std::string& origin) {
  check_envelope(json, origin);
  HostModel model;
  model.name = string_field(json, "name", origin, true);
  model.description = string_field(json, "description", origin, false);
  const auto classes = json.find("op_classes");
  require(classes != json.end() && classes->is_object(),
          origin + ": missing object \"op_classes\" (one entry per op class: " + class_list() + ")");
  std::array<bool, kHostOpClassCount> seen{};
  for (const auto& [key, entry] : classes->items()) {
    const auto op_class = parse_host_op_class(key);
    require(op_class.has_value(),
            origin + ": unknown op class \"op_classes." + key + "\"; accepted: " + class_list());
    const std::size_t i = static_cast<std::size_t>(*op_class);
    model.costs[i] = read_cost(entry, key, origin);
    seen[i] = true;
  }
  for (std::size_t i = 0; i < kHostOpClassCount; ++i)
    require(seen[i], origin + ": missing op class \"op_classes." + std::string(kClassNames[i]) +
                         "\" ({\"ns\": 0..1e9, \"source\": \"...\"}; every class needs a cost and its source)");
  return model;
}

nlohmann::json to_json(const HostModel& model) {
  nlohmann::json classes = nlohmann::json::object();
  for (HostOpClass c : kHostOpClasses) {
    const HostOpCost& cost = model.costs[static_cast<std::size_t>(c)];
    classes[std::string(to_string(c))] = {{"ns", cost.ns}, {"source", cost.source}};
  }
  nlohmann::json j = {{"schema", "encbench-host-model"}, {"schema_version", 1}, {"name", model.name}};
  if (!model.description.empty()) j["description"] = model.description;
  j["op_classes"] = classes;
  return j;
}

HostModel load_host_model(const std::string& name_or_path, const fs::path& profiles_dir) {
  require(!name_or_path.empty(), "host model: empty name (a name in scenarios/devices/host-models or a path)");
  const fs::path path = resolve_named_json(name_or_path, profiles_dir / "host-models", "host model");
  HostModel model = parse_host_model(read_json_file(path), path.string());
  model.path = path;
  return model;
}

std::string_view to_string(HostTime host_time) {
  switch (host_time) {
    case HostTime::model: return "model";
    case HostTime::measured: return "measured";
    case HostTime::none: return "none";
  }
  return "model";
}

HostTime parse_host_time(std::string_view text) {
  if (text == "model") return HostTime::model;
  if (text == "measured") return HostTime::measured;
  if (text == "none") return HostTime::none;
  throw InvalidInput("host time: unknown value '" + std::string(text) + "'; valid values: model, measured, none");
}

HostTime parse_virtual_host_time_flag(std::string_view text) {
  if (text == "cpu" || text == "measured") return HostTime::measured;
  if (text == "model") return HostTime::model;
  if (text == "none") return HostTime::none;
  throw InvalidInput("--virtual-host-time: unknown value '" + std::string(text) +
                     "'; valid values: model (default: the host model's costs), cpu (this machine's CPU "
                     "time, a measurement), none (launch overhead only)");
}

}  // namespace encbench::device
