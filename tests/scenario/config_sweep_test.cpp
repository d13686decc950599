// `encbench bench sweep serve` against servers it starts: the scripted test server as a separate
// process (encbench-test-server) with known TTFTs per configuration, a configuration whose server
// exits at once, Ctrl-C and --resume; and the CLI reading vLLM's own docs files unchanged and
// refusing a bad key with exit 2.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>

#include "harness/core/error.hpp"
#include "harness/scenario/config_sweep.hpp"
#include "harness/scenario/config_sweep_report.hpp"
#include "reports/config_sweep_html.hpp"
#include "tests/scenario/scenario_test_paths.hpp"

namespace encbench::scenario {
namespace {

client::BenchConfig small_load(double rate) {
  client::BenchConfig c;
  c.backend = client::Backend::openai;
  c.endpoint = "/v1/completions";
  c.base_url = "http://127.0.0.1:1";
  c.dataset.name = "random";
  c.dataset.num_prompts = 12;
  c.dataset.random.input_len = 8;
  c.dataset.random.output_len = 4;
  c.ignore_eos = true;
  c.request_rate = rate;
  c.num_warmups = 1;
  c.timeout_s = 30;
  c.percentile_metrics = {"ttft", "tpot", "itl", "e2el"};
  return c;
}

SweepConfiguration test_server_configuration(const std::string& name, double ttft_ms) {
  std::ostringstream cmd;
  cmd << "exec '" << ENCBENCH_TEST_SERVER_BIN << "' --port {port} --ttft-ms " << ttft_ms << " --itl-ms 1";
  return {name, {{"ttft_ms", ttft_ms}}, cmd.str()};
}

ConfigSweepOptions two_by_two(const std::string& dir) {
  ConfigSweepOptions o;
  o.configurations = {test_server_configuration("fast", 5), test_server_configuration("slow", 40)};
  o.loads = {{"rate-20", {{"request_rate", 20}}, small_load(20), 20}, {"rate-40", {{"request_rate", 40}}, small_load(40), 40}};
  o.rounds = 2;
  o.order_seed = 7;
  o.ready_timeout_s = 30;
  o.stop_grace_s = 5;
  o.out_dir = testpaths::temp_dir("config-sweep", dir) / "exp";
  return o;
}

std::set<std::pair<std::size_t, std::size_t>> block(const std::vector<SweepCell>& order, int round) {
  std::set<std::pair<std::size_t, std::size_t>> out;
  for (const auto& c : order)
    if (c.round == round) out.insert({c.configuration, c.load});
  return out;
}

TEST(ConfigSweepOrder, BalancedBlocksHoldEveryCellOnceAndMirrorEachOther) {
  ConfigSweepOptions o = two_by_two("order");
  o.configurations.push_back(o.configurations[0]);
  o.rounds = 4;
  const auto order = plan_sweep_order(o);
  ASSERT_EQ(order.size(), 3u * 2u * 4u);
  for (int r = 1; r <= 4; ++r) EXPECT_EQ(block(order, r).size(), 6u) << "round " << r;
  for (std::size_t i = 0; i < 6; ++i) {  // block 2 is block 1 backwards (and 4 of 3)
    EXPECT_EQ(order[6 + i].configuration, order[5 - i].configuration);
    EXPECT_EQ(order[6 + i].load, order[5 - i].load);
    EXPECT_EQ(order[18 + i].configuration, order[17 - i].configuration);
  }
  // Seeded: the same seed, the same order; another seed, another order (of 720 for a block).
  EXPECT_EQ(cell_label(plan_sweep_order(o)[3]), cell_label(order[3]));
  o.order_seed = 8;
  const auto other = plan_sweep_order(o);
  bool differs = false;
  for (std::size_t i = 0; i < order.size(); ++i) differs = differs || cell_label(other[i]) != cell_label(order[i]);
  EXPECT_TRUE(differs);
  o.sequential = true;  // vLLM's order: configuration, then load, then round
  const auto seq = plan_sweep_order(o);
  EXPECT_EQ(cell_label(seq[0]), "c1-l1");
  EXPECT_EQ(seq[1].round, 2);
  EXPECT_EQ(cell_label(seq[4]), "c1-l2");
  EXPECT_EQ(cell_label(seq.back()), "c3-l2");
}

TEST(ConfigSweepLive, TheFastConfigurationWinsAtEveryLoadWithStartUpTimesAndThePage) {
  ConfigSweepOptions o = two_by_two("live");
  o.rounds = 3;  // df 4: one round slowed by a busy machine does not hide a 5 ms against 40 ms TTFT
  o.after_bench_cmd = "echo {port} > {round_dir}/after.txt";
  std::ostringstream progress;
  const auto record = run_config_sweep(o, progress);
  ASSERT_EQ(record.outcomes.size(), 12u) << progress.str();
  for (const auto& cell : record.outcomes) {
    ASSERT_TRUE(cell.failure.empty()) << cell.failure;
    const double ready = cell.server["ready_ms"].get<double>(), first = cell.server["first_token_ms"].get<double>();
    EXPECT_GT(ready, 0);
    // The first token comes after readiness and at least the scripted TTFT later.
    EXPECT_GE(first, ready + o.configurations[cell.cell.configuration].params["ttft_ms"].get<double>());
    EXPECT_LT(first, ready + 5000);
    EXPECT_EQ(cell.server["after_bench"]["exit"], "exited with status 0");
    const auto round_dir = o.out_dir / ("round-" + std::to_string(cell.cell.round) + "-" + cell_label(cell.cell));
    std::ifstream after(round_dir / "after.txt");
    int port = 0;
    after >> port;
    EXPECT_EQ(port, cell.server["port"].get<int>());
  }
  ConfigSweepJudging judging;
  judging.rank_metric = "median_ttft_ms";  // each round's median: a few late requests do not move it
  judging.slo = parse_slo("ttft_p99<=35");
  const auto a = analyse_config_sweep(o, record, judging, {"test"});
  EXPECT_EQ(a["schema"], "encbench-config-sweep");
  for (const auto& load : a["loads"]) {
    EXPECT_EQ(load["winner"], "fast") << load.dump();
    ASSERT_EQ(load["verdicts"].size(), 1u);
    EXPECT_EQ(load["verdicts"][0]["verdict"], "SLOWER");
  }
  // ttft p99 <= 35 ms: the 40 ms server never meets it; the 5 ms one meets it at the lower load
  // at least (at both on a quiet machine: a bound at 40 req/s).
  const auto& fast_capacity = a["configurations"][0]["capacity"];
  EXPECT_TRUE(fast_capacity["kind"] == "at_least" || fast_capacity["kind"] == "bracketed") << fast_capacity.dump();
  EXPECT_EQ(fast_capacity["low"].get<double>(), fast_capacity["kind"] == "at_least" ? 40.0 : 20.0);
  EXPECT_EQ(a["configurations"][1]["capacity"]["kind"], "below_lowest");
  EXPECT_EQ(a["configurations"][0]["startup"]["ready_ms"].size(), 6u);
  // The capacity front: fast carries more at a lower light-load TTFT; slow has no capacity.
  EXPECT_TRUE(a["pareto"]["capacity"][0]["on_front"].get<bool>());
  EXPECT_EQ(a["timing"]["cells_run"], 12);
  EXPECT_GT(a["timing"]["wall_s"].get<double>(), a["timing"]["measured_s"].get<double>());
  const std::string page = reports::render_config_sweep_html(a);
  EXPECT_NE(page.find("Winners by load"), std::string::npos);
  EXPECT_NE(page.find("pareto-throughput"), std::string::npos);
  EXPECT_NE(page.find("winner fast"), std::string::npos);
}

TEST(ConfigSweepLive, AFailingConfigurationIsNamedWithItsParametersAndRoundWhileTheOthersGoOn) {
  ConfigSweepOptions o = two_by_two("failing");
  o.configurations[1] = {"broken", {{"max_num_seqs", 3}}, "echo refusing {port} >&2; exit 3"};
  std::ostringstream progress;
  const auto record = run_config_sweep(o, progress);
  ASSERT_EQ(record.outcomes.size(), 8u);
  std::size_t failed = 0;
  for (const auto& cell : record.outcomes) {
    if (cell.cell.configuration == 0) {
      EXPECT_TRUE(cell.failure.empty()) << cell.failure;
      continue;
    }
    ++failed;
    EXPECT_NE(cell.failure.find("configuration 'broken' ({\"max_num_seqs\":3})"), std::string::npos) << cell.failure;
    EXPECT_NE(cell.failure.find("round " + std::to_string(cell.cell.round)), std::string::npos);
    EXPECT_NE(cell.failure.find("exited with status 3"), std::string::npos) << cell.failure;
  }
  EXPECT_EQ(failed, 4u);
  const auto a = analyse_config_sweep(o, record, {}, {"test"});
  EXPECT_EQ(a["failures"].size(), 4u);
  for (const auto& load : a["loads"]) EXPECT_EQ(load["winner"], "fast");  // the only one measured
  EXPECT_NE(reports::render_config_sweep_html(a).find("Failed:"), std::string::npos);
}

TEST(ConfigSweepLive, CtrlCKeepsTheFinishedRoundsAndResumeRunsOnlyTheRest) {
  ConfigSweepOptions o = two_by_two("resume");
  int pipe_fds[2];  // non-blocking, as the CLI's signalfd: the client drains it until EAGAIN
  ASSERT_EQ(::pipe2(pipe_fds, O_NONBLOCK | O_CLOEXEC), 0);
  o.stop_fd = pipe_fds[0];
  int ready_seen = 0;
  pid_t third_server = 0;
  o.on_ready = [&](const std::string&, int, pid_t pgid) {
    if (++ready_seen == 3) {  // Ctrl-C during the third cell
      third_server = pgid;
      ASSERT_EQ(::write(pipe_fds[1], "x", 1), 1);
    }
  };
  std::ostringstream progress;
  const auto first = run_config_sweep(o, progress);
  EXPECT_TRUE(first.interrupted);
  ASSERT_EQ(first.outcomes.size(), 2u) << progress.str();
  ASSERT_GT(third_server, 0);
  EXPECT_EQ(::kill(-third_server, 0), -1);  // its server was stopped
  ::close(pipe_fds[0]);
  ::close(pipe_fds[1]);
  // Without --resume the directory is refused; with it the two finished cells are kept.
  o.stop_fd = -1;
  o.on_ready = nullptr;
  EXPECT_THROW(validate(o), InvalidInput);
  o.resume = true;
  const auto second = run_config_sweep(o, progress);
  ASSERT_EQ(second.outcomes.size(), 8u);
  std::size_t resumed = 0;
  for (const auto& cell : second.outcomes) resumed += cell.resumed ? 1 : 0;
  EXPECT_EQ(resumed, 2u);
  EXPECT_EQ(cell_label(second.outcomes[0].cell), cell_label(first.outcomes[0].cell));
  // A resumed directory run with another plan is refused.
  o.order_seed = 99;
  EXPECT_THROW(validate(o), InvalidInput);
}

struct Proc {
  int status = -1;
  std::string output;
};

Proc encbench(const std::string& args) {
  const std::string cmd = std::string("timeout 60 ") + ENCBENCH_BINARY + " " + args + " 2>&1";
  Proc r;
  FILE* p = ::popen(cmd.c_str(), "r");
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) r.output.append(buf, n);
  const int rc = ::pclose(p);
  r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  return r;
}

std::string docs_file(const std::string& name) {
  return (testpaths::source_dir() / "tests/scenario/data/vllm_sweep" / name).string();
}

TEST(ConfigSweepCli, VllmsDocsFilesRunUnchanged) {
  const auto dir = testpaths::temp_dir("config-sweep", "cli-docs");
  const Proc p = encbench("bench sweep serve --dry-run --serve-cmd 'encbench serve --port 8000 --encoder cost-model' "
                          "--bench-cmd 'vllm bench serve --backend vllm --dataset-name random --num-prompts 10' "
                          "--serve-params " + docs_file("serve_hparams.json") + " --bench-params " +
                          docs_file("bench_hparams.json") + " --num-runs 2 -o " + dir.string() + " -e x");
  ASSERT_EQ(p.status, 0) << p.output;
  EXPECT_NE(p.output.find("configuration max_num_seqs=32-max_num_batched_tokens=1024: encbench serve --port {port} "
                          "--encoder cost-model --max-num-seqs 32 --max-num-batched-tokens 1024"),
            std::string::npos)
      << p.output;
  EXPECT_NE(p.output.find("load random_input_len=512-random_output_len=128"), std::string::npos);
  std::size_t rounds = 0;
  for (std::size_t at = 0; (at = p.output.find("\nround ", at)) != std::string::npos; ++at) ++rounds;
  EXPECT_EQ(rounds, 6u * 3u * 2u);
}

TEST(ConfigSweepCli, LinkVarsKeepOnlyThePairsWithEqualValues) {
  const auto dir = testpaths::temp_dir("config-sweep", "cli-link");
  {
    std::ofstream(dir / "serve.json") << R"([{"max_num_seqs": 2}, {"max_num_seqs": 4}])";
    std::ofstream(dir / "bench.json") << R"([{"max_concurrency": 2}, {"max_concurrency": 4}, {"max_concurrency": 8}])";
  }
  const Proc p = encbench("bench sweep serve --dry-run --serve-cmd 'encbench serve' --num-runs 1 -o " + dir.string() +
                          " -e x --serve-params " + (dir / "serve.json").string() + " --bench-params " +
                          (dir / "bench.json").string() + " --link-vars max_num_seqs=max_concurrency");
  ASSERT_EQ(p.status, 0) << p.output;
  EXPECT_NE(p.output.find("round 1 c1-l1\n"), std::string::npos) << p.output;
  EXPECT_NE(p.output.find("round 1 c2-l2\n"), std::string::npos) << p.output;
  for (const char* unlinked : {"c1-l2", "c1-l3", "c2-l1", "c2-l3"}) EXPECT_EQ(p.output.find(unlinked), std::string::npos) << unlinked;
  const Proc none = encbench("bench sweep serve --dry-run --serve-cmd 'encbench serve' -o " + dir.string() +
                             " -e y --serve-params " + (dir / "serve.json").string() + " --bench-params " +
                             (dir / "bench.json").string() + " --link-vars max_num_seqs=random_input_len");
  EXPECT_EQ(none.status, 2) << none.output;  // no pair is linked: nothing would run
  EXPECT_NE(none.output.find("--link-vars"), std::string::npos) << none.output;
}

TEST(ConfigSweepCli, AnUnknownKeyOrARefusedValueExitsTwoNamingFileEntryAndKey) {
  const auto dir = testpaths::temp_dir("config-sweep", "cli-bad");
  {
    std::ofstream(dir / "bench.json") << R"([{"request_rate": 2}, {"request_rate": 4, "num_promptz": 10}])";
    std::ofstream(dir / "serve.json") << R"([{"max_num_seqs": "many"}])";
  }
  const std::string base = "bench sweep serve --dry-run --serve-cmd 'encbench serve' -o " + dir.string() + " -e x ";
  const Proc bench = encbench(base + "--bench-params " + (dir / "bench.json").string());
  EXPECT_EQ(bench.status, 2) << bench.output;
  EXPECT_NE(bench.output.find("bench.json: entry 2 ('request_rate=4-num_promptz=10'), key 'num_promptz' (10)"),
            std::string::npos)
      << bench.output;
  const Proc serve = encbench(base + "--serve-params " + (dir / "serve.json").string());
  EXPECT_EQ(serve.status, 2) << serve.output;
  EXPECT_NE(serve.output.find("serve.json: entry 1 ('max_num_seqs=many'), key 'max_num_seqs' (many)"), std::string::npos)
      << serve.output;
}

}  // namespace
}  // namespace encbench::scenario
