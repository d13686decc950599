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

}  // namespace encbench::reports::detail
