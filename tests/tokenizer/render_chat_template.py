#!/usr/bin/env python3
"""The independent reference for encbench's chat-template renderer (harness/tokenizer/chat_template):
Jinja2 itself, configured exactly as transformers' _compile_jinja_template / render_jinja_template
configure it (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loopcontrols, the
{% generation %} tag, tojson with ensure_ascii=False, raise_exception, strftime_now).

  render_chat_template.py IN.json OUT.json
IN:  {"template": TEXT, "cases": [VARIABLES, ...]}   (VARIABLES: the full render() context)
OUT: [{"ok": true, "text": ...} | {"ok": false, "error": ...}, ...]
Exit 3 when jinja2 is missing (the C++ test then skips, saying so).
"""
import json
import sys
from datetime import datetime

try:
    import jinja2
    from jinja2 import nodes
    from jinja2.ext import Extension
    from jinja2.sandbox import ImmutableSandboxedEnvironment
except ImportError:
    sys.stderr.write("python3 has no jinja2 (Debian: apt-get install python3-jinja2)\n")
    sys.exit(3)


class AssistantTracker(Extension):
    # transformers' {% generation %}: renders its body (it also records offsets, unused here).
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return nodes.CallBlock(self.call_method("_generation_support"), [], [], body).set_lineno(lineno)

    def _generation_support(self, caller):
        return caller()


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def strftime_now(format):
    return datetime.now().strftime(format)


def environment():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                       extensions=[AssistantTracker, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        job = json.load(f)
    out = []
    try:
        template = environment().from_string(job["template"])
    except Exception as e:  # noqa: BLE001 - any compile failure is a result
        out = [{"ok": False, "error": f"{type(e).__name__}: {e}"} for _ in job["cases"]]
    else:
        for variables in job["cases"]:
            try:
                out.append({"ok": True, "text": template.render(**variables)})
            except Exception as e:  # noqa: BLE001
                out.append({"ok": False, "error": f"{type(e).__name__}: {e}"})
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False)


if __name__ == "__main__":
    main()
