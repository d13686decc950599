// vLLM's burstgpt and sonnet datasets (harness/client/datasets_vllm_files.cpp) on small files the
// tests write: vLLM's row filter, sampling with/without replacement, prompt construction and
// lengths, and bad rows refused naming FILE:LINE.
#include <gtest/gtest.h>

#include <cmath>
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

const char* kBurstHeader = "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n";

Dataset load(const std::string& name, const std::string& path, std::size_t n, const VllmTextDatasetConfig& v = {}) {
  DatasetConfig config;
  config.name = name;
  config.path = path;
  config.num_prompts = n;
  config.seed = 7;
  config.vllm_text = v;
  return load_tokenized_dataset(config, tokenizer::testing::tiny_qwen2().string(), "", false).dataset;
}

std::string load_error(const std::string& name, const std::string& path, std::size_t n, const VllmTextDatasetConfig& v = {}) {
  try {
    load(name, path, n, v);
  } catch (const InvalidInput& e) {
    return e.what();
  }
  return "no error";
}

TEST(BurstGpt, KeepsGpt4RowsWithAResponseAndBuildsVllmsPrompts) {
  TempDir dir;
  const auto path = dir.write("burst.csv", std::string(kBurstHeader) +
                                               "5,ChatGPT,30,20,50,Conversation log\n"    // line 2: other model
                                               "6,GPT-4,12,0,12,Conversation log\n"       // line 3: failed (0)
                                               "7,GPT-4,25,11,36,Conversation log\n"      // line 4
                                               "8,GPT-4,9,13,22,API log\n"                // line 5
                                               "9,GPT-4,40,17,57,Conversation log\n"      // line 6
                                               "10,GPT-4,3,19,22,API log\n");             // line 7
  const Tokenizer tok = Tokenizer::load(tokenizer::testing::tiny_qwen2());
  const std::map<std::size_t, std::pair<int, int>> valid{{4, {25, 11}}, {5, {9, 13}}, {6, {40, 17}}, {7, {3, 19}}};
  const auto ds = load("burstgpt", path.string(), 3);
  ASSERT_EQ(ds.samples.size(), 3u);
  EXPECT_EQ(ds.source_rows, 4u);
  EXPECT_EQ(ds.oversampled, 0u);
  std::set<std::size_t> lines;
  for (std::size_t i = 0; i < ds.samples.size(); ++i) {
    const auto& s = ds.samples[i];
    ASSERT_TRUE(valid.count(s.source_row)) << s.source_row;
    lines.insert(s.source_row);
    EXPECT_EQ(s.prompt_len, valid.at(s.source_row).first);
    EXPECT_EQ(s.output_len, valid.at(s.source_row).second);
    // vLLM: ids (i + j) % vocab_size for j < Request tokens, decoded.
    std::vector<TokenId> ids;
    for (int j = 0; j < valid.at(s.source_row).first; ++j) ids.push_back(static_cast<TokenId>((i + j) % tok.vocab_size()));
    EXPECT_EQ(s.prompt, tok.decode(ids));
  }
  EXPECT_EQ(lines.size(), 3u);  // without replacement while the file has enough rows
  // More prompts than rows: drawn with replacement (vLLM's replace=True), still only valid rows.
  const auto many = load("burstgpt", path.string(), 12);
  ASSERT_EQ(many.samples.size(), 12u);
  EXPECT_EQ(many.oversampled, 8u);
  for (const auto& s : many.samples) EXPECT_TRUE(valid.count(s.source_row));
  // The seed decides the draw.
  EXPECT_EQ(load("burstgpt", path.string(), 3).samples[0].source_row, ds.samples[0].source_row);
}

TEST(BurstGpt, BadRowsExitNamingTheLine) {
  TempDir dir;
  const auto bad_count = dir.write("a.csv", std::string(kBurstHeader) + "1,GPT-4,10,5,15,x\n2,GPT-4,-3,5,2,x\n");
  EXPECT_NE(load_error("burstgpt", bad_count.string(), 2).find(bad_count.string() + ":3: Request tokens must be an integer >= 0, got '-3'"),
            std::string::npos);
  const auto short_row = dir.write("b.csv", std::string(kBurstHeader) + "1,GPT-4,10\n");
  EXPECT_NE(load_error("burstgpt", short_row.string(), 2).find(short_row.string() + ":2: 3 fields, the header has 6"), std::string::npos);
  const auto no_column = dir.write("c.csv", "Timestamp,Model,Request tokens\n1,GPT-4,10\n");
  EXPECT_NE(load_error("burstgpt", no_column.string(), 2).find(":1: BurstGPT header lacks the column 'Response tokens'"), std::string::npos);
  const auto none = dir.write("d.csv", std::string(kBurstHeader) + "1,ChatGPT,10,5,15,x\n");
  EXPECT_NE(load_error("burstgpt", none.string(), 2).find("no row with Model GPT-4"), std::string::npos);
}

TEST(Sonnet, PromptsAreTheBaseThePrefixLinesAndRandomLinesWithinTheLength) {
  TempDir dir;
  std::vector<std::string> poem;
  std::string text;
  for (int k = 0; k < 30; ++k) {
    poem.push_back("line " + std::to_string(k) + " of the sonnet, with words to count\n");
    text += poem.back();
  }
  const auto path = dir.write("sonnet.txt", text);
  const Tokenizer tok = Tokenizer::load(tokenizer::testing::tiny_qwen2());
  // The counts by the same rules (vLLM's): mean tokens per line, base prompt tokens, Python round.
  double total = 0;
  for (const auto& l : poem) total += static_cast<double>(tok.encode(l, true).size());
  const double avg = total / static_cast<double>(poem.size());
  const std::string base = "Pick as many lines as you can from these poem lines:\n";
  const auto base_len = static_cast<double>(tok.encode(base, true).size());
  VllmTextDatasetConfig v;
  v.sonnet_prefix_len = static_cast<int>(base_len + 3 * avg);
  v.sonnet_input_len = static_cast<int>(base_len + 8.4 * avg) + 2;
  v.sonnet_output_len = 33;
  const auto n_input = static_cast<std::size_t>(std::nearbyint((v.sonnet_input_len - base_len) / avg));
  const auto n_prefix = static_cast<std::size_t>(std::max(0.0, std::nearbyint((v.sonnet_prefix_len - base_len) / avg)));
  ASSERT_GT(n_input, n_prefix);
  const auto ds = load("sonnet", path.string(), 20, v);
  ASSERT_EQ(ds.samples.size(), 20u);
  std::set<std::string> distinct;
  for (const auto& s : ds.samples) {
    EXPECT_EQ(s.output_len, 33);
    EXPECT_EQ(static_cast<std::int64_t>(tok.encode(s.prompt, true).size()), s.prompt_len);
    EXPECT_LE(s.prompt_len, v.sonnet_input_len);
    ASSERT_EQ(s.prompt.rfind(base, 0), 0u);
    // base, then the first n_prefix lines in order, then n_input - n_prefix lines of the file.
    std::vector<std::string> got;
    std::size_t at = base.size();
    while (at < s.prompt.size()) {
      const std::size_t nl = s.prompt.find('\n', at);
      ASSERT_NE(nl, std::string::npos);
      got.push_back(s.prompt.substr(at, nl + 1 - at));
      at = nl + 1;
    }
    ASSERT_EQ(got.size(), n_input);
    for (std::size_t k = 0; k < n_prefix; ++k) EXPECT_EQ(got[k], poem[k]);
    for (const auto& l : got) EXPECT_NE(std::find(poem.begin(), poem.end(), l), poem.end());
    distinct.insert(s.prompt);
  }
  EXPECT_GT(distinct.size(), 15u);  // the rest are drawn at random
  VllmTextDatasetConfig too_short = v;
  too_short.sonnet_input_len = static_cast<int>(base_len);
  EXPECT_NE(load_error("sonnet", path.string(), 2, too_short).find("--sonnet-input-len"), std::string::npos);
  EXPECT_NE(load_error("sonnet", (dir.path() / "missing.txt").string(), 2).find("no such file or directory"),
            std::string::npos);
}

}  // namespace
}  // namespace encbench::client
