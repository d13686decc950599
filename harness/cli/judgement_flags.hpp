#pragma once
// --threshold, --alpha and --power: the same names, meanings and defaults (judgement.hpp's
// declared defaults) on every command that judges a change.
#include <CLI/CLI.hpp>

#include <string>

#include "harness/judgement/judgement.hpp"

namespace encbench::cli {

struct JudgementFlags {
  std::string threshold = "5%";
  double alpha = judgement::kDefaultAlpha;
  double power = judgement::kDefaultPower;
};

// `threshold_aliases`: older names of --threshold still accepted (e.g. "--min-change").
void add_judgement_flags(CLI::App* command, JudgementFlags& flags, const std::string& threshold_aliases = "");
// Validated settings; throws InvalidInput naming the flag and its range.
judgement::Settings judgement_settings(const JudgementFlags& flags);
// Which of the three flags were given on `command` (a gate file's own values win otherwise).
bool any_judgement_flag_given(const CLI::App& command);

// "3%", "3" (percent) -> 0.03; throws InvalidInput naming the flag.
double parse_percent(const std::string& flag, std::string text);

}  // namespace encbench::cli
