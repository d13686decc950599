#pragma once
// Sections of the HTML report, rendered separately (reports/html.cpp assembles the page).
#include <string>
#include <vector>

#include "reports/html.hpp"

namespace encbench::reports::detail {

// One bar of a horizontal bar chart, with an interval (whiskers) around its value.
struct Bar {
  std::string label;
  double value = 0, low = 0, high = 0;
  std::size_t colour_index = 0;
};
// Bars on one axis from 0 (values >= 0), whiskers low..high, `interval_note` under the axis.
std::string bar_chart(const std::string& id, const std::string& title, const std::string& unit,
                      const std::vector<Bar>& bars, const std::string& interval_note);

struct Section {
  std::string html;
  std::vector<std::string> charts;  // chart ids, in page order
};

// PASS / REGRESSION / INVALID / NO VERDICT and the one-line reason.
std::string overall_verdict(const ReportContent& content, std::string& reason);
// <h1 id="verdict">, gate, alpha, thresholds; the moved table; NOISY and SAME folded; evidence.
Section verdict_section(const ReportContent& content);
// Pooled BASE vs HEAD latency CDFs per arm of serving / preset A/B comparisons.
Section pooled_cdf_section(const ReportContent& content);
// Preset A/B results (`encbench run`): published vs model with each PR's change, the spread over
// seeds or rounds (html_preset_ab.cpp). Chart ids carry the result's index in `runs`.
Section preset_ab_section(const std::vector<RunResult>& runs);
// One sweep: its capacity headline, curves against offered load and the points (sweep_html.cpp).
// Throws InvalidInput naming the file when the points lack what the curves read.
Section sweep_section(const SweepInput& sweep, std::size_t index);

}  // namespace encbench::reports::detail
