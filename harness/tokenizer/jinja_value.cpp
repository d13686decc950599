#include "harness/tokenizer/jinja_value.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace encbench::tokenizer::jinja {

bool Value::truthy() const {
  switch (type) {
    case Type::undefined:
    case Type::none: return false;
    case Type::boolean: return boolean;
    case Type::integer: return integer != 0;
    case Type::floating: return floating != 0.0;
    case Type::string: return !text.empty();
    case Type::list: return !list->empty();
    case Type::dict: return namespace_object || !dict->empty();
    case Type::callable: return true;
  }
  return false;
}

const Value* Value::find(const std::string& key) const {
  if (type != Type::dict) return nullptr;
  for (const auto& [k, v] : *dict)
    if (k == key) return &v;
  return nullptr;
}

std::string Value::type_name() const {
  switch (type) {
    case Type::undefined: return "Undefined";
    case Type::none: return "NoneType";
    case Type::boolean: return "bool";
    case Type::integer: return "int";
    case Type::floating: return "float";
    case Type::string: return "str";
    case Type::list: return "list";
    case Type::dict: return namespace_object ? "Namespace" : "dict";
    case Type::callable: return "function";
  }
  return "object";
}

std::string float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  // Python's repr: the fewest significant digits that read back to the same double.
  char buf[64];
  int precision = 1;
  for (; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*e", precision - 1, d);
    if (std::strtod(buf, nullptr) == d) break;
  }
  const std::string sci = buf;  // [-]d.ddde[+-]XX
  const auto e_pos = sci.find('e');
  const int exponent = std::atoi(sci.c_str() + e_pos + 1);
  std::string digits;
  for (std::size_t i = 0; i < e_pos; ++i)
    if (sci[i] >= '0' && sci[i] <= '9') digits += sci[i];
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  const std::string sign = d < 0 || (d == 0 && std::signbit(d)) ? "-" : "";
  const int decpt = exponent + 1;  // value = 0.DIGITS x 10^decpt
  if (decpt <= -4 || decpt > 16) {
    std::string mantissa = digits.substr(0, 1);
    if (digits.size() > 1) mantissa += "." + digits.substr(1);
    char exp_buf[16];
    std::snprintf(exp_buf, sizeof exp_buf, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    return sign + mantissa + exp_buf;
  }
  if (decpt <= 0) return sign + "0." + std::string(static_cast<std::size_t>(-decpt), '0') + digits;
  const auto point = static_cast<std::size_t>(decpt);
  if (digits.size() <= point) return sign + digits + std::string(point - digits.size(), '0') + ".0";
  return sign + digits.substr(0, point) + "." + digits.substr(point);
}

namespace {

// Python's repr of a str: single quotes unless the text has ' and no ".
std::string string_repr(const std::string& s) {
  const bool has_single = s.find('\'') != std::string::npos, has_double = s.find('"') != std::string::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (unsigned char c : s) {
    if (c == '\\') out += "\\\\";
    else if (c == static_cast<unsigned char>(quote)) out += std::string("\\") + quote;
    else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else out += static_cast<char>(c);
  }
  return out + quote;
}

}  // namespace

namespace {

constexpr int kMaxValueDepth = kMaxValueNesting;  // values are bounded when made; this guards the recursion too

std::string repr_at(const Value& v, int depth) {
  if (depth > kMaxValueDepth) throw TemplateRuntimeError("value nested deeper than " + std::to_string(kMaxValueDepth));
  switch (v.type) {
    case Value::Type::string: return string_repr(v.text);
    case Value::Type::list: {
      const bool tuple = v.list_style == Value::ListStyle::tuple;
      std::string out = tuple ? "(" : v.list_style == Value::ListStyle::dict_items ? "dict_items([" : "[";
      for (std::size_t i = 0; i < v.list->size(); ++i) out += (i ? ", " : "") + repr_at((*v.list)[i], depth + 1);
      if (tuple && v.list->size() == 1) out += ",";
      return out + (tuple ? ")" : v.list_style == Value::ListStyle::dict_items ? "])" : "]");
    }
    case Value::Type::dict: {
      if (v.namespace_object) return "<Namespace>";
      std::string out = "{";
      bool first = true;
      for (const auto& [k, item] : *v.dict) {
        out += (first ? "" : ", ") + string_repr(k) + ": " + repr_at(item, depth + 1);
        first = false;
      }
      return out + "}";
    }
    default: return to_str(v);
  }
}

}  // namespace

std::string to_repr(const Value& v) { return repr_at(v, 0); }

std::string to_str(const Value& v) {
  switch (v.type) {
    case Value::Type::undefined: return "";
    case Value::Type::none: return "None";
    case Value::Type::boolean: return v.boolean ? "True" : "False";
    case Value::Type::integer: return std::to_string(v.integer);
    case Value::Type::floating: return float_repr(v.floating);
    case Value::Type::string: return v.text;
    case Value::Type::callable: return "<function " + v.callable->name + ">";
    default: return to_repr(v);
  }
}

namespace {

double as_double(const Value& v) {
  if (v.type == Value::Type::floating) return v.floating;
  if (v.type == Value::Type::boolean) return v.boolean ? 1.0 : 0.0;
  return static_cast<double>(v.integer);
}

bool equals_at(const Value& a, const Value& b, int depth);

bool dicts_equal(const ValueDict& a, const ValueDict& b, int depth) {
  if (a.size() != b.size()) return false;
  for (const auto& entry : a) {  // (no structured binding: clang 14 cannot capture one)
    const auto it = std::find_if(b.begin(), b.end(), [&](const auto& kv) { return kv.first == entry.first; });
    if (it == b.end() || !equals_at(entry.second, it->second, depth + 1)) return false;
  }
  return true;
}

bool equals_at(const Value& a, const Value& b, int depth) {
  if (depth > kMaxValueDepth) throw TemplateRuntimeError("value nested deeper than " + std::to_string(kMaxValueDepth));
  using T = Value::Type;
  if (a.is_number() && b.is_number()) {
    if (a.type != T::floating && b.type != T::floating)
      return (a.type == T::boolean ? a.boolean : a.integer) == (b.type == T::boolean ? b.boolean : b.integer);
    return as_double(a) == as_double(b);
  }
  if (a.type != b.type) return false;
  switch (a.type) {
    case T::undefined:
    case T::none: return true;
    case T::string: return a.text == b.text;
    case T::list: {
      if (a.list->size() != b.list->size()) return false;
      for (std::size_t i = 0; i < a.list->size(); ++i)
        if (!equals_at((*a.list)[i], (*b.list)[i], depth + 1)) return false;
      return true;
    }
    case T::dict: return a.dict == b.dict || (!a.namespace_object && !b.namespace_object && dicts_equal(*a.dict, *b.dict, depth));
    case T::callable: return a.callable == b.callable;
    default: return false;
  }
}

}  // namespace

bool equals(const Value& a, const Value& b) { return equals_at(a, b, 0); }

namespace {

// Python's json string encoder: ensure_ascii=False escapes only ", \ and control characters.
void json_string(const std::string& s, bool ensure_ascii, std::string& out) {
  out += '"';
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '"': out += "\\\""; continue;
      case '\\': out += "\\\\"; continue;
      case '\n': out += "\\n"; continue;
      case '\r': out += "\\r"; continue;
      case '\t': out += "\\t"; continue;
      case '\b': out += "\\b"; continue;
      case '\f': out += "\\f"; continue;
      default: break;
    }
    char buf[16];
    if (c < 0x20 || (ensure_ascii && c == 0x7f)) {
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else if (ensure_ascii && c >= 0x80) {
      // Decode one code point, then write it as \uXXXX (a surrogate pair above U+FFFF).
      std::uint32_t cp = 0;
      int extra = c >= 0xf0 ? 3 : c >= 0xe0 ? 2 : 1;
      cp = c & (0x3f >> extra);
      for (int k = 0; k < extra && i + 1 < s.size(); ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[++i]) & 0x3f);
      if (cp >= 0x10000) {
        cp -= 0x10000;
        std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", 0xd800 + (cp >> 10), 0xdc00 + (cp & 0x3ff));
      } else {
        std::snprintf(buf, sizeof buf, "\\u%04x", cp);
      }
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += '"';
}

struct JsonWriter {
  const JsonDumpOptions& options;
  std::string item_sep, key_sep;
  std::string out;
  int depth = 0;

  void newline(int level) {
    if (!options.indent) return;
    out += '\n';
    for (int i = 0; i < level; ++i) out += *options.indent;
  }
  void scalar(const Value& v) {
    switch (v.type) {
      case Value::Type::none: out += "null"; return;
      case Value::Type::boolean: out += v.boolean ? "true" : "false"; return;
      case Value::Type::integer: out += std::to_string(v.integer); return;
      case Value::Type::floating:
        if (std::isnan(v.floating)) out += "NaN";
        else if (std::isinf(v.floating)) out += v.floating < 0 ? "-Infinity" : "Infinity";
        else out += float_repr(v.floating);
        return;
      case Value::Type::string: json_string(v.text, options.ensure_ascii, out); return;
      default: throw TemplateRuntimeError("Object of type " + v.type_name() + " is not JSON serializable");
    }
  }
  void write(const Value& v) {
    if (++depth > 512) throw TemplateRuntimeError("tojson: nesting deeper than 512");
    if (v.type == Value::Type::list) write_list(*v.list);
    else if (v.type == Value::Type::dict && !v.namespace_object) write_dict(*v.dict);
    else scalar(v);
    --depth;
  }
  void write_list(const ValueList& items) {
    if (items.empty()) {
      out += "[]";
      return;
    }
    out += '[';
    for (std::size_t i = 0; i < items.size(); ++i) {
      if (i) out += item_sep;
      newline(depth);
      write(items[i]);
    }
    newline(depth - 1);
    out += ']';
  }
  void write_dict(const ValueDict& items) {
    if (items.empty()) {
      out += "{}";
      return;
    }
    std::vector<const std::pair<std::string, Value>*> order;
    for (const auto& kv : items) order.push_back(&kv);
    if (options.sort_keys) std::stable_sort(order.begin(), order.end(), [](auto* a, auto* b) { return a->first < b->first; });
    out += '{';
    for (std::size_t i = 0; i < order.size(); ++i) {
      if (i) out += item_sep;
      newline(depth);
      json_string(order[i]->first, options.ensure_ascii, out);
      out += key_sep;
      write(order[i]->second);
    }
    newline(depth - 1);
    out += '}';
  }
};

}  // namespace

std::string to_json(const Value& v, const JsonDumpOptions& options) {
  JsonWriter w{options, options.indent ? "," : ", ", ": ", {}, 0};
  if (options.separators) {
    w.item_sep = options.separators->first;
    w.key_sep = options.separators->second;
  }
  w.write(v);
  return std::move(w.out);
}

namespace {
Value from_json_at(const nlohmann::ordered_json& j, int depth);
}

Value from_json(const nlohmann::ordered_json& j) { return from_json_at(j, 0); }

namespace {
Value from_json_at(const nlohmann::ordered_json& j, int depth) {
  if (depth > kMaxValueNesting) throw TemplateRuntimeError("JSON nested deeper than " + std::to_string(kMaxValueNesting));
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null: return Value::none();
    case nlohmann::ordered_json::value_t::boolean: return Value::of(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer: return Value::of(j.get<std::int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      const auto u = j.get<std::uint64_t>();
      if (u <= static_cast<std::uint64_t>(INT64_MAX)) return Value::of(static_cast<std::int64_t>(u));
      return Value::of_float(static_cast<double>(u));
    }
    case nlohmann::ordered_json::value_t::number_float: return Value::of_float(j.get<double>());
    case nlohmann::ordered_json::value_t::string: return Value::of(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      ValueList items;
      for (const auto& e : j) items.push_back(from_json_at(e, depth + 1));
      return Value::of(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      ValueDict items;
      for (const auto& [k, e] : j.items()) items.emplace_back(k, from_json_at(e, depth + 1));
      return Value::of(std::move(items));
    }
    default: return Value::none();
  }
}
}  // namespace

std::vector<std::string> code_points(const std::string& s) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t n = c < 0x80 ? 1 : c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
    n = std::min(n, s.size() - i);
    out.push_back(s.substr(i, n));
    i += n;
  }
  return out;
}

std::size_t code_point_count(const std::string& s) {
  std::size_t n = 0;
  for (unsigned char c : s) n += (c & 0xc0) != 0x80;
  return n;
}

bool is_python_space(const std::string& cp) {
  if (cp.size() == 1) {
    const char c = cp[0];
    return c == ' ' || (c >= '\t' && c <= '\r') || (c >= '\x1c' && c <= '\x1f');
  }
  // The other code points Python's str.isspace() accepts (Unicode White_Space and bidi B/S/WS).
  static constexpr const char* kSpaces[] = {"\xc2\x85", "\xc2\xa0", "\xe1\x9a\x80", "\xe2\x80\x80", "\xe2\x80\x81",
                                            "\xe2\x80\x82", "\xe2\x80\x83", "\xe2\x80\x84", "\xe2\x80\x85", "\xe2\x80\x86",
                                            "\xe2\x80\x87", "\xe2\x80\x88", "\xe2\x80\x89", "\xe2\x80\x8a", "\xe2\x80\xa8",
                                            "\xe2\x80\xa9", "\xe2\x80\xaf", "\xe2\x81\x9f", "\xe3\x80\x80"};
  return std::any_of(std::begin(kSpaces), std::end(kSpaces), [&](const char* s) { return cp == s; });
}

}  // namespace encbench::tokenizer::jinja
