// encbench report RESULT... --html out.html: flags only; the work is reports::run_report.
#include <iostream>

#include "harness/cli/command.hpp"
#include "reports/actions.hpp"

namespace encbench::cli {
void add_report_command(CLI::App& app, CommandContext& ctx) {
  auto opts = std::make_shared<reports::ReportOptions>();
  auto* sub = app.add_subcommand(
      "report", "Self-contained HTML report (inline SVG, no network), verdict first: the gate's result and "
                "the metrics that moved, BASE vs HEAD evidence with rounds pooled, device busy vs idle per "
                "layer by gap class, latency CDFs, timelines, A/B bars");
  sub->add_option("RESULT", opts->inputs,
                  "result files or directories (any kind compare accepts); an encbench compare --json output "
                  "given here counts as --compare");
  sub->add_option("--compare", opts->compare_files,
                  "encbench compare --json output (repeatable): its verdicts head the page, and the rounds it "
                  "names (its base/new paths, as written or relative to its directory) give the evidence")
      ->check(CLI::ExistingFile);
  sub->add_option("--gate-exit", opts->gate_exit,
                  "the gate's exit status (0 PASS, 1 REGRESSION, 2 or more INVALID), shown as the verdict; "
                  "default: derived from the comparisons");
  sub->add_option("--html", opts->html_file, "HTML file to write")->required();
  sub->add_option("--title", opts->title, "page title")->capture_default_str();
  sub->add_option("--json", opts->json_file, "also write what the report contains as JSON");
  sub->callback([&ctx, opts] {
    opts->argv = ctx.argv;
    ctx.action = [opts] { return reports::run_report(*opts, std::cout); };
  });
}
}  // namespace encbench::cli
