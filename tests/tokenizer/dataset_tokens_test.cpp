// Prompts in the model's tokens (harness/client/datasets_tokens): vLLM's random dataset made with
// the tokenizer, every prompt exactly --random-input-len tokens by tokenizers.js (independent),
// prompt lengths and the text/vision split, the image-token rule worked by hand, and the refusals.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "harness/client/datasets_tokens.hpp"
#include "harness/core/error.hpp"
#include "tests/tokenizer/test_files.hpp"

namespace encbench::client {
namespace {

using tokenizer::TokenId;
using tokenizer::Tokenizer;
using tokenizer::testing::TempDir;

Tokenizer tiny() { return Tokenizer::load(tokenizer::testing::tiny_qwen2()); }

TEST(RandomTokenPrompts, EveryPromptHasTheTargetLengthByTokenizersJs) {
  const Tokenizer tok = tiny();
  RandomDatasetConfig rc;
  rc.input_len = 200;
  rc.prefix_len = 16;
  rc.range_ratio = 0.25;
  const auto prompts = random_token_prompts(tok, rc, 120, 3);
  ASSERT_EQ(prompts.size(), 120u);
  std::vector<std::string> texts;
  std::int64_t shortest = 1 << 30, longest = 0, off_after_vllm = 0;
  for (const auto& p : prompts) {
    EXPECT_EQ(p.mismatch, 0);
    EXPECT_EQ(static_cast<std::int64_t>(tok.encode(p.prompt).size()), p.prompt_len);
    shortest = std::min(shortest, p.prompt_len);
    longest = std::max(longest, p.prompt_len);
    off_after_vllm += p.vllm_mismatch != 0 ? 1 : 0;
    texts.push_back(p.prompt);
  }
  // prefix 16 + [floor(200 * 0.75), ceil(200 * 1.25)] = [166, 266], and the draws spread over it.
  EXPECT_GE(shortest, 166);
  EXPECT_LE(longest, 266);
  EXPECT_LT(shortest, 190);
  EXPECT_GT(longest, 240);
  TempDir dir;
  std::string why;
  const auto reference = tokenizer::testing::run_reference(tokenizer::testing::tiny_qwen2() / "tokenizer.json",
                                                           dir.write("texts.json", nlohmann::json(texts).dump()), why);
  if (!reference) GTEST_SKIP() << why;
  for (std::size_t i = 0; i < prompts.size(); ++i)
    ASSERT_EQ(static_cast<std::int64_t>((*reference)["ids"][i].size()), prompts[i].prompt_len) << "prompt " << i;
  std::printf("prompts still off after vLLM's retries (then made exact): %lld of %zu\n",
              static_cast<long long>(off_after_vllm), prompts.size());
}

TEST(RandomTokenPrompts, SharePrefixAndAreReproducibleFromTheSeed) {
  const Tokenizer tok = tiny();
  RandomDatasetConfig rc;
  rc.input_len = 64;
  rc.prefix_len = 32;
  const auto a = random_token_prompts(tok, rc, 10, 9), b = random_token_prompts(tok, rc, 10, 9),
             c = random_token_prompts(tok, rc, 10, 10);
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].prompt, b[i].prompt);
    EXPECT_EQ(a[i].prompt_len, 96);
  }
  EXPECT_NE(a[0].prompt, c[0].prompt);
  // The shared prefix (vLLM's get_prefix: drawn once, decoded and re-encoded to 32 tokens): every
  // prompt opens with its text, but for the last few bytes, which may merge with what follows.
  NumpyGenerator rng(9);
  const std::string prefix = tok.decode(draw_random_prompt_plan(tok, rc, 10, rng).prefix);
  ASSERT_GT(prefix.size(), 16u);
  const std::size_t keep = prefix.size() - 8;
  std::size_t same = 0;
  for (const auto& p : a) same += p.prompt.compare(0, keep, prefix, 0, keep) == 0 ? 1 : 0;
  EXPECT_GE(same, a.size() - 2);
  rc.input_len = 0;
  rc.prefix_len = 0;
  EXPECT_THROW(random_token_prompts(tok, rc, 1, 0), InvalidInput);
}

TEST(RandomTokenPrompts, DecodeToTargetLengthKeepsAStableSequence) {
  const Tokenizer tok = tiny();
  const auto ids = tok.encode("The client sends requests and the server encodes images.");
  std::mt19937_64 rng(1);
  const auto p = decode_to_target_len(tok, ids, ids.size(), rng);
  EXPECT_EQ(p.prompt, "The client sends requests and the server encodes images.");
  EXPECT_EQ(p.prompt_len, static_cast<std::int64_t>(ids.size()));
  const auto shorter = decode_to_target_len(tok, ids, 5, rng);  // truncated to 5 tokens
  EXPECT_EQ(shorter.prompt_len, 5);
  EXPECT_EQ(shorter.prompt, tok.decode(std::vector<TokenId>(ids.begin(), ids.begin() + 5)));
}

TEST(DatasetTokens, TextAndVisionSplitWithTheModelsImageRule) {
  DatasetConfig config;
  config.name = "random-mm";
  config.num_prompts = 4;
  config.random.input_len = 50;
  config.random.buckets = {{256, 256, 1.0}};  // smart_resize: 252 x 252 -> 18 x 18 patches -> 81 tokens
  config.random.mm_base_items = 2;
  Dataset ds = load_dataset(config);
  const Tokenizer tok = tiny();
  const std::string note = apply_tokenizer(ds, config, &tok, "Qwen/Qwen2.5-VL-7B-Instruct");
  EXPECT_NE(note.find("RandomMultiModalDataset"), std::string::npos);
  for (const auto& s : ds.samples) {
    EXPECT_EQ(s.prompt_len, 50);
    EXPECT_EQ(s.text_tokens, 50);
    EXPECT_EQ(s.vision_tokens, 2 * 81);
  }
  // Qwen3-VL: factor 32 -> 256 x 256 -> 16 x 16 patches -> 64 tokens, raised to min_pixels 65536 (256^2): 64.
  apply_tokenizer(ds, config, &tok, "qwen3-vl-8b");
  EXPECT_EQ(ds.samples[0].vision_tokens, 2 * 64);
  apply_tokenizer(ds, config, nullptr, "some-text-model");
  EXPECT_EQ(ds.samples[0].text_tokens, -1);
  EXPECT_EQ(ds.samples[0].vision_tokens, -1);
}

TEST(DatasetTokens, ResolvesFilesDirectoriesAndRefusesEmptyDirectories) {
  EXPECT_EQ(resolve_tokenizer(tokenizer::testing::tiny_qwen2().string()),
            tokenizer::testing::tiny_qwen2() / "tokenizer.json");
  EXPECT_FALSE(resolve_tokenizer("no-such-org/no-such-model-xyz").has_value());
  EXPECT_EQ(vision_model_key("Qwen/Qwen2.5-VL-7B-Instruct"), "qwen2.5-vl-7b");
  EXPECT_EQ(vision_model_key("Qwen/Qwen3-VL-8B-Instruct"), "qwen3-vl-8b");
  EXPECT_EQ(vision_model_key("meta-llama/Llama-3-8B"), "");
  TempDir dir;
  DatasetConfig config;
  config.num_prompts = 2;
  Dataset ds = load_dataset(config);
  EXPECT_THROW(tokenize_dataset(ds, config, dir.path().string(), ""), InvalidInput);
  const auto words = tokenize_dataset(ds, config, "", "no-such-org/no-such-model-xyz");
  EXPECT_TRUE(words.tokenizer_file.empty());
  // Random prompts are made of words: the note names --random-input-len, not file prompt lengths.
  EXPECT_NE(words.note.find("--random-input-len words"), std::string::npos) << words.note;
  EXPECT_EQ(words.note.find("whitespace-separated"), std::string::npos) << words.note;
  // A file's prompts are sent as written: only their lengths are words, and --random-input-len has
  // nothing to do with them.
  DatasetConfig custom;
  custom.name = "custom";
  custom.num_prompts = 2;
  custom.path = dir.write("rows.jsonl", "{\"prompt\": \"one two three\"}\n{\"prompt\": \"four five\"}\n").string();
  Dataset rows = load_dataset(custom);
  const auto file_words = tokenize_dataset(rows, custom, "", "no-such-org/no-such-model-xyz");
  EXPECT_NE(file_words.note.find("counted in whitespace-separated words"), std::string::npos) << file_words.note;
  EXPECT_EQ(file_words.note.find("--random-input-len"), std::string::npos) << file_words.note;
}

// The CLI: a bad tokenizer file stops `bench serve` with exit 2 and one line naming the file and
// the entry, before any server is contacted.
TEST(DatasetTokens, BenchServeExitsTwoOnABadTokenizerFile) {
  TempDir dir;
  auto doc = nlohmann::json::parse(tokenizer::testing::hand_tokenizer({{"a", "b"}}));
  doc["model"]["merges"].push_back({"ab", "qq"});
  const auto bad = dir.write("tokenizer.json", doc.dump());
  const std::string cmd = std::string(ENCBENCH_EXE) + " bench serve --base-url http://127.0.0.1:9 --model m --num-prompts 2 --tokenizer '" +
                          bad.string() + "' > '" + (dir.path() / "out").string() + "' 2>&1";
  const int status = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 2);
  const std::string out = tokenizer::testing::read_text(dir.path() / "out");
  EXPECT_NE(out.find(bad.string()), std::string::npos) << out;
  EXPECT_NE(out.find("model.merges[1]"), std::string::npos) << out;
}

}  // namespace
}  // namespace encbench::client

namespace encbench::client {
namespace {

TEST(VllmTextDatasets, ShareGptFiltersCountsAndOversamplesAsVllm) {
  TempDir dir;
  nlohmann::json rows = nlohmann::json::array();
  const std::string long_answer = "The encoder turns every image into tokens before the language model starts.";
  for (int i = 0; i < 6; ++i)
    rows.push_back({{"conversations", {{{"from", "human"}, {"value", "Question number " + std::to_string(i) + " about encoders?"}},
                                       {{"from", "gpt"}, {"value", long_answer}}}}});
  rows.push_back({{"conversations", {{{"value", "one turn only"}}}}});                  // fewer than 2 turns
  rows.push_back({{"conversations", {{{"value", "Hi"}}, {{"value", long_answer}}}}});   // prompt < 4 tokens
  rows.push_back({{"conversations", {{{"value", "A long enough question here?"}}, {{"value", "ok"}}}}});  // output < 4
  DatasetConfig config;
  config.name = "sharegpt";
  config.path = dir.write("sg.json", rows.dump()).string();
  config.num_prompts = 10;
  const Tokenizer tok = tiny();
  const auto loaded = load_tokenized_dataset(config, tokenizer::testing::tiny_qwen2().string(), "", false);
  const Dataset& ds = loaded.dataset;
  ASSERT_EQ(ds.samples.size(), 10u);
  EXPECT_EQ(ds.oversampled, 4u);  // 6 valid rows, 10 asked
  const auto answer_tokens = static_cast<int>(tok.encode(long_answer).size());
  for (const auto& s : ds.samples) {
    EXPECT_EQ(s.prompt.rfind("Question number ", 0), 0u) << s.prompt;
    EXPECT_EQ(s.prompt_len, static_cast<std::int64_t>(tok.encode(s.prompt).size()));
    EXPECT_EQ(s.output_len, answer_tokens);
    EXPECT_EQ(s.text_tokens, s.prompt_len);
  }
  config.vllm_text.sharegpt_output_len = 2;  // given: the output minimum no longer applies
  const auto fixed = load_tokenized_dataset(config, tokenizer::testing::tiny_qwen2().string(), "", false);
  EXPECT_EQ(fixed.dataset.samples[0].output_len, 2);
  std::size_t short_answer_rows = 0;
  for (const auto& s : fixed.dataset.samples) short_answer_rows += s.prompt == "A long enough question here?" ? 1 : 0;
  EXPECT_GE(short_answer_rows, 1u);
  EXPECT_THROW(load_tokenized_dataset(config, "", "", false), InvalidInput);
  EXPECT_THROW(load_tokenized_dataset(config, tokenizer::testing::tiny_qwen2().string(), "", true), InvalidInput);
}

TEST(VllmTextDatasets, PrefixRepetitionSharesEachPrefixAcrossItsSuffixes) {
  DatasetConfig config;
  config.name = "prefix_repetition";
  config.num_prompts = 14;  // divmod(14, 4) = (3, 2): the first two prefixes get 4 prompts, as vLLM
  config.vllm_text = {std::nullopt, 40, 20, 4, 16};
  const auto loaded = load_tokenized_dataset(config, tokenizer::testing::tiny_qwen2().string(), "", false);
  const Tokenizer tok = tiny();
  ASSERT_EQ(loaded.dataset.samples.size(), 14u);
  std::map<std::string, int> prefixes;
  for (const auto& s : loaded.dataset.samples) {
    EXPECT_EQ(s.prompt_len, 60);
    EXPECT_EQ(s.output_len, 16);
    const auto ids = tok.encode(s.prompt);
    ++prefixes[tok.decode(std::vector<TokenId>(ids.begin(), ids.begin() + 30))];
  }
  EXPECT_EQ(prefixes.size(), 4u);
  std::multiset<int> sizes;
  for (const auto& [p, n] : prefixes) sizes.insert(n);
  EXPECT_EQ(sizes, (std::multiset<int>{3, 3, 4, 4}));
  config.num_prompts = 3;
  EXPECT_THROW(load_tokenized_dataset(config, tokenizer::testing::tiny_qwen2().string(), "", false), InvalidInput);
}

}  // namespace
}  // namespace encbench::client

namespace encbench::client {
namespace {

std::string trace_error(const std::string& jsonl, std::string& path_out) {
  TempDir dir;
  DatasetConfig config;
  config.name = "timed_trace";
  config.path = dir.write("trace.jsonl", jsonl).string();
  path_out = config.path;
  try {
    load_tokenized_dataset(config, tokenizer::testing::tiny_qwen2().string(), "", false);
  } catch (const InvalidInput& e) {
    return e.what();
  }
  return "";
}

TEST(TimedTrace, ExpandsHashIdsAndSchedulesAtTheTimestamps) {
  TempDir dir;
  DatasetConfig config;
  config.name = "timed_trace";
  config.path = dir.write("trace.jsonl",
                          "{\"timestamp\": 1000, \"input_length\": 40, \"output_length\": 7, \"hash_ids\": [1, 2, 3]}\n"
                          "\n"
                          "{\"timestamp\": 2500, \"input_length\": 32, \"output_length\": 9, \"hash_ids\": [1, 4]}\n"
                          "{\"timestamp\": 2500, \"input_length\": 100, \"output_length\": 1, \"hash_ids\": [5]}\n"
                          "{\"timestamp\": 9000, \"input_length\": 8, \"output_length\": 1, \"hash_ids\": [6]}\n")
                    .string();
  config.num_prompts = 3;  // caps the rows, in file order
  config.vllm_text.sec_multiplier = 0.001;
  const auto ds = load_tokenized_dataset(config, tokenizer::testing::tiny_qwen2().string(), "", false).dataset;
  ASSERT_EQ(ds.samples.size(), 3u);
  EXPECT_EQ(ds.samples[0].prompt_len, 40);  // 16 + 16 + a partial 8
  EXPECT_EQ(ds.samples[1].prompt_len, 32);
  EXPECT_EQ(ds.samples[2].prompt_len, 16);  // one hash id covers one chunk only (as vLLM)
  EXPECT_EQ(ds.samples[0].output_len, 7);
  EXPECT_EQ(ds.samples[1].output_len, 9);
  // vLLM's get_request (self-timed) waits until each row's own timestamp x the multiplier from the
  // benchmark's start, not from the first row's: the first row goes 1 s in.
  ASSERT_EQ(ds.arrival_s.size(), 3u);
  EXPECT_DOUBLE_EQ(ds.arrival_s[0], 1000 * 0.001);
  EXPECT_DOUBLE_EQ(ds.arrival_s[1], 2500 * 0.001);
  EXPECT_DOUBLE_EQ(ds.arrival_s[2], 2500 * 0.001);
  EXPECT_TRUE(ds.ignore_eos_default);  // vLLM's main_async sets ignore_eos for timed_trace
  for (const auto& s : ds.samples) {  // the ids are what is sent; prompt_len counts them
    ASSERT_TRUE(s.prompt_token_ids.has_value());
    EXPECT_EQ(static_cast<std::int64_t>(s.prompt_token_ids->size()), s.prompt_len);
  }
  // Hash id 1 opens both of the first two prompts: the same text first (16 ids decoded), then
  // different text; a prompt of other hash ids (the third, hash 5) shares no such prefix.
  const auto common_bytes = [](const std::string& x, const std::string& y) {
    std::size_t n = 0;
    while (n < std::min(x.size(), y.size()) && x[n] == y[n]) ++n;
    return n;
  };
  EXPECT_GE(common_bytes(ds.samples[0].prompt, ds.samples[1].prompt), 10u);
  EXPECT_NE(ds.samples[0].prompt, ds.samples[1].prompt);
  EXPECT_LT(common_bytes(ds.samples[0].prompt, ds.samples[2].prompt), 4u);
}

TEST(TimedTrace, BadRowsExitNamingTheLine) {
  std::string path;
  const std::string ok = "{\"timestamp\": 0, \"input_length\": 8, \"output_length\": 2, \"hash_ids\": [1]}\n";
  std::string e = trace_error(ok + "{\"input_length\": 8, \"output_length\": 2}\n", path);
  EXPECT_NE(e.find(path + ":2: no numeric 'timestamp'"), std::string::npos) << e;
  e = trace_error(ok + ok + "{\"timestamp\": 3, \"input_length\": -5, \"output_length\": 2}\n", path);
  EXPECT_NE(e.find(path + ":3: 'input_length' must be an integer"), std::string::npos) << e;
  e = trace_error("{\"timestamp\": 5, \"input_length\": 8, \"output_length\": 2}\n" + ok, path);
  EXPECT_NE(e.find(path + ":2: timestamp 0"), std::string::npos) << e;
  EXPECT_NE(e.find("before the previous line's"), std::string::npos) << e;
  // A row vLLM would send 1.7e9 s after the start (an epoch timestamp) would hang the run.
  e = trace_error("{\"timestamp\": 1700000000, \"input_length\": 8, \"output_length\": 2}\n", path);
  EXPECT_NE(e.find(path + ":1: timestamp x --timed-trace-sec-multiplier = 1700000000"), std::string::npos) << e;
  e = trace_error("not json\n", path);
  EXPECT_NE(e.find(path + ":1: not a JSON object"), std::string::npos) << e;
  e = trace_error("{\"timestamp\": 0, \"input_length\": 8, \"output_length\": 2, \"hash_ids\": [\"x\"]}\n", path);
  EXPECT_NE(e.find("must contain only integers"), std::string::npos) << e;
}

}  // namespace
}  // namespace encbench::client
