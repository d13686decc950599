#pragma once
// Base64 decoding (RFC 4648) for images sent inline: data URLs in requests and datasets' 'bytes'.
#include <array>
#include <string>
#include <string_view>

namespace encbench {

// Which texts are read as base64.
enum class Base64Form {
  // A data URL in a request the server parses: the standard alphabet only, '=' padding optional
  // and only at the end, no whitespace; a length of 4k+1 characters (no byte's worth) refused.
  strict,
  // A user's dataset file: the URL-safe alphabet ('-', '_') too, whitespace skipped, nothing read
  // after the first '='.
  lenient,
};

// Decodes `text` into `out` (cleared first); false when it is not base64 in that form (`out` then
// holds what was decoded before the fault).
inline bool base64_decode(std::string_view text, Base64Form form, std::string& out) {
  constexpr std::string_view kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::array<int, 256> value{};
  value.fill(-1);
  for (std::size_t k = 0; k < kAlphabet.size(); ++k) value[static_cast<unsigned char>(kAlphabet[k])] = static_cast<int>(k);
  const bool lenient = form == Base64Form::lenient;
  if (lenient) {
    value['-'] = 62;
    value['_'] = 63;
  } else {
    while (!text.empty() && text.back() == '=') text.remove_suffix(1);
    if (text.size() % 4 == 1) return false;
  }
  out.clear();
  out.reserve(text.size() / 4 * 3 + 3);
  unsigned accumulator = 0;
  int bits = 0;
  for (const char c : text) {
    if (lenient && c == '=') break;
    if (lenient && (c == '\n' || c == '\r' || c == ' ' || c == '\t')) continue;
    const int v = value[static_cast<unsigned char>(c)];
    if (v < 0) return false;
    accumulator = (accumulator << 6) | static_cast<unsigned>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((accumulator >> bits) & 0xFFu));
    }
  }
  return true;
}

}  // namespace encbench
