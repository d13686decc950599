#include "harness/device/op_name_map.hpp"

#include <set>

#include "harness/core/error.hpp"
#include "harness/core/glob.hpp"
#include "harness/core/result_json.hpp"

namespace encbench::device {

namespace {

// Bounds that keep a hostile file cheap to match against every op name (fuzzed).
constexpr std::size_t kMaxEntries = 10'000;
constexpr std::size_t kMaxText = 4'096;

std::string field_text(const nlohmann::json& entry, const char* key, const std::string& where, bool required) {
  if (!entry.contains(key)) {
    require(!required, where + ": missing string '" + key + "'");
    return "";
  }
  const nlohmann::json& value = entry.at(key);
  require(value.is_string(), where + ": '" + key + "' must be a string");
  const std::string& text = value.get_ref<const std::string&>();
  require(!required || !text.empty(), where + ": '" + key + "' must not be empty");
  require(text.size() <= kMaxText, where + ": '" + key + "' is longer than " + std::to_string(kMaxText) + " characters");
  return text;
}

std::vector<OpNameRule> parse_rules(const nlohmann::json& json, const char* list, const char* pattern_key,
                                    bool needs_source, const std::string& origin) {
  require(json.contains(list) && json.at(list).is_array(), origin + ": missing array '" + list + "'");
  const nlohmann::json& entries = json.at(list);
  require(entries.size() <= kMaxEntries, origin + ": '" + list + "' has more than " + std::to_string(kMaxEntries) + " entries");
  std::vector<OpNameRule> rules;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const std::string where = origin + ": " + list + "[" + std::to_string(i) + "]";
    require(entries[i].is_object(), where + " must be an object");
    OpNameRule rule;
    rule.patterns = field_text(entries[i], pattern_key, where, true);
    rule.role = field_text(entries[i], "role", where, true);
    rule.source = field_text(entries[i], "source", where, needs_source);
    rules.push_back(std::move(rule));
  }
  return rules;
}

std::string_view first_role(const std::vector<OpNameRule>& rules, std::string_view name) {
  for (const OpNameRule& rule : rules)
    if (glob_match(rule.patterns, name)) return rule.role;
  return {};
}

}  // namespace

std::string_view OpNameMap::role_of_trace_kernel(std::string_view kernel_name) const {
  return first_role(trace_kernels, kernel_name);
}

std::string_view OpNameMap::role_of_encbench_op(std::string_view op_name) const {
  return first_role(encbench_ops, op_name);
}

OpNameMap parse_op_name_map(const nlohmann::json& json, const std::string& origin) {
  require(json.is_object(), origin + ": an op name map must be a JSON object");
  require(json.value("schema", std::string()) == "encbench-op-name-map",
          origin + ": 'schema' must be \"encbench-op-name-map\"");
  require(json.contains("version") && json.at("version").is_number_integer() && json.at("version").get<std::int64_t>() == 1,
          origin + ": 'version' must be 1");
  OpNameMap map;
  map.origin = origin;
  map.encbench_ops = parse_rules(json, "encbench_ops", "ops", false, origin);
  map.trace_kernels = parse_rules(json, "trace_kernels", "kernels", true, origin);
  std::set<std::string, std::less<>> encbench_roles;
  for (const OpNameRule& rule : map.encbench_ops) encbench_roles.insert(rule.role);
  for (std::size_t i = 0; i < map.trace_kernels.size(); ++i) {
    const std::string& role = map.trace_kernels[i].role;
    require(encbench_roles.contains(role), origin + ": trace_kernels[" + std::to_string(i) + "] has role '" + role +
                                               "', which no encbench_ops entry has (a typo maps nothing)");
  }
  return map;
}

OpNameMap load_op_name_map(const std::filesystem::path& path) {
  return parse_op_name_map(read_json_file(path), path.string());
}

std::filesystem::path default_op_name_map_path(const std::filesystem::path& profiles_dir) {
  return profiles_dir / "op-maps" / "op-name-map.json";
}

}  // namespace encbench::device
