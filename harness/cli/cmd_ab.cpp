// `encbench ab`: two encoder configurations, interleaved repetitions, Before/After table.
#include <iostream>
#include <memory>

#include "harness/cli/command.hpp"
#include "harness/cli/judgement_flags.hpp"
#include "harness/encoder/encode_run.hpp"

namespace encbench::cli {

void add_encoder_run_flags(CLI::App* sub, encoder::RunOptions& o);  // cmd_encode.cpp
void add_toggle_flags(CLI::App* sub, encoder::ToggleOverrides& t, const std::string& prefix,
                      const std::string& what);

void add_ab_command(CLI::App& app, CommandContext& ctx) {
  auto options = std::make_shared<encoder::AbOptions>();
  options->run.forwards = 9;  // t on 9 vs 9 forwards: df 16
  auto* sub = app.add_subcommand(
      "ab", "A/B two encoder configurations (interleaved ABAB...), Before/After/Comparison table with the project's "
            "verdicts (each forward a repetition; docs/reports.md, Verdicts)");
  add_encoder_run_flags(sub, options->run);
  sub->add_option("--a", options->a, "Preset of A (before): baseline | pr6448 | pr7104 | optimized")->capture_default_str();
  sub->add_option("--b", options->b, "Preset of B (after)")->capture_default_str();
  sub->add_option("--repetitions", options->run.forwards, "Interleaved repetitions per side (same as --forwards)");
  auto judgement_flags = std::make_shared<JudgementFlags>();
  add_judgement_flags(sub, *judgement_flags);
  add_toggle_flags(sub, options->a_overrides, "a-", "A's ");
  add_toggle_flags(sub, options->b_overrides, "b-", "B's ");
  sub->callback([&ctx, options, judgement_flags] {
    ctx.action = [&ctx, options, judgement_flags] {
      options->judging = judgement_settings(*judgement_flags);  // InvalidInput here: exit 2
      return encoder::run_ab(*options, ctx.argv, std::cout);
    };
  });
}

}  // namespace encbench::cli
