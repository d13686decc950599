#include "harness/serving/engine_host_parts.hpp"

#include <cmath>

#include "harness/core/error.hpp"

namespace encbench::serving {
namespace {

constexpr double kMaxPerSeqMs = 1000;

double bounded_number(const nlohmann::json& part, const char* key, double lo, double hi, const std::string& where) {
  const auto it = part.find(key);
  require(it != part.end() && it->is_number() && std::isfinite(it->get<double>()) && it->get<double>() >= lo &&
              it->get<double>() <= hi,
          where + "." + key + " must be a number in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return it->get<double>();
}

bool boolean(const nlohmann::json& part, const char* key, const std::string& where) {
  const auto it = part.find(key);
  require(it != part.end() && it->is_boolean(), where + "." + key + " must be true or false");
  return it->get<bool>();
}

std::string text(const nlohmann::json& object, const char* key, const std::string& where) {
  const auto it = object.find(key);
  require(it != object.end() && it->is_string() && !it->get<std::string>().empty(),
          where + "." + key + " must be a non-empty string");
  return it->get<std::string>();
}

EngineHostPartSpec parse_part(const std::string& name, const nlohmann::json& part, const std::string& where) {
  require(part.is_object(), where + " must be an object");
  for (const auto& [key, unused] : part.items())
    require(key == "base_share" || key == "per_seq_ms" || key == "overlaps_async" || key == "overlaps_sync" ||
                key == "code" || key == "source",
            where + ": unknown key \"" + key +
                "\" (known: base_share, per_seq_ms, overlaps_async, overlaps_sync, code, source)");
  EngineHostPartSpec spec;
  spec.name = name;
  spec.base_share = bounded_number(part, "base_share", 0, 1, where);
  spec.per_seq_ms = bounded_number(part, "per_seq_ms", 0, kMaxPerSeqMs, where);
  spec.overlaps_async = boolean(part, "overlaps_async", where);
  spec.overlaps_sync = boolean(part, "overlaps_sync", where);
  spec.code = text(part, "code", where);
  spec.source = text(part, "source", where);
  return spec;
}

}  // namespace

EngineHostParts parse_engine_host_parts(const nlohmann::json& value, const std::string& origin) {
  const std::string where = origin + ": engine_host_parts";
  require(value.is_object() && value.contains("parts") && value["parts"].is_object() && !value["parts"].empty(),
          where + " must be {\"source\": \"...\", \"parts\": {\"<name>\": {...}, ...}} with at least one part");
  for (const auto& [key, unused] : value.items())
    require(key == "source" || key == "parts", where + ": unknown key \"" + key + "\" (known: source, parts)");
  EngineHostParts out;
  out.source = text(value, "source", where);
  double shares = 0;
  for (const auto& [name, part] : value["parts"].items()) {
    out.parts.push_back(parse_part(name, part, where + ".parts." + name));
    shares += out.parts.back().base_share;
  }
  require(std::abs(shares - 1.0) <= 1e-6,
          where + ": the parts' base_share values sum to " + std::to_string(shares) + ", not 1 (within 1e-6)");
  return out;
}

nlohmann::json to_json(const EngineHostParts& parts) {
  nlohmann::json out = {{"source", parts.source}, {"parts", nlohmann::json::object()}};
  for (const EngineHostPartSpec& p : parts.parts)
    out["parts"][p.name] = {{"base_share", p.base_share}, {"per_seq_ms", p.per_seq_ms},
                            {"overlaps_async", p.overlaps_async}, {"overlaps_sync", p.overlaps_sync},
                            {"code", p.code}, {"source", p.source}};
  return out;
}

}  // namespace encbench::serving
