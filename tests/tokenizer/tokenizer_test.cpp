// The tokenizer's parts against hand-derived expectations: the Qwen2/Llama 3/GPT-2 split regexes
// worked through by hand, BPE merge order, added tokens, NFC (Unicode's own examples), lossy
// UTF-8 decoding, and every refusal of a bad tokenizer.json naming the file and the entry.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "harness/core/error.hpp"
#include "harness/tokenizer/pretokenizer.hpp"
#include "harness/tokenizer/tokenizer.hpp"
#include "harness/tokenizer/unicode.hpp"
#include "tests/tokenizer/test_files.hpp"

namespace encbench::tokenizer {
namespace {

using testing::hand_tokenizer;
using testing::TempDir;

std::vector<std::string> pieces(SplitPattern p, const std::string& text) {
  std::vector<std::string> out;
  split_pieces(p, text, [&](std::string_view s) { out.emplace_back(s); });
  return out;
}

using Pieces = std::vector<std::string>;

TEST(PreTokenizer, Qwen2SplitMatchesTheRegexWorkedByHand) {
  const auto q = SplitPattern::qwen2;
  EXPECT_EQ(pieces(q, "Hello world"), (Pieces{"Hello", " world"}));
  EXPECT_EQ(pieces(q, "I'm here"), (Pieces{"I", "'m", " here"}));
  EXPECT_EQ(pieces(q, "HELLO'S 'LL'd"), (Pieces{"HELLO", "'S", " '", "LL", "'d"}));
  EXPECT_EQ(pieces(q, "x  y"), (Pieces{"x", " ", " y"}));
  EXPECT_EQ(pieces(q, "a\n\nb"), (Pieces{"a", "\n\n", "b"}));
  EXPECT_EQ(pieces(q, "a  \n  b"), (Pieces{"a", "  \n", " ", " b"}));
  EXPECT_EQ(pieces(q, "a \n \n x"), (Pieces{"a", " \n \n", " x"}));
  EXPECT_EQ(pieces(q, "123"), (Pieces{"1", "2", "3"}));
  EXPECT_EQ(pieces(q, "!!!\n\nx"), (Pieces{"!!!\n\n", "x"}));
  EXPECT_EQ(pieces(q, " ?! x"), (Pieces{" ?!", " x"}));
  EXPECT_EQ(pieces(q, "end  "), (Pieces{"end", "  "}));
  EXPECT_EQ(pieces(q, "\tword 1a"), (Pieces{"\tword", " ", "1", "a"}));
  EXPECT_EQ(pieces(q, "$x"), (Pieces{"$x"}));
  EXPECT_EQ(pieces(q, "\xC3\xA9t\xC3\xA9 \xE4\xB8\xAD\xE6\x96\x87"), (Pieces{"\xC3\xA9t\xC3\xA9", " \xE4\xB8\xAD\xE6\x96\x87"}));
  EXPECT_EQ(pieces(q, "x\xC2\xA0y"), (Pieces{"x", "\xC2\xA0y"}));  // NBSP is \s, not \p{L}
  EXPECT_EQ(pieces(q, "\n"), (Pieces{"\n"}));
}

TEST(PreTokenizer, Llama3GroupsThreeDigitsAndGpt2IsCaseSensitive) {
  EXPECT_EQ(pieces(SplitPattern::llama3, "12345 x"), (Pieces{"123", "45", " x"}));
  EXPECT_EQ(pieces(SplitPattern::gpt2, "I'M 12345  ok"), (Pieces{"I", "'", "M", " 12345", " ", " ok"}));
  EXPECT_EQ(pieces(SplitPattern::gpt2, "it's"), (Pieces{"it", "'s"}));
}

TEST(PreTokenizer, PiecesCoverRandomTextExactly) {
  const std::vector<std::string> palette = {"a", "Z", "1", " ", "  ", "\n", "\r", "\t", "'", "s", "!", "\xC3\xA9",
                                            "\xE4\xB8\xAD", "\xF0\x9F\x99\x82", "\xC2\xA0", "\xE3\x80\x80", "\xFF"};
  std::mt19937 rng(7);
  for (int i = 0; i < 2000; ++i) {
    std::string text;
    const int n = static_cast<int>(rng() % 24);
    for (int k = 0; k < n; ++k) text += palette[rng() % palette.size()];
    for (auto p : {SplitPattern::qwen2, SplitPattern::llama3, SplitPattern::gpt2}) {
      std::string joined;
      for (const auto& s : pieces(p, text)) {
        ASSERT_FALSE(s.empty());
        joined += s;
      }
      ASSERT_EQ(joined, text);
    }
  }
}

TEST(PreTokenizer, KnowsTheRegexStringsOfTokenizerJson) {
  for (auto p : {SplitPattern::qwen2, SplitPattern::llama3, SplitPattern::gpt2})
    EXPECT_EQ(split_pattern_from_regex(split_pattern_regex(p)), p);
  EXPECT_FALSE(split_pattern_from_regex(R"(\w+|\s+)").has_value());
}

TEST(Unicode, ClassesAndWhitespace) {
  EXPECT_EQ(char_class(U'a'), CharClass::letter);
  EXPECT_EQ(char_class(U'\u4E2D'), CharClass::letter);   // CJK (Lo)
  EXPECT_EQ(char_class(U'\u0663'), CharClass::number);   // Arabic-Indic three (Nd)
  EXPECT_EQ(char_class(U'\u00B2'), CharClass::number);   // superscript two (No)
  EXPECT_EQ(char_class(U'\u216B'), CharClass::number);   // Roman numeral twelve (Nl)
  EXPECT_EQ(char_class(U'\u0301'), CharClass::other);    // combining acute (Mn)
  EXPECT_EQ(char_class(U'\U0001F642'), CharClass::other);
  EXPECT_EQ(char_class(U'\u02B0'), CharClass::letter);   // modifier letter (Lm)
  EXPECT_TRUE(is_whitespace(U'\u3000'));
  EXPECT_TRUE(is_whitespace(U'\u0085'));
  EXPECT_FALSE(is_whitespace(U'\u200B'));  // zero width space is not White_Space
  EXPECT_FALSE(is_whitespace(U'\uFEFF'));
}

TEST(Unicode, NfcComposesReordersAndKeepsInvalidBytes) {
  EXPECT_EQ(nfc("e\xCC\x81"), "\xC3\xA9");                      // e + U+0301 -> U+00E9
  EXPECT_EQ(nfc("\xE2\x84\xAB"), "\xC3\x85");                   // U+212B ANGSTROM SIGN -> U+00C5
  EXPECT_EQ(nfc("A\xCC\x8A\xCC\x81"), "\xC7\xBA");              // A + ring + acute -> U+01FA
  EXPECT_EQ(nfc("\xE1\x84\x80\xE1\x85\xA1\xE1\x86\xA8"), "\xEA\xB0\x81");  // jamo -> U+AC01
  EXPECT_EQ(nfc("q\xCC\x87\xCC\xA3"), "q\xCC\xA3\xCC\x87");     // dot above (230) after dot below (220)
  EXPECT_EQ(nfc("\xE0\xA4\xA8\xE0\xA4\xBC"), "\xE0\xA4\xA9");          // U+0928 U+093C -> U+0929
  EXPECT_EQ(nfc("\xE0\xA4\x95\xE0\xA4\xBC"), "\xE0\xA4\x95\xE0\xA4\xBC");  // U+0958 is excluded: stays
  EXPECT_EQ(nfc("a\xFF" "e\xCC\x81"), "a\xFF\xC3\xA9");
  EXPECT_TRUE(nfc_quick_check("plain ascii"));
  EXPECT_FALSE(nfc_quick_check("e\xCC\x81"));
}

TEST(Unicode, LossyUtf8ReplacesEachMaximalInvalidRunOnce) {
  EXPECT_EQ(utf8_lossy("\xE2\x82" "a"), "\xEF\xBF\xBD" "a");            // truncated 3-byte sequence
  EXPECT_EQ(utf8_lossy("\xE2\x82\xAC"), "\xE2\x82\xAC");                // the euro sign stays
  EXPECT_EQ(utf8_lossy("\x80\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD");        // lone continuations: one each
  EXPECT_EQ(utf8_lossy("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // a surrogate: 3
  EXPECT_EQ(utf8_lossy("\xF0\x9F\x99"), "\xEF\xBF\xBD");
}

TEST(Bpe, MergesByRankLeftmostFirst) {
  TempDir dir;
  const auto t = Tokenizer::load(dir.write("t.json", hand_tokenizer({{"a", "b"}, {"ab", "c"}, {"b", "c"}, {"a", "a"}})));
  const TokenId ab = 256, abc = 257, bc = 258, aa = 259;
  EXPECT_EQ(t.encode("abc"), (std::vector<TokenId>{abc}));
  EXPECT_EQ(t.encode("bc"), (std::vector<TokenId>{bc}));
  EXPECT_EQ(t.encode("aaa"), (std::vector<TokenId>{aa, 'a'}));  // equal ranks: the leftmost pair
  EXPECT_EQ(t.encode("aabc"), (std::vector<TokenId>{'a', abc}));  // a b outranks a a
  EXPECT_EQ(t.encode("abcab c"), (std::vector<TokenId>{abc, ab, ' ', 'c'}));
  EXPECT_EQ(t.vocab_size(), 260u);
  EXPECT_EQ(t.decode(t.encode("abcab c")), "abcab c");
}

TEST(Bpe, AddedTokensMatchLongestFirstBeforeSplitting) {
  TempDir dir;
  const auto t = Tokenizer::load(dir.write("t.json", hand_tokenizer({}, {"<|a|>", "<|a|>b", "<s>"})));
  const TokenId a = 256, ab = 257, s = 258;
  EXPECT_EQ(t.encode("x<|a|>by<s>"), (std::vector<TokenId>{'x', ab, 'y', s}));
  EXPECT_EQ(t.encode("<|a|><|a|>"), (std::vector<TokenId>{a, a}));
  EXPECT_EQ(t.encode("<|a"), (std::vector<TokenId>{'<', '|', 'a'}));
  EXPECT_EQ(t.special_ids(), (std::vector<TokenId>{a, ab, s}));
  EXPECT_EQ(t.size(), 259u);
  EXPECT_EQ(t.vocab_size(), 256u);
  const std::vector<TokenId> ids{'x', s, 'y'};
  EXPECT_EQ(t.decode(ids), "x<s>y");
  EXPECT_EQ(t.decode(ids, true), "xy");
  const std::vector<TokenId> bad{259};
  EXPECT_THROW(t.decode(bad), InvalidInput);
}

TEST(Bpe, NormalizesToNfcBeforeMerging) {
  TempDir dir;
  const auto t = Tokenizer::load(dir.write("t.json", hand_tokenizer({{"\xC3", "\xA9"}})));
  EXPECT_EQ(t.encode("e\xCC\x81"), (std::vector<TokenId>{256}));
  EXPECT_EQ(t.encode("\xC3\xA9"), (std::vector<TokenId>{256}));
}

std::string error_of(const std::string& json_text) {
  TempDir dir;
  const auto path = dir.write("tok.json", json_text);
  try {
    Tokenizer::load(path);
  } catch (const InvalidInput& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(path.string()), std::string::npos) << message;
    return message;
  }
  ADD_FAILURE() << "accepted: " << json_text.substr(0, 200);
  return "";
}

TEST(TokenizerFile, RefusalsNameTheFileAndTheEntry) {
  EXPECT_NE(error_of("{\"model\": ").find("not valid JSON"), std::string::npos);
  EXPECT_NE(error_of("[1, 2]").find("not an object"), std::string::npos);
  auto doc = nlohmann::json::parse(hand_tokenizer({{"a", "b"}}));
  auto wordpiece = doc;
  wordpiece["model"]["type"] = "WordPiece";
  EXPECT_NE(error_of(wordpiece.dump()).find("model.type: 'WordPiece'"), std::string::npos);
  auto missing = doc;
  missing["model"]["merges"].push_back({"ab", "zz"});
  const std::string m = error_of(missing.dump());
  EXPECT_NE(m.find("model.merges[1]"), std::string::npos) << m;
  EXPECT_NE(m.find("'zz' is not in model.vocab"), std::string::npos) << m;
  auto string_merge = doc;
  string_merge["model"]["merges"] = {"a b c"};
  EXPECT_NE(error_of(string_merge.dump()).find("model.merges[0]"), std::string::npos);
  auto regex = doc;
  regex["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "\\w+";
  EXPECT_NE(error_of(regex.dump()).find("pre_tokenizer.Split.pattern.Regex"), std::string::npos);
  auto big_id = doc;
  big_id["model"]["vocab"]["zzz"] = 1 << 29;
  EXPECT_NE(error_of(big_id.dump()).find("model.vocab['zzz']"), std::string::npos);
  auto no_byte = doc;
  no_byte["model"]["vocab"].erase("a");
  EXPECT_NE(error_of(no_byte.dump()).find("no token for byte 0x61"), std::string::npos);
  auto lstrip = nlohmann::json::parse(hand_tokenizer({}, {"<s>"}));
  lstrip["added_tokens"][0]["lstrip"] = true;
  EXPECT_NE(error_of(lstrip.dump()).find("added_tokens[0].lstrip"), std::string::npos);
  EXPECT_THROW(Tokenizer::load("/nonexistent/dir"), InvalidInput);
}

TEST(TokenizerFile, TemplateProcessingAddsSpecialTokens) {
  auto doc = nlohmann::json::parse(hand_tokenizer({}, {"<s>", "</s>"}));
  doc["post_processor"] = {{"type", "TemplateProcessing"},
                           {"single", {{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
                                       {{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
                                       {{"SpecialToken", {{"id", "</s>"}, {"type_id", 0}}}}}},
                           {"special_tokens", {{"<s>", {{"ids", {256}}}}, {"</s>", {{"ids", {257}}}}}}};
  const auto t = Tokenizer::parse(doc.dump(), "inline");
  EXPECT_EQ(t.encode("x", true), (std::vector<TokenId>{256, 'x', 257}));
  EXPECT_EQ(t.encode("x"), (std::vector<TokenId>{'x'}));
  EXPECT_EQ(t.num_special_tokens_to_add(), 2u);
}

TEST(TokenizerFile, LoadsTheShippedTinyQwen2FromItsDirectory) {
  const auto t = Tokenizer::load(testing::tiny_qwen2());
  EXPECT_EQ(t.split_pattern(), SplitPattern::qwen2);
  EXPECT_EQ(t.vocab_size(), 1756u);
  EXPECT_EQ(t.size(), 1770u);
  EXPECT_EQ(t.token_id("<|image_pad|>"), 1756 + 12);
  const std::string text = "<|im_start|>user\nDescribe the image.<|im_end|>";
  EXPECT_EQ(t.decode(t.encode(text)), text);
}

}  // namespace
}  // namespace encbench::tokenizer
