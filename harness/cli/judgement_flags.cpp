#include "harness/cli/judgement_flags.hpp"

#include "harness/core/error.hpp"

namespace encbench::cli {

double parse_percent(const std::string& flag, std::string text) {
  const std::string given = text;
  if (!text.empty() && text.back() == '%') text.pop_back();
  try {
    std::size_t used = 0;
    const double v = std::stod(text, &used);
    if (used == text.size() && v >= 0 && v < 100) return v / 100.0;
  } catch (...) {
  }
  throw InvalidInput(flag + " expects a percentage in [0, 100), e.g. 3%, got '" + given + "'");
}

void add_judgement_flags(CLI::App* command, JudgementFlags& f, const std::string& threshold_aliases) {
  command->add_option("--threshold" + (threshold_aliases.empty() ? "" : "," + threshold_aliases), f.threshold,
                      "Practical threshold of a verdict: a change must exceed it (and be significant) to be "
                      "FASTER or SLOWER (e.g. 5%)")
      ->capture_default_str();
  command->add_option("--alpha", f.alpha, "Two-sided significance level of the verdicts, in (0, 0.5)")->capture_default_str();
  command->add_option("--power", f.power, "Power at which the minimum detectable effect (MDE) is stated, in (0.5, 1)")
      ->capture_default_str();
}

judgement::Settings judgement_settings(const JudgementFlags& f) {
  judgement::Settings s;
  s.threshold = parse_percent("--threshold", f.threshold);
  s.alpha = f.alpha;
  s.power = f.power;
  judgement::validate(s);
  return s;
}

bool any_judgement_flag_given(const CLI::App& command) {
  return command.count("--threshold") + command.count("--alpha") + command.count("--power") > 0;
}

}  // namespace encbench::cli
