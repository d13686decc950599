#pragma once
// Self-contained HTML report: inline CSS and SVG only (no scripts, no network), so it opens from a
// CI artefact store or a mail attachment exactly as it was rendered.
//
// Page order (a reviewer reads the first screen and stops): the verdict as the first heading
// (<h1 id="verdict">: PASS / REGRESSION / INVALID, gate file, alpha, thresholds), the table of
// metrics that moved beyond noise (id "moved"), NOISY and SAME folded (<details id="noisy">,
// <details id="same">), then the evidence: BASE vs HEAD per moved metric (rounds pooled, the
// per-round values drawn, per-round table one click away), pooled latency CDFs per arm, the
// seeds' picture of encoder results (device busy vs idle per layer by gap class, the largest
// gaps and their causes), the other charts, and the inputs.
//
// Charts (ids in the page, so tests and users can find them):
//   dist-<C>-<M>                    BASE vs HEAD distribution of metric M of comparison C
//   cdf-<C>-<arm>-ttft|itl|e2el     pooled per-request CDF per side, round-to-round band
//   layers-N, layers-N-a, layers-N-b  device busy / idle by class per layer (encode, ab results)
//   server-encoder-N                server-side encoder busy / idle (closed-loop arms)
//   cdf-ttft, cdf-itl, cdf-e2el     per-request latency CDFs, one line per serving result
//   throughput-over-time            output tokens per second over each run (detailed results)
//   concurrency-over-time           mean requests in flight per second over each run
//   timeline-N                      device timeline of encode result N: ops per stream and idle
//                                   gaps coloured by class (needs "ops" / "gaps" in the result)
//   forwards-N                      forward time per forward of encode result N
//   ab-bars-N                       A/B bars with 95% intervals of the median for ab result N
//   runs-bars                       the same bars across several results of one kind
//   gbench-bars                     Google Benchmark medians with min..max intervals
//   published-N                     closed-loop result N (virtual): model as % of the published
//                                   numbers per metric and arm, whiskers the seeds' range
//   seeds-N-<metric>                the metric per seed, one line per arm (virtual seeds or
//                                   live rounds)
//   sweep-N-ttft|tpot|throughput|pareto  sweep result N: curves against offered load
#include <array>
#include <optional>
#include <string>
#include <vector>

#include "reports/result.hpp"

namespace encbench::reports {

struct HtmlReport {
  std::string html;
  std::vector<std::string> charts;  // ids of the charts it contains, in page order
};

// One `encbench compare --json` output (encbench-compare/1) and the rounds it compared, read
// back from its "base" / "new" paths when they can be found (as written, or relative to the
// compare file's directory), so the report shows the evidence behind each verdict.
struct GateInput {
  std::string source;  // the compare JSON's path
  std::string name;    // its stem without "-compare" ("micro", "serving")
  nlohmann::json doc;
  std::vector<RunResult> base_rounds, new_rounds;
  std::string rounds_note;  // why the rounds are missing, when they are
  // What the page calls the two sides (tables, legends, headline): BASE and HEAD for a CI gate,
  // the arms' own names for an A/B of named arms (bench ab), A and B for a run's presets.
  std::array<std::string, 2> sides{"BASE", "HEAD"};
};
// Throws InvalidInput when the file is not an encbench-compare result.
GateInput load_gate_input(const std::string& path);

// An encbench-sweep result (`run --sweep/--slo`, `bench sweep`): drawn as its curves. Compare
// does not read sweeps (a sweep is many loads, not one run), so it is kept as the document.
struct SweepInput {
  std::string source;
  nlohmann::json doc;
};

struct ReportContent {
  std::string title = "encbench report";
  std::vector<RunResult> runs;    // results given on the command line
  std::vector<GateInput> gates;   // comparisons: the verdict
  std::vector<SweepInput> sweeps;
  std::optional<int> gate_exit;   // the gate's exit status (0 PASS, 1 REGRESSION, 2 INVALID)
  // Why an A/B the results carry has no verdict (a live run that could not keep its schedule).
  std::vector<std::string> no_verdict_reasons;
};

// With no comparison given, the A/B a closed-loop result carries is the verdict: `encbench run`
// writes its pooled B-vs-A comparison into the result ("comparison"), and its rounds are the arms'
// seeds (virtual clock) or rounds (live). Each becomes a gate input named after the scenario; a
// live result whose verdict is invalid adds its reasons to `no_verdict_reasons` instead. With a
// comparison given (the CI gate), the rounds' own A/Bs are not verdicts and nothing is added.
void add_embedded_comparisons(ReportContent& content);

HtmlReport render_html_report(const ReportContent& content);
HtmlReport render_html_report(const std::vector<RunResult>& runs, const std::string& title);

// Distribution-free 95% confidence interval of the median from order statistics
// (min..max below 6 samples).
std::pair<double, double> median_interval(std::vector<double> samples);

// The report's style sheet, for other self-contained pages (the sweep page) to share.
const char* html_style();

}  // namespace encbench::reports
