// Jinja2's lexer (jinja2/lexer.py, 3.1) for the environment transformers renders chat templates
// in: trim_blocks=True (the newline after a block or comment tag goes), lstrip_blocks=True (spaces
// and tabs before a block or comment tag on its own line go), `-` strips all whitespace on that
// side, `+` keeps it. Newlines are normalised to \n and one trailing newline is dropped
// (keep_trailing_newline=False), as Jinja2 does before lexing.
#include <cctype>
#include <cstring>

#include "harness/tokenizer/jinja_ast.hpp"

namespace encbench::tokenizer::jinja {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

std::string normalise_source(const std::string& source) {
  std::string out;
  out.reserve(source.size());
  for (std::size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out += source[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

class Lexer {
 public:
  explicit Lexer(std::string source) : src_(std::move(source)) {}
  std::vector<Token> run();

 private:
  void position(std::size_t offset, int& line, int& column) {
    if (offset < scanned_) scanned_ = 0, line_ = 1, line_start_ = 0;  // an error pointing back
    for (; scanned_ < offset; ++scanned_) {
      if (src_[scanned_] == '\n') {
        ++line_;
        line_start_ = scanned_ + 1;
      }
    }
    line = line_;
    column = static_cast<int>(offset - line_start_) + 1;
  }
  [[noreturn]] void fail(const std::string& message, std::size_t offset) {
    int line = 1, column = 1;
    position(offset, line, column);
    throw TemplateSyntaxError(message, line, column);
  }
  void push(TokenKind kind, std::string value, std::size_t offset) {
    Token t{kind, std::move(value), 1, 1};
    position(offset, t.line, t.column);
    tokens_.push_back(std::move(t));
  }
  void text_before_tag(std::size_t tag, char kind);
  void comment(std::size_t tag);
  void tag_contents(bool block);
  bool tag_end(bool block);
  void string_literal();
  void number();

  std::string src_;
  std::size_t pos_ = 0;
  bool line_starting_ = true;  // the last thing consumed ended with a newline (lstrip_blocks)
  std::vector<Token> tokens_;
  std::size_t scanned_ = 0, line_start_ = 0;
  int line_ = 1;
};

// The data before a tag, with `-` (strip all whitespace) or lstrip_blocks (strip spaces and tabs
// back to the line start, for block and comment tags not marked `+`) applied.
void Lexer::text_before_tag(std::size_t tag, char kind) {
  std::string text = src_.substr(pos_, tag - pos_);
  const char sign = tag + 2 < src_.size() ? src_[tag + 2] : '\0';
  if (sign == '-') {
    while (!text.empty() && is_space(text.back())) text.pop_back();
  } else if (sign != '+' && kind != '{') {
    const auto nl = text.rfind('\n');
    const std::size_t line_start = nl == std::string::npos ? 0 : nl + 1;
    if ((line_start > 0 || line_starting_) && text.find_first_not_of(" \t", line_start) == std::string::npos)
      text.resize(line_start);
  }
  if (!text.empty()) push(TokenKind::text, std::move(text), pos_);
  line_starting_ = false;
  pos_ = tag + 2 + ((sign == '-' || sign == '+') ? 1 : 0);
}

void Lexer::comment(std::size_t tag) {
  const auto end = src_.find("#}", pos_);
  if (end == std::string::npos) fail("Missing end of comment tag", tag);
  const char sign = end > pos_ ? src_[end - 1] : '\0';
  pos_ = end + 2;
  if (sign == '-') {
    while (pos_ < src_.size() && is_space(src_[pos_])) ++pos_;
  } else if (sign != '+' && pos_ < src_.size() && src_[pos_] == '\n') {
    ++pos_;  // trim_blocks
  }
  line_starting_ = pos_ > 0 && src_[pos_ - 1] == '\n';
}

// At a possible end of the tag: consumes it (and the whitespace its sign or trim_blocks removes).
bool Lexer::tag_end(bool block) {
  const char* end = block ? "%}" : "}}";
  std::size_t at = pos_;
  char sign = '\0';
  if ((src_[at] == '-' || (block && src_[at] == '+')) && src_.compare(at + 1, 2, end) == 0) sign = src_[at++];
  if (src_.compare(at, 2, end) != 0) return false;
  push(block ? TokenKind::block_end : TokenKind::var_end, "", pos_);
  pos_ = at + 2;
  if (sign == '-') {
    while (pos_ < src_.size() && is_space(src_[pos_])) ++pos_;
  } else if (block && sign != '+' && pos_ < src_.size() && src_[pos_] == '\n') {
    ++pos_;  // trim_blocks
  }
  line_starting_ = src_[pos_ - 1] == '\n';
  return true;
}

void Lexer::string_literal() {
  const char quote = src_[pos_];
  const std::size_t start = pos_++;
  std::string out;
  while (pos_ < src_.size() && src_[pos_] != quote) {
    char c = src_[pos_++];
    if (c != '\\') {
      out += c;
      continue;
    }
    if (pos_ >= src_.size()) break;
    c = src_[pos_++];
    // Python's unicode-escape, which Jinja2 applies to string literals.
    switch (c) {
      case 'n': out += '\n'; break;
      case 't': out += '\t'; break;
      case 'r': out += '\r'; break;
      case '\\': out += '\\'; break;
      case '\'': out += '\''; break;
      case '"': out += '"'; break;
      case 'a': out += '\a'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'v': out += '\v'; break;
      case '0': out += '\0'; break;
      case '\n': break;  // a backslash-newline continues the line
      case 'x':
      case 'u':
      case 'U': {
        const std::size_t digits = c == 'x' ? 2 : c == 'u' ? 4 : 8;
        if (pos_ + digits > src_.size()) fail("truncated \\" + std::string(1, c) + " escape", pos_ - 2);
        const std::string hex = src_.substr(pos_, digits);
        if (hex.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos)
          fail("truncated \\" + std::string(1, c) + " escape", pos_ - 2);
        pos_ += digits;
        const auto cp = static_cast<std::uint32_t>(std::stoul(hex, nullptr, 16));
        if (cp > 0x10ffff) fail("illegal Unicode character", pos_ - digits - 2);
        // UTF-8 encode the code point.
        if (cp < 0x80) out += static_cast<char>(cp);
        else if (cp < 0x800) out += {static_cast<char>(0xc0 | (cp >> 6)), static_cast<char>(0x80 | (cp & 0x3f))};
        else if (cp < 0x10000)
          out += {static_cast<char>(0xe0 | (cp >> 12)), static_cast<char>(0x80 | ((cp >> 6) & 0x3f)),
                  static_cast<char>(0x80 | (cp & 0x3f))};
        else
          out += {static_cast<char>(0xf0 | (cp >> 18)), static_cast<char>(0x80 | ((cp >> 12) & 0x3f)),
                  static_cast<char>(0x80 | ((cp >> 6) & 0x3f)), static_cast<char>(0x80 | (cp & 0x3f))};
        break;
      }
      default: out += '\\'; out += c; break;  // Python keeps unknown escapes as written
    }
  }
  if (pos_ >= src_.size()) fail("unexpected end of string", start);
  ++pos_;
  push(TokenKind::string, std::move(out), start);
}

void Lexer::number() {
  const std::size_t start = pos_;
  auto digits = [&] {
    while (pos_ < src_.size() && (std::isdigit(static_cast<unsigned char>(src_[pos_])) || src_[pos_] == '_')) ++pos_;
  };
  digits();
  bool is_float = false;
  if (pos_ + 1 < src_.size() && src_[pos_] == '.' && std::isdigit(static_cast<unsigned char>(src_[pos_ + 1]))) {
    ++pos_;
    digits();
    is_float = true;
  }
  if (pos_ < src_.size() && (src_[pos_] == 'e' || src_[pos_] == 'E')) {
    std::size_t at = pos_ + 1;
    if (at < src_.size() && (src_[at] == '+' || src_[at] == '-')) ++at;
    if (at < src_.size() && std::isdigit(static_cast<unsigned char>(src_[at]))) {
      pos_ = at;
      digits();
      is_float = true;
    }
  }
  std::string text;
  for (std::size_t i = start; i < pos_; ++i)
    if (src_[i] != '_') text += src_[i];
  push(is_float ? TokenKind::floating : TokenKind::integer, std::move(text), start);
}

// The tokens inside {{ }} or {% %}, up to the end tag (ends inside open brackets are operators).
void Lexer::tag_contents(bool block) {
  int open_brackets = 0;
  static const char* kOps2[] = {"//", "**", "==", "!=", "<=", ">="};
  while (true) {
    while (pos_ < src_.size() && is_space(src_[pos_])) ++pos_;
    if (pos_ >= src_.size()) fail(block ? "unexpected end of template, expected '%}'" : "unexpected end of template, expected '}}'", pos_);
    if (open_brackets == 0 && tag_end(block)) return;
    const char c = src_[pos_];
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      const std::size_t start = pos_;
      while (pos_ < src_.size() && (std::isalnum(static_cast<unsigned char>(src_[pos_])) || src_[pos_] == '_')) ++pos_;
      push(TokenKind::name, src_.substr(start, pos_ - start), start);
    } else if (c == '\'' || c == '"') {
      string_literal();
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      number();
    } else {
      std::string op(1, c);
      for (const char* two : kOps2)
        if (src_.compare(pos_, 2, two) == 0) op = two;
      if (op.size() == 1 && std::strchr("+-/*%~<>=()[]{},.:|;!", c) == nullptr) fail("unexpected char '" + op + "'", pos_);
      if (op == "!") fail("unexpected char '!'", pos_);
      if (op == "(" || op == "[" || op == "{") ++open_brackets;
      if ((op == ")" || op == "]" || op == "}") && open_brackets > 0) --open_brackets;
      push(TokenKind::op, op, pos_);
      pos_ += op.size();
    }
  }
}

std::vector<Token> Lexer::run() {
  while (pos_ < src_.size()) {
    std::size_t tag = std::string::npos;
    char kind = '\0';
    for (std::size_t at = src_.find('{', pos_); at != std::string::npos; at = src_.find('{', at + 1)) {
      if (at + 1 < src_.size() && (src_[at + 1] == '{' || src_[at + 1] == '%' || src_[at + 1] == '#')) {
        tag = at;
        kind = src_[at + 1];
        break;
      }
    }
    if (tag == std::string::npos) {
      push(TokenKind::text, src_.substr(pos_), pos_);
      break;
    }
    text_before_tag(tag, kind);
    if (kind == '#') {
      comment(tag);
    } else {
      push(kind == '%' ? TokenKind::block_begin : TokenKind::var_begin, "", tag);
      tag_contents(kind == '%');
    }
  }
  push(TokenKind::eof, "", src_.size());
  return std::move(tokens_);
}

}  // namespace

std::vector<Token> lex(const std::string& source) { return Lexer(normalise_source(source)).run(); }

}  // namespace encbench::tokenizer::jinja
