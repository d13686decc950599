// encbench's tokenizer against an independent implementation: Hugging Face's tokenizers.js
// (npm @huggingface/tokenizers, run by tests/node/tokenizer_reference.mjs) encodes the same texts
// with the same tokenizer.json; the token ids must be identical, and so must decode(ids). Texts:
// the hand-picked corpus (contractions, whitespace runs, numbers, scripts, combining marks,
// special tokens), the repository's docs, and seeded random strings over a palette of the classes
// the split regex distinguishes. Skips, saying why, when node or the npm package is missing.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/tokenizer/tokenizer.hpp"
#include "tests/tokenizer/test_files.hpp"

namespace encbench::tokenizer {
namespace {

using testing::read_text;
using testing::run_reference;
using testing::source_dir;
using testing::TempDir;

std::vector<std::string> random_texts(std::size_t count, std::uint32_t seed) {
  const std::vector<std::string> palette = {
      "a", "Z", "q", "word", " the", "1", "42", " ", "  ", "\n", "\r\n", "\t", "'", "'s", "'LL", "'re", "!", "?!",
      ".", "\xC3\xA9", "e\xCC\x81", "\xE4\xB8\xAD\xE6\x96\x87", "\xF0\x9F\x99\x82", "\xC2\xA0", "\xE3\x80\x80",
      "\xD9\xA3", "\xC2\xB2", "<|im_end|>", "<|image_pad|>", "<|im_", "\xE2\x80\xA8", "\x0B", "$", "_", "-"};
  std::mt19937 rng(seed);
  std::vector<std::string> out;
  for (std::size_t i = 0; i < count; ++i) {
    std::string text;
    const std::size_t n = rng() % 40;
    for (std::size_t k = 0; k < n; ++k) text += palette[rng() % palette.size()];
    out.push_back(std::move(text));
  }
  return out;
}

TEST(TokenizerReference, IdsAndDecodingMatchTokenizersJs) {
  const auto tokenizer_json = testing::tiny_qwen2() / "tokenizer.json";
  const auto tok = Tokenizer::load(tokenizer_json);
  auto texts = nlohmann::json::parse(read_text(source_dir() / "tests/tokenizer/data/corpus.json"))
                   .get<std::vector<std::string>>();
  ASSERT_GE(texts.size(), 50u);
  for (const auto& entry : std::filesystem::directory_iterator(source_dir() / "docs"))
    if (entry.path().extension() == ".md") texts.push_back(read_text(entry.path()));
  for (auto& t : random_texts(600, 11)) texts.push_back(std::move(t));
  TempDir dir;
  const auto texts_path = dir.write("texts.json", nlohmann::json(texts).dump());
  std::string why;
  const auto reference = run_reference(tokenizer_json, texts_path, why);
  if (!reference) GTEST_SKIP() << why;
  ASSERT_EQ((*reference)["ids"].size(), texts.size());
  std::size_t tokens = 0;
  for (std::size_t i = 0; i < texts.size(); ++i) {
    const auto ids = tok.encode(texts[i]);
    tokens += ids.size();
    ASSERT_EQ(ids, (*reference)["ids"][i].get<std::vector<TokenId>>()) << "text " << i << ": '" << texts[i] << "'";
    ASSERT_EQ(tok.decode(ids), (*reference)["decoded"][i].get<std::string>()) << "text " << i;
  }
  EXPECT_GT(tokens, 20000u);  // the comparison covered real volume, not a handful of ids
}

// vLLM's random dataset decodes arbitrary id sequences (byte fragments included) and re-encodes
// them: both directions must agree with the reference on such text too.
TEST(TokenizerReference, DecodedRandomIdsReencodeAsTokenizersJs) {
  const auto tokenizer_json = testing::tiny_qwen2() / "tokenizer.json";
  const auto tok = Tokenizer::load(tokenizer_json);
  std::mt19937 rng(5);
  std::vector<std::string> texts;
  for (int i = 0; i < 300; ++i) {
    std::vector<TokenId> ids(1 + rng() % 64);
    for (auto& id : ids) id = static_cast<TokenId>(rng() % tok.vocab_size());
    texts.push_back(tok.decode(ids));
  }
  TempDir dir;
  std::string why;
  const auto reference = run_reference(tokenizer_json, dir.write("texts.json", nlohmann::json(texts).dump()), why);
  if (!reference) GTEST_SKIP() << why;
  for (std::size_t i = 0; i < texts.size(); ++i)
    ASSERT_EQ(tok.encode(texts[i]), (*reference)["ids"][i].get<std::vector<TokenId>>()) << "text " << i;
}

}  // namespace
}  // namespace encbench::tokenizer
