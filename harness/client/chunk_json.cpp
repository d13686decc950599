#include "harness/client/chunk_json.hpp"

#include <nlohmann/json.hpp>

namespace encbench::client {

namespace {

// ------------------------------------------------------------------------------ reference (DOM)
std::string error_message_of(const nlohmann::json& error) {
  if (error.is_object()) {
    if (auto it = error.find("message"); it != error.end() && it->is_string()) return it->get<std::string>();
    return error.dump();
  }
  if (error.is_string()) return error.get<std::string>();
  return error.dump();
}

// Text carried by one choice: chat delta.content / message.content, completions text.
std::string choice_text(const nlohmann::json& choice) {
  for (const char* holder : {"delta", "message"}) {
    if (auto it = choice.find(holder); it != choice.end() && it->is_object()) {
      if (auto c = it->find("content"); c != it->end() && c->is_string()) return c->get<std::string>();
      return {};
    }
  }
  if (auto t = choice.find("text"); t != choice.end() && t->is_string()) return t->get<std::string>();
  return {};
}

// ------------------------------------------------------------------------------ fast scanner
constexpr int kMaxDepth = 64;

// Where one holder key of a choice ("delta" / "message") stands; the last occurrence wins, as
// in the DOM.
struct Holder {
  bool present = false, is_object = false, content_is_string = false;
  std::string content;
};

class Scanner {
 public:
  explicit Scanner(std::string_view in) : in_(in) {}

  std::optional<ChunkFields> run() {
    ChunkFields f;
    skip_ws();
    if (!peek('{')) return std::nullopt;  // the reference decides non-objects
    f.is_object = true;
    if (!top_object(f)) return std::nullopt;
    skip_ws();
    if (pos_ != in_.size()) return std::nullopt;
    return f;
  }

 private:
  bool peek(char c) const { return pos_ < in_.size() && in_[pos_] == c; }
  bool eat(char c) {
    skip_ws();
    if (!peek(c)) return false;
    ++pos_;
    return true;
  }
  void skip_ws() {
    while (pos_ < in_.size()) {
      const char c = in_[pos_];
      if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
      ++pos_;
    }
  }

  // Appends one code point as UTF-8.
  static void put_utf8(std::string& out, std::uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  bool hex4(std::uint32_t& v) {
    if (in_.size() - pos_ < 4) return false;
    v = 0;
    for (int k = 0; k < 4; ++k) {
      const char c = in_[pos_++];
      v <<= 4;
      if (c >= '0' && c <= '9') v |= static_cast<std::uint32_t>(c - '0');
      else if (c >= 'a' && c <= 'f') v |= static_cast<std::uint32_t>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') v |= static_cast<std::uint32_t>(c - 'A' + 10);
      else return false;
    }
    return true;
  }

  // One well-formed UTF-8 sequence starting at a byte >= 0x80 (Unicode table 3-7).
  bool utf8_sequence(std::string* out) {
    const auto b = [&](std::size_t k) { return static_cast<unsigned char>(in_[pos_ + k]); };
    const unsigned char lead = b(0);
    std::size_t len = 0;
    unsigned char lo = 0x80, hi = 0xBF;
    if (lead >= 0xC2 && lead <= 0xDF) len = 2;
    else if (lead == 0xE0) len = 3, lo = 0xA0;
    else if ((lead >= 0xE1 && lead <= 0xEC) || lead == 0xEE || lead == 0xEF) len = 3;
    else if (lead == 0xED) len = 3, hi = 0x9F;
    else if (lead == 0xF0) len = 4, lo = 0x90;
    else if (lead >= 0xF1 && lead <= 0xF3) len = 4;
    else if (lead == 0xF4) len = 4, hi = 0x8F;
    else return false;
    if (in_.size() - pos_ < len) return false;
    if (b(1) < lo || b(1) > hi) return false;
    for (std::size_t k = 2; k < len; ++k)
      if (b(k) < 0x80 || b(k) > 0xBF) return false;
    if (out) out->append(in_.substr(pos_, len));
    pos_ += len;
    return true;
  }

  // A string at pos_ (after whitespace); its decoded value into *out when out is not null.
  bool string(std::string* out) {
    skip_ws();
    if (!peek('"')) return false;
    ++pos_;
    for (;;) {
      // Plain run: copy in one piece.
      const std::size_t run_start = pos_;
      while (pos_ < in_.size()) {
        const unsigned char c = static_cast<unsigned char>(in_[pos_]);
        if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80) break;
        ++pos_;
      }
      if (out) out->append(in_.substr(run_start, pos_ - run_start));
      if (pos_ >= in_.size()) return false;
      const unsigned char c = static_cast<unsigned char>(in_[pos_]);
      if (c == '"') {
        ++pos_;
        return true;
      }
      if (c < 0x20) return false;  // raw control character
      if (c >= 0x80) {
        if (!utf8_sequence(out)) return false;
        continue;
      }
      // Escape.
      if (++pos_ >= in_.size()) return false;
      const char e = in_[pos_++];
      char plain = 0;
      switch (e) {
        case '"': plain = '"'; break;
        case '\\': plain = '\\'; break;
        case '/': plain = '/'; break;
        case 'b': plain = '\b'; break;
        case 'f': plain = '\f'; break;
        case 'n': plain = '\n'; break;
        case 'r': plain = '\r'; break;
        case 't': plain = '\t'; break;
        case 'u': {
          std::uint32_t cp = 0;
          if (!hex4(cp)) return false;
          if (cp >= 0xDC00 && cp <= 0xDFFF) return false;  // lone low surrogate: the reference decides
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            std::uint32_t low = 0;
            if (in_.size() - pos_ < 6 || in_[pos_] != '\\' || in_[pos_ + 1] != 'u') return false;
            pos_ += 2;
            if (!hex4(low) || low < 0xDC00 || low > 0xDFFF) return false;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          }
          if (out) put_utf8(*out, cp);
          continue;
        }
        default: return false;
      }
      if (out) *out += plain;
    }
  }

  // A number; *integer set when it has no fraction or exponent and fits 18 digits.
  bool number(std::optional<std::int64_t>* integer) {
    skip_ws();
    const bool negative = peek('-');
    if (negative) ++pos_;
    const auto digit = [&] { return pos_ < in_.size() && in_[pos_] >= '0' && in_[pos_] <= '9'; };
    if (!digit()) return false;
    std::int64_t value = 0;
    std::size_t digits = 0;
    if (in_[pos_] == '0') {
      ++pos_;
      digits = 1;
    } else {
      while (digit()) {
        if (++digits > 18) return false;  // beyond int64 in the DOM's terms: ask the reference
        value = value * 10 + (in_[pos_++] - '0');
      }
    }
    bool is_integer = true;
    if (peek('.')) {
      ++pos_;
      if (!digit()) return false;
      while (digit()) ++pos_;
      is_integer = false;
    }
    if (peek('e') || peek('E')) {
      ++pos_;
      if (peek('+') || peek('-')) ++pos_;
      if (!digit()) return false;
      std::size_t exponent_digits = 0;
      while (digit()) ++pos_, ++exponent_digits;
      // The reference rejects numbers a double cannot hold: leave big exponents to it.
      if (exponent_digits > 2) return false;
      is_integer = false;
    }
    if (integer) *integer = is_integer ? std::optional<std::int64_t>(negative ? -value : value) : std::nullopt;
    return true;
  }

  bool literal(std::string_view word) {
    if (in_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  // Any value, validated and dropped.
  bool skip_value(int depth) {
    if (depth > kMaxDepth) return false;
    skip_ws();
    if (pos_ >= in_.size()) return false;
    switch (in_[pos_]) {
      case '"': return string(nullptr);
      case '{': {
        ++pos_;
        if (eat('}')) return true;
        do {
          if (!string(nullptr) || !eat(':') || !skip_value(depth + 1)) return false;
        } while (eat(','));
        return eat('}');
      }
      case '[': {
        ++pos_;
        if (eat(']')) return true;
        do {
          if (!skip_value(depth + 1)) return false;
        } while (eat(','));
        return eat(']');
      }
      case 't': return literal("true");
      case 'f': return literal("false");
      case 'n': return literal("null");
      default: return number(nullptr);
    }
  }

  bool is_null_next() {
    skip_ws();
    return in_.substr(pos_, 4) == "null";
  }

  // Members of an object whose '{' is next; on_member(key) consumes each value.
  template <typename OnMember>
  bool object(int depth, OnMember&& on_member) {
    if (depth > kMaxDepth || !eat('{')) return false;
    if (eat('}')) return true;
    std::string key;
    do {
      key.clear();
      if (!string(&key) || !eat(':') || !on_member(key)) return false;
    } while (eat(','));
    return eat('}');
  }

  bool holder(Holder& h) {
    h = Holder{};
    h.present = true;
    skip_ws();
    if (!peek('{')) return skip_value(3);
    h.is_object = true;
    return object(3, [&](const std::string& key) {
      if (key != "content") return skip_value(4);
      skip_ws();
      if (peek('"')) {
        h.content.clear();
        h.content_is_string = true;
        return string(&h.content);
      }
      h.content_is_string = false;
      return skip_value(4);
    });
  }

  bool first_choice(ChunkFields& f) {
    skip_ws();
    if (!peek('{')) return skip_value(2);  // not an object: no text
    Holder delta, message;
    bool text_is_string = false;
    std::string text;
    const bool ok = object(2, [&](const std::string& key) {
      if (key == "delta") return holder(delta);
      if (key == "message") return holder(message);
      if (key == "text") {
        skip_ws();
        if (peek('"')) {
          text.clear();
          text_is_string = true;
          return string(&text);
        }
        text_is_string = false;
        return skip_value(3);
      }
      return skip_value(3);
    });
    if (!ok) return false;
    // choice_text(): the first holder that is an object decides, else "text".
    if (delta.present && delta.is_object) f.text = delta.content_is_string ? delta.content : "";
    else if (message.present && message.is_object) f.text = message.content_is_string ? message.content : "";
    else f.text = text_is_string ? text : "";
    return true;
  }

  bool choices(ChunkFields& f) {
    f.has_choices = false;
    f.text.clear();
    skip_ws();
    if (!peek('[')) return skip_value(1);
    ++pos_;
    if (eat(']')) return true;
    f.has_choices = true;
    if (!first_choice(f)) return false;
    while (eat(','))
      if (!skip_value(2)) return false;
    return eat(']');
  }

  bool usage(ChunkFields& f) {
    f.has_usage = false;
    f.usage_completion_tokens.reset();
    f.usage_prompt_tokens.reset();
    skip_ws();
    if (!peek('{')) return skip_value(1);
    return object(1, [&](const std::string& key) {
      f.has_usage = true;  // at least one member
      std::optional<std::int64_t>* slot = key == "completion_tokens" ? &f.usage_completion_tokens
                                          : key == "prompt_tokens"   ? &f.usage_prompt_tokens
                                                                     : nullptr;
      if (slot == nullptr) return skip_value(2);
      skip_ws();
      slot->reset();
      if (pos_ < in_.size() && (in_[pos_] == '-' || (in_[pos_] >= '0' && in_[pos_] <= '9'))) return number(slot);
      return skip_value(2);
    });
  }

  bool top_object(ChunkFields& f) {
    return object(0, [&](const std::string& key) {
      if (key == "choices") return choices(f);
      if (key == "usage") return usage(f);
      if (key == "error") {
        if (!is_null_next()) return false;  // an error to report: the reference words it
        f.has_error = false;
        f.error_message.clear();
        return skip_value(1);
      }
      return skip_value(1);
    });
  }

  std::string_view in_;
  std::size_t pos_ = 0;
};

}  // namespace

std::optional<ChunkFields> chunk_fields_reference(std::string_view payload) {
  const nlohmann::json msg = nlohmann::json::parse(payload, nullptr, /*allow_exceptions=*/false);
  if (msg.is_discarded()) return std::nullopt;
  ChunkFields f;
  f.is_object = msg.is_object();
  if (!f.is_object) return f;
  auto choices = msg.find("choices");
  f.has_choices = choices != msg.end() && choices->is_array() && !choices->empty();
  if (f.has_choices && choices->front().is_object()) f.text = choice_text(choices->front());
  if (auto usage = msg.find("usage"); usage != msg.end() && usage->is_object() && !usage->empty()) {
    f.has_usage = true;
    if (auto c = usage->find("completion_tokens"); c != usage->end() && c->is_number_integer())
      f.usage_completion_tokens = c->get<std::int64_t>();
    if (auto p = usage->find("prompt_tokens"); p != usage->end() && p->is_number_integer())
      f.usage_prompt_tokens = p->get<std::int64_t>();
  }
  if (auto err = msg.find("error"); err != msg.end() && !err->is_null()) {
    f.has_error = true;
    f.error_message = error_message_of(*err);
  }
  return f;
}

std::optional<ChunkFields> chunk_fields_fast(std::string_view payload) { return Scanner(payload).run(); }

std::optional<ChunkFields> parse_chunk_fields(std::string_view payload) {
  if (auto fast = chunk_fields_fast(payload)) return fast;
  return chunk_fields_reference(payload);
}

}  // namespace encbench::client
