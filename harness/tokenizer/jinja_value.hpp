#pragma once
// The values a chat template computes with (harness/tokenizer/chat_template.hpp): Python's types as
// Jinja2 sees them (None, bool, int, float, str, list, dict in insertion order, namespace objects,
// callables) plus Jinja's default Undefined. Printing, truthiness, equality and JSON follow Python
// so that a rendered prompt is byte-identical to transformers' apply_chat_template.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace encbench::tokenizer::jinja {

struct Value;
using ValueList = std::vector<Value>;
using ValueDict = std::vector<std::pair<std::string, Value>>;  // Python dict: insertion order

// Arguments of a call: positional, then keyword (name, value) as written.
struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> named;
};

struct MacroDef;  // jinja_ast.hpp
struct Callable {
  std::string name;
  std::function<Value(CallArgs&)> builtin;  // builtins and bound methods
  const MacroDef* macro = nullptr;          // a {% macro %}: the renderer runs it
};

// Thrown for any failure while rendering (raise_exception, undefined access, a type error): the
// message is what Jinja2 would say, without location (Jinja2 gives none for most of them either).
class TemplateRuntimeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Lists and dicts nest at most this deep (printing, comparing and freeing them recurse).
constexpr int kMaxValueNesting = 512;

struct Value {
  enum class Type : std::uint8_t { undefined, none, boolean, integer, floating, string, list, dict, callable };
  Type type = Type::undefined;
  bool namespace_object = false;  // a namespace(): a dict whose attributes `set` may assign
  // How a list prints (Python's repr): a list, a tuple ((1, 2)), or a dict's items() view.
  enum class ListStyle : std::uint8_t { list, tuple, dict_items };
  ListStyle list_style = ListStyle::list;
  bool boolean = false;
  std::int64_t integer = 0;
  double floating = 0;
  std::string text;  // the string; for undefined: the error an access would raise
  std::shared_ptr<ValueList> list;
  std::shared_ptr<ValueDict> dict;  // shared: a namespace is one object wherever it is referenced
  std::shared_ptr<const Callable> callable;
  std::uint16_t nesting = 0;  // list/dict levels in this value when it was made

  static Value undefined(std::string error) {
    Value v;
    v.text = std::move(error);
    return v;
  }
  static Value none() { return make(Type::none); }
  static Value of(bool b) {
    Value v = make(Type::boolean);
    v.boolean = b;
    return v;
  }
  static Value of(std::int64_t i) {
    Value v = make(Type::integer);
    v.integer = i;
    return v;
  }
  static Value of_float(double d) {
    Value v = make(Type::floating);
    v.floating = d;
    return v;
  }
  static Value of(std::string s) {
    Value v = make(Type::string);
    v.text = std::move(s);
    return v;
  }
  static Value of(ValueList items) {
    Value v = make(Type::list);
    int deepest = 0;
    for (const auto& item : items) deepest = std::max<int>(deepest, item.nesting);
    v.set_nesting(deepest + 1);
    v.list = std::make_shared<ValueList>(std::move(items));
    return v;
  }
  static Value of(ValueDict items) {
    Value v = make(Type::dict);
    int deepest = 0;
    for (const auto& item : items) deepest = std::max<int>(deepest, item.second.nesting);
    v.set_nesting(deepest + 1);
    v.dict = std::make_shared<ValueDict>(std::move(items));
    return v;
  }
  static Value tuple(ValueList items) {
    Value v = of(std::move(items));
    v.list_style = ListStyle::tuple;
    return v;
  }
  static Value function(std::string name, std::function<Value(CallArgs&)> fn) {
    Value v = make(Type::callable);
    v.callable = std::make_shared<Callable>(Callable{std::move(name), std::move(fn), nullptr});
    return v;
  }

  bool is_undefined() const { return type == Type::undefined; }
  bool is_number() const { return type == Type::integer || type == Type::floating || type == Type::boolean; }
  // Python's bool(x); Undefined is false.
  bool truthy() const;
  // The dict's value for `key`, or nullptr.
  const Value* find(const std::string& key) const;
  // Python's type name ("str", "dict", ...) for error messages.
  std::string type_name() const;

 private:
  void set_nesting(int levels) {
    if (levels > kMaxValueNesting) throw TemplateRuntimeError("lists and dicts nested deeper than " + std::to_string(kMaxValueNesting));
    nesting = static_cast<std::uint16_t>(levels);
  }
  static Value make(Type t) {
    Value v;
    v.type = t;
    return v;
  }
};

// Python's str(x) as Jinja prints it ({{ x }}): None -> "None", True -> "True", floats by repr,
// lists and dicts by repr; Undefined prints nothing.
std::string to_str(const Value& v);
// Python's repr(x) (strings quoted as Python quotes them).
std::string to_repr(const Value& v);
// Python's float repr: the shortest text that reads back, "1.0", "1e+20", "inf", "nan".
std::string float_repr(double d);
// Python's ==, with 1 == 1.0 == True; Undefined equals only Undefined.
bool equals(const Value& a, const Value& b);

// json.dumps(x, ensure_ascii, indent, separators, sort_keys) as transformers' tojson filter calls
// it. indent: none (one line), or the string each level adds ("    " for indent=4).
struct JsonDumpOptions {
  bool ensure_ascii = false;
  std::optional<std::string> indent;
  std::optional<std::pair<std::string, std::string>> separators;
  bool sort_keys = false;
};
std::string to_json(const Value& v, const JsonDumpOptions& options);

// JSON (ordered, as a chat request carries it) to template values and back.
Value from_json(const nlohmann::ordered_json& j);

// UTF-8 helpers: Python counts, indexes and slices strings by code point.
std::vector<std::string> code_points(const std::string& s);
std::size_t code_point_count(const std::string& s);
// Python's str.isspace() for one code point's UTF-8 bytes.
bool is_python_space(const std::string& code_point);

}  // namespace encbench::tokenizer::jinja
