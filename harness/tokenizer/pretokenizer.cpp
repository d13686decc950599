#include "harness/tokenizer/pretokenizer.hpp"

#include "harness/tokenizer/unicode.hpp"

namespace encbench::tokenizer {

namespace {

constexpr const char* kQwen2Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kLlama3Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kGpt2Regex = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// One decoded code point and where the next one starts.
struct Cp {
  char32_t cp = 0;
  std::size_t next = 0;
};

class Cursor {
 public:
  explicit Cursor(std::string_view text) : text_(text) {}
  bool at_end(std::size_t pos) const { return pos >= text_.size(); }
  Cp at(std::size_t pos) const {
    const auto b = static_cast<unsigned char>(text_[pos]);
    if (b < 0x80) return {b, pos + 1};
    std::size_t len = 0;
    const char32_t cp = decode_utf8(text_, pos, len);
    return {cp, pos + len};
  }
  char byte(std::size_t pos) const { return text_[pos]; }
  std::size_t size() const { return text_.size(); }

 private:
  std::string_view text_;
};

bool is_letter(char32_t c) { return char_class(c) == CharClass::letter; }
bool is_number(char32_t c) { return char_class(c) == CharClass::number; }
bool is_newline(char32_t c) { return c == '\r' || c == '\n'; }
// [^\s\p{L}\p{N}]
bool is_symbol(char32_t c) { return !is_whitespace(c) && char_class(c) == CharClass::other; }

char lower_ascii(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; }

// 's|'t|'re|'ve|'m|'ll|'d at pos (text[pos] == '\''); 0 when none matches.
std::size_t contraction_end(const Cursor& t, std::size_t pos, bool fold_case) {
  if (t.at_end(pos + 1)) return 0;
  const auto norm = [&](char c) { return fold_case ? lower_ascii(c) : c; };
  const char a = norm(t.byte(pos + 1));
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return pos + 2;
  if (t.at_end(pos + 2)) return 0;
  const char b = norm(t.byte(pos + 2));
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return pos + 3;
  return 0;
}

std::size_t run_end(const Cursor& t, std::size_t pos, bool (*pred)(char32_t), std::size_t max_count = SIZE_MAX) {
  std::size_t count = 0;
  while (!t.at_end(pos) && count < max_count) {
    const Cp c = t.at(pos);
    if (!pred(c.cp)) break;
    pos = c.next;
    ++count;
  }
  return pos;
}

// \s*[\r\n]+ , \s+(?!\S) and \s+ at a whitespace code point.
std::size_t whitespace_end(const Cursor& t, std::size_t pos, bool newline_alternative) {
  // Where the whitespace run ends, and just after its last newline.
  std::size_t end = pos, after_last_newline = 0, last_start = pos;
  while (!t.at_end(end)) {
    const Cp c = t.at(end);
    if (!is_whitespace(c.cp)) break;
    if (is_newline(c.cp)) after_last_newline = c.next;
    last_start = end;
    end = c.next;
  }
  // \s*[\r\n]+: greedy \s* backs off to the last newline, which [\r\n]+ then takes.
  if (newline_alternative && after_last_newline != 0) return after_last_newline;
  // \s+(?!\S): the whole run at the end of the text, else all but its last code point.
  if (t.at_end(end) || last_start > pos) return t.at_end(end) ? end : last_start;
  return end;  // \s+: a single whitespace code point before a non-space
}

std::size_t match_llama_style(const Cursor& t, std::size_t pos, std::size_t max_digits) {
  const Cp first = t.at(pos);
  if (first.cp == '\'') {
    if (const std::size_t e = contraction_end(t, pos, true)) return e;
  }
  // [^\r\n\p{L}\p{N}]?\p{L}+
  if (is_letter(first.cp)) return run_end(t, first.next, is_letter);
  if (!is_newline(first.cp) && !is_number(first.cp) && !t.at_end(first.next) && is_letter(t.at(first.next).cp))
    return run_end(t, first.next, is_letter);
  if (is_number(first.cp)) return run_end(t, pos, is_number, max_digits);
  // ' ?[^\s\p{L}\p{N}]+[\r\n]*'
  std::size_t sym = pos;
  if (first.cp == ' ' && !t.at_end(first.next) && is_symbol(t.at(first.next).cp)) sym = first.next;
  if (is_symbol(t.at(sym).cp)) return run_end(t, run_end(t, sym, is_symbol), is_newline);
  return whitespace_end(t, pos, true);
}

std::size_t match_gpt2(const Cursor& t, std::size_t pos) {
  const Cp first = t.at(pos);
  if (first.cp == '\'') {
    if (const std::size_t e = contraction_end(t, pos, false)) return e;
  }
  // ' ?\p{L}+', ' ?\p{N}+', ' ?[^\s\p{L}\p{N}]+'
  const std::size_t body = first.cp == ' ' && !t.at_end(first.next) ? first.next : pos;
  const char32_t c = t.at(body).cp;
  if (is_letter(c)) return run_end(t, body, is_letter);
  if (is_number(c)) return run_end(t, body, is_number);
  if (is_symbol(c)) return run_end(t, body, is_symbol);
  return whitespace_end(t, pos, false);
}

}  // namespace

std::optional<SplitPattern> split_pattern_from_regex(std::string_view regex) {
  if (regex == kQwen2Regex) return SplitPattern::qwen2;
  if (regex == kLlama3Regex) return SplitPattern::llama3;
  if (regex == kGpt2Regex) return SplitPattern::gpt2;
  return std::nullopt;
}

const char* split_pattern_regex(SplitPattern pattern) {
  switch (pattern) {
    case SplitPattern::qwen2: return kQwen2Regex;
    case SplitPattern::llama3: return kLlama3Regex;
    case SplitPattern::gpt2: return kGpt2Regex;
  }
  return "";
}

std::size_t match_end(SplitPattern pattern, std::string_view text, std::size_t pos) {
  const Cursor t(text);
  switch (pattern) {
    case SplitPattern::qwen2: return match_llama_style(t, pos, 1);
    case SplitPattern::llama3: return match_llama_style(t, pos, 3);
    case SplitPattern::gpt2: return match_gpt2(t, pos);
  }
  return text.size();
}

}  // namespace encbench::tokenizer
