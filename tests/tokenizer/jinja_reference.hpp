#pragma once
// Runs Jinja2 in python3 as transformers configures it (tests/tokenizer/render_chat_template.py):
// the independent reference of the chat-template tests.
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/tokenizer/test_files.hpp"

namespace encbench::tokenizer::testing {

struct Rendered {
  bool ok = false;
  std::string text;  // the output, or the error
};

// Jinja2's result for each variables object of `variables_list` (an array); nullopt with `why`
// when python3 or its jinja2 is missing.
inline std::optional<std::vector<Rendered>> jinja2_reference(const std::string& template_text,
                                                              const nlohmann::ordered_json& variables_list,
                                                              std::string& why) {
  TempDir dir;
  const auto in = dir.write("job.json", nlohmann::ordered_json{{"template", template_text}, {"cases", variables_list}}.dump());
  const auto out = dir.path() / "out.json";
  const auto script = source_dir() / "tests/tokenizer/render_chat_template.py";
  const std::string cmd = "python3 '" + script.string() + "' '" + in.string() + "' '" + out.string() + "' 2>'" +
                          (dir.path() / "err.txt").string() + "'";
  const int rc = std::system(cmd.c_str());
  if (rc != 0) {
    why = "python3 reference did not run (exit " + std::to_string(rc) + "): " + read_text(dir.path() / "err.txt") +
          " (scripts/install-deps.sh --test installs python3-jinja2)";
    return std::nullopt;
  }
  std::vector<Rendered> results;
  for (const auto& r : nlohmann::json::parse(read_text(out)))
    results.push_back({r["ok"].get<bool>(), r["ok"].get<bool>() ? r["text"].get<std::string>() : r["error"].get<std::string>()});
  return results;
}

}  // namespace encbench::tokenizer::testing
