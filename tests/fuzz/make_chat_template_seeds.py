#!/usr/bin/env python3
"""Seeds of fuzz_chat_template (tests/fuzz/corpus/fuzz_chat_template): byte 0x00 then a template
(the real ones the tests ship, language snippets, broken ones), or byte 0x01 then a JSON message
list for Qwen3's template.   python3 tests/fuzz/make_chat_template_seeds.py"""
import json
import pathlib

root = pathlib.Path(__file__).resolve().parents[2]
out = root / "tests/fuzz/corpus/fuzz_chat_template"
out.mkdir(parents=True, exist_ok=True)
templates = root / "tests/tokenizer/data/chat_templates"
seeds = {}
for path in sorted(templates.glob("*.jinja")):
    seeds["template-" + path.stem] = b"\x00" + path.read_bytes()
snippets = {
    "snippet-loops": "{% for m in messages if m.role != 'tool' %}{{ loop.index }}{{ m.role|upper }}{% else %}-{% endfor %}",
    "snippet-namespace": "{% set ns = namespace(n=0) %}{% for m in messages[::-1] %}{% set ns.n = ns.n + 1 %}{% endfor %}{{ ns.n }}",
    "snippet-macro": "{%- macro r(c) -%}{% if c is string %}{{ c }}{% else %}{% for p in c %}{{ p.text }}{% endfor %}{% endif %}{%- endmacro -%}{{ r(messages[1].content) }}",
    "snippet-tojson": "{{ tools|tojson(indent=4) }}{{ messages|map(attribute='role')|join(',') }}",
    "snippet-strings": "{{ messages[2].content.split('</think>')[-1].lstrip('\\n') }}{{ 'a b'.startswith('a') }}",
    "snippet-whitespace": "a\n  {%- if true %}\n    b\n  {% endif -%}\n{# c #}\n{{- 'd' }}",
    "bad-unclosed": "{% if x %}",
    "bad-filter": "{{ x | nosuch }}",
    "bad-raise": "{{ raise_exception('no') }}",
    "bad-deep": "{{ " + "(" * 250 + "1" + ")" * 250 + " }}",
}
for name, text in snippets.items():
    seeds[name] = b"\x00" + text.encode()
messages = {
    "messages-basic": [{"role": "user", "content": "hi"}],
    "messages-tools": [{"role": "user", "content": "x"}, {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "f", "arguments": "{}"}}]}, {"role": "tool", "content": "1"}],
    "messages-parts": [{"role": "user", "content": [{"type": "text", "text": "a"}]}],
    "messages-empty": [],
}
for name, m in messages.items():
    seeds[name] = b"\x01" + json.dumps(m).encode()
for name, data in seeds.items():
    (out / name).write_bytes(data)
print(f"{len(seeds)} seeds in {out}")
