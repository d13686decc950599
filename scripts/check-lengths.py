#!/usr/bin/env python3
"""Checks the size rules of docs/design.md: no class (struct, union) over 300 lines and no function
over 100 lines in the sources and headers of harness/ and reports/ (kernels/ is left out: a kernel
is one loop nest, read as one).

How it counts: comments, string literals and preprocessor lines are stripped (check-type-names.py's
scanner), then braces are matched. A class is a `{` whose statement holds `class`, `struct` or
`union` outside angle brackets (not `enum class`); its length is the lines from its keyword to its
closing brace, nested classes included. A function is a `{` at namespace or class scope whose
statement holds a parameter list; its length is the lines from its name to its closing brace
(lambdas and local classes inside it count toward it).

    scripts/check-lengths.py [--source DIR] [--max-class N] [--max-function N] [ROOT...]
        DIR: the source tree (default: this script's); ROOT: folders in it (default: harness reports)
Prints each breach with file:line and exits 1 if there is one (the classes in OVER_LIMIT_FOR_NOW,
each with the reason it is still long, are listed as notes instead).
"""
import importlib.util
import os
import re
import sys

# 'file:class' -> why it is over the limit for now. Each entry is work to do, not a licence: split
# the class by what it does and remove its line here.
OVER_LIMIT_FOR_NOW = {
    'harness/encoder/encoder.cpp:EncoderRunner::Impl':
        'the encoder forward (weights, layers, attention, merger, timing) in one class; to split',
    'harness/client/chunk_json.cpp:Scanner':
        'the streamed-chunk JSON scanner: its value grammar in one class; to split',
}

TOKEN = re.compile(r'[A-Za-z_]\w*|::|[{};<>()=,:\n]')
SCOPE_KINDS = ('namespace', 'class', 'extern')


def load_strip_code():
    """check-type-names.py's comment and literal stripper (one copy of that scanner)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'check-type-names.py')
    spec = importlib.util.spec_from_file_location('check_type_names', path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.strip_code


def block_kind(statement):
    """What a `{` opens, from the tokens of its statement: namespace, extern, class, function or
    block (anything else: an initialiser, an enum, a control statement's body, ...)."""
    words = [t for t, _ in statement]
    if not words:
        return 'block'
    if words[0] in ('namespace', 'extern'):
        return words[0] if '(' not in words else 'block'
    if 'enum' in words:
        return 'block'
    angle = 0
    for w in words:
        if w == '<':
            angle += 1
        elif w == '>':
            angle -= 1
        elif w in ('class', 'struct', 'union') and angle <= 0 and '(' not in words[:words.index(w)]:
            return 'class'
    if '(' in words and words[0] not in ('if', 'for', 'while', 'switch', 'catch', 'do', 'else', 'return'):
        return 'function'
    return 'block'


def measure(text, strip_code):
    """(kind, name, first line, last line) for each class and each function of a file's text."""
    found, stack, statement, line = [], [], [], 1
    for t in TOKEN.findall(strip_code(text)):
        if t == '\n':
            line += 1
            continue
        if t == '{':
            kind = block_kind(statement)
            outer = stack[-1][0] if stack else 'namespace'
            if kind == 'function' and outer not in SCOPE_KINDS:
                kind = 'block'  # a lambda or a call's braces inside a function: part of that function
            first = statement[0][1] if statement else line
            words = [w for w, _ in statement]
            name = next((w for w in reversed(words[:words.index('(')]) if re.match(r'[A-Za-z_~]\w*$', w)), '?') \
                if kind == 'function' else next((w for w in reversed(words) if re.match(r'[A-Za-z_]\w*$', w)
                                                and w not in ('public', 'private', 'protected', 'final')), '?')
            if kind == 'class':
                at = [i for i, w in enumerate(words) if w in ('class', 'struct', 'union')][-1] + 1
                qualified = []
                while at < len(words) and (re.match(r'[A-Za-z_]\w*$', words[at]) or words[at] == '::') \
                        and words[at] not in ('final', 'public', 'private', 'protected'):
                    qualified.append(words[at])
                    at += 1
                name = ''.join(qualified) or '?'
            stack.append((kind, name, first))
            statement = []
        elif t == '}':
            if stack:
                kind, name, first = stack.pop()
                if kind in ('class', 'function'):
                    found.append((kind, name, first, line))
            statement = []
        elif t == ';':
            statement = []
        else:
            statement.append((t, line))
    return found


def main(argv):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    limits = {'class': 300, 'function': 100}
    roots = []
    args = argv[1:]
    while args:
        a = args.pop(0)
        if a == '--source':
            root = os.path.abspath(args.pop(0))
        elif a == '--max-class':
            limits['class'] = int(args.pop(0))
        elif a == '--max-function':
            limits['function'] = int(args.pop(0))
        else:
            roots.append(a)
    strip_code = load_strip_code()
    breaches, counted = [], 0
    for folder in roots or ['harness', 'reports']:
        for dirpath, _, files in os.walk(os.path.join(root, folder)):
            for f in sorted(files):
                if not f.endswith(('.hpp', '.h', '.cpp', '.cu')):
                    continue
                path = os.path.join(dirpath, f)
                rel = os.path.relpath(path, root)
                with open(path, encoding='utf-8', errors='replace') as fh:
                    for kind, name, first, last in measure(fh.read(), strip_code):
                        counted += 1
                        if last - first + 1 > limits[kind] and f'{rel}:{name}' not in OVER_LIMIT_FOR_NOW:
                            breaches.append(f'{rel}:{first}: {kind} {name} is {last - first + 1} lines '
                                            f'(over {limits[kind]})')
    for where, why in sorted(OVER_LIMIT_FOR_NOW.items()):
        print(f'note: {where} is over the class limit for now: {why}')
    for b in breaches:
        print(b)
    print(f'lengths: {counted} classes and functions measured, {len(breaches)} over the limits '
          f'(class {limits["class"]}, function {limits["function"]} lines)')
    return 1 if breaches else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
