// The seeds' Performance Metrics table format, and the JUnit report.
#include <gtest/gtest.h>

#include <sstream>

#include "reports/tables.hpp"
#include "test_support.hpp"

namespace encbench::reports {
namespace {

TEST(Tables, MarkdownEscapesNamesFromTheComparedFiles) {
  // Benchmark names, exact-check values and file names come from the files compared: a <script>,
  // an <img onerror>, a pipe or a newline must stay text, and a backtick in a file name must not
  // close its code span.
  Comparison c;
  c.base_source = "base`.json";
  c.new_source = "new|<b>.json";
  c.gate_name = "gate<i>";
  MetricComparison m;
  m.name = "bench";
  m.label = "<script>alert(1)</script>|x\nrow";
  m.group = MetricGroup::latency;
  m.before = 1;
  m.after = 2;
  m.relative_change = 1.0;
  m.verdict = Verdict::slower;
  m.regression = true;
  m.reason = "<img src=x onerror=alert(2)>";
  c.rows.push_back(m);
  ExactCheck e;
  e.metric = "verdict";
  e.label = "acc*`";
  e.before = "PASS";
  e.after = "<b>FAIL</b>";
  e.expectation = "unchanged";
  e.passed = false;
  e.reason = "changed";
  c.exact.push_back(e);
  c.warnings.push_back("warn <a href=x>");
  const std::string page = render_markdown(c);
  // The file names are in code spans (the last line), where HTML is shown as text.
  EXPECT_NE(page.find("BASE: ``base`.json``, NEW: `new|<b>.json`"), std::string::npos) << page;
  const std::string md = page.substr(0, page.find("BASE: "));
  EXPECT_EQ(md.find("<script"), std::string::npos) << md;
  EXPECT_EQ(md.find("<img"), std::string::npos) << md;
  EXPECT_EQ(md.find("<b>"), std::string::npos) << md;
  EXPECT_EQ(md.find("<a "), std::string::npos) << md;
  EXPECT_EQ(md.find("<i>"), std::string::npos) << md;
  EXPECT_NE(md.find("&lt;script&gt;alert(1)&lt;/script&gt;\\|x row"), std::string::npos) << md;
  EXPECT_NE(md.find("  - &lt;script&gt;alert(1)&lt;/script&gt;\\|x row +100.00%"), std::string::npos) << md;
  EXPECT_NE(md.find("acc\\*\\`"), std::string::npos) << md;
  // Every table row keeps its column count: unescaped pipes per line are the header's.
  std::istringstream lines(md);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("| ", 0) != 0) continue;
    std::size_t pipes = 0;
    for (std::size_t i = 0; i < line.size(); ++i) pipes += line[i] == '|' && (i == 0 || line[i - 1] != '\\') ? 1 : 0;
    EXPECT_TRUE(pipes == 6 || pipes == 7) << line;  // 5 columns (full table) or 6 (moved table)
  }
}

TEST(Tables, NumbersLikeTheSeeds) {
  EXPECT_EQ(format_number(1207.07), "1,207.07");
  EXPECT_EQ(format_number(2475.0), "2,475");
  EXPECT_EQ(format_number(6.36), "6.36");
  EXPECT_EQ(format_number(18370.87), "18,370.87");
  EXPECT_EQ(format_number(-1234567.5), "-1,234,567.50");
  EXPECT_EQ(format_number(0.0021), "0.0021");
  EXPECT_EQ(format_relative_change(0.0157), "+1.57% \u2191");
  EXPECT_EQ(format_relative_change(-0.0145), "-1.45% \u2193");
  EXPECT_EQ(format_relative_change(std::nullopt), "n/a");
}

TEST(Tables, MarkdownGroupsThroughputThenLatency) {
  const RunResult base = parse_result(test::crafted_serving(1, 200, 1.0), "base.json");
  const RunResult next = parse_result(test::crafted_serving(2, 200, 1.10), "new.json");
  const Comparison c = compare_runs(base, next, default_gate());
  const std::string md = render_markdown(c);
  // Verdict first, then the moved metrics, then the full table folded.
  EXPECT_EQ(md.rfind("**REGRESSION**", 0), 0u) << md.substr(0, 200);
  const auto moved = md.find("**Moved beyond noise:**");
  const auto full = md.find("**Performance Metrics:**");
  ASSERT_NE(moved, std::string::npos);
  ASSERT_NE(full, std::string::npos);
  EXPECT_LT(moved, full);
  EXPECT_LT(md.find("<details>"), full);
  EXPECT_GT(md.find("</details>"), full);
  // The moved table names the TTFT regression and its kind; a SAME metric stays out of it.
  const std::string moved_table = md.substr(moved, md.find("<details>") - moved);
  EXPECT_NE(moved_table.find("Mean TTFT (ms)"), std::string::npos);
  EXPECT_NE(moved_table.find("| wall-clock |"), std::string::npos);
  EXPECT_EQ(moved_table.find("SAME"), std::string::npos);
  const auto tp = md.find("| **Throughput** | | | | |", full);
  const auto lat = md.find("| **Latency** | | | | |", full);
  ASSERT_NE(tp, std::string::npos);
  ASSERT_NE(lat, std::string::npos);
  EXPECT_LT(tp, lat);
  EXPECT_LT(md.find("| Request throughput (req/s) |", full), lat);
  EXPECT_GT(md.find("| Mean TTFT (ms) |", full), lat);
  EXPECT_NE(md.find("SLOWER"), std::string::npos);
  EXPECT_NE(md.find("**REGRESSION**"), std::string::npos);
  EXPECT_NE(md.find("FAIL"), std::string::npos);
  const std::string term = render_terminal(c);
  EXPECT_NE(term.find("[Throughput]"), std::string::npos);
  EXPECT_NE(term.find("Gate (built-in default): FAIL"), std::string::npos);
}

TEST(Tables, JunitCountsFailures) {
  const RunResult base = parse_result(test::crafted_serving(1, 200, 1.0), "base.json");
  const RunResult next = parse_result(test::crafted_serving(2, 200, 1.10), "new.json");
  const Comparison c = compare_runs(base, next, default_gate());
  const std::string xml = render_junit(c);
  EXPECT_NE(xml.find("<testsuites"), std::string::npos);
  EXPECT_NE(xml.find("name=\"mean_ttft_ms\""), std::string::npos);
  EXPECT_NE(xml.find("type=\"regression\""), std::string::npos);
  EXPECT_NE(xml.find("failures=\"" + std::to_string(c.regression_count()) + "\""), std::string::npos);
  // Failures come first, so a CI page listing testcases in file order leads with them.
  const auto first_case = xml.find("<testcase");
  ASSERT_NE(first_case, std::string::npos);
  EXPECT_LT(xml.find("<failure"), xml.find("<testcase", first_case + 1));
  EXPECT_NE(xml.find("name=\"verdict\" value=\"REGRESSION: "), std::string::npos);
  EXPECT_EQ(xml_escape("a<b & \"c\""), "a&lt;b &amp; &quot;c&quot;");
}

TEST(Tables, MetricKindsByName) {
  for (const char* d : {"BM_encoder/instructions", "a.virtual_forward_ms", "failed", "b.syncs_per_forward",
                        "a.failed", "peak_memory_bytes", "BM_x/bytes_allocated", "accuracy.verdict"})
    EXPECT_TRUE(is_deterministic_metric(d)) << d;
  for (const char* w : {"mean_ttft_ms", "a.median_ttft_ms", "BM_x/real_time", "BM_x/bytes_per_second",
                        "request_throughput", "idle_fraction.median", "forward_ms.p99"})
    EXPECT_FALSE(is_deterministic_metric(w)) << w;
}

}  // namespace
}  // namespace encbench::reports
