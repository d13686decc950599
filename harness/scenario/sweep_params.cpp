#include "harness/scenario/sweep_params.hpp"

#include <fstream>
#include <set>
#include <sstream>

#include "harness/client/bench.hpp"
#include "harness/core/error.hpp"

namespace encbench::scenario {
namespace {

constexpr const char* kNameKey = "_benchmark_name";

std::string json_type(const nlohmann::ordered_json& j) {
  if (j.is_array()) return "a list";
  if (j.is_object()) return "an object";
  if (j.is_string()) return "a string";
  if (j.is_boolean()) return "a boolean";
  if (j.is_number()) return "a number";
  return "null";
}

// vLLM's key spellings, in the order its apply_to_cmd tries them (the last, '-' form, first).
std::vector<std::string> key_candidates(const std::string& key) {
  const auto dot = key.find('.');
  if (dot != std::string::npos) {
    std::vector<std::string> out;
    for (const auto& prefix : key_candidates(key.substr(0, dot))) out.push_back(prefix + key.substr(dot));
    return out;
  }
  std::string underscores = key, dashes = key;
  for (char& c : underscores)
    if (c == '-') c = '_';
  for (char& c : dashes)
    if (c == '_') c = '-';
  return {dashes, underscores, key};  // reversed(key, key with '_', key with '-')
}

std::string cli_key(const std::string& key) { return "--" + key_candidates(key).front(); }

// vLLM's as_text(sep="-"): the combination's name when it has no _benchmark_name.
std::string text_name(const nlohmann::ordered_json& params) {
  std::string out;
  for (const auto& [key, value] : params.items()) {
    if (key == kNameKey) continue;
    out += (out.empty() ? "" : "-") + key + "=" + python_str(value);
  }
  return out;
}

std::string python_quoted(const std::string& s) {
  // Python's repr of a str: single quotes unless the text holds one and no double quote.
  const bool use_double = s.find('\'') != std::string::npos && s.find('"') == std::string::npos;
  const char q = use_double ? '"' : '\'';
  std::string out(1, q);
  for (char c : s) {
    if (c == '\\' || c == q) out += '\\';
    out += c;
  }
  return out + q;
}

std::string python_repr(const nlohmann::ordered_json& v) {
  if (v.is_string()) return python_quoted(v.get<std::string>());
  if (v.is_object()) {
    std::string out = "{";
    bool first = true;
    for (const auto& [key, value] : v.items()) {
      out += (first ? "" : ", ") + python_quoted(key) + ": " + python_repr(value);
      first = false;
    }
    return out + "}";
  }
  return python_str(v);
}

// Python's json.dumps with its default separators (", ", ": ") and ensure_ascii.
std::string python_json_dumps(const nlohmann::ordered_json& v) {
  if (v.is_object() || v.is_array()) {
    std::string out = v.is_object() ? "{" : "[";
    bool first = true;
    for (const auto& [key, value] : v.items()) {
      out += first ? "" : ", ";
      if (v.is_object()) out += nlohmann::ordered_json(key).dump(-1, ' ', true) + ": ";
      out += python_json_dumps(value);
      first = false;
    }
    return out + (v.is_object() ? "}" : "]");
  }
  return v.dump(-1, ' ', true);
}

}  // namespace

std::string python_str(const nlohmann::ordered_json& v) {
  if (v.is_null()) return "None";
  if (v.is_boolean()) return v.get<bool>() ? "True" : "False";
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer()) return v.dump();
  if (v.is_number()) return client::python_float(v.get<double>());
  if (v.is_array()) {
    std::string out = "[";
    for (std::size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + python_repr(v[i]);
    return out + "]";
  }
  return python_repr(v);
}

std::vector<std::string> param_flag_words(const std::string& key, const nlohmann::ordered_json& value) {
  if (value.is_boolean()) {
    if (key.find('.') != std::string::npos) return {cli_key(key) + "=" + (value.get<bool>() ? "true" : "false")};
    return {cli_key(value.get<bool>() ? key : "no-" + key)};
  }
  // vLLM serialises an object with json.dumps (", " and ": " separators).
  if (value.is_object()) return {cli_key(key), python_json_dumps(value)};
  return {cli_key(key), python_str(value)};
}

std::vector<std::string> apply_params(const std::vector<std::string>& command, const nlohmann::ordered_json& params) {
  std::vector<std::string> cmd = command;
  for (const auto& [key, value] : params.items()) {
    if (key == kNameKey) continue;
    const std::vector<std::string> words = param_flag_words(key, value);
    bool replaced = false;
    for (const auto& candidate : key_candidates(key)) {
      for (std::size_t i = 0; i < cmd.size() && !replaced; ++i) {
        if (cmd[i] != "--" + candidate) continue;
        cmd[i] = words[0];
        if (words.size() > 1) {
          if (i + 1 < cmd.size()) cmd[i + 1] = words[1];
          else cmd.push_back(words[1]);
        }
        replaced = true;
      }
      if (replaced) break;
    }
    if (!replaced) cmd.insert(cmd.end(), words.begin(), words.end());
  }
  return cmd;
}

std::vector<ParamCombination> read_param_sweep(const std::filesystem::path& file) {
  std::ifstream in(file);
  require(static_cast<bool>(in), file.string() + ": cannot read the parameter file");
  std::stringstream text;
  text << in.rdbuf();
  const auto doc = nlohmann::ordered_json::parse(text.str(), nullptr, false);
  require(!doc.is_discarded(), file.string() + ": not valid JSON");
  nlohmann::ordered_json records = doc;
  if (doc.is_object()) {  // {"name": {...}}: vLLM's read_from_dict
    records = nlohmann::ordered_json::array();
    for (const auto& [name, params] : doc.items()) {
      require(params.is_object(), file.string() + ": entry '" + name + "' should be an object of parameters, found " +
                                      json_type(params));
      nlohmann::ordered_json record = {{kNameKey, name}};
      for (const auto& [key, value] : params.items()) record[key] = value;
      records.push_back(std::move(record));
    }
  }
  require(records.is_array(), file.string() + ": the parameter sweep should be a list of objects (or an object of "
                                              "named objects), found " + json_type(doc));
  std::vector<ParamCombination> out;
  std::set<std::string> names;
  for (std::size_t i = 0; i < records.size(); ++i) {
    const auto& record = records[i];
    require(record.is_object(), file.string() + ": entry " + std::to_string(i + 1) +
                                    " should be an object of parameters, found " + json_type(record));
    ParamCombination c;
    c.params = record;
    if (record.contains(kNameKey)) {
      c.name = python_str(record[kNameKey]);
      require(names.insert(c.name).second,
              file.string() + ": entry " + std::to_string(i + 1) + ": duplicate _benchmark_name '" + c.name + "'");
    } else {
      c.name = text_name(record);
    }
    out.push_back(std::move(c));
  }
  return out;
}

void check_entries(const std::filesystem::path& file, const std::vector<ParamCombination>& entries,
                   const std::vector<std::string>& base_command,
                   const std::function<void(const std::vector<std::string>&)>& checker) {
  for (std::size_t i = 0; i < entries.size(); ++i) {
    // Key by key, so the message names the first one the command's parser refuses.
    nlohmann::ordered_json applied = nlohmann::ordered_json::object();
    for (const auto& [key, value] : entries[i].params.items()) {
      if (key == kNameKey) continue;
      applied[key] = value;
      try {
        checker(apply_params(base_command, applied));
      } catch (const InvalidInput& e) {
        throw InvalidInput(file.string() + ": entry " + std::to_string(i + 1) + " ('" + entries[i].name + "'), key '" +
                           key + "' (" + python_str(value) + "): " + e.what());
      }
    }
  }
}

LinkedVariables parse_link_vars(const std::string& text) {
  LinkedVariables out;
  if (text.empty()) return out;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');) {
    const auto eq = item.find('=');
    require(eq != std::string::npos && item.find('=', eq + 1) == std::string::npos,
            "--link-vars expects SERVE_KEY=BENCH_KEY pairs separated by commas, got '" + item + "'");
    auto trim = [](std::string s) {
      s.erase(0, s.find_first_not_of(" \t"));
      s.erase(s.find_last_not_of(" \t") + 1);
      return s;
    };
    out.emplace_back(trim(item.substr(0, eq)), trim(item.substr(eq + 1)));
    require(!out.back().first.empty() && !out.back().second.empty(), "--link-vars: empty key in '" + item + "'");
  }
  return out;
}

bool combination_linked(const ParamCombination& serve, const ParamCombination& bench, const LinkedVariables& links) {
  for (const auto& [serve_key, bench_key] : links)
    if (!serve.params.contains(serve_key) || !bench.params.contains(bench_key) ||
        serve.params[serve_key] != bench.params[bench_key])
      return false;
  return true;
}

std::vector<std::string> split_command(const std::string& text, const std::string& flag) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) words.push_back(word);
      word.clear();
      in_word = false;
    } else if (c == '\'') {
      const auto end = text.find('\'', i + 1);
      require(end != std::string::npos, flag + ": no closing quotation in '" + text + "'");
      word += text.substr(i + 1, end - i - 1);
      i = end;
      in_word = true;
    } else if (c == '"') {
      std::size_t j = i + 1;
      for (; j < text.size() && text[j] != '"'; ++j) {
        if (text[j] == '\\' && j + 1 < text.size() && std::string("\\\"$`\n").find(text[j + 1]) != std::string::npos) ++j;
        word += text[j];
      }
      require(j < text.size(), flag + ": no closing quotation in '" + text + "'");
      i = j;
      in_word = true;
    } else if (c == '\\') {
      require(i + 1 < text.size(), flag + ": no escaped character after the final '\\' in '" + text + "'");
      word += text[++i];
      in_word = true;
    } else {
      word += c;
      in_word = true;
    }
  }
  if (in_word) words.push_back(word);
  return words;
}

std::string join_command(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) {
    const bool plain = !w.empty() && w.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                                         "0123456789@%+=:,./-_{}") == std::string::npos;
    std::string quoted = w;
    if (!plain) {
      quoted = "'";
      for (char c : w) quoted += c == '\'' ? std::string("'\"'\"'") : std::string(1, c);
      quoted += "'";
    }
    out += (out.empty() ? "" : " ") + quoted;
  }
  return out;
}

}  // namespace encbench::scenario
