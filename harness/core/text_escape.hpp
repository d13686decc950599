#pragma once
// Names from result files, traces and flags made safe where they are written: into
// Markdown (tables, inline text, code spans) and into file names. Names are data: a `<script>`
// in a benchmark name, a backtick in a path or `../..` in a --label must never become markup or a
// path outside the chosen directory.
#include <cctype>
#include <string>
#include <string_view>

namespace encbench {

// Markdown text for a table cell or a line: HTML's special characters as entities (no raw HTML
// reaches the page), Markdown's punctuation backslash-escaped (| ` * [ ] \ ~, and _ at a word
// edge: GFM never emphasises inside a word, so snake_case names stay as they are), line breaks and
// other control characters as spaces (a newline would end the table row).
inline std::string markdown_text(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  const auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '|': case '`': case '*': case '[': case ']': case '\\': case '~':
        out += '\\';
        out += c;
        break;
      case '_':
        if (i == 0 || i + 1 == text.size() || !word(text[i - 1]) || !word(text[i + 1])) out += '\\';
        out += c;
        break;
      default:
        out += static_cast<unsigned char>(c) < 0x20 || c == 0x7f ? ' ' : c;
    }
  }
  return out;
}

// A Markdown code span holding `text` verbatim: fenced by one more backtick than the longest run
// inside it (CommonMark), padded with spaces when it starts or ends with one, line breaks as
// spaces. Inside a table cell a pipe still ends the cell, so it is escaped there too.
inline std::string markdown_code(std::string_view text, bool in_table = false) {
  std::string body;
  std::size_t run = 0, longest = 0;
  for (const char c : text) {
    run = c == '`' ? run + 1 : 0;
    if (run > longest) longest = run;
    if (c == '|' && in_table) body += '\\';
    body += static_cast<unsigned char>(c) < 0x20 ? ' ' : c;
  }
  const std::string fence(longest + 1, '`');
  const bool pad = !body.empty() && (body.front() == '`' || body.back() == '`');
  return fence + (pad ? " " : "") + body + (pad ? " " : "") + fence;
}

// One path component made from a label, arm or model name: '/' and '\' and every control or
// non-portable character become '_', a name of only dots ("..", ".") gets a leading '_', and an
// empty result is `fallback`. The result never leaves the directory it is joined to. Letters,
// digits and . - _ + = , @ % stay, so ordinary labels ("vllm-0.6", "qwen2.5-vl-7b") are unchanged.
inline std::string safe_file_component(std::string_view name, std::string_view fallback = "unnamed") {
  std::string out;
  out.reserve(name.size());
  for (const char c : name) {
    const bool keep = std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '-' || c == '_' ||
                      c == '+' || c == '=' || c == ',' || c == '@' || c == '%';
    out += keep ? c : '_';
  }
  if (out.find_first_not_of('.') == std::string::npos && !out.empty()) out.insert(out.begin(), '_');
  if (out.size() > 200) out.resize(200);  // NAME_MAX is 255 bytes; room for a prefix and suffix
  return out.empty() ? std::string(fallback) : out;
}

}  // namespace encbench
