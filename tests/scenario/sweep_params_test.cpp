// vLLM's parameter-sweep files read as vLLM reads them (vllm/benchmarks/sweep/param_sweep.py):
// the expected command lines are worked out by hand from that code (ParameterSweepItem's
// apply_to_cmd, _normalize_cmd_kv_pair, as_text), and the two files are copies of the ones in
// vLLM's docs/benchmarking/sweeps.md (tests/scenario/data/vllm_sweep/).
#include <gtest/gtest.h>

#include <fstream>

#include "harness/core/error.hpp"
#include "harness/scenario/sweep_params.hpp"
#include "tests/scenario/scenario_test_paths.hpp"

namespace encbench::scenario {
namespace {

using Words = std::vector<std::string>;
using ojson = nlohmann::ordered_json;

std::filesystem::path docs_file(const std::string& name) {
  return testpaths::source_dir() / "tests/scenario/data/vllm_sweep" / name;
}

std::filesystem::path write_file(const std::string& name, const std::string& text) {
  static const auto dir = testpaths::temp_dir("sweep-params", "files");
  const auto path = dir / name;
  std::ofstream(path) << text;
  return path;
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InvalidInput& e) {
    return e.what();
  }
  return "(no InvalidInput)";
}

TEST(SweepParams, TheServeFileOfVllmsDocsGivesSixConfigurationsWithVllmsNamesAndFlags) {
  const auto combos = read_param_sweep(docs_file("serve_hparams.json"));
  ASSERT_EQ(combos.size(), 6u);
  // as_text(sep="-"): keys in file order, Python's str of each value.
  EXPECT_EQ(combos[0].name, "max_num_seqs=32-max_num_batched_tokens=1024");
  EXPECT_EQ(combos[5].name, "max_num_seqs=256-max_num_batched_tokens=4096");
  // Keys absent from the command are appended in '-' spelling, in the file's order.
  EXPECT_EQ(apply_params({"vllm", "serve", "meta-llama/Llama-2-7b-chat-hf"}, combos[2].params),
            (Words{"vllm", "serve", "meta-llama/Llama-2-7b-chat-hf", "--max-num-seqs", "64", "--max-num-batched-tokens",
                   "2048"}));
}

TEST(SweepParams, TheBenchFileOfVllmsDocsGivesThreeLoads) {
  const auto combos = read_param_sweep(docs_file("bench_hparams.json"));
  ASSERT_EQ(combos.size(), 3u);
  EXPECT_EQ(combos[1].name, "random_input_len=256-random_output_len=64");
  EXPECT_EQ(apply_params({"--dataset-name", "random"}, combos[2].params),
            (Words{"--dataset-name", "random", "--random-input-len", "512", "--random-output-len", "128"}));
}

TEST(SweepParams, AFlagAlreadyInTheCommandIsReplacedWhereItStandsInEitherSpelling) {
  const ojson params = {{"max_num_seqs", 32}, {"port", 9000}};
  // vLLM tries "--max-num-seqs", then "--max_num_seqs": the word and its value are replaced in place.
  EXPECT_EQ(apply_params({"vllm", "serve", "m", "--max_num_seqs", "16", "--port", "8000", "--x"}, params),
            (Words{"vllm", "serve", "m", "--max-num-seqs", "32", "--port", "9000", "--x"}));
}

TEST(SweepParams, BooleansObjectsListsAndNullBecomeTheWordsVllmWrites) {
  const ojson params = ojson::parse(R"({"enforce_eager": true, "enable_prefix_caching": false,
      "compilation_config.cudagraph_mode": false, "limit_mm_per_prompt": {"image": 2, "video": 0},
      "cuda_graph_sizes": [1, 2], "names": ["a", "b's"], "gpu_memory_utilization": 0.5, "x": null,
      "_benchmark_name": "mine"})");
  EXPECT_EQ(apply_params({"vllm", "serve"}, params),
            (Words{"vllm", "serve", "--enforce-eager", "--no-enable-prefix-caching",
                   "--compilation-config.cudagraph_mode=false", "--limit-mm-per-prompt", R"({"image": 2, "video": 0})",
                   "--cuda-graph-sizes", "[1, 2]", "--names", R"(['a', "b's"])", "--gpu-memory-utilization", "0.5",
                   "--x", "None"}));
}

TEST(SweepParams, AnObjectOfNamedObjectsNamesEachCombination) {
  const auto path = write_file("named.json", R"({"small": {"max_num_seqs": 8}, "large": {"max_num_seqs": 512}})");
  const auto combos = read_param_sweep(path);
  ASSERT_EQ(combos.size(), 2u);
  EXPECT_EQ(combos[0].name, "small");
  EXPECT_EQ(combos[1].name, "large");
  EXPECT_EQ(apply_params({"s"}, combos[1].params), (Words{"s", "--max-num-seqs", "512"}));  // the name is no flag
}

TEST(SweepParams, FilesVllmRefusesAreRefusedNamingTheFileAndTheEntry) {
  const auto not_list = write_file("scalar.json", "42");
  EXPECT_NE(message_of([&] { read_param_sweep(not_list); }).find("scalar.json: the parameter sweep should be a list"),
            std::string::npos);
  const auto bad_entry = write_file("entry.json", R"([{"a": 1}, [1, 2]])");
  EXPECT_NE(message_of([&] { read_param_sweep(bad_entry); }).find("entry.json: entry 2 should be an object"),
            std::string::npos);
  const auto duplicate = write_file("dup.json", R"([{"_benchmark_name": "x"}, {"_benchmark_name": "x"}])");
  EXPECT_NE(message_of([&] { read_param_sweep(duplicate); }).find("entry 2: duplicate _benchmark_name 'x'"),
            std::string::npos);
  const auto broken = write_file("broken.json", R"([{"a": 1},)");
  EXPECT_NE(message_of([&] { read_param_sweep(broken); }).find("broken.json: not valid JSON"), std::string::npos);
}

TEST(SweepParams, CheckEntriesNamesTheFileEntryAndKeyTheCommandsParserRefuses) {
  const auto path = write_file("keys.json", R"([{"max_num_seqs": 8}, {"max_num_seqs": 8, "max_num_sequences": 9}])");
  const auto combos = read_param_sweep(path);
  // A stand-in parser that knows one flag: the real ones (bench serve's, encbench serve's) are
  // checked through the CLI in config_sweep_cli_test.cpp.
  auto checker = [](const Words& words) {
    for (const auto& w : words)
      if (w.rfind("--", 0) == 0 && w != "--max-num-seqs") throw InvalidInput("unknown flag " + w);
  };
  const std::string message = message_of([&] { check_entries(path, combos, {"serve"}, checker); });
  EXPECT_NE(message.find("keys.json: entry 2 ('max_num_seqs=8-max_num_sequences=9'), key 'max_num_sequences' (9): "
                         "unknown flag --max-num-sequences"),
            std::string::npos)
      << message;
}

TEST(SweepParams, LinkedVariablesPairOnlyEqualValues) {
  const auto links = parse_link_vars("max_num_seqs=max_concurrency, max_model_len = random_input_len");
  ASSERT_EQ(links.size(), 2u);
  EXPECT_EQ(links[1], (std::pair<std::string, std::string>{"max_model_len", "random_input_len"}));
  const ParamCombination serve{"s", {{"max_num_seqs", 32}, {"max_model_len", 128}}};
  const ParamCombination same{"b", {{"max_concurrency", 32}, {"random_input_len", 128}}};
  const ParamCombination other{"b", {{"max_concurrency", 64}, {"random_input_len", 128}}};
  const ParamCombination missing{"b", {{"max_concurrency", 32}}};
  EXPECT_TRUE(combination_linked(serve, same, links));
  EXPECT_FALSE(combination_linked(serve, other, links));
  EXPECT_FALSE(combination_linked(serve, missing, links));  // vLLM: both must hold the key
  EXPECT_NE(message_of([] { parse_link_vars("a=b=c"); }).find("--link-vars"), std::string::npos);
}

TEST(SweepParams, CommandsSplitAsShlexAndJoinBackForTheShell) {
  EXPECT_EQ(split_command(R"(vllm serve 'my model' --x "a \"b\"" c\ d)", "--serve-cmd"),
            (Words{"vllm", "serve", "my model", "--x", "a \"b\"", "c d"}));
  EXPECT_EQ(join_command({"serve", "--port", "{port}", "it's", "a b"}), R"(serve --port {port} 'it'"'"'s' 'a b')");
  EXPECT_NE(message_of([] { split_command("a 'b", "--serve-cmd"); }).find("--serve-cmd: no closing quotation"),
            std::string::npos);
}

}  // namespace
}  // namespace encbench::scenario
