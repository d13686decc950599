// Every kind of page encbench writes, made by the real binary and laid out by headless Chromium at
// 800 px: what a person sees. Each page is checked with one script run on a test copy of it (the
// pages themselves carry none): every label whole (never shortened with "..."), every legend label
// inside its legend box, no two labels
// on top of each other, every chart with axis titles and tick labels, no text outside its chart,
// no table cell or column whose text overflows it, no sideways scroll, and the first heading
// holding the verdict and the absolute values, checked against the run's own JSON.
//
// ENCBENCH_PAGE_CHECK_BINARY=<another build's encbench> judges that build's pages instead (how the
// checks were shown to fail on the pages before they were fixed).
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>

#include "harness/core/result_json.hpp"
#include "reports/actions.hpp"
#include "test_support.hpp"

namespace encbench::reports {
namespace {

using nlohmann::json;

std::string chromium_binary() {
  for (const char* name : {"chromium", "chromium-browser", "google-chrome"})
    if (std::system((std::string("command -v ") + name + " >/dev/null 2>&1").c_str()) == 0) return name;
  return "";
}

std::string encbench() {
  const char* other = std::getenv("ENCBENCH_PAGE_CHECK_BINARY");
  return other && *other ? other : ENCBENCH_BINARY;
}

std::string read_all(const std::filesystem::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

int sh(const std::string& command) {
  const int rc = std::system(("bash -c '" + command + "'").c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  const int port = ntohs(a.sin_port);
  close(fd);
  return port;
}

// Runs `client` while `server` (with {port} in it) listens; the server is stopped after.
int with_server(const std::string& server, const std::string& client, const std::filesystem::path& log) {
  const std::string port = std::to_string(free_port());
  std::string s = server, c = client;
  for (std::string* t : {&s, &c})
    for (auto at = t->find("{port}"); at != std::string::npos; at = t->find("{port}")) t->replace(at, 6, port);
  const std::string script = s + " > " + log.string() + ".server 2>&1 & SP=$!; for i in $(seq 300); do "
                             "curl -s -o /dev/null http://127.0.0.1:" + port + "/v1/models && break; sleep 0.1; done; " +
                             c + " > " + log.string() + " 2>&1; RC=$?; kill $SP; wait $SP; exit $RC";
  return sh(script);
}

// The checks, run by Chromium once the page has loaded; their answer is a <pre> in the DOM dump.
constexpr const char* kProbe = R"js(<script>
window.addEventListener('load', () => {
  const r = {h1: [...document.querySelectorAll('h1')].map(h => h.textContent.replace(/\s+/g, ' ').trim()),
             charts: [], cut: [], outside_box: [], overlapping: [], outside_chart: [], overflowing: []};
  const inside = (a, b, tol) => a.left >= b.left - tol && a.right <= b.right + tol && a.top >= b.top - tol &&
                                a.bottom <= b.bottom + tol;
  const meet = (a, b) => a.left < b.right - 0.5 && b.left < a.right - 0.5 && a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5;
  document.querySelectorAll('svg.chart').forEach((svg, n) => {
    const id = svg.id || ('chart ' + n);
    const frame = svg.getBoundingClientRect();
    const boxes = [...svg.querySelectorAll('rect.legend-box')].map(e => e.getBoundingClientRect());
    const labels = [...svg.querySelectorAll('text.legend')];
    for (const t of svg.querySelectorAll('text')) if (t.textContent.includes('...')) r.cut.push(id + ': ' + t.textContent);
    for (const t of labels) {
      if (!boxes.some(b => inside(t.getBoundingClientRect(), b, 0.5))) r.outside_box.push(id + ': ' + t.textContent);
    }
    const marks = [...svg.querySelectorAll('g.marker text')];
    for (const group of [labels, marks])
      for (let i = 0; i < group.length; ++i)
        for (let j = i + 1; j < group.length; ++j)
          if (meet(group[i].getBoundingClientRect(), group[j].getBoundingClientRect()))
            r.overlapping.push(id + ': ' + group[i].textContent + ' / ' + group[j].textContent);
    for (const t of svg.querySelectorAll('text')) {
      const b = t.getBoundingClientRect();
      if (b.width > 0 && !inside(b, frame, 1)) r.outside_chart.push(id + ': ' + t.textContent);
    }
    const texts = sel => [...svg.querySelectorAll(sel)].map(t => t.textContent.trim()).filter(t => t !== '');
    // Tick labels by their axis (a y tick is right-aligned to the axis, an x tick centred under it).
    const X = 'text.tick.x, text.tick[text-anchor="middle"]', Y = 'text.tick.y, text.tick[text-anchor="end"]';
    const ys = [...svg.querySelectorAll(Y)].map(t => t.getBoundingClientRect().top).sort((a, b) => a - b);
    let row_gap = 1e9;
    for (let i = 1; i < ys.length; ++i) row_gap = Math.min(row_gap, ys[i] - ys[i - 1]);
    r.charts.push({id, axis_titles: texts('text.axis'), ticks: texts('text.tick').length, x_ticks: texts(X),
                   y_ticks: texts(Y), min_y_tick_gap: ys.length > 1 ? row_gap : null,
                   markers: [...svg.querySelectorAll('g.marker line')].map(l => l.getBoundingClientRect().left),
                   notes: texts('text.cnote'), legend: texts('text.legend'), series: [...svg.querySelectorAll('polyline.series title')].map(t => t.textContent)});
  });
  document.querySelectorAll('td, th, .pair > div').forEach(e => {
    if (e.scrollWidth > e.clientWidth + 1) r.overflowing.push(e.tagName + ': ' + e.textContent.slice(0, 80));
  });
  r.page_width = document.documentElement.scrollWidth;
  r.view_width = window.innerWidth;
  r.text = document.body.innerText;
  r.tables = [...document.querySelectorAll('table')].map(t => ({id: t.id,
      rows: [...t.querySelectorAll('tr')].map(tr => [...tr.children].map(c => c.textContent.trim()))}));
  const pre = document.createElement('pre'); pre.id = 'page-checks';
  pre.textContent = JSON.stringify(r); document.body.appendChild(pre);
});
</script>)js";

// The page laid out at 800 px, the probe's answer parsed; a screenshot beside it for a person.
json look_at(const std::filesystem::path& page, const std::string& name) {
  const std::string html = read_all(page);
  EXPECT_EQ(html.find("<script"), std::string::npos) << "the page itself runs no script";
  const auto work = test::temp_dir("page-" + name);
  const auto probe = work / "probe.html";
  const auto body_end = html.rfind("</body>");
  std::ofstream(probe) << html.substr(0, body_end == std::string::npos ? html.size() : body_end) << kProbe
                       << "</body></html>\n";
  const std::string flags = " --headless --no-sandbox --disable-gpu --disable-quic --no-first-run"
                            " --disable-background-networking --disable-component-update --disable-sync"
                            " --disable-dev-shm-usage --hide-scrollbars --window-size=800,1000 --user-data-dir=" +
                            (work / "profile").string();
  const auto dom = work / "dom.html";
  const int rc = std::system(("timeout 90 " + chromium_binary() + flags + " --virtual-time-budget=3000 --dump-dom file://" +
                              probe.string() + " > " + dom.string() + " 2>/dev/null").c_str());
  EXPECT_TRUE(WIFEXITED(rc) && WEXITSTATUS(rc) == 0) << "chromium --dump-dom failed on " << page;
  const std::string text = read_all(dom);
  const auto at = text.find("<pre id=\"page-checks\">");
  if (at == std::string::npos) {
    ADD_FAILURE() << "the probe did not run on " << page;
    return json::object();
  }
  const auto start = at + std::strlen("<pre id=\"page-checks\">");
  std::string raw = text.substr(start, text.find("</pre>", start) - start);
  for (const auto& [from, to] : {std::pair<std::string, std::string>{"&quot;", "\""}, {"&lt;", "<"}, {"&gt;", ">"},
                                 {"&amp;", "&"}})
    for (auto p = raw.find(from); p != std::string::npos; p = raw.find(from, p + to.size())) raw.replace(p, from.size(), to);
  const auto shot = test::temp_dir("page-shots").parent_path() / ("page-" + name + ".png");
  std::system(("timeout 90 " + chromium_binary() + flags + " --screenshot=" + shot.string() + " file://" +
               page.string() + " >/dev/null 2>&1").c_str());
  std::ofstream(shot.string() + ".checks.json") << raw;
  return json::parse(raw);
}

// What every page must show: whole labels in their boxes, axes with ticks, nothing overflowing.
void expect_readable(const json& c) {
  SCOPED_TRACE(c.value("h1", json::array()).dump());
  EXPECT_EQ(c["cut"], json::array()) << "labels cut short";
  EXPECT_EQ(c["outside_box"], json::array()) << "legend labels outside their legend box";
  EXPECT_EQ(c["overlapping"], json::array()) << "labels on top of each other";
  EXPECT_EQ(c["outside_chart"], json::array()) << "text outside its chart";
  EXPECT_EQ(c["overflowing"], json::array()) << "text overflowing its column";
  EXPECT_LE(c["page_width"].get<int>(), c["view_width"].get<int>()) << "the page scrolls sideways";
  EXPECT_FALSE(c["charts"].empty());
  for (const auto& chart : c["charts"]) {
    EXPECT_GE(chart["axis_titles"].size(), 1u) << chart["id"] << ": no axis title";
    EXPECT_GE(chart["ticks"].get<int>(), 3) << chart["id"] << ": no tick labels";
  }
  EXPECT_EQ(c["h1"].size(), 1u) << "one headline";
}

const json* table_with_header(const json& c, const std::string& first_header) {
  for (const auto& t : c["tables"])
    if (!t["rows"].empty() && !t["rows"][0].empty() && t["rows"][0][0] == first_header) return &t;
  return nullptr;
}

// The number written after `label` (and before `unit`, when given) in `text`.
double number_after(const std::string& text, const std::string& label, const std::string& unit = "") {
  std::smatch m;
  const auto quote = [](const std::string& s) { return std::regex_replace(s, std::regex(R"([.^$|()\[\]{}*+?\\])"), R"(\$&)"); };
  const std::regex re(quote(label) + R"(\s+([-+]?[0-9.,]+))" + (unit.empty() ? "" : R"(\s*)" + quote(unit)));
  if (!std::regex_search(text, m, re)) return -1e300;
  std::string digits = m[1];
  digits.erase(std::remove(digits.begin(), digits.end(), ','), digits.end());  // "181,391.95"
  return std::stod(digits);
}

class Pages : public ::testing::Test {
 protected:
  void SetUp() override {
    if (chromium_binary().empty()) GTEST_SKIP() << "chromium is not installed; the pages were not looked at";
    dir_ = test::temp_dir("pages");
  }
  std::filesystem::path dir_;
};

// bench ab of two scripted servers (40 vs 10 ms to the first token): one headline with the verdict
// and both arms' mean TTFT, the arms called by their names everywhere, rounds in the order run.
TEST_F(Pages, AbPage) {
  const std::string server = std::string("exec ") + ENCBENCH_TEST_SERVER_BIN + " --port {port} --itl-ms 1 --ttft-ms ";
  const std::string cmd = encbench() + " bench ab --arm \"base=" + server + "40\" --arm \"opt=" + server +
                          "10\" --rounds 2 --backend openai --endpoint /v1/completions --dataset-name random "
                          "--random-input-len 8 --random-output-len 4 --ignore-eos --num-prompts 30 --request-rate 100 "
                          "--ab-dir " + (dir_ / "ab").string() + " > " + (dir_ / "ab.log").string() + " 2>&1";
  const int rc = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(rc) && WEXITSTATUS(rc) <= 1) << read_all(dir_ / "ab.log");
  const json doc = read_json_file(dir_ / "ab" / "ab.json");
  const json c = look_at(dir_ / "ab" / "ab.html", "ab");
  expect_readable(c);
  const std::string h1 = c["h1"][0];
  EXPECT_NE(h1.find("opt vs base"), std::string::npos) << h1;
  EXPECT_TRUE(std::regex_search(h1, std::regex("FASTER|SLOWER|SAME|NOISY|no verdict"))) << h1;
  // The absolute values: each arm's pooled mean TTFT, as ab.json has it; the scripted delays bound them.
  const json& ttft = doc["verdicts"][0];
  ASSERT_EQ(ttft["metric"], "mean_ttft_ms");
  const double base = number_after(h1, "base"), opt = number_after(h1, "opt");
  EXPECT_NEAR(base, ttft["before"].get<double>(), 0.01) << h1;
  EXPECT_NEAR(opt, ttft["after"].get<double>(), 0.01) << h1;
  EXPECT_GE(base, 40);
  EXPECT_LT(base, 80);
  EXPECT_GE(opt, 10);
  EXPECT_LT(opt, 40);
  // One naming scheme: the arms' own names, never Before/After or BASE/HEAD.
  const std::string text = c["text"];
  for (const char* other : {"Before", "After", "BASE", "HEAD", "Inputs (0)"})
    EXPECT_EQ(text.find(other), std::string::npos) << other;
  std::size_t named = 0;
  for (const auto& chart : c["charts"])
    for (const auto& s : chart["series"]) named += s.get<std::string>().rfind("base (", 0) == 0 || s.get<std::string>().rfind("opt (", 0) == 0;
  EXPECT_EQ(named, 6u) << "TTFT, ITL and E2EL CDFs, one line per arm";
  // Rounds in run order: as ab.json's (round, position) order them (ABBA: base opt, opt base).
  std::vector<std::pair<std::pair<int, int>, std::string>> ran;
  for (const auto& arm : doc["arms"])
    for (const auto& r : arm["rounds"]) ran.push_back({{r["round"].get<int>(), r["position"].get<int>()}, arm["name"]});
  std::sort(ran.begin(), ran.end());
  const json* rounds = table_with_header(c, "round");
  ASSERT_NE(rounds, nullptr);
  ASSERT_EQ((*rounds)["rows"].size(), ran.size() + 1);
  for (std::size_t k = 0; k < ran.size(); ++k) {
    EXPECT_EQ((*rounds)["rows"][k + 1][0], std::to_string(ran[k].first.first));
    EXPECT_EQ((*rounds)["rows"][k + 1][1], ran[k].second);
  }
  EXPECT_EQ(ran[0].second, "base");
  EXPECT_EQ(ran[1].second, "opt");
  EXPECT_EQ(ran[2].second, "opt");
  EXPECT_EQ(ran[3].second, "base");
}

// The virtual run's timeline (20 requests per arm): a time axis, a row per request with its
// number, rows at least 10 px apart, the true count said, the breakdown as component | A | B | change.
TEST_F(Pages, VirtualTimelinePage) {
  const auto page = dir_ / "t.html";
  const std::string cmd = "cd " + dir_.string() + " && " + encbench() + " run --scenario " +
                          (test::source_root() / "scenarios/seeds/pr7104.json").string() +
                          " --seeds 1 --num-prompts 20 --plot-timeline " + page.string() + " > run.log 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << read_all(dir_ / "run.log");
  const json c = look_at(page, "timeline");
  expect_readable(c);
  std::size_t timelines = 0;
  for (const auto& chart : c["charts"]) {
    if (chart["id"].get<std::string>().rfind("timeline-", 0) != 0) continue;
    ++timelines;
    EXPECT_GE(chart["x_ticks"].size(), 4u);
    EXPECT_EQ(chart["x_ticks"][0], "0");
    EXPECT_EQ(chart["axis_titles"].size(), 2u);
    // Each request's number on its row (and the engine steps' row above them).
    ASSERT_EQ(chart["y_ticks"].size(), 21u) << chart["y_ticks"];
    EXPECT_EQ(chart["y_ticks"][0], "steps");
    for (int i = 0; i < 20; ++i) EXPECT_EQ(chart["y_ticks"][i + 1], std::to_string(i));
    EXPECT_GE(chart["min_y_tick_gap"].get<double>(), 10.0);
  }
  EXPECT_EQ(timelines, 2u);
  const std::string text = c["text"];
  EXPECT_EQ(text.find("first 200"), std::string::npos);
  EXPECT_NE(text.find("all 20 requests"), std::string::npos);
  // The breakdown: a column per arm and the change, the means as the result JSON has them.
  const json* t = table_with_header(c, "component of TTFT (mean ms)");
  ASSERT_NE(t, nullptr);
  const json& header = (*t)["rows"][0];
  ASSERT_EQ(header.size(), 4u) << header;
  EXPECT_EQ(header[3], "change");
  json result;
  for (const auto& f : std::filesystem::recursive_directory_iterator(dir_))
    if (f.path().extension() == ".json" && f.path().filename().string().rfind("closed-loop", 0) == 0)
      result = read_json_file(f.path());
  ASSERT_TRUE(result.is_object());
  const json& means = result["ttft_breakdown_ms"];
  for (const auto& row : (*t)["rows"]) {
    if (row[0] != "ttft") continue;
    const double a = means[header[1].get<std::string>()]["ttft"], b = means[header[2].get<std::string>()]["ttft"];
    EXPECT_NEAR(std::stod(row[1].get<std::string>()), a, 0.051);
    EXPECT_NEAR(std::stod(row[2].get<std::string>()), b, 0.051);
    EXPECT_NEAR(std::stod(row[3].get<std::string>()), 100 * (b - a) / a, 0.051);
    const std::string h1 = c["h1"][0];
    EXPECT_NEAR(number_after(h1, header[1].get<std::string>()), a, 0.051) << h1;
    EXPECT_NEAR(number_after(h1, header[2].get<std::string>()), b, 0.051) << h1;
  }
}

// bench serve --profile --plot-timeline against encbench serve: the arm is the server's preset.
TEST_F(Pages, LiveTimelinePage) {
  const int rc = with_server(encbench() + " serve --port {port} --model tiny-qwen3-vl --encoder-preset baseline "
                                          "--enable-profiling --profile-dir " + (dir_ / "prof").string(),
                             encbench() + " bench serve --port {port} --backend openai-chat --endpoint "
                                          "/v1/chat/completions --dataset-name random-mm --num-prompts 12 "
                                          "--request-rate 20 --random-output-len 4 --profile --plot-timeline "
                                          "--save-result --result-dir " + dir_.string() + " --result-filename live.json",
                             dir_ / "live.log");
  ASSERT_EQ(rc, 0) << read_all(dir_ / "live.log");
  const json c = look_at(dir_ / "live.timeline.html", "live-timeline");
  expect_readable(c);
  const std::string h1 = c["h1"][0], text = c["text"];
  EXPECT_NE(h1.find("encoder preset baseline"), std::string::npos) << h1;
  EXPECT_EQ(text.find("openai-chat"), std::string::npos);
  const json result = read_json_file(dir_ / "live.json");
  EXPECT_NEAR(number_after(h1, "(tiny-qwen3-vl)"), result["mean_ttft_ms"].get<double>(), 0.06) << h1;
  ASSERT_EQ(c["charts"].size(), 1u);
  EXPECT_EQ(c["charts"][0]["y_ticks"].size(), 13u);  // the engine steps and 12 requests
}

// run --sweep with an inf point: inf printed plainly and ticked, legends whole, both arms' knees
// seen, the TTFT axis the data's (an SLO far above it written, not drawn), the capacities given.
TEST_F(Pages, VirtualSweepPage) {
  const std::string cmd = "cd " + dir_.string() + " && " + encbench() + " run --scenario " +
                          (test::source_root() / "scenarios/seeds/pr7104.json").string() +
                          " --seeds 2 --num-prompts 20 --sweep request-rate=1,4,inf --slo ttft_p99\\<=60000 > sweep.log 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << read_all(dir_ / "sweep.log");
  const auto json_path = dir_ / "encbench-results" / "sweep-pr7104.json";
  const json doc = read_json_file(json_path);
  const json c = look_at(dir_ / "encbench-results" / "sweep-pr7104.html", "sweep");
  expect_readable(c);
  const std::string text = c["text"];
  EXPECT_EQ(text.find("\"inf\""), std::string::npos);
  const json* points = table_with_header(c, "load");
  ASSERT_NE(points, nullptr);
  EXPECT_EQ(points->at("rows").back()[0], "inf");
  double ttft_max = 0;
  for (const auto& p : doc["points"])
    for (const auto& a : p["arms"]) ttft_max = std::max(ttft_max, a["p99_ttft_ms"]["mean"].get<double>());
  for (const auto& chart : c["charts"]) {
    const std::string id = chart["id"];
    if (id == "pareto") continue;
    ASSERT_FALSE(chart["x_ticks"].empty()) << id << ": no x tick labels";
    ASSERT_FALSE(chart["y_ticks"].empty()) << id << ": no y tick labels";
    EXPECT_EQ(chart["x_ticks"].back(), "inf") << id;
    if (chart["markers"].size() == 2)  // both arms' knees: apart on the page
      EXPECT_GE(std::fabs(chart["markers"][0].get<double>() - chart["markers"][1].get<double>()), 3.0) << id;
    if (id != "ttft") continue;
    const double top_tick = std::stod(chart["y_ticks"].back().get<std::string>());
    EXPECT_GE(top_tick, 0.8 * ttft_max);
    EXPECT_LE(top_tick, 1.6 * ttft_max) << "the TTFT axis follows the data, not the 60 s SLO";
    bool said = false;  // the SLO not drawn, but said in the legend with its value
    for (const auto& l : chart["legend"]) said = said || l.get<std::string>().rfind("SLO 60000 ms: above this axis", 0) == 0;
    EXPECT_TRUE(said) << chart["legend"];
  }
  // The headline: the verdict and each arm's capacity as the JSON has it.
  const std::string h1 = c["h1"][0];
  EXPECT_TRUE(std::regex_search(h1, std::regex("^(HIGHER|LOWER|SAME) CAPACITY|^NO VERDICT"))) << h1;
  for (const auto& arm : doc["capacity"]["arms"]) {
    const double v = number_after(h1, arm["preset"].get<std::string>(), "req/s"), want = arm["capacity_req_s"]["mean"];
    EXPECT_NEAR(v, want, 0.006 * want + 0.01) << h1;
  }
}

// bench sweep against a scripted server (30 ms to the first token, SLO 2 s): one arm, its TTFT
// curve on an axis of tens of ms (not flattened under the SLO line), the capacity in the headline.
TEST_F(Pages, LiveSweepPage) {
  const int rc = with_server(std::string(ENCBENCH_TEST_SERVER_BIN) + " --port {port} --ttft-ms 30 --itl-ms 1",
                             encbench() + " bench sweep --port {port} --backend openai --endpoint /v1/completions "
                                          "--dataset-name random --random-input-len 8 --random-output-len 4 --ignore-eos "
                                          "--num-prompts 20 --sweep request-rate=10,20,inf --slo ttft_p99\\<=2000 "
                                          "--result-dir " + dir_.string() + " --result-filename live-sweep.json",
                             dir_ / "sweep.log");
  ASSERT_EQ(rc, 0) << read_all(dir_ / "sweep.log");
  std::filesystem::path page;
  for (const auto& f : std::filesystem::recursive_directory_iterator(dir_))
    if (f.path().extension() == ".html") page = f.path();
  ASSERT_FALSE(page.empty()) << read_all(dir_ / "sweep.log");
  const json c = look_at(page, "live-sweep");
  expect_readable(c);
  for (const auto& chart : c["charts"]) {
    if (chart["id"] != "ttft") continue;
    ASSERT_FALSE(chart["y_ticks"].empty()) << "no y tick labels";
    const double top_tick = std::stod(chart["y_ticks"].back().get<std::string>());
    EXPECT_GE(top_tick, 30);
    EXPECT_LE(top_tick, 200) << "30 ms TTFTs on their own axis, the SLO's 2000 ms said in the legend";
  }
  EXPECT_TRUE(std::regex_search(c["h1"][0].get<std::string>(), std::regex("req/s"))) << c["h1"][0];
}

// The report of an encbench run (virtual clock, two seeds): the A/B it carries is the verdict,
// with both arms' mean TTFT as the result's pooled comparison has them.
TEST_F(Pages, RunReportPage) {
  const std::string cmd = "cd " + dir_.string() + " && " + encbench() + " run --scenario " +
                          (test::source_root() / "scenarios/seeds/pr7104.json").string() +
                          " --seeds 2 --num-prompts 20 > run.log 2>&1 && " + encbench() +
                          " report encbench-results/closed-loop-pr7104-virtual.json --html report.html >> run.log 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << read_all(dir_ / "run.log");
  const json c = look_at(dir_ / "report.html", "run-report");
  expect_readable(c);
  const json result = read_json_file(dir_ / "encbench-results" / "closed-loop-pr7104-virtual.json");
  const std::string h1 = c["h1"][0];
  for (const auto& m : result["comparison"]["metrics"])
    if (m["metric"] == "mean_ttft_ms") {
      EXPECT_EQ(h1.rfind(m["verdict"].get<std::string>(), 0), 0u) << h1;
      EXPECT_NEAR(number_after(h1, "A"), m["before"].get<double>(), 0.01 * m["before"].get<double>()) << h1;
      EXPECT_NEAR(number_after(h1, "B"), m["after"].get<double>(), 0.01 * m["after"].get<double>()) << h1;
    }
}

// The report page of a CI gate with a regression: the verdict and the regressed metric's values.
TEST_F(Pages, ReportPage) {
  CompareOptions compare;
  compare.base = test::fixture("gbench_base.json").string();
  compare.next = test::fixture("gbench_new.json").string();
  compare.json_file = (dir_ / "micro-compare.json").string();
  compare.quiet = true;
  std::ostringstream sink;
  ASSERT_EQ(run_compare(compare, sink), 1);
  const auto page = dir_ / "report.html";
  std::string inputs;
  for (const char* f : {"gbench_base.json", "gbench_new.json", "ab.json", "encode_base.json", "vllm_serve_detailed.json",
                        "encbench_serve.json"})
    inputs += " " + test::fixture(f).string();
  ASSERT_EQ(std::system((encbench() + " report" + inputs + " --compare " + compare.json_file + " --html " + page.string() +
                         " > " + (dir_ / "report.log").string() + " 2>&1").c_str()), 0)
      << read_all(dir_ / "report.log");
  const json c = look_at(page, "report");
  expect_readable(c);
  const json cmp = read_json_file(compare.json_file);
  const std::string h1 = c["h1"][0];
  EXPECT_EQ(h1.rfind("REGRESSION", 0), 0u) << h1;
  bool shown = false;
  for (const auto& m : cmp["metrics"])
    if (m.value("regression", false)) {
      shown = true;
      EXPECT_NE(h1.find(m["label"].get<std::string>()), std::string::npos) << h1;
      EXPECT_NEAR(number_after(h1, "BASE"), m["before"].get<double>(), 0.01 * m["before"].get<double>()) << h1;
      EXPECT_NEAR(number_after(h1, "HEAD"), m["after"].get<double>(), 0.01 * m["after"].get<double>()) << h1;
      break;
    }
  EXPECT_TRUE(shown);
}

}  // namespace
}  // namespace encbench::reports
