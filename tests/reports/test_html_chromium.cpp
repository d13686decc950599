// The HTML report renders in headless Chromium: the charts are in the DOM Chromium built from the
// page, and a screenshot is kept as a CI artefact under <build>/artifacts/reports/.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <cctype>
#include <cstring>
#include <sstream>

#include "reports/actions.hpp"
#include "reports/html.hpp"
#include "test_support.hpp"

namespace encbench::reports {
namespace {

std::string find_chromium() {
  for (const char* name : {"chromium", "chromium-browser", "google-chrome"}) {
    const std::string cmd = std::string("command -v ") + name + " >/dev/null 2>&1";
    if (std::system(cmd.c_str()) == 0) return name;
  }
  return "";
}

std::filesystem::path artifact_dir() {
  const char* env_bin = std::getenv("ENCBENCH_BINARY_DIR");
  const char* bin = env_bin ? env_bin : ENCBENCH_TEST_BINARY_DIR;
  auto dir = (bin ? std::filesystem::path(bin) : std::filesystem::temp_directory_path()) / "artifacts" / "reports";
  std::filesystem::create_directories(dir);
  return dir;
}

std::vector<RunResult> all_kinds() {
  std::vector<RunResult> runs;
  for (const char* f : {"vllm_serve_detailed.json", "encbench_serve.json", "encode_base.json", "encode_new.json",
                        "ab.json", "gbench_base.json"})
    runs.push_back(load_result(test::fixture(f)));
  return runs;
}

TEST(HtmlReport, ContainsEveryChartAndNoExternalReferences) {
  const HtmlReport report = render_html_report(all_kinds(), "test");
  for (const char* id : {"cdf-ttft", "cdf-itl", "cdf-e2el", "throughput-over-time", "concurrency-over-time",
                         "timeline-3", "timeline-4", "forwards-3", "ab-bars-5", "gbench-bars"}) {
    EXPECT_NE(std::find(report.charts.begin(), report.charts.end(), id), report.charts.end()) << id;
    EXPECT_NE(report.html.find(std::string("id=\"") + id + "\""), std::string::npos) << id;
  }
  EXPECT_EQ(report.html.find("<script"), std::string::npos);
  EXPECT_EQ(report.html.find("http://www.w3.org/2000/svg\"") == std::string::npos, false);
  // No network: nothing is loaded from anywhere (the SVG namespace is an identifier, not a fetch).
  EXPECT_EQ(report.html.find("src="), std::string::npos);
  // Links only within the page ("#evidence-..."), never to anything outside it.
  for (auto at = report.html.find("href="); at != std::string::npos; at = report.html.find("href=", at + 1))
    EXPECT_EQ(report.html.compare(at, 7, "href=\"#"), 0) << report.html.substr(at, 60);
  EXPECT_EQ(report.html.find("@import"), std::string::npos);
}

TEST(HtmlReport, MedianIntervalCoversTheMedian) {
  std::vector<double> xs;
  for (int i = 1; i <= 101; ++i) xs.push_back(i);
  const auto [lo, hi] = median_interval(xs);
  EXPECT_LT(lo, 51);
  EXPECT_GT(hi, 51);
  EXPECT_GE(lo, 35);
  EXPECT_LE(hi, 67);
}

TEST(HtmlReport, RendersInHeadlessChromium) {
  const std::string chromium = find_chromium();
  if (chromium.empty())
    GTEST_SKIP() << "chromium is not installed (scripts/install-deps.sh --test installs it); "
                    "the HTML report was not rendered in a browser";
  const auto dir = artifact_dir();
  const auto html = dir / "report.html";
  ReportOptions options;
  for (const char* f : {"vllm_serve_detailed.json", "encbench_serve.json", "encode_base.json", "encode_new.json",
                        "ab.json", "gbench_base.json"})
    options.inputs.push_back(test::fixture(f).string());
  options.html_file = html.string();
  std::ostringstream out;
  ASSERT_EQ(run_report(options, out), 0);

  const auto profile = test::temp_dir("chromium-profile");
  const std::string flags = " --headless --no-sandbox --disable-gpu --disable-quic --no-first-run"
                            " --disable-background-networking --disable-component-update --disable-sync"
                            " --disable-dev-shm-usage --user-data-dir='" + profile.string() + "'";
  const auto dom = dir / "report.dom.html";
  const std::string dump = "timeout 90 " + chromium + flags + " --dump-dom 'file://" + html.string() + "' > '" +
                           dom.string() + "' 2>/dev/null";
  const int rc = std::system(dump.c_str());
  ASSERT_TRUE(WIFEXITED(rc) && WEXITSTATUS(rc) == 0) << "chromium --dump-dom failed: " << dump;
  std::ifstream f(dom);
  std::stringstream s;
  s << f.rdbuf();
  const std::string text = s.str();
  // The DOM Chromium built holds the SVG charts with their plotted elements.
  for (const char* id : {"cdf-ttft", "cdf-itl", "cdf-e2el", "throughput-over-time", "concurrency-over-time",
                         "timeline-3", "ab-bars-5", "gbench-bars"})
    EXPECT_NE(text.find(std::string("<svg id=\"") + id + "\""), std::string::npos) << id;
  const auto polyline = text.find("<polyline");
  ASSERT_NE(polyline, std::string::npos) << "no plotted line in the DOM";
  const auto points = text.find("points=\"", polyline);
  ASSERT_NE(points, std::string::npos);
  EXPECT_TRUE(std::isdigit(static_cast<unsigned char>(text[points + 8]))) << "empty polyline";
  EXPECT_NE(text.find("class=\"gap\""), std::string::npos);
  EXPECT_NE(text.find("class=\"bar\""), std::string::npos);

  const auto png = dir / "report.png";
  std::filesystem::remove(png);
  const std::string shot = "cd '" + dir.string() + "' && timeout 90 " + chromium + flags +
                           " --hide-scrollbars --window-size=1100,2400 --screenshot='" + png.string() + "' 'file://" +
                           html.string() + "' >/dev/null 2>&1";
  const int rc2 = std::system(shot.c_str());
  ASSERT_TRUE(WIFEXITED(rc2) && WEXITSTATUS(rc2) == 0) << "chromium --screenshot failed: " << shot;
  ASSERT_TRUE(std::filesystem::exists(png));
  EXPECT_GT(std::filesystem::file_size(png), 10000u);  // a blank page compresses far smaller
  std::ifstream img(png, std::ios::binary);
  char magic[8] = {};
  img.read(magic, 8);
  EXPECT_EQ(std::string(magic + 1, 3), "PNG");
  std::filesystem::remove_all(profile);
  std::cout << "screenshot artefact: " << png << "\n";
}

// The verdict-first page of a gate with a regression, laid out by Chromium at 1400 and 800 px:
// checked by a script run on a test copy of the page (the report itself has none).
TEST(HtmlReport, VerdictFirstLayoutInChromium) {
  const std::string chromium = find_chromium();
  if (chromium.empty()) GTEST_SKIP() << "chromium is not installed; the verdict-first layout was not checked";
  const auto dir = artifact_dir();
  const auto work = test::temp_dir("verdict-report");
  CompareOptions c;
  c.base = test::fixture("gbench_base.json").string();
  c.next = test::fixture("gbench_new.json").string();
  c.json_file = (work / "micro-compare.json").string();
  c.quiet = true;
  std::ostringstream sink;
  ASSERT_EQ(run_compare(c, sink), 1);  // the fixture holds a regression
  ReportOptions options;
  options.compare_files = {c.json_file};
  for (const char* f : {"gbench_base.json", "gbench_new.json", "ab.json", "encode_base.json"})
    options.inputs.push_back(test::fixture(f).string());
  options.html_file = (dir / "verdict.html").string();
  ASSERT_EQ(run_report(options, sink), 0);
  std::ifstream in(options.html_file);
  std::stringstream page;
  page << in.rdbuf();
  std::string html = page.str();
  EXPECT_EQ(html.find("<script"), std::string::npos);
  // Layout checks, in the page Chromium laid out: the first heading, legend boxes against every
  // plotted element's box, the SAME fold's rows, and where the moved table ends.
  const std::string probe = R"js(<script>
window.addEventListener('load', () => {
  const r = {};
  const h = document.querySelector('h1,h2,h3');
  r.first_heading = h ? h.id + ':' + h.textContent.split(' ')[0] : '';
  let overlaps = 0, legends = 0, plotted = 0;
  document.querySelectorAll('svg.chart').forEach(svg => {
    const leg = [...svg.querySelectorAll('.legend')].map(e => e.getBoundingClientRect());
    const data = [...svg.querySelectorAll('polyline.series,polygon.band,g.box,circle.round,path.stat,rect.layer-seg,rect.bar,rect.op,rect.gap')]
      .map(e => e.getBoundingClientRect());
    legends += leg.length; plotted += data.length;
    for (const a of leg) for (const b of data)
      if (a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom) overlaps++;
  });
  r.legends = legends; r.plotted = plotted; r.overlaps = overlaps;
  const same = document.querySelector('details#same');
  r.same_open = same ? same.open : null;
  r.same_rows = same ? [...same.querySelectorAll('tr')].slice(1).map(t => t.textContent) : [];
  const moved = document.querySelector('table.moved');
  r.moved_rows = moved ? moved.querySelectorAll('tr').length - 1 : 0;
  r.moved_bottom = moved ? moved.getBoundingClientRect().bottom + window.scrollY : -1;
  r.page_width = document.documentElement.scrollWidth;
  const pre = document.createElement('pre'); pre.id = 'layout-checks';
  pre.textContent = JSON.stringify(r); document.body.appendChild(pre);
});
</script>)js";
  const auto probe_html = work / "verdict-probe.html";
  std::ofstream(probe_html) << html.substr(0, html.rfind("</body>")) << probe << "</body></html>\n";
  for (int width : {1400, 800}) {
    const auto profile = test::temp_dir("chromium-profile");
    const std::string flags = " --headless --no-sandbox --disable-gpu --disable-quic --no-first-run"
                              " --disable-background-networking --disable-component-update --disable-sync"
                              " --disable-dev-shm-usage --hide-scrollbars --window-size=" + std::to_string(width) +
                              ",900 --user-data-dir='" + profile.string() + "'";
    const auto dom = work / ("dom-" + std::to_string(width) + ".html");
    const std::string dump = "timeout 90 " + chromium + flags + " --virtual-time-budget=3000 --dump-dom 'file://" +
                             probe_html.string() + "' > '" + dom.string() + "' 2>/dev/null";
    const int rc = std::system(dump.c_str());
    ASSERT_TRUE(WIFEXITED(rc) && WEXITSTATUS(rc) == 0) << dump;
    std::ifstream f(dom);
    std::stringstream s;
    s << f.rdbuf();
    const std::string text = s.str();
    const auto at = text.find("<pre id=\"layout-checks\">");
    ASSERT_NE(at, std::string::npos) << "the layout probe did not run at " << width << " px";
    const auto start = at + std::strlen("<pre id=\"layout-checks\">");
    std::string raw = text.substr(start, text.find("</pre>", start) - start);
    for (const auto& [from, to] : {std::pair<std::string, std::string>{"&quot;", "\""}, {"&amp;", "&"},
                                   {"&lt;", "<"}, {"&gt;", ">"}})
      for (auto p = raw.find(from); p != std::string::npos; p = raw.find(from, p)) raw.replace(p, from.size(), to);
    const auto checks = nlohmann::json::parse(raw);
    SCOPED_TRACE(std::to_string(width) + " px: " + raw.substr(0, 400));
    EXPECT_EQ(checks["first_heading"], "verdict:REGRESSION");
    EXPECT_GE(checks["legends"].get<int>(), 4);   // BASE/HEAD legends and the layer legends were measured
    EXPECT_GE(checks["plotted"].get<int>(), 20);
    EXPECT_EQ(checks["overlaps"].get<int>(), 0);
    EXPECT_EQ(checks["same_open"], false);
    // gbench fixture: fused_varlen regressed (real_time, items_per_second); pad_unpad did not.
    EXPECT_GE(checks["moved_rows"].get<int>(), 2);
    EXPECT_LE(checks["moved_rows"].get<int>(), 3);
    bool pad_in_same = false, fused_in_same = false;
    for (const auto& row : checks["same_rows"]) {
      const std::string t = row.get<std::string>();
      EXPECT_NE(t.find("SAME"), std::string::npos) << t;
      pad_in_same = pad_in_same || t.find("BM_pad_unpad/4096 real_time") != std::string::npos;
      fused_in_same = fused_in_same || t.find("BM_attention_fused_varlen/1024 real_time") != std::string::npos;
    }
    EXPECT_TRUE(pad_in_same);
    EXPECT_FALSE(fused_in_same);
    // The first screen (900 px high) holds the verdict and every moved metric.
    EXPECT_GT(checks["moved_bottom"].get<double>(), 50);
    EXPECT_LT(checks["moved_bottom"].get<double>(), 900);
    EXPECT_LE(checks["page_width"].get<int>(), width);  // nothing forces a horizontal scroll
    const auto png = dir / ("verdict-" + std::to_string(width) + ".png");
    std::filesystem::remove(png);
    const std::string shot = "cd '" + dir.string() + "' && timeout 90 " + chromium + flags + " --screenshot='" +
                             png.string() + "' 'file://" + options.html_file + "' >/dev/null 2>&1";
    const int rc2 = std::system(shot.c_str());
    ASSERT_TRUE(WIFEXITED(rc2) && WEXITSTATUS(rc2) == 0) << shot;
    EXPECT_GT(std::filesystem::file_size(png), 10000u);
    std::filesystem::remove_all(profile);
  }
  std::filesystem::remove_all(work);
}

}  // namespace
}  // namespace encbench::reports
