#pragma once
// Model and profile files are chosen by name (`--host-model torch-npu-eager`) or by path: the names
// are the *.json files of one folder, and an unknown name lists them, so a typo says what exists.

#include <algorithm>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "harness/core/error.hpp"
#include "harness/core/result_json.hpp"

namespace encbench {

// The stems of the regular *.json files in `dir`, sorted; empty when the folder is missing.
inline std::vector<std::string> json_names_in(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->is_regular_file(ec) && it->path().extension() == ".json") names.push_back(it->path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

// A value with a '/' or ending in .json is a path; any other is NAME in `dir` (dir/NAME.json).
inline bool names_a_path(const std::string& name_or_path) {
  return name_or_path.find('/') != std::string::npos || name_or_path.ends_with(".json");
}

// The file `name_or_path` stands for; throws InvalidInput naming `what`, the file looked for and
// the known names (`extra_names`, e.g. "none", first) when it is not there.
inline std::filesystem::path resolve_named_json(const std::string& name_or_path, const std::filesystem::path& dir,
                                                const std::string& what,
                                                const std::vector<std::string>& extra_names = {}) {
  const std::filesystem::path path = names_a_path(name_or_path) ? std::filesystem::path(name_or_path)
                                                                : dir / (name_or_path + ".json");
  if (std::filesystem::is_regular_file(path)) return path;
  std::vector<std::string> names = extra_names;
  for (auto& n : json_names_in(dir)) names.push_back(std::move(n));
  std::string known;
  for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
  throw InvalidInput("unknown " + what + " '" + name_or_path + "' (no file " + path.string() + "); known: " +
                     (known.empty() ? "none in " + dir.string() : known) + "; or pass a path to your own JSON");
}

// A model file's JSON; a file that does not read or parse is bad input naming `what` and the file.
inline nlohmann::json read_model_json(const std::filesystem::path& path, const std::string& what) {
  try {
    return read_json_file(path);
  } catch (const std::exception& e) {
    throw InvalidInput(what + " " + path.string() + " does not parse: " + e.what());
  }
}

}  // namespace encbench
