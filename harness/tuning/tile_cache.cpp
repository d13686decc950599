#include "harness/tuning/tile_cache.hpp"

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "harness/core/error.hpp"

namespace encbench::tuning {
namespace {

std::string ignored(const std::string& path, const std::string& why) {
  return "encbench: ignoring tile cache " + path + " (" + why + "); recalibrating";
}

nlohmann::json timings_json(const std::vector<CandidateTiming>& timings) {
  nlohmann::json rows = nlohmann::json::array();
  for (const CandidateTiming& t : timings)
    rows.push_back({{"tile", t.tile}, {"best_cpu_s", t.best_cpu_s},
                    {"gflops_per_core_s", t.gflops_per_core_s}});
  return rows;
}

}  // namespace

std::string tile_cache_path(kernels::Isa resolved, const std::string& program,
                            const char* xdg_cache_home, const char* home) {
  std::string dir;
  if (xdg_cache_home && *xdg_cache_home) dir = std::string(xdg_cache_home) + "/encbench";
  else if (home && *home) dir = std::string(home) + "/.cache/encbench";
  else return "";
  return dir + "/kernel-tiles-" + program + "-" + std::string(kernels::to_string(resolved)) +
         ".json";
}

CacheLookup read_tile_cache(const std::string& path, const MachineIdentity& id,
                            kernels::Isa resolved, const kernels::CacheSizes& caches) {
  CacheLookup r;
  std::ifstream in(path);
  if (!in) return r;  // no file: a plain miss
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception&) {
    r.note = ignored(path, "not JSON");
    return r;
  }
  const auto text = [&](const char* key) {
    return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>()
                                                                  : std::string();
  };
  const bool right_version = j.is_object() && j.contains("version") &&
                             j["version"].is_number_integer() &&
                             j["version"].get<int>() == kTileCacheVersion;
  if (text("schema") != kTileCacheSchema || !right_version) {
    r.note = ignored(path, std::string("not an ") + kTileCacheSchema + "/" +
                               std::to_string(kTileCacheVersion) + " file");
    return r;
  }
  if (text("isa") != kernels::to_string(resolved)) {
    r.note = ignored(path, "made for ISA path '" + text("isa") + "'");
    return r;
  }
  if (text("build_id") != id.build_id) {
    r.note = ignored(path, "made by another build of encbench");
    return r;
  }
  if (text("cpu_model") != id.cpu_model) {
    r.note = ignored(path, "made on another CPU: " + text("cpu_model"));
    return r;
  }
  try {
    r.choice = kernels::parse_tile_spec(text("tiles"), path, resolved, caches);
  } catch (const InvalidInput& e) {
    r.note = ignored(path, std::string("bad tiles: ") + e.what());
    return r;
  }
  const bool complete = r.choice.kc > 0 && r.choice.mc > 0 && r.choice.nb > 0 &&
                        r.choice.attention.block_q > 0 &&
                        r.choice.attention.block_kv > 0;
  if (!complete) {
    r.note = ignored(path, "incomplete tiles '" + text("tiles") + "'");
    return r;
  }
  r.hit = true;
  return r;
}

std::string write_tile_cache(const std::string& path, const MachineIdentity& id,
                             const CalibrationResult& result) {
  nlohmann::json j;
  j["schema"] = kTileCacheSchema;
  j["version"] = kTileCacheVersion;
  j["isa"] = kernels::to_string(result.choice.isa);
  j["build_id"] = id.build_id;
  j["cpu_model"] = id.cpu_model;
  j["tiles"] = kernels::format_tile_spec(result.choice);
  j["calibration"] = {{"wall_s", result.wall_s}, {"cpu_s", result.cpu_s},
                      {"gemm", timings_json(result.gemm)},
                      {"attention", timings_json(result.attention)}};
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) return "cannot write " + tmp;
    out << j.dump(2) << "\n";
    if (!out) return "cannot write " + tmp;
  }
  std::filesystem::rename(tmp, path, ec);
  return ec ? "cannot rename " + tmp + " to " + path + ": " + ec.message() : "";
}

}  // namespace encbench::tuning
