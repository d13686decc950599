// libFuzzer target: the tokenizer (harness/tokenizer). First byte even: the rest is a
// tokenizer.json as `bench serve --tokenizer` reads it; property: a Tokenizer or an InvalidInput,
// and a loaded one encodes and decodes a fixed text. First byte odd: the rest is text encoded by a
// small Qwen2-layout tokenizer built here (merges over ASCII and UTF-8 bytes, added tokens);
// property: decoding gives back the NFC form of the text (invalid UTF-8 as U+FFFD), and without
// added tokens in it, exactly utf8_lossy(nfc(text)).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "harness/core/error.hpp"
#include "harness/tokenizer/tokenizer.hpp"
#include "harness/tokenizer/unicode.hpp"

namespace {

using encbench::tokenizer::Tokenizer;

std::string byte_level(unsigned char b) {
  const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
  int cp = b;
  if (!printable) {
    int n = 0;
    for (int x = 0; x < b; ++x) n += (x >= 33 && x <= 126) || (x >= 161 && x <= 172) || x >= 174 ? 0 : 1;
    cp = 256 + n;
  }
  std::string out;
  encbench::tokenizer::append_utf8(out, static_cast<char32_t>(cp));
  return out;
}

Tokenizer built_in() {
  nlohmann::json vocab = nlohmann::json::object(), merges = nlohmann::json::array();
  for (int b = 0; b < 256; ++b) vocab[byte_level(static_cast<unsigned char>(b))] = b;
  int next = 256;
  const auto merge = [&](const std::string& l, const std::string& r) {
    merges.push_back({l, r});
    if (!vocab.contains(l + r)) vocab[l + r] = next++;
  };
  merge("t", "h"), merge("th", "e"), merge(byte_level(' '), "the"), merge("e", "r"), merge("i", "n");
  merge(byte_level(0xC3), byte_level(0xA9)), merge(byte_level(0xE4), byte_level(0xB8)), merge("1", "2");
  const char* regex =
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  const nlohmann::json doc = {
      {"added_tokens", {{{"id", next}, {"content", "<|im_end|>"}, {"special", true}},
                        {{"id", next + 1}, {"content", "<|im"}, {"special", false}}}},
      {"normalizer", {{"type", "NFC"}}},
      {"pre_tokenizer",
       {{"type", "Sequence"},
        {"pretokenizers", {{{"type", "Split"}, {"pattern", {{"Regex", regex}}}, {"behavior", "Isolated"}},
                           {{"type", "ByteLevel"}, {"use_regex", false}}}}}},
      {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}}}};
  return Tokenizer::parse(doc.dump(), "built-in");
}

void check_round_trip(const Tokenizer& t, std::string_view text) {
  const auto ids = t.encode(text);
  const std::string decoded = t.decode(ids);
  if (text.find('<') == std::string_view::npos &&
      decoded != encbench::tokenizer::utf8_lossy(encbench::tokenizer::nfc(text)))
    __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] & 1) {
    static const Tokenizer tokenizer = built_in();
    check_round_trip(tokenizer, rest);
    return 0;
  }
  try {
    const Tokenizer t = Tokenizer::parse(rest, "fuzz.json");
    const auto ids = t.encode("Hello, world! 12 e\xCC\x81 <|im_end|>\n\n", true);
    (void)t.decode(ids);
  } catch (const encbench::InvalidInput&) {
  }
  return 0;
}
