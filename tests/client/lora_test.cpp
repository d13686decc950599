// --lora-modules / --lora-assignment (vLLM's per-request model) and --skip-tokenizer-init's
// report (vLLM without a tokenizer): Python's random.choice checked against python3 itself, and the
// models the scripted server received.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "harness/client/bench.hpp"
#include "harness/client/lora.hpp"
#include "tests/support/test_server.hpp"

namespace {

using encbench::client::assign_lora_modules;

// python3's own random.choice draws, or nullopt (test skipped) when python3 is missing.
std::optional<std::vector<std::string>> python_choices(std::uint64_t seed, const std::vector<std::string>& modules, std::size_t n) {
  std::string list;
  for (const auto& m : modules) list += (list.empty() ? "'" : ",'") + m + "'";
  const std::string cmd = "python3 -c \"import random; random.seed(" + std::to_string(seed) + "); print(' '.join(random.choice([" +
                          list + "]) for _ in range(" + std::to_string(n) + ")))\" 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return std::nullopt;
  std::string out;
  char buf[4096];
  for (std::size_t k; (k = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, k);
  if (pclose(p) != 0) return std::nullopt;
  std::istringstream words(out);
  std::vector<std::string> got;
  for (std::string w; words >> w;) got.push_back(w);
  return got;
}

TEST(LoraAssignment, RandomIsPythonsRandomChoiceSeededWithTheSeed) {
  const std::vector<std::vector<std::string>> module_sets{{"a", "b", "c"}, {"l0", "l1", "l2", "l3", "l4"}, {"only"},
                                                          {"x", "y"}};
  for (const std::uint64_t seed : {0ULL, 7ULL, 12345ULL, (1ULL << 40) + 5}) {
    for (const auto& modules : module_sets) {
      const auto ours = assign_lora_modules(modules, "random", 300, seed);
      const auto reference = python_choices(seed, modules, 300);
      if (!reference) GTEST_SKIP() << "python3 not available: the reference draws need it";
      ASSERT_EQ(ours, *reference) << "seed " << seed << ", " << modules.size() << " modules";
    }
  }
  // Another seed, other draws.
  EXPECT_NE(assign_lora_modules({"a", "b", "c"}, "random", 50, 0), assign_lora_modules({"a", "b", "c"}, "random", 50, 1));
}

TEST(LoraAssignment, RoundRobinCyclesAndBadInputIsRefused) {
  EXPECT_EQ(assign_lora_modules({"a", "b", "c"}, "round-robin", 7, 99),
            (std::vector<std::string>{"a", "b", "c", "a", "b", "c", "a"}));
  EXPECT_THROW(assign_lora_modules({}, "random", 3, 0), std::exception);
  EXPECT_THROW(assign_lora_modules({"a"}, "sticky", 3, 0), std::exception);
}

encbench::client::BenchConfig text_run(const encbench::testing::TestServer& server, std::size_t n) {
  encbench::client::BenchConfig cfg;
  cfg.backend = encbench::client::Backend::openai_chat;
  cfg.base_url = server.base_url();
  cfg.endpoint = "/v1/chat/completions";
  cfg.model = "base-model";
  cfg.dataset.name = "random";
  cfg.dataset.num_prompts = n;
  cfg.dataset.random.input_len = 4;
  cfg.dataset.random.output_len = 3;
  cfg.request_id_prefix = "lora-";
  cfg.timeout_s = 60;
  return cfg;
}

TEST(LoraAssignment, EachRequestCarriesItsModuleAsTheModel) {
  encbench::testing::TestServer server(encbench::testing::ServerConfig{});
  server.start();
  auto cfg = text_run(server, 9);
  cfg.seed = 3;
  cfg.lora_modules = {"sql-lora", "chat-lora", "code-lora"};
  cfg.lora_assignment = "random";
  const auto expected = assign_lora_modules(cfg.lora_modules, "random", 9, 3);
  const auto result = encbench::client::run_benchmark(cfg);
  cfg.lora_assignment = "round-robin";
  const auto rr = encbench::client::run_benchmark(cfg);
  server.stop();
  ASSERT_EQ(result.metrics.completed, 9);
  ASSERT_EQ(rr.metrics.completed, 9);
  std::size_t seen = 0;
  std::vector<std::string> random_models(9), rr_models(9);
  for (const auto& sr : server.served()) {
    if (sr.method != "POST") continue;
    const std::size_t i = std::stoul(sr.request_id.substr(sr.request_id.find('-') + 1));
    const std::string model = nlohmann::json::parse(sr.body)["model"];
    (seen < 9 ? random_models : rr_models)[i] = model;
    ++seen;
  }
  ASSERT_EQ(seen, 18u);
  EXPECT_EQ(random_models, expected);
  EXPECT_EQ(rr_models, (std::vector<std::string>{"sql-lora", "chat-lora", "code-lora", "sql-lora", "chat-lora", "code-lora",
                                                 "sql-lora", "chat-lora", "code-lora"}));
}

TEST(SkipTokenizerInit, ReportsAsVllmWithoutATokenizer) {
  encbench::testing::TestServer server(encbench::testing::ServerConfig{});
  server.start();
  auto cfg = text_run(server, 4);
  cfg.skip_tokenizer_init = true;
  cfg.percentile_metrics = {"ttft", "tpot", "itl", "e2el"};
  const auto result = encbench::client::run_benchmark(cfg);
  server.stop();
  std::ostringstream block;
  encbench::client::print_vllm_block(block, cfg, result);
  const std::string text = block.str();
  // vLLM's block when tokenizer is None: no token totals or throughputs, no TTFT/TPOT/ITL.
  for (const char* absent : {"Total generated tokens:", "Output token throughput", "Peak output token throughput",
                             "Total token throughput", "Time to First Token", "Inter-token Latency"})
    EXPECT_EQ(text.find(absent), std::string::npos) << absent << "\n" << text;
  for (const char* present : {"Total input tokens:", "Request throughput (req/s):", "Peak concurrent requests:",
                              "----------------End-to-end Latency----------------", "Mean E2EL (ms):"})
    EXPECT_NE(text.find(present), std::string::npos) << present << "\n" << text;
  const auto j = encbench::client::to_vllm_json(cfg, result);
  EXPECT_TRUE(j["tokenizer_id"].is_null());
  EXPECT_FALSE(j.contains("mean_ttft_ms"));
  EXPECT_TRUE(j.contains("mean_e2el_ms"));
}

}  // namespace
