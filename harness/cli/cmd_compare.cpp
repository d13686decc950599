// encbench compare BASE NEW [--gate FILE|EXPR]: flags only; the work is reports::run_compare.
#include <iostream>

#include "harness/cli/command.hpp"
#include "harness/cli/judgement_flags.hpp"
#include "reports/actions.hpp"

namespace encbench::cli {
void add_compare_command(CLI::App& app, CommandContext& ctx) {
  auto opts = std::make_shared<reports::CompareOptions>();
  auto* sub = app.add_subcommand(
      "compare",
      "Compare two results (serving, encode, ab or Google Benchmark JSON) and gate on regressions. "
      "Exit 0 pass, 1 regression, 2 invalid or mismatched input");
  sub->add_option("BASE", opts->base,
                  "baseline result: a file, a directory of runs, or a comma list (omit with --baseline)");
  sub->add_option("NEW", opts->next, "new result: a file, a directory of runs, or a comma list");
  sub->add_option("--baseline", opts->baseline,
                  "baseline instead of BASE: a result path, or history:N (last N recorded runs of the "
                  "same series, judged with a prediction interval)");
  sub->add_option("--gate", opts->gates,
                  "gate file (JSON, see scenarios/gates/: an existing path or one ending in .json), or a "
                  "condition METRIC OP VALUE on BASE and NEW (docs/gates.md), e.g. 'mean_ttft_ms<+5%' or "
                  "'failed<=0'; repeatable (one file at most, conditions added to it); default: "
                  "latency/throughput judged SLOWER (significant at --alpha and beyond --threshold; docs/reports.md, "
                  "Verdicts) is a regression")
      ->allow_extra_args(false);  // one value per --gate: BASE and NEW may follow it
  sub->add_option("--junit", opts->junit_file, "write a JUnit XML report to FILE");
  sub->add_option("--markdown", opts->markdown_file, "write the Performance Metrics table as Markdown to FILE");
  sub->add_option("--json", opts->json_file, "write the comparison as encbench-compare JSON to FILE");
  sub->add_option("--history", opts->history_file,
                  "history database (SQLite): record NEW there and read history:N from it "
                  "(default for --record/history:N: $XDG_DATA_HOME/encbench/history.sqlite)");
  sub->add_flag("--record", opts->record, "record NEW into the history (default path unless --history)");
  sub->add_option("--git-sha", opts->git_sha, "git sha to record for NEW (default: the result's own)");
  sub->add_option("--accept", opts->accept,
                  "GLOB=REASON: a regression of a metric matching GLOB is an intended change: shown as "
                  "ACCEPTED with REASON and not failed (repeatable; scripts/ci-gate.sh passes the "
                  "'Gate-Accept: GLOB=REASON' lines of the commits under test)");
  sub->add_flag("-q,--quiet", opts->quiet, "do not print the table");
  auto judgement_flags = std::make_shared<JudgementFlags>();
  add_judgement_flags(sub, *judgement_flags);
  sub->callback([&ctx, opts, judgement_flags, sub] {
    opts->argv = ctx.argv;
    const bool judgement_given = any_judgement_flag_given(*sub);
    // With --baseline, the single positional is NEW.
    if (!opts->baseline.empty() && opts->next.empty()) std::swap(opts->base, opts->next);
    // Validated in the action, where bad input is an InvalidInput (exit 2), not a parse-time throw.
    ctx.action = [opts, judgement_flags, judgement_given] {
      if (judgement_given) opts->settings = judgement_settings(*judgement_flags);
      return reports::run_compare(*opts, std::cout);
    };
  });
}
}  // namespace encbench::cli
