// encbench's chat-template renderer against an independent reference: Jinja2 itself in python3,
// configured as transformers configures it (tests/tokenizer/render_chat_template.py). Real chat
// templates (tests/tokenizer/data/chat_templates: Qwen2-VL/Qwen2.5-VL, Qwen2.5, Qwen3, Qwen3-VL
// Thinking)
// render every message list of cases.json; each result must be byte-identical, and a template that
// fails in Jinja2 (a str + list, an undefined attribute) must fail here too. Then language snippets
// (each feature the renderer implements) go through the same comparison. Skips, saying why, when
// python3 or its jinja2 is missing.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/core/error.hpp"
#include "harness/tokenizer/chat_template.hpp"
#include "tests/tokenizer/jinja_reference.hpp"
#include "tests/tokenizer/test_files.hpp"

namespace encbench::tokenizer {
namespace {

using Json = nlohmann::ordered_json;
using testing::jinja2_reference;
using testing::read_text;
using testing::Rendered;
using testing::source_dir;

Rendered ours(const ChatTemplate& t, const Json& variables) {
  try {
    return {true, t.render(variables)};
  } catch (const InvalidInput& e) {
    return {false, e.what()};
  }
}

// The variables transformers passes for apply_chat_template(messages, add_generation_prompt, **kwargs).
Json variables_of(const Json& c, const Json& special_tokens) {
  Json v = {{"messages", c["messages"]}, {"tools", nullptr}, {"documents", nullptr},
            {"add_generation_prompt", c["add_generation_prompt"]}};
  for (const auto& [k, x] : special_tokens.items()) v[k] = x;
  v["date_string"] = "26 Nov 2026";  // a fixed date for templates that print one (Llama 3.x)
  if (c.contains("kwargs"))
    for (const auto& [k, x] : c["kwargs"].items()) v[k] = x;
  return v;
}

struct TemplateCase {
  const char* file;
  Json special_tokens;
  std::size_t min_successes;  // the cases this template must render (not fail) in Jinja2 and here
};

TEST(ChatTemplateReference, RealTemplatesRenderByteIdenticalToJinja2) {
  const std::vector<TemplateCase> templates = {
      {"qwen2-vl.jinja", {{"eos_token", "<|im_end|>"}, {"pad_token", "<|endoftext|>"}}, 17},
      {"qwen2.5.jinja", {{"eos_token", "<|im_end|>"}, {"pad_token", "<|endoftext|>"}}, 15},
      {"qwen3.jinja", {{"eos_token", "<|im_end|>"}, {"pad_token", "<|endoftext|>"}}, 15},
      {"qwen3-vl-thinking.jinja", {{"eos_token", "<|im_end|>"}, {"pad_token", "<|endoftext|>"}}, 17},
  };
  const auto dir = source_dir() / "tests/tokenizer/data/chat_templates";
  const Json cases = Json::parse(read_text(dir / "cases.json"))["cases"];
  ASSERT_GE(cases.size(), 15u);
  for (const auto& tc : templates) {
    const std::string text = read_text(dir / tc.file);
    ASSERT_GT(text.size(), 500u) << tc.file;
    const auto t = ChatTemplate::parse(text, tc.file);
    Json variables = Json::array();
    for (const auto& c : cases) variables.push_back(variables_of(c, tc.special_tokens));
    std::string why;
    const auto reference = jinja2_reference(text, variables, why);
    if (!reference) GTEST_SKIP() << why;
    ASSERT_EQ(reference->size(), cases.size());
    std::size_t successes = 0;
    for (std::size_t i = 0; i < cases.size(); ++i) {
      const Rendered got = ours(t, variables[i]);
      const Rendered& want = (*reference)[i];
      const std::string where = std::string(tc.file) + " case " + cases[i]["name"].get<std::string>();
      ASSERT_EQ(got.ok, want.ok) << where << "\nours: " << got.text << "\njinja2: " << want.text;
      if (!want.ok) continue;
      EXPECT_EQ(got.text, want.text) << where;
      EXPECT_FALSE(got.text.empty()) << where;
      ++successes;
    }
    EXPECT_GE(successes, tc.min_successes) << tc.file;
  }
}

// One snippet per feature, each with the same variables; Jinja2 decides what is right.
TEST(ChatTemplateReference, LanguageSnippetsMatchJinja2) {
  const Json variables = {
      {"s", "  Hello, World  "}, {"n", 7}, {"f", 2.5}, {"neg", -3}, {"t", true}, {"z", nullptr},
      {"xs", {3, 1, 2}},         {"names", {"b", "a"}},
      {"d", {{"k", "v"}, {"n", 1}, {"items", "shadowed"}}},
      {"msgs", {{{"role", "system"}, {"content", "S"}}, {{"role", "user"}, {"content", "U"}}}},
      {"u8", "Grüße 👋 中文"}};
  const std::vector<std::string> snippets = {
      "{{ s }}|{{ s|trim }}|{{ s|length }}|{{ s|upper }}|{{ s|lower }}|{{ s.strip() }}|{{ s.lstrip() }}.|{{ s.rstrip() }}",
      "{{ s.split(',') }}|{{ s.split() }}|{{ s.split(None, 1) }}|{{ 'a,b,,c'.split(',', 2) }}|{{ s.startswith('  H') }}|{{ s.endswith(('x', '  ')) }}",
      "{{ n + 1 }} {{ n - 10 }} {{ n * 3 }} {{ n / 2 }} {{ n // 2 }} {{ n % 3 }} {{ -n // 2 }} {{ -n % 3 }} {{ n ** 2 }} {{ f * 2 }} {{ 7 / 7 }}",
      "{{ 0.1 + 0.2 }} {{ 1e20 }} {{ 1e-5 }} {{ 123456789.125 }} {{ 1.0 }} {{ -0.0 }} {{ 3.0e16 }} {{ 2 ** 0.5 }}",
      "{{ 'a' ~ n ~ z ~ t ~ undefined_thing ~ f }}|{{ 'x' + 'y' }}|{{ [1] + [2, 3] }}|{{ 'ab' * 3 }}",
      "{{ xs }}|{{ xs[0] }}|{{ xs[-1] }}|{{ xs[1:] }}|{{ xs[::-1] }}|{{ xs[5] }}|{{ u8[::-1] }}|{{ u8[1:4] }}|{{ u8|length }}",
      "{{ d }}|{{ d.k }}|{{ d['n'] }}|{{ d.missing }}|{{ d.items() }}|{{ d|items|list }}|{{ d.get('k') }}|{{ d.get('q', 5) }}|{{ d['items'] }}",
      "{% for k, v in d.items() %}{{ loop.index }}:{{ k }}={{ v }}{% if not loop.last %}, {% endif %}{% endfor %}",
      "{% for x in xs %}[{{ loop.index0 }}/{{ loop.length }} {{ loop.first }} {{ loop.last }} {{ loop.revindex }} {{ loop.previtem }} {{ loop.nextitem }}]{% endfor %}",
      "{% for x in xs if x > 1 %}{{ x }}{{ loop.length }}{% else %}none{% endfor %}|{% for x in [] %}a{% else %}empty{% endfor %}",
      "{% for x in xs %}{% if x == 1 %}{% continue %}{% endif %}{% if x == 2 %}{% break %}{% endif %}{{ x }}{% endfor %}",
      "{% set ns = namespace(count=0, seen=[]) %}{% for m in msgs %}{% set ns.count = ns.count + 1 %}{% set local = m.role %}{% endfor %}{{ ns.count }}|{{ local }}|{{ ns.seen }}",
      "{% set a = 1 %}{% for x in xs %}{% set a = x %}{% endfor %}{{ a }}{% if true %}{% set b = 2 %}{% endif %}{{ b }}",
      "{{ z is none }} {{ n is number }} {{ s is string }} {{ d is mapping }} {{ xs is iterable }} {{ xs is sequence }} {{ q is defined }} {{ q is undefined }} {{ n is not none }}",
      "{{ n is even }} {{ n is odd }} {{ n is divisibleby 7 }} {{ t is true }} {{ t is boolean }} {{ n is integer }} {{ f is float }} {{ 'ab' is lower }} {{ n is eq 7 }} {{ 2 is in xs }}",
      "{{ 'a' in 'cat' }} {{ 'k' in d }} {{ 3 in xs }} {{ 4 not in xs }} {{ n > 3 and n < 10 }} {{ n == 7.0 }} {{ t == 1 }} {{ 'b' > 'a' }} {{ [1, 2] < [1, 3] }}",
      "{{ z or 'fallback' }}|{{ n and 'both' }}|{{ 0 or '' }}|{{ not z }}|{{ 'yes' if t else 'no' }}|{{ 'only-if' if false }}|{{ q|default('dflt') }}|{{ ''|default('e', true) }}",
      "{{ names|join(', ') }}|{{ msgs|map(attribute='role')|join('/') }}|{{ msgs|selectattr('role', 'equalto', 'user')|list|length }}|{{ xs|first }}{{ xs|last }}|{{ xs|reverse|list }}|{{ xs|select('odd')|list }}|{{ msgs|rejectattr('role', 'eq', 'user')|map(attribute='content')|first }}",
      "{{ d|tojson }}|{{ msgs|tojson(indent=2) }}|{{ u8|tojson }}|{{ {'a': [1, 2.5, none, true]}|tojson(separators=(',', ':')) }}|{{ {'b': 1, 'a': 2}|tojson(sort_keys=true) }}|{{ 'q\"\\\\\\n\\t'|tojson }}",
      "{{ 'Hello World'|replace('o', '0') }}|{{ 'abc'.replace('b', 'B', 1) }}|{{ 'x'|string }}{{ 12|string }}|{{ '42'|int + 1 }}|{{ 'x'|int }}|{{ 3|float }}|{{ -4|abs }}|{{ 'hello world'|title }}|{{ 'hELLO'|capitalize }}",
      "{{ range(3)|list }}|{{ range(1, 10, 3)|list }}|{{ range(5, 0, -2)|list }}|{{ dict(a=1, b='x') }}|{{ [1, 'a', none, true, 1.5, {'k': [1]}] }}|{{ \"it's\" }}",
      "{%- macro greet(name, greeting='Hi') -%}{{ greeting }}, {{ name }}!{%- endmacro -%}{{ greet('A') }} {{ greet('B', greeting='Yo') }} {{ greet(name='C') }}",
      "line1\n  {% if t %}\n    inner\n  {% endif %}\nline2 {# comment #}\n{%- if t -%}\n   stripped   \n{%- endif %}\n  {%+ if t %}kept{% endif %}\n{{ n }}\n{{- n }}  \n",
      "{% set block %}captured {{ n }}{% endset %}{{ block|upper }}|{{ 'a\\x41\\u00e9\\n'|length }}|{{ 'tab\\there' }}|{{ '%s' }}|{{ 'a' 'b' }}",
      "{% set a, b = [1, 2] %}{{ a }}{{ b }}|{% for a, b in [[1, 'x'], [2, 'y']] %}{{ a }}{{ b }}{% endfor %}|{{ xs|length }}{{ d|length }}|{{ xs|unique|list }}|{{ 'a b  c'|wordcount }}",
      "{{ s.find('World') }} {{ s.count('l') }} {{ '-'.join(names) }} {{ 'a\\nb\\r\\nc'.splitlines() }} {{ 'x'.strip('x') }}. {{ 'xxaxx'.strip('x') }} {{ u8.split(' ')[1] }}",
      "{% generation %}gen {{ n }}{% endgeneration %}|{{ xs.0 }}|{{ msgs[0]['role'] }}|{{ msgs[-1].content }}|{{ (1, 2) }}|{{ loop is defined }}",
  };
  Json variables_list = Json::array();
  std::vector<Rendered> got;
  std::vector<Rendered> want;
  for (const auto& snippet : snippets) {
    std::string why;
    const auto reference = jinja2_reference(snippet, Json::array({variables}), why);
    if (!reference) GTEST_SKIP() << why;
    ASSERT_EQ(reference->size(), 1u);
    const Rendered ref = reference->front();
    ASSERT_TRUE(ref.ok) << snippet << "\njinja2: " << ref.text;
    Rendered mine;
    try {
      mine = ours(ChatTemplate::parse(snippet, "snippet"), variables);
    } catch (const InvalidInput& e) {
      mine = {false, e.what()};
    }
    ASSERT_TRUE(mine.ok) << snippet << "\nours: " << mine.text;
    EXPECT_EQ(mine.text, ref.text) << snippet;
  }
}

// Templates Jinja2 refuses or fails: ours must refuse or fail too.
TEST(ChatTemplateReference, FailuresAreFailuresInBoth) {
  const Json variables = {{"d", {{"a", 1}}}, {"xs", {1, 2}}, {"s", "x"}};
  const std::vector<std::string> snippets = {
      "{{ d.a.b.c }}", "{{ missing.attr }}", "{{ raise_exception('no') }}", "{{ 'a' + 1 }}", "{{ xs + 'a' }}",
      "{{ d.a() }}", "{{ 1 // 0 }}", "{{ 'x' < 1 }}", "{{ missing + 1 }}", "{{ range(200000)|length }}",
      "{{ d|tojson(indent=missing.x) }}", "{% set x.y = 1 %}", "{{ s.nosuchmethod() }}", "{{ 1 in 5 }}",
      "{{ {'a': missing}|tojson }}", "{% for a, b in xs %}{% endfor %}"};
  for (const auto& snippet : snippets) {
    std::string why;
    const auto reference = jinja2_reference(snippet, Json::array({variables}), why);
    if (!reference) GTEST_SKIP() << why;
    EXPECT_FALSE(reference->front().ok) << snippet << " rendered in Jinja2: " << reference->front().text;
    Rendered mine;
    try {
      mine = ours(ChatTemplate::parse(snippet, "snippet"), variables);
    } catch (const InvalidInput& e) {
      mine = {false, e.what()};
    }
    EXPECT_FALSE(mine.ok) << snippet << " rendered here: " << mine.text;
  }
}

}  // namespace
}  // namespace encbench::tokenizer
