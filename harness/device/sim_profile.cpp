#include "harness/device/sim_profile.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "harness/core/error.hpp"
#include "harness/core/named_json.hpp"
#include "harness/core/glob.hpp"
#include "harness/core/result_json.hpp"
#include "harness/device/measured_op_times.hpp"

namespace encbench::device {

namespace fs = std::filesystem;

fs::path default_profiles_dir() {
  if (const char* env = std::getenv("ENCBENCH_SCENARIOS_DIR"); env != nullptr && *env != '\0') {
    const fs::path dir(env);
    if (fs::is_directory(dir / "devices")) return dir / "devices";
    return dir;
  }
#ifdef ENCBENCH_SOURCE_DIR
  return fs::path(ENCBENCH_SOURCE_DIR) / "scenarios" / "devices";
#else
  return fs::path("scenarios") / "devices";
#endif
}

std::vector<std::string> list_sim_profiles(const fs::path& profiles_dir) { return json_names_in(profiles_dir); }

namespace {

SourcedNumber read_number(const nlohmann::json& json, const std::string& key, const std::string& origin,
                          bool allow_zero) {
  const auto it = json.find(key);
  require(it != json.end(), origin + ": missing field \"" + key + "\" ({\"value\": ..., \"source\": \"...\"})");
  require(it->is_object(), origin + ": field \"" + key + "\" must be an object {\"value\", \"source\"}");
  const auto value = it->find("value");
  const auto source = it->find("source");
  require(value != it->end() && value->is_number(), origin + ": \"" + key + ".value\" must be a number");
  require(source != it->end() && source->is_string() && !source->get<std::string>().empty(),
          origin + ": \"" + key + ".source\" must name where the number comes from");
  SourcedNumber number{value->get<double>(), source->get<std::string>()};
  require(std::isfinite(number.value) && (allow_zero ? number.value >= 0 : number.value > 0),
          origin + ": \"" + key + ".value\" must be " + (allow_zero ? "finite and >= 0" : "finite and > 0"));
  return number;
}

std::string read_string(const nlohmann::json& json, const std::string& key, const std::string& fallback,
                        const std::string& origin) {
  const auto it = json.find(key);
  if (it == json.end()) return fallback;
  require(it->is_string(), origin + ": \"" + key + "\" must be a string");
  return it->get<std::string>();
}

nlohmann::json number_json(const SourcedNumber& number) {
  return {{"value", number.value}, {"source", number.source}};
}

// "op_efficiency": {"<class>": {"value": (0, 1], "source": "...", "ops": "glob|glob"}}.
std::vector<OpEfficiency> read_op_efficiency(const nlohmann::json& json, const std::string& origin) {
  std::vector<OpEfficiency> out;
  const auto it = json.find("op_efficiency");
  if (it == json.end()) return out;
  require(it->is_object(), origin + ": \"op_efficiency\" must be an object {\"<class>\": {\"value\": (0, 1], "
                           "\"source\": \"...\", \"ops\": \"glob|glob\"}}");
  for (const auto& [name, entry] : it->items()) {
    const std::string where = origin + ": \"op_efficiency." + name + "\"";
    require(!name.empty() && entry.is_object(), where + " must be an object {\"value\", \"source\", \"ops\"}");
    for (const auto& [key, value] : entry.items()) {
      (void)value;
      require(key == "value" || key == "source" || key == "ops", where + ": unknown key \"" + key + "\" (value, source, ops)");
    }
    const auto ops = entry.find("ops");
    require(ops != entry.end() && ops->is_string() && !ops->get<std::string>().empty(),
            where + ".ops must be a non-empty string of op-name globs ('|' between alternatives)");
    const auto value = entry.find("value");
    require(value != entry.end() && value->is_number(), where + ".value must be a number in (0, 1]");
    const double v = value->get<double>();
    require(std::isfinite(v) && v > 0 && v <= 1, where + ".value must be in (0, 1], got " + value->dump());
    const auto source = entry.find("source");
    require(source != entry.end() && source->is_string() && !source->get<std::string>().empty(),
            where + ".source must name where the number comes from");
    out.push_back(OpEfficiency{name, ops->get<std::string>(), SourcedNumber{v, source->get<std::string>()}});
  }
  return out;
}

}  // namespace

double SimProfile::efficiency_of(std::string_view op_name) const {
  for (const OpEfficiency& e : op_efficiency)
    if (glob_match(e.ops, op_name)) return e.fraction.value;
  return 1.0;
}

SimProfile parse_sim_profile(const nlohmann::json& json, const std::string& origin) {
  require(json.is_object(), origin + ": a device profile must be a JSON object");
  SimProfile profile;
  const auto name = json.find("name");
  require(name != json.end() && name->is_string() && !name->get<std::string>().empty(),
          origin + ": missing string field \"name\"");
  profile.name = name->get<std::string>();
  profile.display_name = read_string(json, "display_name", profile.name, origin);
  profile.roofline_peak = read_string(json, "roofline_peak", "fp16_dense", origin);
  require(profile.roofline_peak == "fp16_dense" || profile.roofline_peak == "fp32",
          origin + ": \"roofline_peak\" must be \"fp16_dense\" or \"fp32\"");
  profile.peak_fp32_flops_per_s = read_number(json, "peak_fp32_flops_per_s", origin, false);
  profile.peak_fp16_flops_per_s = read_number(json, "peak_fp16_flops_per_s", origin, false);
  profile.mem_bytes_per_s = read_number(json, "mem_bytes_per_s", origin, false);
  profile.kernel_fixed_ns = read_number(json, "kernel_fixed_ns", origin, true);
  profile.d2h_latency_ns = read_number(json, "d2h_latency_ns", origin, true);
  profile.d2h_bytes_per_s = read_number(json, "d2h_bytes_per_s", origin, false);
  profile.h2d_latency_ns = read_number(json, "h2d_latency_ns", origin, true);
  profile.h2d_bytes_per_s = read_number(json, "h2d_bytes_per_s", origin, false);
  profile.host_wakeup_ns = read_number(json, "host_wakeup_ns", origin, true);
  if (json.contains("memory_bytes")) profile.memory_bytes = read_number(json, "memory_bytes", origin, false);
  profile.op_efficiency = read_op_efficiency(json, origin);
  return profile;
}

nlohmann::json to_json(const SimProfile& profile) {
  nlohmann::json j = {{"name", profile.name},
          {"display_name", profile.display_name},
          {"roofline_peak", profile.roofline_peak},
          {"peak_fp32_flops_per_s", number_json(profile.peak_fp32_flops_per_s)},
          {"peak_fp16_flops_per_s", number_json(profile.peak_fp16_flops_per_s)},
          {"mem_bytes_per_s", number_json(profile.mem_bytes_per_s)},
          {"kernel_fixed_ns", number_json(profile.kernel_fixed_ns)},
          {"d2h_latency_ns", number_json(profile.d2h_latency_ns)},
          {"d2h_bytes_per_s", number_json(profile.d2h_bytes_per_s)},
          {"h2d_latency_ns", number_json(profile.h2d_latency_ns)},
          {"h2d_bytes_per_s", number_json(profile.h2d_bytes_per_s)},
          {"host_wakeup_ns", number_json(profile.host_wakeup_ns)}};
  // Optional in the file: written only when it was read, so the JSON form reads back.
  if (!profile.memory_bytes.source.empty()) j["memory_bytes"] = number_json(profile.memory_bytes);
  if (!profile.op_efficiency.empty()) {
    nlohmann::json classes = nlohmann::json::object();
    for (const OpEfficiency& e : profile.op_efficiency)
      classes[e.op_class] = {{"value", e.fraction.value}, {"source", e.fraction.source}, {"ops", e.ops}};
    j["op_efficiency"] = classes;
  }
  return j;
}

SimProfile load_sim_profile(const std::string& name_or_path, const fs::path& profiles_dir) {
  require(!name_or_path.empty(), "sim device: empty profile (use sim:<profile> or sim:<path.json>)");
  const bool is_path = name_or_path.find('/') != std::string::npos ||
                       (name_or_path.size() > 5 && name_or_path.ends_with(".json"));
  fs::path path = is_path ? fs::path(name_or_path) : profiles_dir / (name_or_path + ".json");
  if (!fs::is_regular_file(path)) {
    std::string known;
    for (const std::string& profile : list_sim_profiles(profiles_dir)) known += (known.empty() ? "" : ", ") + profile;
    if (known.empty()) known = "none found in " + profiles_dir.string();
    throw InvalidInput("unknown sim profile '" + name_or_path + "' (no file " + path.string() +
                       "); known profiles: " + known +
                       "; or pass a path to your own profile JSON (set ENCBENCH_SCENARIOS_DIR to move the folder)");
  }
  SimProfile profile = parse_sim_profile(read_json_file(path), path.string());
  profile.path = path;
  return profile;
}

Nanos modelled_duration_ns(const SimProfile& profile, timeline::OpCategory category, double flops,
                           double bytes) {
  using timeline::OpCategory;
  flops = std::max(flops, 0.0);
  bytes = std::max(bytes, 0.0);
  double ns = 0;
  switch (category) {
    case OpCategory::kernel:
      ns = profile.kernel_fixed_ns.value +
           1e9 * std::max(flops / profile.roofline_flops_per_s(), bytes / profile.mem_bytes_per_s.value);
      break;
    case OpCategory::memset:
      ns = profile.kernel_fixed_ns.value + 1e9 * bytes / profile.mem_bytes_per_s.value;
      break;
    case OpCategory::memcpy_h2d:
      ns = profile.h2d_latency_ns.value + 1e9 * bytes / profile.h2d_bytes_per_s.value;
      break;
    case OpCategory::memcpy_d2h:
      ns = profile.d2h_latency_ns.value + 1e9 * bytes / profile.d2h_bytes_per_s.value;
      break;
    case OpCategory::sync:
      ns = 0;
      break;
  }
  return static_cast<Nanos>(std::llround(ns));
}

Nanos op_duration_ns(const SimProfile& profile, std::string_view name, timeline::OpCategory category, double flops,
                     double bytes) {
  if (profile.measured && category != timeline::OpCategory::sync) {
    if (const auto measured = profile.measured->lookup(profile, name, category, flops, bytes)) return *measured;
  }
  // An op class's achieved fraction of the roofline stretches its compute and memory terms alike
  // (not the fixed cost): kernel_fixed + max(flops / peak, bytes / bw) / efficiency.
  if (category == timeline::OpCategory::kernel || category == timeline::OpCategory::memset) {
    const double efficiency = profile.efficiency_of(name);
    if (efficiency < 1.0) {
      const Nanos fixed = static_cast<Nanos>(std::llround(profile.kernel_fixed_ns.value));
      const Nanos roofline = modelled_duration_ns(profile, category, flops, bytes) - fixed;
      return fixed + static_cast<Nanos>(std::llround(static_cast<double>(roofline) / efficiency));
    }
  }
  return modelled_duration_ns(profile, category, flops, bytes);
}

}  // namespace encbench::device
