// The chat-template renderer's own checks, worked out by hand from Jinja2's documented rules (the
// byte-for-byte comparison with Jinja2 itself is chat_template_reference_test.cpp): whitespace
// control, scoping, Undefined, the errors and where they point, and the bounds that keep any
// template (a fuzzer's included) from running away.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "harness/core/error.hpp"
#include "harness/tokenizer/chat_template.hpp"

namespace encbench::tokenizer {
namespace {

using Json = nlohmann::ordered_json;

std::string render(const std::string& text, const Json& variables = Json::object(), ChatTemplateLimits limits = {}) {
  auto t = ChatTemplate::parse(text, "t.jinja");
  t.limits = limits;
  return t.render(variables);
}

std::string error_of(const std::string& text, const Json& variables = Json::object(), ChatTemplateLimits limits = {}) {
  try {
    render(text, variables, limits);
  } catch (const InvalidInput& e) {
    return e.what();
  }
  return "no error";
}

TEST(ChatTemplate, WhitespaceControlTrimBlocksAndLstripBlocks) {
  // `-` strips all whitespace on its side; trim_blocks drops the newline after a block tag.
  EXPECT_EQ(render("a  {%- if true -%}  b  {%- endif %}\n c"), "ab c");
  // lstrip_blocks: spaces and tabs before a block tag alone on its line go; not before {{ }}.
  EXPECT_EQ(render("x\n    {% if true %}\n    y\n    {% endif %}\nz"), "x\n    y\nz");
  EXPECT_EQ(render("x\n  {{ 1 }}\n"), "x\n  1");  // and one trailing newline of the source goes
  EXPECT_EQ(render("a\n\n"), "a\n");
  EXPECT_EQ(render("  {%+ if true %}k{% endif %}"), "  k");  // + keeps the indentation
  EXPECT_EQ(render("a{# note #}\nb"), "ab");  // a comment is a block for trim_blocks
  EXPECT_EQ(render("a {{- ' b ' -}} c"), "a b c");
  EXPECT_EQ(render("r\r\nn"), "r\nn");  // newlines normalised
}

TEST(ChatTemplate, ScopesLoopsAndNamespaces) {
  // set inside a for body stays in that iteration; a namespace carries state out.
  EXPECT_EQ(render("{% set x = 0 %}{% for i in [1, 2] %}{{ x }}{% set x = i %}{{ x }}{% endfor %}{{ x }}"), "01020");
  EXPECT_EQ(render("{% set ns = namespace(n=0) %}{% for i in [1, 2, 3] %}{% set ns.n = ns.n + i %}{% endfor %}{{ ns.n }}"), "6");
  EXPECT_EQ(render("{% for a in [1, 2] %}{% for b in [3, 4] %}{{ loop.index }}{{ b }}{% endfor %}{{ loop.index }};{% endfor %}"),
            "13241;13242;");
  EXPECT_EQ(render("{% for x in [1, 2, 3, 4] if x is even %}{{ x }}/{{ loop.length }}{% endfor %}"), "2/24/2");
  EXPECT_EQ(render("{% macro m(a, b=2) %}{{ a }}{{ b }}{{ top }}{% endmacro %}{% set top = 't' %}{{ m(1) }}{{ m(b=5, a=4) }}"),
            "12t45t");
}

TEST(ChatTemplate, UndefinedIsEmptyFalsyAndFailsOnUse) {
  EXPECT_EQ(render("[{{ nothing }}]{{ nothing is defined }}{{ d.missing is defined }}{{ nothing|length }}", {{"d", Json::object()}}),
            "[]FalseFalse0");
  EXPECT_EQ(render("{% for x in nothing %}x{% else %}empty{% endfor %}"), "empty");
  EXPECT_EQ(error_of("{{ nothing.attr }}"), "t.jinja: 'nothing' is undefined");
  EXPECT_EQ(error_of("{{ d.a.b }}", {{"d", Json::object()}}), "t.jinja: 'dict object' has no attribute 'a'");
  EXPECT_EQ(error_of("{{ nothing + 1 }}"), "t.jinja: 'nothing' is undefined");
}

TEST(ChatTemplate, PythonValuesPrintAndCompareAsPython) {
  EXPECT_EQ(render("{{ none }} {{ true }} {{ 1.0 }} {{ 1e16 }} {{ 1e15 }} {{ 0.0001 }} {{ 0.00001 }} {{ 7 / 2 }} {{ -7 // 2 }}"),
            "None True 1.0 1e+16 1000000000000000.0 0.0001 1e-05 3.5 -4");
  EXPECT_EQ(render("{{ [1, 'a\\'b', none] }} {{ {'k': (1,)} }}"), "[1, \"a'b\", None] {'k': (1,)}");
  EXPECT_EQ(render("{{ 1 == 1.0 }} {{ true == 1 }} {{ 'a' < 'b' }} {{ [1, 2] == [1, 2] }}"), "True True True True");
  // tojson as transformers overrides it: no HTML escaping, non-ASCII kept, Python's separators.
  EXPECT_EQ(render("{{ x|tojson }}", {{"x", {{"b", "<é>"}, {"a", {1, 2.5}}}}}), "{\"b\": \"<é>\", \"a\": [1, 2.5]}");
  EXPECT_EQ(render("{{ x|tojson(indent=2) }}", {{"x", {{"a", Json::array()}}}}), "{\n  \"a\": []\n}");
}

TEST(ChatTemplate, SyntaxErrorsNameLineAndColumn) {
  EXPECT_EQ(error_of("{{ 1 + }}"), "t.jinja:1:8: expected an expression, got '}}'");
  EXPECT_EQ(error_of("a\n{% if x %}b"), "t.jinja:2:12: unexpected end of template, expected 'elif' or 'else' or 'endif'");
  EXPECT_EQ(error_of("\n\n  {% include 'x' %}"), "t.jinja:3:6: Encountered unknown tag 'include'.");
  EXPECT_EQ(error_of("{{ x | nope }}"), "t.jinja:1:8: No filter named 'nope'.");
  EXPECT_EQ(error_of("{{ x is nope }}"), "t.jinja:1:9: No test named 'nope'.");
  EXPECT_EQ(error_of("{# open"), "t.jinja:1:1: Missing end of comment tag");
  EXPECT_EQ(error_of("{{ 'abc }}"), "t.jinja:1:4: unexpected end of string");
  EXPECT_EQ(error_of("{% break %}"), "t.jinja:1:4: 'break' outside of a loop");
  EXPECT_EQ(error_of("{{ a b }}"), "t.jinja:1:6: unexpected 'b'");
}

TEST(ChatTemplate, RuntimeErrorsCarryTheMessage) {
  EXPECT_EQ(error_of("{{ raise_exception('Conversation roles must alternate') }}"), "t.jinja: Conversation roles must alternate");
  EXPECT_EQ(error_of("{{ 'a' + 1 }}"), "t.jinja: unsupported operand type(s) for +: 'str' and 'int'");
  EXPECT_EQ(error_of("{{ 1 // 0 }}"), "t.jinja: integer division or modulo by zero");
  EXPECT_EQ(error_of("{% set x = 1 %}{% set x.y = 2 %}"), "t.jinja: cannot assign attribute on non-namespace object");
  EXPECT_NE(error_of("{{ range(100001)|length }}").find("MAX_RANGE (100000)"), std::string::npos);
}

TEST(ChatTemplate, BoundsStopRunawayTemplates) {
  ChatTemplateLimits small;
  small.max_steps = 10000;
  small.max_output_bytes = 1000;
  EXPECT_NE(error_of("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", {}, small).find("steps"),
            std::string::npos);
  EXPECT_NE(error_of("{% for i in range(2000) %}x{% endfor %}", {}, small).find("output larger than 1000 bytes"), std::string::npos);
  EXPECT_NE(error_of("{{ 'x' * 100000 }}", {}, small).find("output limit"), std::string::npos);
  EXPECT_NE(error_of("{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(1) }}").find("nested deeper than 64"), std::string::npos);
  std::string deep_blocks;
  for (int i = 0; i < 300; ++i) deep_blocks += "{% if true %}";
  EXPECT_NE(error_of(deep_blocks).find("nesting deeper than 200"), std::string::npos);
  EXPECT_NE(error_of("{{ " + std::string(300, '(') + "1" + std::string(300, ')') + " }}").find("nesting deeper than 200"), std::string::npos);
  EXPECT_NE(error_of("{% set ns = namespace(x=[]) %}{% for i in range(600) %}{% set ns.x = [ns.x] %}{% endfor %}")
                .find("nested deeper than 512"),
            std::string::npos);
  // A namespace holding itself renders (and is freed: the sanitizer build checks for the leak).
  EXPECT_EQ(render("{% set ns = namespace() %}{% set ns.me = [ns] %}{{ ns.me|length }}"), "1");
}

TEST(ChatTemplate, ApplyPassesMessagesSpecialTokensAndKwargs) {
  auto t = ChatTemplate::parse("{{ bos_token }}{% for m in messages %}{{ m.role }}:{{ m.content }}{% endfor %}"
                               "{% if add_generation_prompt %}>{% endif %}{{ tools is none }}{{ extra }}",
                               "t.jinja");
  t.special_tokens = {{"bos_token", "<s>"}};
  const Json messages = Json::array({{{"role", "user"}, {"content", "hi"}}});
  EXPECT_EQ(t.apply(messages, true), "<s>user:hi>True");
  EXPECT_EQ(t.apply(messages, false, {{"extra", "!"}, {"bos_token", "B"}}), "Buser:hiTrue!");  // kwargs win
}

}  // namespace
}  // namespace encbench::tokenizer
