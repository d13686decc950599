#include "harness/tokenizer/unicode.hpp"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace encbench::tokenizer {

namespace {

struct LetterNumberRange {
  char32_t first, last;
  unsigned char cls;
};
struct CombiningClass {
  char32_t cp;
  unsigned char ccc;
};
struct Decomposition {
  char32_t cp;
  std::uint32_t offset;
  std::uint8_t length;
};
struct Composition {
  char32_t first, second, composite;
};
struct CodePointRange {
  char32_t first, last;
};

#include "harness/tokenizer/unicode_tables.inc"

// Hangul syllables compose and decompose algorithmically (Unicode 3.12), not by table.
constexpr char32_t kHangulBase = 0xAC00, kJamoL = 0x1100, kJamoV = 0x1161, kJamoT = 0x11A7;
constexpr char32_t kJamoVCount = 21, kJamoTCount = 28, kHangulCount = 11172;
constexpr char32_t kJamoNCount = kJamoVCount * kJamoTCount;

template <typename Range>
const Range* find_range(const Range* begin, const Range* end, char32_t cp) {
  const Range* it = std::upper_bound(begin, end, cp, [](char32_t c, const Range& r) { return c < r.first; });
  if (it == begin) return nullptr;
  --it;
  return cp <= it->last ? it : nullptr;
}

unsigned combining_class(char32_t cp) {
  if (cp < 0x300) return 0;
  const auto* end = std::end(kCombiningClasses);
  const auto* it = std::lower_bound(std::begin(kCombiningClasses), end, cp,
                                    [](const CombiningClass& c, char32_t v) { return c.cp < v; });
  return it != end && it->cp == cp ? it->ccc : 0;
}

void decompose(char32_t cp, std::vector<char32_t>& out) {
  if (cp >= kHangulBase && cp < kHangulBase + kHangulCount) {
    const char32_t s = cp - kHangulBase;
    out.push_back(kJamoL + s / kJamoNCount);
    out.push_back(kJamoV + (s % kJamoNCount) / kJamoTCount);
    if (s % kJamoTCount != 0) out.push_back(kJamoT + s % kJamoTCount);
    return;
  }
  const auto* end = std::end(kDecompositions);
  const auto* it = std::lower_bound(std::begin(kDecompositions), end, cp,
                                    [](const Decomposition& d, char32_t v) { return d.cp < v; });
  if (it == end || it->cp != cp) {
    out.push_back(cp);
    return;
  }
  out.insert(out.end(), kDecompositionData + it->offset, kDecompositionData + it->offset + it->length);
}

// The primary composite of a pair, or 0.
char32_t compose_pair(char32_t first, char32_t second) {
  if (first >= kJamoL && first < kJamoL + 19 && second >= kJamoV && second < kJamoV + kJamoVCount)
    return kHangulBase + ((first - kJamoL) * kJamoVCount + (second - kJamoV)) * kJamoTCount;
  if (first >= kHangulBase && first < kHangulBase + kHangulCount && (first - kHangulBase) % kJamoTCount == 0 &&
      second > kJamoT && second < kJamoT + kJamoTCount)
    return first + (second - kJamoT);
  const auto* end = std::end(kCompositions);
  const auto* it = std::lower_bound(std::begin(kCompositions), end, std::pair{first, second},
                                    [](const Composition& c, const std::pair<char32_t, char32_t>& v) {
                                      return c.first != v.first ? c.first < v.first : c.second < v.second;
                                    });
  return it != end && it->first == first && it->second == second ? it->composite : 0;
}

// Canonical ordering: a stable sort of each run of non-starters by combining class.
void reorder(std::vector<char32_t>& cps) {
  std::size_t i = 0;
  while (i < cps.size()) {
    if (combining_class(cps[i]) == 0) {
      ++i;
      continue;
    }
    std::size_t j = i;
    while (j < cps.size() && combining_class(cps[j]) != 0) ++j;
    std::stable_sort(cps.begin() + static_cast<std::ptrdiff_t>(i), cps.begin() + static_cast<std::ptrdiff_t>(j),
                     [](char32_t a, char32_t b) { return combining_class(a) < combining_class(b); });
    i = j;
  }
}

// Canonical composition of a decomposed, reordered sequence (UAX #15's algorithm).
void compose(std::vector<char32_t>& cps) {
  if (cps.empty()) return;
  std::size_t starter = 0, out = 1;
  unsigned last_class = combining_class(cps[0]) == 0 ? 0 : 256;
  for (std::size_t i = 1; i < cps.size(); ++i) {
    const char32_t c = cps[i];
    const unsigned cls = combining_class(c);
    // last_class 0: the starter itself precedes c; otherwise c must not be blocked.
    const char32_t composite = last_class < cls || last_class == 0 ? compose_pair(cps[starter], c) : 0;
    if (composite != 0) {
      cps[starter] = composite;
      continue;
    }
    if (cls == 0) starter = out;
    last_class = cls;
    cps[out++] = c;
  }
  cps.resize(out);
}

}  // namespace

const char* unicode_version() { return kUnicodeVersion; }

CharClass char_class(char32_t cp) {
  if (cp < 0x80) {
    if ((cp | 0x20) >= 'a' && (cp | 0x20) <= 'z') return CharClass::letter;
    return cp >= '0' && cp <= '9' ? CharClass::number : CharClass::other;
  }
  const auto* r = find_range(std::begin(kLetterNumberRanges), std::end(kLetterNumberRanges), cp);
  return r == nullptr ? CharClass::other : static_cast<CharClass>(r->cls);
}

bool is_whitespace(char32_t cp) {
  if (cp < 0x80) return cp == ' ' || (cp >= 0x09 && cp <= 0x0D);
  return cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 ||
         cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

char32_t decode_utf8(std::string_view text, std::size_t pos, std::size_t& length) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char b0 = byte(pos);
  length = 1;
  if (b0 < 0x80) return b0;
  std::size_t n = 0;
  char32_t cp = 0, min = 0;
  if ((b0 & 0xE0) == 0xC0) {
    n = 2, cp = b0 & 0x1F, min = 0x80;
  } else if ((b0 & 0xF0) == 0xE0) {
    n = 3, cp = b0 & 0x0F, min = 0x800;
  } else if ((b0 & 0xF8) == 0xF0) {
    n = 4, cp = b0 & 0x07, min = 0x10000;
  } else {
    return 0xFFFD;
  }
  if (pos + n > text.size()) return 0xFFFD;
  for (std::size_t i = 1; i < n; ++i) {
    if ((byte(pos + i) & 0xC0) != 0x80) return 0xFFFD;
    cp = (cp << 6) | (byte(pos + i) & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0xFFFD;
  length = n;
  return cp;
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

bool nfc_quick_check(std::string_view text) {
  const char32_t first_unsafe = std::begin(kNfcMaybeChanged)->first;
  for (std::size_t pos = 0; pos < text.size();) {
    if (static_cast<unsigned char>(text[pos]) < 0x80) {
      ++pos;
      continue;
    }
    std::size_t len = 0;
    const char32_t cp = decode_utf8(text, pos, len);
    pos += len;
    if (cp >= first_unsafe && find_range(std::begin(kNfcMaybeChanged), std::end(kNfcMaybeChanged), cp) != nullptr)
      return false;
  }
  return true;
}

std::string nfc(std::string_view text) {
  if (nfc_quick_check(text)) return std::string(text);
  // Invalid UTF-8 bytes pass through as they are: normalize each valid stretch between them.
  std::string out;
  out.reserve(text.size());
  std::vector<char32_t> cps;
  const auto flush = [&] {
    reorder(cps);
    compose(cps);
    for (char32_t c : cps) append_utf8(out, c);
    cps.clear();
  };
  for (std::size_t pos = 0; pos < text.size();) {
    std::size_t len = 0;
    const char32_t cp = decode_utf8(text, pos, len);
    if (cp == 0xFFFD && len == 1) {
      flush();
      out.push_back(text[pos]);
    } else {
      decompose(cp, cps);
    }
    pos += len;
  }
  flush();
  return out;
}

}  // namespace encbench::tokenizer

namespace encbench::tokenizer {

namespace {
// The length of the valid prefix of the sequence starting at bytes[pos] (Unicode Table 3-7),
// with `complete` set when it is a whole code point.
std::size_t utf8_valid_prefix(std::string_view bytes, std::size_t pos, bool& complete) {
  const auto at = [&](std::size_t i) { return static_cast<unsigned char>(bytes[i]); };
  const unsigned char b0 = at(pos);
  complete = false;
  std::size_t need = 0;
  unsigned char lo = 0x80, hi = 0xBF;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    need = 3;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    need = 4;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  std::size_t n = 1;
  for (; n < need && pos + n < bytes.size(); ++n) {
    const unsigned char b = at(pos + n);
    if (b < (n == 1 ? lo : 0x80) || b > (n == 1 ? hi : 0xBF)) break;
  }
  complete = n == need;
  return n;
}
}  // namespace

std::string utf8_lossy(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (std::size_t pos = 0; pos < bytes.size();) {
    if (static_cast<unsigned char>(bytes[pos]) < 0x80) {
      out.push_back(bytes[pos++]);
      continue;
    }
    bool complete = false;
    const std::size_t n = utf8_valid_prefix(bytes, pos, complete);
    if (complete) {
      out.append(bytes.substr(pos, n));
    } else {
      out.append("\xEF\xBF\xBD");
    }
    pos += n == 0 ? 1 : n;
  }
  return out;
}

}  // namespace encbench::tokenizer
