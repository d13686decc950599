#pragma once
// vLLM's parameter-sweep files (`vllm bench sweep serve --serve-params/--bench-params`), read as
// vLLM reads them (vllm/benchmarks/sweep/param_sweep.py), so a user's files run unchanged:
//  * a JSON list of objects, or an object of named objects ({"name": {...}} : each gets
//    "_benchmark_name": name); each object is one combination, keys as vLLM flag names;
//  * a key becomes a command-line flag: "--" + the key with '_' turned to '-' (a key with a '.'
//    keeps everything after its first '.' as written); if the command already holds the flag
//    (in its '-' or '_' spelling, or as written) its value is replaced in place, else it is appended;
//  * true -> "--key", false -> "--no-key" (a dotted key: "--key=true" / "--key=false"); an object
//    -> its JSON text; anything else -> Python's str() of it ("None", "[1, 2]", "0.5");
//  * "_benchmark_name" names the combination and is no flag; otherwise its name is vLLM's
//    "key=value-key=value" text.
// --link-vars "serve_key=bench_key,...": a (serve, bench) pair runs only when both hold the key
// and their values are equal.
// Which keys exist is the command's own business: the caller checks each entry's keys against
// the parser of the command they are applied to (check_entries), so an unknown key or a value of
// a type the flag refuses stops the run before anything starts (exit 2, file, entry and key named).
#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace encbench::scenario {

struct ParamCombination {
  std::string name;               // "_benchmark_name", else vLLM's "key=value-key=value"
  nlohmann::ordered_json params;  // the object as written, "_benchmark_name" included
};

// The file's combinations in file order; throws InvalidInput naming the file (and the entry)
// where vLLM's reader refuses it: not JSON, not a list/object, an entry that is no object, a
// duplicate "_benchmark_name".
std::vector<ParamCombination> read_param_sweep(const std::filesystem::path& file);

// Python's str() of a JSON value as vLLM passes it on a command line.
std::string python_str(const nlohmann::ordered_json& value);
// vLLM's apply_to_cmd: the combination's flags applied to a command's words.
std::vector<std::string> apply_params(const std::vector<std::string>& command, const nlohmann::ordered_json& params);
// The flag words one key/value becomes ("--max-num-seqs", "32" / "--no-enforce-eager").
std::vector<std::string> param_flag_words(const std::string& key, const nlohmann::ordered_json& value);

// Throws `checker`'s InvalidInput for the first entry and key its command refuses, re-worded as
// "FILE: entry N ('NAME'), key 'KEY': WHY". `checker` parses a whole command line (the base
// command with some keys applied) and throws InvalidInput when its parser refuses it.
void check_entries(const std::filesystem::path& file, const std::vector<ParamCombination>& entries,
                   const std::vector<std::string>& base_command,
                   const std::function<void(const std::vector<std::string>&)>& checker);

using LinkedVariables = std::vector<std::pair<std::string, std::string>>;  // (serve key, bench key)
// "max_num_seqs=max_concurrency,max_model_len=random_input_len"; throws InvalidInput (--link-vars).
LinkedVariables parse_link_vars(const std::string& text);
bool combination_linked(const ParamCombination& serve, const ParamCombination& bench, const LinkedVariables& links);

// POSIX-shell word splitting as Python's shlex.split (quotes, backslashes); throws InvalidInput
// naming `flag` on an unclosed quote.
std::vector<std::string> split_command(const std::string& text, const std::string& flag);
// The words joined back into one /bin/sh command line (quoted where needed; {placeholders} kept).
std::string join_command(const std::vector<std::string>& words);

}  // namespace encbench::scenario
