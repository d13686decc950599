// Runs a parsed chat template (jinja_ast.hpp) as Jinja2 runs it: scopes as Jinja2 keeps them (a
// for loop's body gets a fresh scope each iteration, so `set` inside it does not leak; namespace()
// objects carry state out), Python operators and comparisons, Jinja's default Undefined.
#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "harness/tokenizer/jinja_ast.hpp"
#include "harness/tokenizer/jinja_builtins.hpp"

namespace encbench::tokenizer::jinja {
namespace {

using Scope = std::unordered_map<std::string, Value>;

[[noreturn]] void runtime_error(const std::string& message) { throw TemplateRuntimeError(message); }

void fail_if_undefined(const Value& v) {
  if (v.is_undefined()) runtime_error(v.text);
}

std::int64_t as_int(const Value& v) { return v.type == Value::Type::boolean ? v.boolean : v.integer; }
double as_double(const Value& v) { return v.type == Value::Type::floating ? v.floating : static_cast<double>(as_int(v)); }

[[noreturn]] void unsupported(const std::string& op, const Value& a, const Value& b) {
  runtime_error("unsupported operand type(s) for " + op + ": '" + a.type_name() + "' and '" + b.type_name() + "'");
}

Value integer_op(const std::string& op, std::int64_t x, std::int64_t y) {
  std::int64_t r = 0;
  bool overflow = false;
  if (op == "+") overflow = __builtin_add_overflow(x, y, &r);
  else if (op == "-") overflow = __builtin_sub_overflow(x, y, &r);
  else if (op == "*") overflow = __builtin_mul_overflow(x, y, &r);
  else if (op == "//" || op == "%") {
    if (y == 0) runtime_error("integer division or modulo by zero");
    if (x == INT64_MIN && y == -1) overflow = true;
    else {
      std::int64_t q = x / y, m = x % y;
      if (m != 0 && ((m < 0) != (y < 0))) --q, m += y;  // Python floors
      r = op == "//" ? q : m;
    }
  } else if (op == "**") {
    if (y < 0) return Value::of_float(std::pow(static_cast<double>(x), static_cast<double>(y)));
    r = 1;
    for (std::int64_t i = 0; i < y && !overflow; ++i) overflow = __builtin_mul_overflow(r, x, &r);
  }
  if (overflow) runtime_error("integer overflow in '" + op + "' (Python's integers are unbounded; these are 64-bit)");
  return Value::of(r);
}

Value float_op(const std::string& op, double x, double y) {
  if (op == "+") return Value::of_float(x + y);
  if (op == "-") return Value::of_float(x - y);
  if (op == "*") return Value::of_float(x * y);
  if (op == "/") {
    if (y == 0) runtime_error("division by zero");
    return Value::of_float(x / y);
  }
  if (op == "//" || op == "%") {
    if (y == 0) runtime_error("float floor division by zero");
    const double m = std::fmod(x, y);
    const double mod = (m != 0 && ((m < 0) != (y < 0))) ? m + y : m;
    return Value::of_float(op == "%" ? mod : std::floor((x - mod) / y + 0.5));
  }
  return Value::of_float(std::pow(x, y));
}

Value repeat(const Value& seq, std::int64_t times, std::size_t max_bytes) {
  times = std::max<std::int64_t>(times, 0);
  // Bounded like output: a list item is counted as 16 bytes, roughly what printing it takes.
  const std::size_t unit = seq.type == Value::Type::string ? seq.text.size() : seq.list->size() * 16;
  if (unit > 0 && static_cast<double>(unit) * static_cast<double>(times) > static_cast<double>(max_bytes))
    runtime_error("repetition larger than the output limit");
  if (seq.type == Value::Type::string) {
    std::string out;
    for (std::int64_t i = 0; i < times; ++i) out += seq.text;
    return Value::of(std::move(out));
  }
  ValueList out;
  for (std::int64_t i = 0; i < times; ++i) out.insert(out.end(), seq.list->begin(), seq.list->end());
  return Value::of(std::move(out));
}

Value binary(const std::string& op, const Value& a, const Value& b, std::size_t max_bytes) {
  fail_if_undefined(a);
  fail_if_undefined(b);
  using T = Value::Type;
  if (a.is_number() && b.is_number()) {
    if (op == "/") return float_op(op, as_double(a), as_double(b));
    if (a.type != T::floating && b.type != T::floating) return integer_op(op, as_int(a), as_int(b));
    return float_op(op, as_double(a), as_double(b));
  }
  if (op == "+" && a.type == b.type && a.type == T::string) {
    if (a.text.size() + b.text.size() > max_bytes) runtime_error("string larger than the output limit");
    return Value::of(a.text + b.text);
  }
  if (op == "+" && a.type == b.type && a.type == T::list) {
    ValueList out = *a.list;
    out.insert(out.end(), b.list->begin(), b.list->end());
    return Value::of(std::move(out));
  }
  if (op == "*" && (a.type == T::string || a.type == T::list) && (b.type == T::integer || b.type == T::boolean))
    return repeat(a, as_int(b), max_bytes);
  if (op == "*" && (b.type == T::string || b.type == T::list) && (a.type == T::integer || a.type == T::boolean))
    return repeat(b, as_int(a), max_bytes);
  if (op == "%" && a.type == T::string) runtime_error("printf-style string formatting ('%' on a str) is not supported");
  unsupported(op, a, b);
}

int order(const Value& a, const Value& b, const std::string& op) {
  using T = Value::Type;
  if (a.is_number() && b.is_number()) {
    const double x = as_double(a), y = as_double(b);
    if (a.type != T::floating && b.type != T::floating) return as_int(a) < as_int(b) ? -1 : as_int(a) > as_int(b);
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (a.type == T::string && b.type == T::string) return a.text < b.text ? -1 : a.text > b.text;
  if (a.type == T::list && b.type == T::list) {
    for (std::size_t i = 0; i < std::min(a.list->size(), b.list->size()); ++i)
      if (!equals((*a.list)[i], (*b.list)[i])) return order((*a.list)[i], (*b.list)[i], op);
    return a.list->size() < b.list->size() ? -1 : a.list->size() > b.list->size();
  }
  fail_if_undefined(a);
  fail_if_undefined(b);
  runtime_error("'" + op + "' not supported between instances of '" + a.type_name() + "' and '" + b.type_name() + "'");
}

bool compare(const std::string& op, const Value& a, const Value& b) {
  if (op == "==") return equals(a, b);
  if (op == "!=") return !equals(a, b);
  if (op == "in") return contains(b, a);
  if (op == "not in") return !contains(b, a);
  const int c = order(a, b, op);
  if (op == "<") return c < 0;
  if (op == "<=") return c <= 0;
  if (op == ">") return c > 0;
  return c >= 0;
}


enum class Flow { normal, break_loop, continue_loop };

class Renderer {
 public:
  Renderer(const ValueDict& context, const RenderLimits& limits) : limits_(limits) {
    scopes_.emplace_back();
    for (const auto& [k, v] : context) scopes_.back()[k] = v;
  }
  // A namespace assigned into itself (directly or through a list) is a reference cycle: clear the
  // namespaces this render assigned to, so that every value is freed, one level at a time.
  ~Renderer() {
    for (auto& d : assigned_namespaces_) d->clear();
  }
  Renderer(const Renderer&) = delete;
  Renderer& operator=(const Renderer&) = delete;
  std::string run(const Body& body) {
    std::string out;
    exec(body, out);
    return out;
  }

 private:
  void step() {
    if (++steps_ > limits_.max_steps) runtime_error("template ran more than " + std::to_string(limits_.max_steps) + " steps");
  }
  void emit(std::string& out, const std::string& text) {
    if (out.size() + text.size() > limits_.max_output_bytes)
      runtime_error("output larger than " + std::to_string(limits_.max_output_bytes) + " bytes");
    out += text;
  }
  Value lookup(const std::string& name) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      const auto found = it->find(name);
      if (found != it->end()) return found->second;
    }
    return global_function(name);
  }

  Flow exec(const Body& body, std::string& out);
  Flow exec_for(const Stmt& s, std::string& out);
  void exec_set(const Stmt& s);
  Value eval(const Expr& e);
  Value eval_operator(const Expr& e);
  CallArgs eval_args(const Expr& e);
  Value call(const Value& callee, CallArgs& args);
  Value call_macro(const MacroDef& macro, CallArgs& args);

  const RenderLimits& limits_;
  std::vector<Scope> scopes_;
  std::uint64_t steps_ = 0;
  int call_depth_ = 0;
  std::vector<std::shared_ptr<ValueDict>> assigned_namespaces_;
};

Flow Renderer::exec(const Body& body, std::string& out) {
  for (const Stmt& s : body) {
    step();
    switch (s.kind) {
      case Stmt::Kind::text: emit(out, s.text); break;
      case Stmt::Kind::output: emit(out, to_str(eval(*s.expr))); break;
      case Stmt::Kind::if_: {
        std::size_t branch = 0;
        while (branch < s.conditions.size() && !eval(*s.conditions[branch]).truthy()) ++branch;
        if (branch < s.bodies.size()) {
          const Flow f = exec(s.bodies[branch], out);
          if (f != Flow::normal) return f;
        }
        break;
      }
      case Stmt::Kind::for_: {
        const Flow f = exec_for(s, out);
        if (f != Flow::normal) return f;
        break;
      }
      case Stmt::Kind::set:
      case Stmt::Kind::set_attr:
      case Stmt::Kind::set_block: exec_set(s); break;
      case Stmt::Kind::macro: {
        Value m;
        m.type = Value::Type::callable;
        m.callable = std::make_shared<Callable>(Callable{s.macro->name, {}, s.macro.get()});
        scopes_.back()[s.text] = std::move(m);
        break;
      }
      case Stmt::Kind::break_: return Flow::break_loop;
      case Stmt::Kind::continue_: return Flow::continue_loop;
      case Stmt::Kind::block: {
        const Flow f = exec(s.bodies[0], out);
        if (f != Flow::normal) return f;
        break;
      }
    }
  }
  return Flow::normal;
}

// Jinja's loop variable: index, index0, revindex(0), first, last, length, previtem, nextitem.
Value loop_object(const ValueList& items, std::size_t i) {
  const auto n = static_cast<std::int64_t>(items.size()), k = static_cast<std::int64_t>(i);
  ValueDict loop{{"index", Value::of(k + 1)},         {"index0", Value::of(k)},
                 {"revindex", Value::of(n - k)},       {"revindex0", Value::of(n - k - 1)},
                 {"first", Value::of(i == 0)},         {"last", Value::of(k == n - 1)},
                 {"length", Value::of(n)},             {"depth", Value::of(std::int64_t{1})},
                 {"depth0", Value::of(std::int64_t{0})}};
  loop.emplace_back("previtem", i > 0 ? items[i - 1] : Value::undefined("there is no previous item"));
  loop.emplace_back("nextitem", k + 1 < n ? items[i + 1] : Value::undefined("there is no next item"));
  loop.emplace_back("cycle", Value::function("loop.cycle", [k](CallArgs& args) {
                      if (args.positional.empty()) runtime_error("no items for cycling given");
                      return args.positional[static_cast<std::size_t>(k) % args.positional.size()];
                    }));
  return Value::of(std::move(loop));
}

void bind_targets(Scope& scope, const std::vector<std::string>& targets, const Value& item) {
  if (targets.size() == 1) {
    scope[targets[0]] = item;
    return;
  }
  if (item.type != Value::Type::list && item.type != Value::Type::string) runtime_error("cannot unpack non-iterable " + item.type_name() + " object");
  ValueList values;
  if (item.type == Value::Type::list) values = *item.list;
  else
    for (auto& cp : code_points(item.text)) values.push_back(Value::of(std::move(cp)));
  if (values.size() != targets.size())
    runtime_error((values.size() > targets.size() ? "too many values to unpack (expected " : "not enough values to unpack (expected ") +
                  std::to_string(targets.size()) + ")");
  for (std::size_t i = 0; i < targets.size(); ++i) scope[targets[i]] = values[i];
}

Flow Renderer::exec_for(const Stmt& s, std::string& out) {
  const Value iterable = eval(*s.expr);
  ValueList items;
  if (iterable.type == Value::Type::dict && !iterable.namespace_object) {
    for (const auto& kv : *iterable.dict) items.push_back(Value::of(kv.first));
  } else if (iterable.type == Value::Type::string) {
    for (auto& cp : code_points(iterable.text)) items.push_back(Value::of(std::move(cp)));
  } else if (iterable.type == Value::Type::list) {
    items = *iterable.list;
  } else if (!iterable.is_undefined()) {
    runtime_error("'" + iterable.type_name() + "' object is not iterable");
  }
  if (s.loop_filter) {  // `for x in xs if cond`: loop.* counts only the kept items
    ValueList kept;
    for (const Value& item : items) {
      step();
      scopes_.emplace_back();
      bind_targets(scopes_.back(), s.targets, item);
      const bool keep = eval(*s.loop_filter).truthy();
      scopes_.pop_back();
      if (keep) kept.push_back(item);
    }
    items = std::move(kept);
  }
  if (items.empty()) return s.bodies.size() > 1 ? exec(s.bodies[1], out) : Flow::normal;
  for (std::size_t i = 0; i < items.size(); ++i) {
    step();
    scopes_.emplace_back();
    bind_targets(scopes_.back(), s.targets, items[i]);
    scopes_.back()["loop"] = loop_object(items, i);
    const Flow f = exec(s.bodies[0], out);
    scopes_.pop_back();
    if (f == Flow::break_loop) break;
  }
  return Flow::normal;
}

void Renderer::exec_set(const Stmt& s) {
  if (s.kind == Stmt::Kind::set_block) {
    std::string captured;
    exec(s.bodies[0], captured);
    scopes_.back()[s.text] = Value::of(std::move(captured));
    return;
  }
  Value value = eval(*s.expr);
  if (s.kind == Stmt::Kind::set_attr) {
    const Value ns = lookup(s.text);
    if (ns.type != Value::Type::dict || !ns.namespace_object) runtime_error("cannot assign attribute on non-namespace object");
    if (std::find(assigned_namespaces_.begin(), assigned_namespaces_.end(), ns.dict) == assigned_namespaces_.end())
      assigned_namespaces_.push_back(ns.dict);
    for (auto& kv : *ns.dict)
      if (kv.first == s.attr) {
        kv.second = std::move(value);
        return;
      }
    ns.dict->emplace_back(s.attr, std::move(value));
    return;
  }
  if (!s.targets.empty()) bind_targets(scopes_.back(), s.targets, value);
  else scopes_.back()[s.text] = std::move(value);
}


Value Renderer::eval(const Expr& e) {
  step();
  switch (e.kind) {
    case Expr::Kind::literal: return e.literal;
    case Expr::Kind::name: return lookup(e.name);
    case Expr::Kind::list: {
      ValueList items;
      for (const auto& a : e.args) items.push_back(eval(*a));
      return e.name == "tuple" ? Value::tuple(std::move(items)) : Value::of(std::move(items));
    }
    case Expr::Kind::dict: {
      ValueDict items;
      for (std::size_t i = 0; i + 1 < e.args.size(); i += 2) {
        const Value key = eval(*e.args[i]);
        if (key.type != Value::Type::string) runtime_error("dict keys other than strings are not supported");
        Value value = eval(*e.args[i + 1]);
        auto it = std::find_if(items.begin(), items.end(), [&](const auto& kv) { return kv.first == key.text; });
        if (it != items.end()) it->second = std::move(value);
        else items.emplace_back(key.text, std::move(value));
      }
      return Value::of(std::move(items));
    }
    case Expr::Kind::attr: return get_attribute(eval(*e.args[0]), e.name);
    case Expr::Kind::item: {
      const Value target = eval(*e.args[0]);
      return get_item(target, eval(*e.args[1]));
    }
    case Expr::Kind::slice: {
      const Value target = eval(*e.args[0]);
      Value parts[3];
      for (int i = 0; i < 3; ++i)
        if (e.args[static_cast<std::size_t>(i) + 1]) parts[i] = eval(*e.args[static_cast<std::size_t>(i) + 1]);
      return get_slice(target, e.args[1] ? &parts[0] : nullptr, e.args[2] ? &parts[1] : nullptr, e.args[3] ? &parts[2] : nullptr);
    }
    case Expr::Kind::call: {
      const Value callee = eval(*e.args[0]);
      CallArgs args = eval_args(e);
      return call(callee, args);
    }
    case Expr::Kind::filter: {
      const Value subject = eval(*e.args[0]);
      CallArgs args = eval_args(e);
      return apply_filter(e.name, subject, args);
    }
    case Expr::Kind::test: {
      const Value subject = eval(*e.args[0]);
      CallArgs args = eval_args(e);
      return Value::of(apply_test(e.name, subject, args) != e.negated);
    }
    default: return eval_operator(e);
  }
}

Value Renderer::eval_operator(const Expr& e) {
  switch (e.kind) {
    case Expr::Kind::neg:
    case Expr::Kind::pos: {
      const Value v = eval(*e.args[0]);
      fail_if_undefined(v);
      if (!v.is_number()) runtime_error("bad operand type for unary " + std::string(e.kind == Expr::Kind::neg ? "-" : "+") + ": '" + v.type_name() + "'");
      if (e.kind == Expr::Kind::pos) return v.type == Value::Type::boolean ? Value::of(as_int(v)) : v;
      if (v.type == Value::Type::floating) return Value::of_float(-v.floating);
      return integer_op("-", 0, as_int(v));
    }
    case Expr::Kind::not_: return Value::of(!eval(*e.args[0]).truthy());
    case Expr::Kind::and_: {  // Python: the first falsy operand, else the last
      Value left = eval(*e.args[0]);
      return left.truthy() ? eval(*e.args[1]) : left;
    }
    case Expr::Kind::or_: {
      Value left = eval(*e.args[0]);
      return left.truthy() ? left : eval(*e.args[1]);
    }
    case Expr::Kind::binary: {
      const Value a = eval(*e.args[0]);
      return binary(e.name, a, eval(*e.args[1]), limits_.max_output_bytes);
    }
    case Expr::Kind::compare: {
      const Value a = eval(*e.args[0]);
      return Value::of(compare(e.name, a, eval(*e.args[1])));
    }
    case Expr::Kind::concat: {
      std::string out;
      for (const auto& a : e.args) emit(out, to_str(eval(*a)));
      return Value::of(std::move(out));
    }
    case Expr::Kind::cond: {
      if (eval(*e.args[1]).truthy()) return eval(*e.args[0]);
      return e.args[2] ? eval(*e.args[2]) : Value::undefined("the inline if-expression on line " + std::to_string(e.line) + " evaluated to false and no else section was defined.");
    }
    default: runtime_error("unknown expression");
  }
}

CallArgs Renderer::eval_args(const Expr& e) {
  CallArgs args;
  for (std::size_t i = 1; i < e.args.size(); ++i) {
    Value v = eval(*e.args[i]);
    const std::string& name = e.arg_names[i - 1];
    if (name.empty()) args.positional.push_back(std::move(v));
    else args.named.emplace_back(name, std::move(v));
  }
  return args;
}

Value Renderer::call(const Value& callee, CallArgs& args) {
  fail_if_undefined(callee);
  if (callee.type != Value::Type::callable) runtime_error("'" + callee.type_name() + "' object is not callable");
  if (callee.callable->macro) return call_macro(*callee.callable->macro, args);
  return callee.callable->builtin(args);
}

// A macro runs in its own scope over the template's top-level variables; its output is its value.
Value Renderer::call_macro(const MacroDef& macro, CallArgs& args) {
  if (++call_depth_ > limits_.max_call_depth) runtime_error("macro calls nested deeper than " + std::to_string(limits_.max_call_depth));
  if (args.positional.size() > macro.params.size())
    runtime_error("macro '" + macro.name + "' takes not more than " + std::to_string(macro.params.size()) + " argument(s)");
  Scope frame;
  for (std::size_t i = 0; i < macro.params.size(); ++i) {
    const std::string& p = macro.params[i];
    const auto named = std::find_if(args.named.begin(), args.named.end(), [&](const auto& kv) { return kv.first == p; });
    if (i < args.positional.size()) frame[p] = args.positional[i];
    else if (named != args.named.end()) frame[p] = named->second;
    else if (macro.defaults[i]) frame[p] = eval(*macro.defaults[i]);
    else frame[p] = Value::undefined("'" + p + "' is undefined");
  }
  for (const auto& [k, v] : args.named)
    if (std::find(macro.params.begin(), macro.params.end(), k) == macro.params.end())
      runtime_error("macro '" + macro.name + "' takes no keyword argument '" + k + "'");
  std::vector<Scope> saved;
  saved.swap(scopes_);
  scopes_.push_back(saved.front());  // the top-level variables (a copy: the macro cannot reassign them)
  scopes_.push_back(std::move(frame));
  std::string out;
  try {
    exec(macro.body, out);
  } catch (...) {
    scopes_.swap(saved);
    --call_depth_;
    throw;
  }
  scopes_.swap(saved);
  --call_depth_;
  return Value::of(std::move(out));
}

}  // namespace

std::string render(const Body& body, const ValueDict& context, const RenderLimits& limits) {
  return Renderer(context, limits).run(body);
}

}  // namespace encbench::tokenizer::jinja
