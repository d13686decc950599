#include "harness/tokenizer/jinja_builtins.hpp"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <set>

namespace encbench::tokenizer::jinja {
namespace {

[[noreturn]] void type_error(const std::string& message) { throw TemplateRuntimeError(message); }

// Reads a call's arguments by position or keyword, as Python binds them.
class Args {
 public:
  Args(CallArgs& args, std::string function) : args_(args), function_(std::move(function)) {}
  const Value* find(std::size_t position, const char* name) const {
    if (position < args_.positional.size()) return &args_.positional[position];
    for (const auto& [k, v] : args_.named)
      if (k == name) return &v;
    return nullptr;
  }
  Value get(std::size_t position, const char* name, Value fallback) const {
    const Value* v = find(position, name);
    return v ? *v : std::move(fallback);
  }
  Value required(std::size_t position, const char* name) const {
    const Value* v = find(position, name);
    if (!v) type_error(function_ + "() missing required argument '" + name + "'");
    return *v;
  }
  std::string string(std::size_t position, const char* name) const {
    const Value v = required(position, name);
    if (v.type != Value::Type::string) type_error(function_ + "() argument '" + name + "' must be str, not " + v.type_name());
    return v.text;
  }
  std::int64_t integer(std::size_t position, const char* name, std::int64_t fallback) const {
    const Value* v = find(position, name);
    if (!v || v->type == Value::Type::none) return fallback;
    if (v->type == Value::Type::integer) return v->integer;
    if (v->type == Value::Type::boolean) return v->boolean;
    type_error(function_ + "() argument '" + name + "' must be int, not " + v->type_name());
  }
  std::size_t positional_count() const { return args_.positional.size(); }
  const CallArgs& raw() const { return args_; }

 private:
  CallArgs& args_;
  std::string function_;
};

void fail_if_undefined(const Value& v) {
  if (v.is_undefined()) throw TemplateRuntimeError(v.text);
}

// ---- strings (Python's str methods, by code point)

std::set<std::string> char_set(const std::string& chars) {
  const auto cps = code_points(chars);
  return {cps.begin(), cps.end()};
}

std::string strip(const std::string& s, const Value& chars, bool left, bool right) {
  const auto cps = code_points(s);
  const bool whitespace = chars.type == Value::Type::none || chars.is_undefined();
  if (!whitespace && chars.type != Value::Type::string) type_error("strip arg must be None or str");
  const auto set = whitespace ? std::set<std::string>{} : char_set(chars.text);
  auto strippable = [&](const std::string& cp) { return whitespace ? is_python_space(cp) : set.count(cp) > 0; };
  std::size_t begin = 0, end = cps.size();
  if (left)
    while (begin < end && strippable(cps[begin])) ++begin;
  if (right)
    while (end > begin && strippable(cps[end - 1])) --end;
  std::string out;
  for (std::size_t i = begin; i < end; ++i) out += cps[i];
  return out;
}

Value split(const std::string& s, const Value& sep, std::int64_t maxsplit) {
  ValueList parts;
  if (sep.type == Value::Type::none || sep.is_undefined()) {  // runs of whitespace, no empty parts
    const auto cps = code_points(s);
    std::size_t i = 0;
    while (i < cps.size()) {
      while (i < cps.size() && is_python_space(cps[i])) ++i;
      if (i >= cps.size()) break;
      std::string part;
      if (maxsplit >= 0 && static_cast<std::int64_t>(parts.size()) >= maxsplit) {
        for (; i < cps.size(); ++i) part += cps[i];  // the rest as it is, trailing space kept
        parts.push_back(Value::of(std::move(part)));
        break;
      }
      while (i < cps.size() && !is_python_space(cps[i])) part += cps[i++];
      parts.push_back(Value::of(std::move(part)));
    }
    return Value::of(std::move(parts));
  }
  if (sep.type != Value::Type::string) type_error("must be str or None, not " + sep.type_name());
  if (sep.text.empty()) type_error("empty separator");
  std::size_t from = 0;
  while (maxsplit < 0 || static_cast<std::int64_t>(parts.size()) < maxsplit) {
    const auto at = s.find(sep.text, from);
    if (at == std::string::npos) break;
    parts.push_back(Value::of(s.substr(from, at - from)));
    from = at + sep.text.size();
  }
  parts.push_back(Value::of(s.substr(from)));
  return Value::of(std::move(parts));
}

bool affix_matches(const std::string& s, const Value& affix, bool prefix) {
  auto one = [&](const Value& a) {
    if (a.type != Value::Type::string) type_error(std::string(prefix ? "startswith" : "endswith") + " first arg must be str or a tuple of str");
    if (a.text.size() > s.size()) return false;
    return prefix ? s.compare(0, a.text.size(), a.text) == 0 : s.compare(s.size() - a.text.size(), a.text.size(), a.text) == 0;
  };
  if (affix.type == Value::Type::list) return std::any_of(affix.list->begin(), affix.list->end(), one);
  return one(affix);
}

std::string ascii_case(std::string s, bool upper) {
  for (auto& c : s) c = static_cast<char>(upper ? std::toupper(static_cast<unsigned char>(c)) : std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string title_case(const std::string& s) {
  std::string out = s;
  bool previous_cased = false;
  for (auto& c : out) {
    const auto u = static_cast<unsigned char>(c);
    const bool letter = std::isalpha(u) != 0;
    c = static_cast<char>(letter ? (previous_cased ? std::tolower(u) : std::toupper(u)) : u);
    previous_cased = letter;
  }
  return out;
}

std::string replace_all(const std::string& s, const std::string& from, const std::string& to, std::int64_t count) {
  std::string out;
  if (from.empty()) {  // Python inserts `to` between code points (and at both ends)
    const auto cps = code_points(s);
    std::int64_t done = 0;
    for (std::size_t i = 0; i <= cps.size(); ++i) {
      if (count < 0 || done < count) out += to, ++done;
      if (i < cps.size()) out += cps[i];
    }
    return out;
  }
  std::size_t at = 0;
  for (std::int64_t done = 0; count < 0 || done < count; ++done) {
    const auto hit = s.find(from, at);
    if (hit == std::string::npos) break;
    out += s.substr(at, hit - at) + to;
    at = hit + from.size();
  }
  return out + s.substr(at);
}


Value string_method(const std::string& s, const std::string& name) {
  auto method = [&](auto fn) { return Value::function("str." + name, [s, name, fn](CallArgs& call) { return fn(Args(call, name)); }); };
  if (name == "startswith" || name == "endswith")
    return method([s, name](const Args& a) { return Value::of(affix_matches(s, a.required(0, "prefix"), name == "startswith")); });
  if (name == "strip" || name == "lstrip" || name == "rstrip")
    return method([s, name](const Args& a) {
      return Value::of(strip(s, a.get(0, "chars", Value::none()), name != "rstrip", name != "lstrip"));
    });
  if (name == "split")
    return method([s](const Args& a) { return split(s, a.get(0, "sep", Value::none()), a.integer(1, "maxsplit", -1)); });
  if (name == "upper" || name == "lower")
    return method([s, name](const Args&) { return Value::of(ascii_case(s, name == "upper")); });
  if (name == "title") return method([s](const Args&) { return Value::of(title_case(s)); });
  if (name == "capitalize")
    return method([s](const Args&) { return Value::of(ascii_case(s.substr(0, 1), true) + ascii_case(s.size() > 1 ? s.substr(1) : "", false)); });
  if (name == "replace")
    return method([s](const Args& a) { return Value::of(replace_all(s, a.string(0, "old"), a.string(1, "new"), a.integer(2, "count", -1))); });
  if (name == "find" || name == "count")
    return method([s, name](const Args& a) {
      const std::string sub = a.string(0, "sub");
      if (name == "find") {
        const auto at = s.find(sub);
        return Value::of(at == std::string::npos ? std::int64_t{-1} : static_cast<std::int64_t>(code_point_count(s.substr(0, at))));
      }
      if (sub.empty()) return Value::of(static_cast<std::int64_t>(code_point_count(s) + 1));
      std::int64_t n = 0;
      for (auto at = s.find(sub); at != std::string::npos; at = s.find(sub, at + sub.size())) ++n;
      return Value::of(n);
    });
  if (name == "join")
    return method([s](const Args& a) {
      const Value items = a.required(0, "iterable");
      if (items.type != Value::Type::list) type_error("can only join an iterable");
      std::string out;
      for (std::size_t i = 0; i < items.list->size(); ++i) {
        if ((*items.list)[i].type != Value::Type::string) type_error("sequence item " + std::to_string(i) + ": expected str instance");
        out += (i ? s : "") + (*items.list)[i].text;
      }
      return Value::of(std::move(out));
    });
  if (name == "splitlines")
    return method([s](const Args&) {
      ValueList lines;
      std::size_t from = 0;
      while (from < s.size()) {
        const auto nl = s.find_first_of("\n\r", from);
        if (nl == std::string::npos) {
          lines.push_back(Value::of(s.substr(from)));
          break;
        }
        lines.push_back(Value::of(s.substr(from, nl - from)));
        from = nl + ((s[nl] == '\r' && nl + 1 < s.size() && s[nl + 1] == '\n') ? 2 : 1);
      }
      return Value::of(std::move(lines));
    });
  return Value::undefined("'str object' has no attribute '" + name + "'");
}

Value dict_method(const Value& d, const std::string& name) {
  if (name == "items" || name == "keys" || name == "values")
    return Value::function("dict." + name, [d, name](CallArgs&) {
      ValueList out;
      for (const auto& [k, v] : *d.dict) {
        if (name == "items") out.push_back(Value::tuple(ValueList{Value::of(k), v}));
        else out.push_back(name == "keys" ? Value::of(k) : v);
      }
      Value view = Value::of(std::move(out));
      if (name == "items") view.list_style = Value::ListStyle::dict_items;  // Python prints dict_items([...])
      return view;
    });
  if (name == "get")
    return Value::function("dict.get", [d](CallArgs& call) {
      const Args a(call, "get");
      const Value key = a.required(0, "key");
      const Value* found = key.type == Value::Type::string ? d.find(key.text) : nullptr;
      return found ? *found : a.get(1, "default", Value::none());
    });
  return Value::undefined("");
}

std::int64_t python_index(std::int64_t i, std::size_t size) { return i < 0 ? i + static_cast<std::int64_t>(size) : i; }

}  // namespace

Value get_attribute(const Value& target, const std::string& name) {
  fail_if_undefined(target);
  if (target.type == Value::Type::dict) {
    if (!target.namespace_object) {
      Value method = dict_method(target, name);
      if (!method.is_undefined()) return method;
    }
    if (const Value* v = target.find(name)) return *v;
    return Value::undefined("'" + std::string(target.namespace_object ? "Namespace" : "dict") + " object' has no attribute '" + name + "'");
  }
  if (target.type == Value::Type::string) return string_method(target.text, name);
  return Value::undefined("'" + target.type_name() + " object' has no attribute '" + name + "'");
}

Value get_item(const Value& target, const Value& key) {
  fail_if_undefined(target);
  if (target.type == Value::Type::dict) {
    if (key.type == Value::Type::string) {
      if (const Value* v = target.find(key.text)) return *v;
      if (!target.namespace_object) {
        Value method = dict_method(target, key.text);
        if (!method.is_undefined()) return method;
      }
    }
    return Value::undefined("'dict object' has no attribute " + to_repr(key));
  }
  if ((target.type == Value::Type::list || target.type == Value::Type::string) &&
      (key.type == Value::Type::integer || key.type == Value::Type::boolean)) {
    const std::int64_t raw = key.type == Value::Type::boolean ? key.boolean : key.integer;
    if (target.type == Value::Type::list) {
      const auto i = python_index(raw, target.list->size());
      if (i >= 0 && i < static_cast<std::int64_t>(target.list->size())) return (*target.list)[static_cast<std::size_t>(i)];
      return Value::undefined("list object has no element " + std::to_string(raw));
    }
    const auto cps = code_points(target.text);
    const auto i = python_index(raw, cps.size());
    if (i >= 0 && i < static_cast<std::int64_t>(cps.size())) return Value::of(cps[static_cast<std::size_t>(i)]);
    return Value::undefined("str object has no element " + std::to_string(raw));
  }
  if (key.type == Value::Type::string) return get_attribute(target, key.text);
  return Value::undefined("'" + target.type_name() + " object' has no attribute " + to_repr(key));
}

Value get_slice(const Value& target, const Value* start, const Value* stop, const Value* step) {
  fail_if_undefined(target);
  auto bound = [](const Value* v, const char* what) -> std::optional<std::int64_t> {
    if (!v || v->type == Value::Type::none) return std::nullopt;
    if (v->type == Value::Type::integer) return v->integer;
    if (v->type == Value::Type::boolean) return v->boolean;
    type_error(std::string("slice ") + what + " must be an integer or None");
  };
  const std::int64_t st = bound(step, "step").value_or(1);
  if (st == 0) type_error("slice step cannot be zero");
  std::vector<std::string> cps;
  const bool is_string = target.type == Value::Type::string;
  if (is_string) cps = code_points(target.text);
  else if (target.type != Value::Type::list) type_error("'" + target.type_name() + "' object is not subscriptable");
  const auto n = static_cast<std::int64_t>(is_string ? cps.size() : target.list->size());
  // Python's slice.indices(n).
  auto clamp = [&](std::optional<std::int64_t> v, std::int64_t fallback) {
    if (!v) return fallback;
    std::int64_t i = *v < 0 ? *v + n : *v;
    if (st > 0) return std::clamp<std::int64_t>(i, 0, n);
    return std::clamp<std::int64_t>(i, -1, n - 1);
  };
  const std::int64_t from = clamp(bound(start, "start"), st > 0 ? 0 : n - 1);
  const std::int64_t to = clamp(bound(stop, "stop"), st > 0 ? n : -1);
  std::string text;
  ValueList items;
  for (std::int64_t i = from; st > 0 ? i < to : i > to; i += st) {
    if (is_string) text += cps[static_cast<std::size_t>(i)];
    else items.push_back((*target.list)[static_cast<std::size_t>(i)]);
  }
  return is_string ? Value::of(std::move(text)) : Value::of(std::move(items));
}

bool contains(const Value& container, const Value& item) {
  switch (container.type) {
    case Value::Type::undefined: return false;  // Jinja's Undefined iterates as empty
    case Value::Type::string:
      if (item.type != Value::Type::string) type_error("'in <string>' requires string as left operand, not " + item.type_name());
      return container.text.find(item.text) != std::string::npos;
    case Value::Type::list:
      return std::any_of(container.list->begin(), container.list->end(), [&](const Value& v) { return equals(v, item); });
    case Value::Type::dict:
      if (container.namespace_object) type_error("argument of type 'Namespace' is not iterable");
      return item.type == Value::Type::string && container.find(item.text) != nullptr;
    default: type_error("argument of type '" + container.type_name() + "' is not iterable");
  }
}


namespace {

// The items a for loop or a filter sees: a list's elements, a dict's keys, a string's code points;
// Undefined iterates as empty (Jinja's default Undefined).
ValueList iterate(const Value& v) {
  switch (v.type) {
    case Value::Type::undefined: return {};
    case Value::Type::list: return *v.list;
    case Value::Type::string: {
      ValueList out;
      for (auto& cp : code_points(v.text)) out.push_back(Value::of(std::move(cp)));
      return out;
    }
    case Value::Type::dict: {
      if (v.namespace_object) type_error("'Namespace' object is not iterable");
      ValueList out;
      for (const auto& kv : *v.dict) out.push_back(Value::of(kv.first));
      return out;
    }
    default: type_error("'" + v.type_name() + "' object is not iterable");
  }
}

Value filter_tojson(const Value& v, const Args& a) {
  JsonDumpOptions options;
  options.ensure_ascii = a.get(0, "ensure_ascii", Value::of(false)).truthy();
  const Value indent = a.get(1, "indent", Value::none());
  if (indent.type == Value::Type::integer) options.indent = std::string(static_cast<std::size_t>(std::clamp<std::int64_t>(indent.integer, 0, 64)), ' ');
  else if (indent.type == Value::Type::string) options.indent = indent.text;
  else if (indent.type != Value::Type::none) type_error("tojson: indent must be an int or a str");
  const Value separators = a.get(2, "separators", Value::none());
  if (separators.type == Value::Type::list) {
    if (separators.list->size() != 2 || (*separators.list)[0].type != Value::Type::string || (*separators.list)[1].type != Value::Type::string)
      type_error("tojson: separators must be a pair of strings");
    options.separators = std::make_pair((*separators.list)[0].text, (*separators.list)[1].text);
  }
  options.sort_keys = a.get(3, "sort_keys", Value::of(false)).truthy();
  return Value::of(to_json(v, options));
}

Value filter_length(const Value& v) {
  switch (v.type) {
    case Value::Type::undefined: return Value::of(std::int64_t{0});
    case Value::Type::string: return Value::of(static_cast<std::int64_t>(code_point_count(v.text)));
    case Value::Type::list: return Value::of(static_cast<std::int64_t>(v.list->size()));
    case Value::Type::dict:
      if (!v.namespace_object) return Value::of(static_cast<std::int64_t>(v.dict->size()));
      [[fallthrough]];
    default: type_error("object of type '" + v.type_name() + "' has no len()");
  }
}

Value filter_join(const Value& v, const Args& a) {
  const std::string sep = to_str(a.get(0, "d", Value::of(std::string())));
  const Value attribute = a.get(1, "attribute", Value::none());
  std::string out;
  bool first = true;
  for (const Value& item : iterate(v)) {
    const Value shown = attribute.type == Value::Type::none ? item : get_item(item, attribute);
    out += (first ? "" : sep) + to_str(shown);
    first = false;
  }
  return Value::of(std::move(out));
}

Value filter_number(const Value& v, const Args& a, bool floating) {
  const Value fallback = a.get(0, "default", floating ? Value::of_float(0.0) : Value::of(std::int64_t{0}));
  double d = 0;
  if (v.is_number()) d = v.type == Value::Type::floating ? v.floating : static_cast<double>(v.type == Value::Type::boolean ? v.boolean : v.integer);
  else if (v.type == Value::Type::string) {
    const std::string t = strip(v.text, Value::none(), true, true);
    char* end = nullptr;
    d = std::strtod(t.c_str(), &end);
    if (t.empty() || end != t.c_str() + t.size()) return fallback;
  } else return fallback;
  if (floating) return Value::of_float(d);
  if (v.type == Value::Type::integer) return v;
  if (!std::isfinite(d) || std::fabs(d) > 9.2e18) return fallback;
  return Value::of(static_cast<std::int64_t>(d));
}

// select/reject (test on the item) and selectattr/rejectattr (test on an attribute).
Value filter_select(const Value& v, CallArgs& call, bool by_attribute, bool keep) {
  CallArgs rest;
  std::size_t next = 0;
  Value attribute;
  if (by_attribute) {
    if (call.positional.empty()) type_error("selectattr/rejectattr need an attribute name");
    attribute = call.positional[next++];
  }
  std::string test;
  if (next < call.positional.size()) test = to_str(call.positional[next++]);
  for (; next < call.positional.size(); ++next) rest.positional.push_back(call.positional[next]);
  rest.named = call.named;
  if (!test.empty() && !is_known_test(test)) type_error("No test named '" + test + "'.");
  ValueList out;
  for (const Value& item : iterate(v)) {
    const Value subject = by_attribute ? get_item(item, attribute) : item;
    CallArgs args = rest;
    const bool passed = test.empty() ? subject.truthy() : apply_test(test, subject, args);
    if (passed == keep) out.push_back(item);
  }
  return Value::of(std::move(out));
}

Value filter_map(const Value& v, CallArgs& call) {
  const Args a(call, "map");
  ValueList out;
  if (const Value* attribute = a.find(99, "attribute")) {
    const Value fallback = a.get(99, "default", Value::undefined(""));
    for (const Value& item : iterate(v)) {
      Value got = get_item(item, *attribute);
      out.push_back(got.is_undefined() && !fallback.is_undefined() ? fallback : got);
    }
    return Value::of(std::move(out));
  }
  if (call.positional.empty()) type_error("map requires a filter argument");
  const std::string filter = to_str(call.positional[0]);
  if (!is_known_filter(filter)) type_error("No filter named '" + filter + "'.");
  CallArgs rest;
  rest.positional.assign(call.positional.begin() + 1, call.positional.end());
  rest.named = call.named;
  for (const Value& item : iterate(v)) {
    CallArgs args = rest;
    out.push_back(apply_filter(filter, item, args));
  }
  return Value::of(std::move(out));
}

Value filter_indent(const Value& v, const Args& a) {
  const Value width = a.get(0, "width", Value::of(std::int64_t{4}));
  const std::string pad = width.type == Value::Type::string ? width.text : std::string(static_cast<std::size_t>(std::clamp<std::int64_t>(width.integer, 0, 256)), ' ');
  const bool first = a.get(1, "first", Value::of(false)).truthy(), blank = a.get(2, "blank", Value::of(false)).truthy();
  std::string s = to_str(v), out;
  std::size_t from = 0;
  for (bool line_one = true;; line_one = false) {
    const auto nl = s.find('\n', from);
    const std::string line = s.substr(from, nl == std::string::npos ? std::string::npos : nl - from);
    if (line_one ? first : (blank || !line.empty())) out += pad;
    out += line;
    if (nl == std::string::npos) break;
    out += '\n';
    from = nl + 1;
  }
  return Value::of(std::move(out));
}

}  // namespace

namespace {
const std::set<std::string>& filter_names() {
  static const std::set<std::string> names{
      "tojson", "trim",  "length", "count",   "upper",     "lower",      "capitalize", "title",   "default", "d",
      "items",  "join",  "first",  "last",    "string",    "replace",    "list",       "int",     "float",   "abs",
      "reverse", "select", "reject", "selectattr", "rejectattr", "map", "safe", "indent", "wordcount", "unique"};
  return names;
}
const std::set<std::string>& test_names() {
  static const std::set<std::string> names{
      "defined", "undefined", "none", "string", "mapping", "iterable", "sequence", "number", "integer", "float",
      "boolean", "true",      "false", "even",  "odd",     "divisibleby", "eq", "equalto", "==", "ne", "!=", "lt",
      "lessthan", "<", "le", "<=", "gt", "greaterthan", ">", "ge", ">=", "in", "lower", "upper", "callable", "sameas"};
  return names;
}
}  // namespace

bool is_known_filter(const std::string& name) { return filter_names().count(name) > 0; }
bool is_known_test(const std::string& name) { return test_names().count(name) > 0; }

Value apply_filter(const std::string& name, const Value& v, CallArgs& call) {
  const Args a(call, name);
  if (name == "default" || name == "d") {
    const bool boolean = a.get(1, "boolean", Value::of(false)).truthy();
    return v.is_undefined() || (boolean && !v.truthy()) ? a.get(0, "default_value", Value::of(std::string())) : v;
  }
  if (name == "safe") return v;
  if (name == "string") return v.type == Value::Type::string ? v : Value::of(to_str(v));
  if (name == "length" || name == "count") return filter_length(v);
  if (name == "items") {
    if (v.is_undefined()) return Value::of(ValueList{});
    if (v.type != Value::Type::dict || v.namespace_object) type_error("Can only get item pairs from a mapping.");
    CallArgs none;
    Value pairs = dict_method(v, "items").callable->builtin(none);
    pairs.list_style = Value::ListStyle::list;  // Jinja's filter yields the pairs (an iterator), not a view
    return pairs;
  }
  if (name == "list") return Value::of(iterate(v));  // a plain list, whatever it was (tuple, items view)
  if (name == "join") return filter_join(v, a);
  if (name == "select" || name == "reject" || name == "selectattr" || name == "rejectattr")
    return filter_select(v, call, name.find("attr") != std::string::npos, name[0] == 's');
  if (name == "map") return filter_map(v, call);
  if (name == "first" || name == "last") {
    if (v.type == Value::Type::dict && name == "last") type_error("'dict' object is not reversible");
    const ValueList items = iterate(v);
    if (items.empty()) return Value::undefined("No " + name + " item, sequence was empty.");
    return name == "first" ? items.front() : items.back();
  }
  if (name == "reverse") {
    if (v.type == Value::Type::string) {
      auto cps = code_points(v.text);
      std::string out;
      for (auto it = cps.rbegin(); it != cps.rend(); ++it) out += *it;
      return Value::of(std::move(out));
    }
    ValueList items = iterate(v);
    std::reverse(items.begin(), items.end());
    return Value::of(std::move(items));
  }
  if (name == "unique") {
    ValueList out;
    for (const Value& item : iterate(v))
      if (std::none_of(out.begin(), out.end(), [&](const Value& o) { return equals(o, item); })) out.push_back(item);
    return Value::of(std::move(out));
  }
  if (name == "int" || name == "float") return filter_number(v, a, name == "float");
  if (name == "abs") {
    if (v.type == Value::Type::integer) return v.integer == INT64_MIN ? Value::of_float(9.223372036854775808e18) : Value::of(v.integer < 0 ? -v.integer : v.integer);
    if (v.type == Value::Type::floating) return Value::of_float(std::fabs(v.floating));
    if (v.type == Value::Type::boolean) return Value::of(static_cast<std::int64_t>(v.boolean));
    type_error("bad operand type for abs(): '" + v.type_name() + "'");
  }
  if (name == "tojson") return filter_tojson(v, a);
  if (name == "indent") return filter_indent(v, a);
  if (name == "wordcount") return Value::of(static_cast<std::int64_t>(split(to_str(v), Value::none(), -1).list->size()));
  // The string filters, on str(value) as Jinja2's soft_str.
  const std::string text = to_str(v);
  if (name == "trim") return Value::of(strip(text, a.get(0, "chars", Value::none()), true, true));
  if (name == "upper" || name == "lower") return Value::of(ascii_case(text, name == "upper"));
  if (name == "capitalize") return Value::of(ascii_case(text.substr(0, 1), true) + ascii_case(text.size() > 1 ? text.substr(1) : "", false));
  if (name == "title") return Value::of(title_case(text));
  if (name == "replace") return Value::of(replace_all(text, to_str(a.required(0, "old")), to_str(a.required(1, "new")), a.integer(2, "count", -1)));
  type_error("No filter named '" + name + "'.");
}

bool apply_test(const std::string& name, const Value& v, CallArgs& call) {
  const Args a(call, name);
  using T = Value::Type;
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.type == T::none;
  if (name == "string") return v.type == T::string;
  if (name == "mapping") return v.type == T::dict && !v.namespace_object;
  if (name == "iterable") return v.type == T::undefined || v.type == T::string || v.type == T::list || (v.type == T::dict && !v.namespace_object);
  if (name == "sequence") return v.type == T::undefined || v.type == T::string || v.type == T::list || (v.type == T::dict && !v.namespace_object);
  if (name == "number") return v.is_number();
  if (name == "integer") return v.type == T::integer;
  if (name == "float") return v.type == T::floating;
  if (name == "boolean") return v.type == T::boolean;
  if (name == "true" || name == "false") return v.type == T::boolean && v.boolean == (name == "true");
  if (name == "callable") return v.type == T::callable;
  if (name == "lower" || name == "upper") {
    const std::string s = to_str(v);
    const bool has_cased = std::any_of(s.begin(), s.end(), [](char c) { return std::isalpha(static_cast<unsigned char>(c)); });
    return has_cased && s == ascii_case(s, name == "upper");
  }
  if (name == "even" || name == "odd" || name == "divisibleby") {
    if (v.type != T::integer && v.type != T::boolean) type_error("'" + name + "' test needs an integer");
    const std::int64_t x = v.type == T::boolean ? v.boolean : v.integer;
    const std::int64_t by = name == "divisibleby" ? a.integer(0, "num", 1) : 2;
    if (by == 0) type_error("integer division or modulo by zero");
    const std::int64_t r = by == -1 ? 0 : x % by;
    return name == "odd" ? r != 0 : r == 0;
  }
  if (name == "in") return contains(a.required(0, "seq"), v);
  if (name == "sameas") {
    const Value other = a.required(0, "other");
    if (v.type == T::list || v.type == T::dict) return v.type == other.type && (v.list ? v.list == other.list : v.dict == other.dict);
    return v.type == other.type && equals(v, other);
  }
  const Value other = a.required(0, "other");
  if (name == "eq" || name == "equalto" || name == "==") return equals(v, other);
  if (name == "ne" || name == "!=") return !equals(v, other);
  if (!(v.is_number() && other.is_number()) && !(v.type == T::string && other.type == T::string))
    type_error("'<' not supported between instances of '" + v.type_name() + "' and '" + other.type_name() + "'");
  const bool strings = v.type == T::string;
  const auto num = [](const Value& x) { return x.type == T::floating ? x.floating : static_cast<double>(x.type == T::boolean ? x.boolean : x.integer); };
  const int cmp = strings ? v.text.compare(other.text) : (num(v) < num(other) ? -1 : num(v) > num(other) ? 1 : 0);
  if (name == "lt" || name == "lessthan" || name == "<") return cmp < 0;
  if (name == "le" || name == "<=") return cmp <= 0;
  if (name == "gt" || name == "greaterthan" || name == ">") return cmp > 0;
  return cmp >= 0;  // ge, >=
}

namespace {

Value make_range(CallArgs& call) {
  const Args a(call, "range");
  std::int64_t start = 0, stop = 0, step = 1;
  if (a.positional_count() == 1) stop = a.integer(0, "stop", 0);
  else {
    start = a.integer(0, "start", 0);
    stop = a.integer(1, "stop", 0);
    step = a.integer(2, "step", 1);
  }
  if (step == 0) type_error("range() arg 3 must not be zero");
  const double count = std::max(0.0, std::ceil((static_cast<double>(stop) - static_cast<double>(start)) / static_cast<double>(step)));
  if (count > static_cast<double>(kMaxRange))
    type_error("Range too big. The sandbox blocks ranges larger than MAX_RANGE (" + std::to_string(kMaxRange) + ").");
  ValueList out;
  for (std::int64_t i = start; step > 0 ? i < stop : i > stop; i += step) out.push_back(Value::of(i));
  return Value::of(std::move(out));
}

Value make_namespace(CallArgs& call) {
  ValueDict attrs;
  auto set = [&](const std::string& k, const Value& v) {
    for (auto& kv : attrs)
      if (kv.first == k) {
        kv.second = v;
        return;
      }
    attrs.emplace_back(k, v);
  };
  for (const Value& p : call.positional) {
    if (p.type != Value::Type::dict) type_error("namespace() takes a mapping and keyword arguments");
    for (const auto& [k, v] : *p.dict) set(k, v);
  }
  for (const auto& [k, v] : call.named) set(k, v);
  Value ns = Value::of(std::move(attrs));
  ns.namespace_object = true;
  return ns;
}

std::string strftime_now(const std::string& format) {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char buf[512];
  const std::size_t n = std::strftime(buf, sizeof buf, format.c_str(), &local);
  return std::string(buf, n);
}

}  // namespace

Value global_function(const std::string& name) {
  if (name == "range") return Value::function(name, make_range);
  if (name == "namespace") return Value::function(name, make_namespace);
  if (name == "dict")
    return Value::function(name, [](CallArgs& call) {
      ValueDict out;
      for (auto& [k, v] : call.named) out.emplace_back(k, v);
      return Value::of(std::move(out));
    });
  if (name == "raise_exception")
    return Value::function(name, [](CallArgs& call) -> Value {
      throw TemplateRuntimeError(call.positional.empty() ? std::string() : to_str(call.positional[0]));
    });
  if (name == "strftime_now")
    return Value::function(name, [](CallArgs& call) { return Value::of(strftime_now(Args(call, "strftime_now").string(0, "format"))); });
  return Value::undefined("'" + name + "' is undefined");
}

}  // namespace encbench::tokenizer::jinja
