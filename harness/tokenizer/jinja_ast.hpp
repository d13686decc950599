#pragma once
// The syntax tree of a chat template (the Jinja2 subset chat_template.hpp documents), made by
// jinja_parser.cpp from jinja_lexer.cpp's tokens and run by jinja_render.cpp.
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/tokenizer/jinja_value.hpp"

namespace encbench::tokenizer::jinja {

// A template that does not parse: the message names line:column (1-based) as Jinja2 would.
class TemplateSyntaxError : public std::runtime_error {
 public:
  TemplateSyntaxError(const std::string& message, int line, int column)
      : std::runtime_error(std::to_string(line) + ":" + std::to_string(column) + ": " + message),
        line(line), column(column) {}
  int line, column;
};

enum class TokenKind { text, var_begin, var_end, block_begin, block_end, name, string, integer, floating, op, eof };
struct Token {
  TokenKind kind;
  std::string value;  // text, name, decoded string, number text or operator
  int line = 1, column = 1;
};

// Jinja2's lexer with trim_blocks and lstrip_blocks on (transformers' environment): whitespace
// control (-, +), comments dropped, one trailing newline of the source dropped.
std::vector<Token> lex(const std::string& source);

struct Expr {
  enum class Kind {
    literal, name, list, dict, attr, item, slice, call, filter, test, neg, pos, not_, and_, or_, binary, compare,
    concat, cond
  };
  Kind kind = Kind::literal;
  int line = 1, column = 1;
  Value literal;     // literal
  std::string name;  // name, attribute, filter or test name, operator of binary/compare
  bool negated = false;  // test: `is not`
  // Operands in order. call: callee then arguments; filter/test: subject then arguments; slice:
  // target, start, stop, step (null when absent); cond: value, condition, else (may be null);
  // dict: key, value, key, value, ...
  std::vector<std::unique_ptr<Expr>> args;
  std::vector<std::string> arg_names;  // call/filter/test: "" for positional, else the keyword (parallel to args after the first)
};

struct Stmt;
using Body = std::vector<Stmt>;

struct MacroDef {
  std::string name;
  std::vector<std::string> params;
  std::vector<std::unique_ptr<Expr>> defaults;  // one per param, null when none
  Body body;
};

struct Stmt {
  enum class Kind { text, output, if_, for_, set, set_attr, set_block, macro, break_, continue_, block };
  Kind kind = Kind::text;
  int line = 1, column = 1;
  std::string text;                  // text; set: the name; set_attr: the namespace name
  std::string attr;                  // set_attr: the attribute
  std::vector<std::string> targets;  // for: loop variables; set with a tuple target
  std::unique_ptr<Expr> expr;        // output, set value, for iterable
  std::unique_ptr<Expr> loop_filter; // for ... if COND
  std::vector<std::unique_ptr<Expr>> conditions;  // if/elif conditions; bodies[i] is their body
  std::vector<Body> bodies;          // if: one per condition, plus else; for: body, else
  std::shared_ptr<MacroDef> macro;
};

// Parses the whole template; TemplateSyntaxError on anything outside the subset, unknown filters
// and tests included (Jinja2 refuses those when it compiles, too).
Body parse(const std::vector<Token>& tokens);

// Bounds on one render, so that no template (a fuzzer's included) runs away: the output size,
// the evaluation steps (expressions and statements, loop iterations included) and macro depth.
struct RenderLimits {
  std::size_t max_output_bytes = std::size_t{64} << 20;
  std::uint64_t max_steps = 50'000'000;
  int max_call_depth = 64;
};

// Runs the template with `context` as its variables; TemplateRuntimeError on failure.
std::string render(const Body& body, const ValueDict& context, const RenderLimits& limits);

}  // namespace encbench::tokenizer::jinja
