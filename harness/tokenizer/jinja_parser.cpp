// Jinja2's parser (jinja2/parser.py, 3.1) for the subset chat templates use: the expression
// grammar with Jinja2's precedence (conditional, or, and, not, comparisons, + -, ~, * / // %, **,
// unary, then postfix . [] () | is), and the statements if/elif/else, for (with else, `if`
// filter, tuple targets), set (name, namespace attribute, block), macro, break/continue
// (jinja2.ext.loopcontrols) and transformers' {% generation %}.
#include <cerrno>
#include <cstdlib>
#include <set>

#include "harness/tokenizer/jinja_ast.hpp"
#include "harness/tokenizer/jinja_builtins.hpp"

namespace encbench::tokenizer::jinja {
namespace {

constexpr int kMaxNesting = 200;  // expression and block depth: bounds the parser's recursion

class Parser {
 public:
  explicit Parser(const std::vector<Token>& tokens) : t_(tokens) {}
  Body template_body();

 private:
  using ExprPtr = std::unique_ptr<Expr>;
  const Token& cur() const { return t_[i_]; }
  const Token& next_token() const { return t_[std::min(i_ + 1, t_.size() - 1)]; }
  bool is_op(const char* op) const { return cur().kind == TokenKind::op && cur().value == op; }
  bool is_name(const char* name) const { return cur().kind == TokenKind::name && cur().value == name; }
  [[noreturn]] void fail(const std::string& message) const { throw TemplateSyntaxError(message, cur().line, cur().column); }
  [[noreturn]] void fail_unexpected() const {
    const Token& t = cur();
    if (t.kind == TokenKind::eof) fail("unexpected end of template");
    fail("unexpected '" + (t.value.empty() ? std::string(t.kind == TokenKind::block_end ? "%}" : "}}") : t.value) + "'");
  }
  void expect_op(const char* op) {
    if (!is_op(op)) fail(std::string("expected '") + op + "'" + (cur().kind == TokenKind::eof ? "" : ", got '" + cur().value + "'"));
    ++i_;
  }
  std::string expect_name() {
    if (cur().kind != TokenKind::name) fail("expected a name");
    return t_[i_++].value;
  }
  void expect_block_end() {
    if (cur().kind != TokenKind::block_end) fail_unexpected();
    ++i_;
  }
  ExprPtr node(Expr::Kind kind) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = cur().line;
    e->column = cur().column;
    return e;
  }
  struct DepthGuard {
    int& depth;
    explicit DepthGuard(int& d, const Parser& p) : depth(d) {
      if (++depth > kMaxNesting) p.fail("nesting deeper than " + std::to_string(kMaxNesting));
    }
    ~DepthGuard() { --depth; }
  };

  Body body_until(const std::set<std::string>& ends, std::string& ended_by);
  Stmt statement();
  Stmt if_statement();
  Stmt for_statement();
  Stmt set_statement();
  Stmt macro_statement();
  std::vector<std::string> target_names();

  ExprPtr expression(bool with_condexpr = true);
  ExprPtr or_expr();
  ExprPtr and_expr();
  ExprPtr not_expr();
  ExprPtr compare();
  ExprPtr math1();
  ExprPtr concat();
  ExprPtr math2();
  ExprPtr power();
  ExprPtr unary(bool with_filter = true);
  ExprPtr primary();
  ExprPtr postfix(ExprPtr e);
  ExprPtr filter_expr(ExprPtr e);
  ExprPtr subscript(ExprPtr target);
  void call_args(Expr& call);
  ExprPtr sequence_literal(const char* close, Expr::Kind kind);

  const std::vector<Token>& t_;
  std::size_t i_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;  // for bodies being parsed: break/continue are valid inside
};

Body Parser::template_body() {
  std::string ended_by;
  Body body = body_until({}, ended_by);
  if (cur().kind != TokenKind::eof) fail_unexpected();
  return body;
}

// Statements up to one of the `ends` block tags (left unconsumed after its name) or the end.
Body Parser::body_until(const std::set<std::string>& ends, std::string& ended_by) {
  DepthGuard guard(depth_, *this);
  Body body;
  while (cur().kind != TokenKind::eof) {
    if (cur().kind == TokenKind::text) {
      Stmt s;
      s.kind = Stmt::Kind::text;
      s.text = cur().value;
      body.push_back(std::move(s));
      ++i_;
    } else if (cur().kind == TokenKind::var_begin) {
      Stmt s;
      s.kind = Stmt::Kind::output;
      ++i_;
      s.line = cur().line;
      s.column = cur().column;
      s.expr = expression();
      if (cur().kind != TokenKind::var_end) fail_unexpected();
      ++i_;
      body.push_back(std::move(s));
    } else if (cur().kind == TokenKind::block_begin) {
      const Token& name = next_token();
      if (name.kind == TokenKind::name && ends.count(name.value)) {
        i_ += 2;
        ended_by = name.value;
        return body;
      }
      ++i_;
      body.push_back(statement());
    } else {
      fail_unexpected();
    }
  }
  if (!ends.empty()) {
    std::string names;
    for (const auto& e : ends) names += (names.empty() ? "'" : " or '") + e + "'";
    fail("unexpected end of template, expected " + names);
  }
  return body;
}

Stmt Parser::statement() {
  if (cur().kind != TokenKind::name) fail("expected a tag name");
  const std::string tag = cur().value;
  const int line = cur().line, column = cur().column;
  Stmt s;
  if (tag == "if") s = if_statement();
  else if (tag == "for") s = for_statement();
  else if (tag == "set") s = set_statement();
  else if (tag == "macro") s = macro_statement();
  else if (tag == "break" || tag == "continue") {
    if (loop_depth_ == 0) fail("'" + tag + "' outside of a loop");
    ++i_;
    expect_block_end();
    s.kind = tag == "break" ? Stmt::Kind::break_ : Stmt::Kind::continue_;
  } else if (tag == "generation") {
    // transformers' AssistantTracker: the body renders as it is (it only records offsets).
    ++i_;
    expect_block_end();
    std::string ended_by;
    s.kind = Stmt::Kind::block;
    s.bodies.push_back(body_until({"endgeneration"}, ended_by));
    expect_block_end();
  } else {
    fail("Encountered unknown tag '" + tag + "'.");
  }
  s.line = line;
  s.column = column;
  return s;
}

Stmt Parser::if_statement() {
  Stmt s;
  s.kind = Stmt::Kind::if_;
  ++i_;  // if
  s.conditions.push_back(expression());
  expect_block_end();
  while (true) {
    std::string ended_by;
    s.bodies.push_back(body_until({"elif", "else", "endif"}, ended_by));
    if (ended_by == "elif") {
      s.conditions.push_back(expression());
      expect_block_end();
    } else if (ended_by == "else") {
      expect_block_end();
      s.bodies.push_back(body_until({"endif"}, ended_by));
      expect_block_end();
      return s;
    } else {
      expect_block_end();
      return s;
    }
  }
}

std::vector<std::string> Parser::target_names() {
  std::vector<std::string> names{expect_name()};
  while (is_op(",")) {
    ++i_;
    names.push_back(expect_name());
  }
  return names;
}

Stmt Parser::for_statement() {
  Stmt s;
  s.kind = Stmt::Kind::for_;
  ++i_;  // for
  const bool parenthesised = is_op("(");
  if (parenthesised) ++i_;
  s.targets = target_names();
  if (parenthesised) expect_op(")");
  if (!is_name("in")) fail("expected 'in'");
  ++i_;
  s.expr = expression(false);  // Jinja2: no inline if here, `if` starts the loop filter
  if (is_name("if")) {
    ++i_;
    s.loop_filter = expression();
  }
  if (is_name("recursive")) fail("recursive for loops are not supported");
  expect_block_end();
  ++loop_depth_;
  std::string ended_by;
  s.bodies.push_back(body_until({"else", "endfor"}, ended_by));
  --loop_depth_;
  expect_block_end();
  if (ended_by == "else") {
    s.bodies.push_back(body_until({"endfor"}, ended_by));
    expect_block_end();
  }
  return s;
}

Stmt Parser::set_statement() {
  Stmt s;
  ++i_;  // set
  const std::string name = expect_name();
  if (is_op(".")) {
    ++i_;
    s.kind = Stmt::Kind::set_attr;
    s.text = name;
    s.attr = expect_name();
  } else if (is_op(",")) {
    --i_;
    s.kind = Stmt::Kind::set;
    s.targets = target_names();
  } else {
    s.kind = Stmt::Kind::set;
    s.text = name;
  }
  if (s.kind == Stmt::Kind::set && s.targets.empty() && cur().kind == TokenKind::block_end) {
    ++i_;
    s.kind = Stmt::Kind::set_block;
    std::string ended_by;
    s.bodies.push_back(body_until({"endset"}, ended_by));
    expect_block_end();
    return s;
  }
  expect_op("=");
  s.expr = expression();
  expect_block_end();
  return s;
}

Stmt Parser::macro_statement() {
  Stmt s;
  s.kind = Stmt::Kind::macro;
  ++i_;  // macro
  auto def = std::make_shared<MacroDef>();
  def->name = expect_name();
  expect_op("(");
  while (!is_op(")")) {
    if (!def->params.empty()) expect_op(",");
    if (is_op(")")) break;
    def->params.push_back(expect_name());
    if (is_op("=")) {
      ++i_;
      def->defaults.push_back(expression());
    } else {
      if (!def->defaults.empty() && def->defaults.back()) fail("non-default argument follows default argument");
      def->defaults.push_back(nullptr);
    }
  }
  ++i_;
  expect_block_end();
  const int saved_loops = loop_depth_;
  loop_depth_ = 0;  // a loop around the definition does not make break valid inside it
  std::string ended_by;
  def->body = body_until({"endmacro"}, ended_by);
  loop_depth_ = saved_loops;
  expect_block_end();
  s.text = def->name;
  s.macro = std::move(def);
  return s;
}

// ---- expressions, in Jinja2's precedence order

std::unique_ptr<Expr> Parser::expression(bool with_condexpr) {
  DepthGuard guard(depth_, *this);
  auto e = or_expr();
  while (with_condexpr && is_name("if")) {
    auto cond = node(Expr::Kind::cond);
    ++i_;
    auto test = or_expr();
    std::unique_ptr<Expr> otherwise;
    if (is_name("else")) {
      ++i_;
      otherwise = expression();
    }
    cond->args.push_back(std::move(e));
    cond->args.push_back(std::move(test));
    cond->args.push_back(std::move(otherwise));
    e = std::move(cond);
  }
  return e;
}

std::unique_ptr<Expr> Parser::or_expr() {
  auto e = and_expr();
  while (is_name("or")) {
    auto n = node(Expr::Kind::or_);
    ++i_;
    n->args.push_back(std::move(e));
    n->args.push_back(and_expr());
    e = std::move(n);
  }
  return e;
}

std::unique_ptr<Expr> Parser::and_expr() {
  auto e = not_expr();
  while (is_name("and")) {
    auto n = node(Expr::Kind::and_);
    ++i_;
    n->args.push_back(std::move(e));
    n->args.push_back(not_expr());
    e = std::move(n);
  }
  return e;
}

std::unique_ptr<Expr> Parser::not_expr() {
  if (is_name("not")) {
    DepthGuard guard(depth_, *this);
    auto n = node(Expr::Kind::not_);
    ++i_;
    n->args.push_back(not_expr());
    return n;
  }
  return compare();
}

std::unique_ptr<Expr> Parser::compare() {
  auto e = math1();
  while (true) {
    std::string op;
    if (cur().kind == TokenKind::op &&
        (cur().value == "==" || cur().value == "!=" || cur().value == "<" || cur().value == "<=" || cur().value == ">" ||
         cur().value == ">=")) {
      op = cur().value;
      ++i_;
    } else if (is_name("in")) {
      op = "in";
      ++i_;
    } else if (is_name("not") && next_token().kind == TokenKind::name && next_token().value == "in") {
      op = "not in";
      i_ += 2;
    } else {
      return e;
    }
    auto n = node(Expr::Kind::compare);
    n->name = op;
    n->args.push_back(std::move(e));
    n->args.push_back(math1());
    e = std::move(n);
  }
}

std::unique_ptr<Expr> Parser::math1() {
  auto e = concat();
  while (is_op("+") || is_op("-")) {
    auto n = node(Expr::Kind::binary);
    n->name = t_[i_++].value;
    n->args.push_back(std::move(e));
    n->args.push_back(concat());
    e = std::move(n);
  }
  return e;
}

std::unique_ptr<Expr> Parser::concat() {
  auto e = math2();
  if (!is_op("~")) return e;
  auto n = node(Expr::Kind::concat);
  n->args.push_back(std::move(e));
  while (is_op("~")) {
    ++i_;
    n->args.push_back(math2());
  }
  return n;
}

std::unique_ptr<Expr> Parser::math2() {
  auto e = power();
  while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
    auto n = node(Expr::Kind::binary);
    n->name = t_[i_++].value;
    n->args.push_back(std::move(e));
    n->args.push_back(power());
    e = std::move(n);
  }
  return e;
}

std::unique_ptr<Expr> Parser::power() {
  auto e = unary();
  while (is_op("**")) {
    auto n = node(Expr::Kind::binary);
    n->name = t_[i_++].value;
    n->args.push_back(std::move(e));
    n->args.push_back(unary());
    e = std::move(n);
  }
  return e;
}

std::unique_ptr<Expr> Parser::unary(bool with_filter) {
  DepthGuard guard(depth_, *this);
  std::unique_ptr<Expr> e;
  if (is_op("-") || is_op("+")) {
    e = node(is_op("-") ? Expr::Kind::neg : Expr::Kind::pos);
    ++i_;
    e->args.push_back(unary(false));
  } else {
    e = postfix(primary());
  }
  if (with_filter) return filter_expr(std::move(e));
  return e;
}

std::unique_ptr<Expr> Parser::primary() {
  const Token& t = cur();
  auto e = node(Expr::Kind::literal);
  switch (t.kind) {
    case TokenKind::name:
      ++i_;
      if (t.value == "true" || t.value == "True") e->literal = Value::of(true);
      else if (t.value == "false" || t.value == "False") e->literal = Value::of(false);
      else if (t.value == "none" || t.value == "None") e->literal = Value::none();
      else {
        e->kind = Expr::Kind::name;
        e->name = t.value;
      }
      return e;
    case TokenKind::string: {
      std::string text;
      while (cur().kind == TokenKind::string) text += t_[i_++].value;  // adjacent literals join
      e->literal = Value::of(std::move(text));
      return e;
    }
    case TokenKind::integer: {
      ++i_;
      errno = 0;
      const long long v = std::strtoll(t.value.c_str(), nullptr, 10);
      if (errno == ERANGE) e->literal = Value::of_float(std::strtod(t.value.c_str(), nullptr));
      else e->literal = Value::of(static_cast<std::int64_t>(v));
      return e;
    }
    case TokenKind::floating:
      ++i_;
      e->literal = Value::of_float(std::strtod(t.value.c_str(), nullptr));
      return e;
    default: break;
  }
  if (is_op("(")) {
    ++i_;
    if (is_op(")")) {  // () is the empty tuple
      ++i_;
      e->kind = Expr::Kind::list;
      e->name = "tuple";
      return e;
    }
    auto inner = expression();
    if (is_op(",")) {  // a tuple: a list here
      auto tuple = node(Expr::Kind::list);
      tuple->name = "tuple";
      tuple->args.push_back(std::move(inner));
      while (is_op(",")) {
        ++i_;
        if (is_op(")")) break;
        tuple->args.push_back(expression());
      }
      inner = std::move(tuple);
    }
    expect_op(")");
    return inner;
  }
  if (is_op("[")) return sequence_literal("]", Expr::Kind::list);
  if (is_op("{")) return sequence_literal("}", Expr::Kind::dict);
  if (cur().kind == TokenKind::eof) fail("unexpected end of template, expected an expression");
  const std::string got = cur().kind == TokenKind::block_end ? "%}" : cur().kind == TokenKind::var_end ? "}}" : cur().value;
  fail("expected an expression, got '" + got + "'");
}

std::unique_ptr<Expr> Parser::sequence_literal(const char* close, Expr::Kind kind) {
  auto e = node(kind);
  ++i_;
  while (!is_op(close)) {
    if (!e->args.empty()) {
      expect_op(",");
      if (is_op(close)) break;
    }
    e->args.push_back(expression());
    if (kind == Expr::Kind::dict) {
      expect_op(":");
      e->args.push_back(expression());
    }
  }
  ++i_;
  return e;
}

std::unique_ptr<Expr> Parser::postfix(std::unique_ptr<Expr> e) {
  while (true) {
    if (is_op(".")) {
      auto n = node(Expr::Kind::attr);
      ++i_;
      if (cur().kind == TokenKind::name) n->name = t_[i_++].value;
      else if (cur().kind == TokenKind::integer) {  // x.0 is x[0]
        n->kind = Expr::Kind::item;
        auto index = node(Expr::Kind::literal);
        index->literal = Value::of(static_cast<std::int64_t>(std::strtoll(t_[i_++].value.c_str(), nullptr, 10)));
        n->args.push_back(std::move(e));
        n->args.push_back(std::move(index));
        e = std::move(n);
        continue;
      } else fail("expected a name after '.'");
      n->args.push_back(std::move(e));
      e = std::move(n);
    } else if (is_op("[")) {
      e = subscript(std::move(e));
    } else if (is_op("(")) {
      auto n = node(Expr::Kind::call);
      n->args.push_back(std::move(e));
      call_args(*n);
      e = std::move(n);
    } else {
      return e;
    }
  }
}

// x[i] or a slice x[a:b:c] (each part optional).
std::unique_ptr<Expr> Parser::subscript(std::unique_ptr<Expr> target) {
  auto n = node(Expr::Kind::item);
  ++i_;  // [
  n->args.push_back(std::move(target));
  std::unique_ptr<Expr> parts[3];
  int part = 0;
  if (!is_op(":")) parts[0] = expression();
  while (is_op(":") && part < 2) {
    ++i_;
    ++part;
    if (!is_op(":") && !is_op("]")) parts[part] = expression();
  }
  expect_op("]");
  if (part == 0) {
    n->args.push_back(std::move(parts[0]));
    return n;
  }
  n->kind = Expr::Kind::slice;
  for (auto& p : parts) n->args.push_back(std::move(p));
  return n;
}

// ( args ) appended to call.args after its first operand, keyword names in arg_names.
void Parser::call_args(Expr& call) {
  expect_op("(");
  while (!is_op(")")) {
    if (call.args.size() > 1) {
      expect_op(",");
      if (is_op(")")) break;
    }
    if (cur().kind == TokenKind::name && next_token().kind == TokenKind::op && next_token().value == "=") {
      call.arg_names.push_back(t_[i_].value);
      i_ += 2;
    } else {
      if (!call.arg_names.empty() && !call.arg_names.back().empty()) fail("positional argument follows keyword argument");
      call.arg_names.push_back("");
    }
    call.args.push_back(expression());
  }
  ++i_;
}

std::unique_ptr<Expr> Parser::filter_expr(std::unique_ptr<Expr> e) {
  while (true) {
    if (is_op("|")) {
      ++i_;
      auto n = node(Expr::Kind::filter);
      n->name = expect_name();
      while (is_op(".")) {  // dotted filter names are not used by chat templates, but parse them
        ++i_;
        n->name += '.';
        n->name += expect_name();
      }
      if (!is_known_filter(n->name)) throw TemplateSyntaxError("No filter named '" + n->name + "'.", n->line, n->column);
      n->args.push_back(std::move(e));
      if (is_op("(")) call_args(*n);
      e = std::move(n);
    } else if (is_name("is")) {
      ++i_;
      auto n = node(Expr::Kind::test);
      if (is_name("not")) {
        n->negated = true;
        ++i_;
      }
      n->name = expect_name();
      if (!is_known_test(n->name)) throw TemplateSyntaxError("No test named '" + n->name + "'.", n->line, n->column);
      n->args.push_back(std::move(e));
      const Token& t = cur();
      if (is_op("(")) {
        call_args(*n);
      } else if ((t.kind == TokenKind::name || t.kind == TokenKind::string || t.kind == TokenKind::integer ||
                  t.kind == TokenKind::floating || is_op("[") || is_op("{")) &&
                 !is_name("else") && !is_name("or") && !is_name("and")) {
        if (is_name("is")) fail("You cannot chain multiple tests with is");
        n->args.push_back(postfix(primary()));
        n->arg_names.push_back("");
      }
      e = std::move(n);
    } else if (is_op("(")) {
      auto n = node(Expr::Kind::call);
      n->args.push_back(std::move(e));
      call_args(*n);
      e = std::move(n);
    } else {
      return e;
    }
  }
}

}  // namespace

Body parse(const std::vector<Token>& tokens) { return Parser(tokens).template_body(); }

}  // namespace encbench::tokenizer::jinja
