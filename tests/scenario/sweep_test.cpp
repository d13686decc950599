// Load sweeps, capacity at an SLO and the per-request timeline, on the virtual clock. References:
// the queueing facts any preset A/B must show (throughput follows offered load until it
// saturates; latency grows with load), the SLO checked again at the reported capacity, and the
// TTFT breakdown adding up to the TTFT the client measured.
#include <gtest/gtest.h>

#include "tests/scenario/scenario_test_paths.hpp"
#include "tests/support/virtual_options.hpp"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "harness/core/error.hpp"
#include "harness/scenario/preset_ab.hpp"
#include "harness/scenario/sweep.hpp"
#include "harness/scenario/sweep_report.hpp"
#include "harness/scenario/virtual_experiment.hpp"

namespace encbench {
namespace {


std::filesystem::path temp_dir(const std::string& name) { return testpaths::temp_dir("sweep", name); }
using testpaths::source_dir;

scenario::PresetAbOptions small(const std::filesystem::path& dir) {
  scenario::PresetAbOptions o = testing::small_virtual_options(dir, "sweep-test");
  o.num_prompts = 30;
  o.output_len = 8;
  o.clock = scenario::RunClock::virtual_time;
  o.seeds = 2;
  return o;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InvalidInput& e) {
    return e.what();
  }
  return "accepted";
}

TEST(Sweep, ParsesListsAndRefusesBadOnes) {
  const auto s = scenario::parse_sweep("request-rate=1,2.5,inf");
  EXPECT_EQ(s.variable, "request-rate");
  ASSERT_EQ(s.values.size(), 3u);
  EXPECT_TRUE(std::isinf(s.values[2]));
  EXPECT_NE(error_of([] { scenario::parse_sweep("request-rate="); }).find("empty"), std::string::npos);
  EXPECT_NE(error_of([] { scenario::parse_sweep("request-rate=4,2"); }).find("increasing"), std::string::npos);
  EXPECT_NE(error_of([] { scenario::parse_sweep("request-rate=0,2"); }).find("positive"), std::string::npos);
  EXPECT_NE(error_of([] { scenario::parse_sweep("rate=1"); }).find("unknown variable"), std::string::npos);
  EXPECT_NE(error_of([] { scenario::parse_sweep("max-concurrency=1,inf"); }).find("inf"), std::string::npos);
  const auto slo = scenario::parse_slo("ttft_p99<=2000,tpot_mean<=300");
  ASSERT_EQ(slo.size(), 2u);
  EXPECT_EQ(slo[0].key(), "p99_ttft_ms");
  EXPECT_EQ(slo[1].key(), "mean_tpot_ms");
  EXPECT_NE(error_of([] { scenario::parse_slo("latency_p99<=3"); }).find("unknown metric"), std::string::npos);
  EXPECT_NE(error_of([] { scenario::parse_slo("ttft_p42<=3"); }).find("unknown statistic"), std::string::npos);
  EXPECT_NE(error_of([] { scenario::parse_slo("ttft_p99<=soon"); }).find("not a number"), std::string::npos);
}

TEST(Sweep, ThroughputFollowsOfferedLoadUntilSaturationAndLatencyGrows) {
  const auto dir = temp_dir("rate");
  scenario::SweepOptions w;
  w.sweep = scenario::parse_sweep("request-rate=1,4,inf");
  std::ostringstream out, progress;
  const auto run = scenario::run_virtual_sweep(small(dir), w, {"test"}, out, progress);
  const auto& points = run.result["points"];
  ASSERT_EQ(points.size(), 3u);
  for (int arm = 0; arm < 2; ++arm) {
    const auto rps = [&](int i) { return points[i]["arms"][arm]["request_throughput"]["mean"].get<double>(); };
    const auto p99 = [&](int i) { return points[i]["arms"][arm]["p99_ttft_ms"]["mean"].get<double>(); };
    EXPECT_NEAR(rps(0), 1.0, 0.3);  // unloaded: served at the offered rate (30 requests: +-30 %)
    EXPECT_GT(rps(1), rps(0));
    EXPECT_GE(rps(2), rps(1) * 0.95);
    EXPECT_LT(p99(0), p99(2));      // all at once queues
  }
  EXPECT_TRUE(points[0]["verdicts"].contains("mean_ttft_ms"));
  EXPECT_FALSE(points[0]["arms"][0].contains("ttfts"));  // points keep summaries, not requests
  std::ifstream html(dir / "sweep-sweep-test.html");
  std::stringstream page;
  page << html.rdbuf();
  EXPECT_NE(page.str().find("<svg"), std::string::npos);
  EXPECT_NE(page.str().find("Achieved request throughput"), std::string::npos);
}

TEST(Sweep, SaveDetailedKeepsEveryRequestOfEveryArmAndSeed) {
  const auto dir = temp_dir("detailed");
  scenario::SweepOptions w;
  w.sweep = scenario::parse_sweep("request-rate=2,8");
  const scenario::PresetAbOptions o = small(dir);
  std::ostringstream out, progress;
  const auto summaries = scenario::run_virtual_sweep(o, w, {"test"}, out, progress);
  w.save_detailed = true;
  const auto detailed = scenario::run_virtual_sweep(o, w, {"test"}, out, progress);
  for (std::size_t p = 0; p < 2; ++p)
    for (std::size_t arm = 0; arm < 2; ++arm) {
      EXPECT_FALSE(summaries.result["points"][p]["arms"][arm].contains("detailed"));
      const auto& seeds = detailed.result["points"][p]["arms"][arm]["detailed"];
      ASSERT_EQ(seeds.size(), static_cast<std::size_t>(o.seeds));
      for (std::size_t s = 0; s < seeds.size(); ++s) {
        EXPECT_EQ(seeds[s]["seed"].get<std::uint64_t>(), o.seed + s);
        for (const char* key : {"ttfts", "itls", "latencies", "input_lens", "output_lens", "start_times"})
          EXPECT_EQ(seeds[s][key].size(), static_cast<std::size_t>(o.num_prompts)) << key;
        EXPECT_FALSE(seeds[s].contains("generated_texts"));
      }
      // The arrays are the summaries' samples: their mean TTFT is the point's (seeds pooled).
      double sum_ms = 0;
      for (const auto& seed : seeds)
        for (const auto& t : seed["ttfts"]) sum_ms += 1e3 * t.get<double>() / (o.num_prompts * o.seeds);
      EXPECT_NEAR(sum_ms, detailed.result["points"][p]["arms"][arm]["mean_ttft_ms"]["mean"].get<double>(), 1e-6 * sum_ms);
      EXPECT_EQ(detailed.result["points"][p]["arms"][arm]["mean_ttft_ms"],
                summaries.result["points"][p]["arms"][arm]["mean_ttft_ms"]);  // keeping them changes nothing
    }
}

// The sweep's record drops each seed's per-request samples (memory grows with points, not
// requests); every summary the point reports must come out as with the samples kept, and the
// throughput must be the mean of what the metrics struct says, read without any JSON.
TEST(SweepReport, DroppingTheRequestsKeepsEveryPointSummary) {
  const scenario::PresetAbOptions o = small(temp_dir("record"));
  scenario::VirtualExperiment experiment(o, {"test"});
  auto by_arm = experiment.run_all(o, nullptr);
  scenario::SweepPoint kept{"request-rate", o.request_rate, {}, {}, ""}, dropped = kept;
  for (auto& seeds : by_arm) {
    kept.arms.push_back({seeds, {}, true});
    for (auto& s : seeds) scenario::drop_requests(s);
    dropped.arms.push_back({std::move(seeds), {}, false});
  }
  ASSERT_EQ(kept.arms.size(), 2u);
  EXPECT_EQ(kept.arms[0].seeds[0].result.metrics.ttfts_s.size(), static_cast<std::size_t>(o.num_prompts));
  EXPECT_TRUE(dropped.arms[0].seeds[0].result.metrics.ttfts_s.empty());
  const nlohmann::json with = scenario::point_json(kept, {}), without = scenario::point_json(dropped, {});
  for (std::size_t arm = 0; arm < 2; ++arm) {
    ASSERT_TRUE(with["arms"][arm].contains("detailed"));
    EXPECT_FALSE(without["arms"][arm].contains("detailed"));
    nlohmann::json summaries = with["arms"][arm];
    summaries.erase("detailed");
    EXPECT_EQ(summaries, without["arms"][arm]);
    EXPECT_GE(summaries.size(), 17u);  // every kPointKeys entry
    double throughput = 0;
    for (const auto& s : dropped.arms[arm].seeds) throughput += s.result.metrics.request_throughput / o.seeds;
    EXPECT_GT(throughput, 0);
    EXPECT_NEAR(without["arms"][arm]["request_throughput"]["mean"].get<double>(), throughput, 1e-12 * throughput);
  }
}

TEST(Sweep, ConcurrencyCapBoundsRequestsInFlight) {
  const auto dir = temp_dir("conc");
  scenario::SweepOptions w;
  w.sweep = scenario::parse_sweep("max-concurrency=1,4");
  scenario::PresetAbOptions o = small(dir);
  o.request_rate = std::numeric_limits<double>::infinity();
  std::ostringstream out, progress;
  const auto run = scenario::run_virtual_sweep(o, w, {"test"}, out, progress);
  for (int arm = 0; arm < 2; ++arm) {
    EXPECT_EQ(run.result["points"][0]["arms"][arm]["max_concurrent_requests"]["max"].get<double>(), 1.0);
    EXPECT_LE(run.result["points"][1]["arms"][arm]["max_concurrent_requests"]["max"].get<double>(), 4.0);
    EXPECT_GE(run.result["points"][1]["arms"][arm]["max_concurrent_requests"]["max"].get<double>(), 2.0);
  }
}

TEST(Sweep, CapacityMeetsTheSloAndTwiceItDoesNot) {
  const auto dir = temp_dir("capacity");
  scenario::PresetAbOptions o = small(dir);
  o.seeds = 1;
  scenario::SweepOptions w;
  w.slo = scenario::parse_slo("ttft_p99<=400");
  w.capacity_bisections = 5;
  std::ostringstream out, progress;
  const auto run = scenario::run_virtual_sweep(o, w, {"test"}, out, progress);
  scenario::VirtualExperiment experiment(o, {"test"});
  for (std::size_t arm = 0; arm < 2; ++arm) {
    const double capacity = run.result["capacity"]["arms"][arm]["capacity_req_s"]["mean"].get<double>();
    ASSERT_GT(capacity, 0.25);
    ASSERT_LT(capacity, 1024.0);
    scenario::PresetAbOptions at = o;
    at.request_rate = capacity;
    EXPECT_TRUE(scenario::meets_slo(w.slo, scenario::serving_json(experiment.run(arm, at, o.seed)))) << capacity;
    at.request_rate = 2 * capacity;
    EXPECT_FALSE(scenario::meets_slo(w.slo, scenario::serving_json(experiment.run(arm, at, o.seed)))) << capacity;
    // The search's bracket: its low is the capacity, its high a failing rate within the
    // doubling step (at most the capacity) halved 5 times.
    const auto& bracket = run.result["capacity"]["arms"][arm]["capacity_bracket"];
    EXPECT_EQ(bracket["kind"], "bracketed");
    EXPECT_EQ(bracket["low"].get<double>(), capacity);
    const double high = bracket["high"].get<double>();
    EXPECT_GT(high, capacity);
    EXPECT_LE(high - capacity, capacity / 32 + 1e-12);
    at.request_rate = high;
    EXPECT_FALSE(scenario::meets_slo(w.slo, scenario::serving_json(experiment.run(arm, at, o.seed)))) << high;
  }
  EXPECT_NE(out.str().find("capacity at ttft p99 <= 400 ms"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("every seed bracketed, all between "), std::string::npos) << out.str();
}

// The live summary's capacity line for a bracket and for a pass above a fail (the scripted
// server of live_sweep_test.cpp covers the two bounds end to end).
TEST(Sweep, LiveSummarySaysBracketedOrNotMonotone) {
  scenario::SweepRecord record;
  record.presets = {"server"};
  record.slo = scenario::parse_slo("ttft_p99<=2000");
  record.brackets = {reports::bracket_capacity({{5, true}, {10, true}, {20, true}, {40, false}})};
  std::ostringstream bracketed;
  scenario::print_live_summary(bracketed, "server", "request-rate", record);
  EXPECT_NE(bracketed.str().find("\nCapacity at ttft p99 <= 2000 ms: between 20 and 40 req/s\n"), std::string::npos)
      << bracketed.str();
  record.brackets = {reports::bracket_capacity({{5, true}, {10, false}, {20, true}, {40, false}})};
  std::ostringstream odd;
  scenario::print_live_summary(odd, "server", "request-rate", record);
  EXPECT_NE(odd.str().find("\nCapacity at ttft p99 <= 2000 ms: not monotone: 20 req/s met the SLO above a failure at "
                           "10 req/s; below that failure: between 5 and 10 req/s\n"),
            std::string::npos)
      << odd.str();
  const nlohmann::json doc = scenario::live_sweep_json("http://x", record, {"t"});
  EXPECT_EQ(doc["capacity"]["capacity_bracket"]["kind"], "not_monotone");
  EXPECT_EQ(doc["capacity"]["capacity_bracket"]["passes_above"], nlohmann::json::array({20.0}));
}

TEST(Sweep, InterruptedSweepWritesWhatFinished) {
  const auto dir = temp_dir("stop");
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ASSERT_EQ(::write(fds[1], "x", 1), 1);  // a stop request already pending
  scenario::PresetAbOptions o = small(dir);
  o.wiring.stop_fd = fds[0];
  scenario::SweepOptions w;
  w.sweep = scenario::parse_sweep("request-rate=1,2");
  std::ostringstream out, progress;
  const auto run = scenario::run_virtual_sweep(o, w, {"test"}, out, progress);
  EXPECT_TRUE(run.result["interrupted"].get<bool>());
  EXPECT_TRUE(std::filesystem::exists(run.result_path));
  ::close(fds[0]);
  ::close(fds[1]);
}

TEST(Timeline, TtftBreakdownAddsUpToTheMeasuredTtft) {
  const auto dir = temp_dir("timeline");
  scenario::PresetAbOptions o = small(dir);
  o.seeds = 1;
  o.request_rate = 8;
  o.outputs.timeline_html = dir / "timeline.html";
  std::ostringstream out, progress;
  const auto run = scenario::run_preset_ab(o, {"test"}, out, progress);
  for (std::size_t arm = 0; arm < 2; ++arm) {
    const auto& b = run.result["ttft_breakdown_ms"][o.presets[arm]];
    double parts = 0;
    for (const auto& [key, value] : b.items())
      if (key != "ttft" && key != "client_queue") parts += value.get<double>();
    EXPECT_NEAR(parts / b["ttft"].get<double>(), 1.0, 0.01) << b.dump();
    const double mean_ttft = run.result["arms"][arm]["seeds"][0]["serving"]["mean_ttft_ms"].get<double>();
    EXPECT_NEAR(b["ttft"].get<double>() / mean_ttft, 1.0, 1e-6);
    EXPECT_GT(b["encoder_busy"].get<double>(), 0.0);
  }
  // Baseline's encoder stalls on its per-layer syncs; optimized has none.
  EXPECT_GT(run.result["ttft_breakdown_ms"]["baseline"].value("encoder_idle_sync_stall", 0.0), 0.0);
  EXPECT_EQ(run.result["ttft_breakdown_ms"]["optimized"].value("encoder_idle_sync_stall", 0.0), 0.0);
  std::ifstream html(o.outputs.timeline_html);
  std::stringstream page;
  page << html.rdbuf();
  EXPECT_NE(page.str().find("#636EFA"), std::string::npos);  // TTFT bands in vLLM's colour
}

}  // namespace
}  // namespace encbench
