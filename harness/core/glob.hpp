#pragma once
// Shell-style wildcards ('*' any run, '?' one character) for names chosen on the command line:
// glob_one for one pattern (gate rules and history series in reports/), glob_match for a list of
// alternatives (trace edits: --drop 'seq_lens_d2h|aclrtSynchronize*'; op-name maps, sim profiles).
#include <algorithm>
#include <string_view>

namespace encbench {

// One pattern against the whole text. Iterative, with one backtrack point at the last '*':
// linear in practice, no recursion on hostile patterns.
inline bool glob_one(std::string_view pattern, std::string_view text) {
  std::size_t p = 0, t = 0, star = std::string_view::npos, mark = 0;
  while (t < text.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == text[t])) {
      ++p;
      ++t;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

// glob_match: alternatives separated by '|', each a glob_one pattern; true when any of them
// matches the whole text ("a|b*" matches "a" and "bc", not "ab").
inline bool glob_match(std::string_view patterns, std::string_view text) {
  std::size_t begin = 0;
  while (begin <= patterns.size()) {
    const std::size_t bar = std::min(patterns.find('|', begin), patterns.size());
    if (glob_one(patterns.substr(begin, bar - begin), text)) return true;
    begin = bar + 1;
  }
  return false;
}

}  // namespace encbench
