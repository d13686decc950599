// The fast chunk scanner against the DOM reference (nlohmann): wherever the scanner answers, its
// answer is the reference's, over realistic stream payloads, generated JSON and byte mutations.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "harness/client/chunk_json.hpp"

using namespace encbench::client;

namespace {

const std::vector<std::string>& realistic_payloads() {
  static const std::vector<std::string> payloads{
      R"({"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]})",
      R"({"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":" hello"},"logprobs":null,"finish_reason":null}]})",
      R"({"id":"c","choices":[{"index":0,"delta":{"content":"\u4f60\u597d \ud83d\ude00 \"q\" \\ \/ \b\f\n\r\t"},"finish_reason":"stop"}]})",
      "{\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\xe4\xbd\xa0\xe5\xa5\xbd \xf0\x9f\x98\x80\"}}]}",
      R"({"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":32,"total_tokens":37,"completion_tokens":5}})",
      R"({"id":"cmpl","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":" world","logprobs":{"tokens":[" world"],"token_logprobs":[-0.25],"top_logprobs":[{" world":-0.25}],"text_offset":[0]},"finish_reason":null}]})",
      R"({"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"full answer","tool_calls":[]},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12}})",
      R"({"choices":[{"delta":{"content":null}}]})",
      R"({"choices":[{"delta":{}}],"usage":null})",
      R"({"choices":[{"delta":{"reasoning_content":"think"}}],"usage":{}})",
      R"({"choices":[{"delta":5,"message":{"content":"m"},"text":"t"}]})",
      R"({"choices":[{"delta":{"content":"a"},"delta":{"content":"b"}}]})",
      R"({"choices":[{"delta":{"content":"a"}},{"delta":{"content":"second"}}],"choices":[]})",
      R"({"usage":{"completion_tokens":5.0,"prompt_tokens":-3},"usage":{"prompt_tokens":7}})",
      R"({"usage":{"completion_tokens":"5","prompt_tokens":1e2}})",
      R"({"usage":{"completion_tokens":123456789012345678}})",
      R"({"usage":{"completion_tokens":1234567890123456789}})",
      R"({"error":null,"choices":[{"text":"x"}]})",
      R"({"error":{"message":"boom","type":"InternalServerError","code":500}})",
      R"({"error":"plain string"})",
      R"({"error":{"code":500}})",
      R"({"choices":[{"delta":{"content":"x"}}],"error":{"message":"both"}})",
      R"(  {"a":[1,-0,0.5,-2.5e-3,1E+9,true,false,null,{"b":[[[]]]}],"choices":["s",{"text":"y"}]}  )",
      R"([1,2,3])",
      R"("string")",
      R"(42)",
      R"(null)",
      R"({})",
      "{\"choices\":[{\"text\":\"\\u0000nul\"}]}",
  };
  return payloads;
}

void expect_agree(const std::string& payload) {
  const auto reference = chunk_fields_reference(payload);
  const auto fast = chunk_fields_fast(payload);
  if (fast) {
    ASSERT_TRUE(reference.has_value()) << "the scanner accepted what the reference rejects: " << payload;
    EXPECT_TRUE(*fast == *reference) << "the scanner differs from the reference on: " << payload << "\nfast text '"
                                     << fast->text << "' reference text '" << reference->text << "'";
  }
  const auto chosen = parse_chunk_fields(payload);
  ASSERT_EQ(chosen.has_value(), reference.has_value()) << payload;
  if (chosen) {
    EXPECT_TRUE(*chosen == *reference) << payload;
  }
}

// Random JSON, biased to the keys the handler reads.
class Generator {
 public:
  explicit Generator(std::uint64_t seed) : rng_(seed) {}
  std::string value(int depth) {
    switch (pick(depth > 3 ? 5 : 8)) {
      case 0: return str();
      case 1: return number();
      case 2: return pick(2) ? "true" : "false";
      case 3: return "null";
      case 4: return str();
      case 5:
      case 6: return object(depth);
      default: return array(depth);
    }
  }
  std::string object(int depth) {
    static const char* keys[] = {"choices", "usage", "error", "delta", "message", "text", "content",
                                 "completion_tokens", "prompt_tokens", "index", "id", "ch\\u006fices", "message"};
    std::string out = "{";
    const int n = static_cast<int>(pick(5));
    for (int i = 0; i < n; ++i) {
      if (i) out += ws() + "," + ws();
      out += std::string("\"") + keys[pick(std::size(keys))] + "\"" + ws() + ":" + ws() + value(depth + 1);
    }
    return out + ws() + "}";
  }
  std::string array(int depth) {
    std::string out = "[";
    const int n = static_cast<int>(pick(4));
    for (int i = 0; i < n; ++i) {
      if (i) out += ',';
      out += value(depth + 1);
    }
    return out + "]";
  }

 private:
  std::size_t pick(std::size_t n) { return static_cast<std::size_t>(rng_() % n); }
  std::string ws() {
    static const char* spaces[] = {"", "", "", " ", "\n", "\t", "\r\n "};
    return spaces[pick(std::size(spaces))];
  }
  std::string str() {
    static const char* pieces[] = {"a", " tok", "\\n", "\\\"", "\\\\", "\\/", "\\u00e9", "\\ud83d\\ude00", "\xc3\xa9",
                                   "\xe4\xbd\xa0", "\xf0\x9f\x98\x80", "\\t", "message", "content"};
    std::string out = "\"";
    const int n = static_cast<int>(pick(4));
    for (int i = 0; i < n; ++i) out += pieces[pick(std::size(pieces))];
    return out + "\"";
  }
  std::string number() {
    static const char* numbers[] = {"0", "-0", "5", "-17", "3.25", "1e3", "-2E-2", "999999999999999999",
                                    "1000000000000000000", "18446744073709551615", "0.0", "12"};
    return numbers[pick(std::size(numbers))];
  }
  std::mt19937_64 rng_;
};

}  // namespace

TEST(ChunkJson, RealisticPayloadsAgreeWithTheReference) {
  for (const auto& p : realistic_payloads()) expect_agree(p);
}

TEST(ChunkJson, TheScannerAnswersWhatStreamsCarry) {
  // The point of the scanner: the common stream events never need the DOM.
  std::size_t answered = 0;
  for (std::size_t i = 0; i < 7; ++i) answered += chunk_fields_fast(realistic_payloads()[i]).has_value() ? 1 : 0;
  EXPECT_EQ(answered, 7u);
  const auto f = chunk_fields_fast(realistic_payloads()[2]);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->text, "\xe4\xbd\xa0\xe5\xa5\xbd \xf0\x9f\x98\x80 \"q\" \\ / \b\f\n\r\t");
  const auto usage = chunk_fields_fast(realistic_payloads()[4]);
  ASSERT_TRUE(usage);
  EXPECT_FALSE(usage->has_choices);
  EXPECT_TRUE(usage->has_usage);
  EXPECT_EQ(usage->usage_completion_tokens, 5);
  EXPECT_EQ(usage->usage_prompt_tokens, 32);
  // Error objects and 19-digit integers are left to the reference.
  EXPECT_FALSE(chunk_fields_fast(R"({"error":{"message":"boom"}})"));
  EXPECT_FALSE(chunk_fields_fast(R"({"usage":{"completion_tokens":1234567890123456789}})"));
}

TEST(ChunkJson, GeneratedJsonAgrees) {
  Generator gen(20261123);
  std::size_t answered = 0;
  for (int i = 0; i < 4000; ++i) {
    const std::string p = gen.object(0);
    expect_agree(p);
    answered += chunk_fields_fast(p).has_value() ? 1 : 0;
    if (HasFatalFailure()) return;
  }
  EXPECT_GT(answered, 1000u);  // the comparison covered the scanner, not only its refusals
}

TEST(ChunkJson, MutatedPayloadsNeverMakeTheScannerDisagree) {
  std::mt19937_64 rng(7);
  // Bytes that matter to JSON, plus a control byte, DEL and pieces of (in)valid UTF-8.
  static constexpr char kAlphabet[] = "{}[]\":,\\ u0e-+.tnfa1\x01\x7f\xc3\xa9\xff\xed\xa0\x80";
  const std::string alphabet(kAlphabet, sizeof kAlphabet - 1);
  for (const auto& base : realistic_payloads()) {
    for (int i = 0; i < 300; ++i) {
      std::string p = base;
      const int edits = 1 + static_cast<int>(rng() % 3);
      for (int e = 0; e < edits && !p.empty(); ++e) {
        const std::size_t at = rng() % p.size();
        switch (rng() % 4) {
          case 0: p.erase(at, 1); break;
          case 1: p.insert(at, 1, alphabet[rng() % alphabet.size()]); break;
          case 2: p[at] = alphabet[rng() % alphabet.size()]; break;
          default: p.resize(at); break;
        }
      }
      expect_agree(p);
      if (HasFatalFailure()) return;
    }
  }
}
