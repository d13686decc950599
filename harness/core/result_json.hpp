#pragma once
// The envelope every result JSON carries, and safe file I/O for JSON.
//
// Every result names its `schema` and `schema_version`, the encbench version and git sha, the
// argv that produced it and the machine it ran on, so that a compare step can refuse to mix
// results that do not belong together.
#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace encbench {

struct MachineInfo {
  std::string cpu_model;
  unsigned logical_cores = 0;
  double load_avg_1m = -1;  // -1 when unknown
  std::string hostname;
  std::string os;
};

MachineInfo probe_machine();
nlohmann::json to_json(const MachineInfo& machine);

// {schema, schema_version, encbench_version, git_sha, argv, machine{..., device_kind}, created_utc}
nlohmann::json make_result_envelope(const std::string& schema, int schema_version,
                                    const std::vector<std::string>& argv,
                                    const std::string& device_kind);

// Writes atomically (temporary file + rename) so a crash never leaves a half-written result.
// Throws InvalidInput with the path and the OS reason when the file cannot be written.
void write_json_file(const std::filesystem::path& path, const nlohmann::json& value, int indent = 2);

// Reads a JSON document (plain or gzip-compressed, detected by magic bytes). Throws InvalidInput
// naming the path and what is wrong (missing, unreadable, not JSON with the parser's position).
// Non-finite literals that other tools write where JSON has none (Google Benchmark's nan/inf,
// Python's NaN/Infinity) are read as null.
nlohmann::json read_json_file(const std::filesystem::path& path);
// The text with those literals (outside strings, in value position) replaced by null.
std::string non_finite_to_null(const std::string& text);

// Reads a whole file (gzip-decompressed when it starts with the gzip magic).
std::string read_file_maybe_gz(const std::filesystem::path& path);

std::string utc_timestamp_iso8601();  // "2026-11-22T02:30:00Z"

}  // namespace encbench
