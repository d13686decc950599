#pragma once
// Sections of the HTML report, rendered separately (reports/html.cpp assembles the page).
#include <string>
#include <vector>

#include "reports/html.hpp"

namespace encbench::reports::detail {

struct Section {
  std::string html;
  std::vector<std::string> charts;  // chart ids, in page order
};

// PASS / REGRESSION / INVALID / NO VERDICT and the one-line reason.
std::string overall_verdict(const ReportContent& content, std::string& reason);
// <h1 id="verdict">, gate, alpha, thresholds; the moved table; NOISY and SAME folded; evidence.
Section verdict_section(const ReportContent& content);
// Pooled BASE vs HEAD latency CDFs per arm of serving / closed-loop comparisons.
Section pooled_cdf_section(const ReportContent& content);
// A closed-loop result's published table (scenarios/seeds/*.json): published vs model per metric
// with the seeds' range, each change with the model's one-run interval (reports/html_published.cpp).
// Empty when the result carries none.
Section published_section(const RunResult& r, const std::string& id_prefix);

}  // namespace encbench::reports::detail
