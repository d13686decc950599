#!/usr/bin/env python3
"""Lists type names declared in more than one header of harness/ and reports/ (no two
types share a name across rooms), and exits 1 if any is not on the allow-list below.

What it checks: every struct, class, union and enum (enum class too) *defined* (with a body) at
namespace scope in a header (*.hpp, *.h) under the given roots. Nested types are left out (their
enclosing type qualifies them: Foo::Options and Bar::Options read apart), and so are forward
declarations, aliases (`using X = ...`), template specialisations and .cpp files (types in a
source file's anonymous namespace never meet another room's). Two definitions of one name in
different headers are reported whatever their namespaces, since a reader (and grep) sees one name.
Outside the gate (checked with `... harness reports kernels tests`, 2026-11): kernels::cuda::GemmArgs
(device pointers) beside kernels::GemmArgs, and the scripted test server's testing::ServerConfig
beside server::ServerConfig.

    scripts/check-type-names.py [--source DIR] [--sources] [ROOT...]
        DIR: the source tree (default: this script's); ROOT: folders in it (default: harness
        reports); --sources: also .cpp files (a survey, not the gate: their types are private)
"""
import os
import re
import sys

# name -> why two types may keep it (each entry says what the types are). Keep this short:
# a clash is fixed by renaming one of them to what it is.
ALLOWED = {
}

TOKEN = re.compile(r'[A-Za-z_]\w*|::|[{};<>()=,:]')


def strip_code(text):
    """Removes comments, string/char literals and preprocessor lines (keeps newlines)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith('//', i):
            j = text.find('\n', i)
            i = n if j < 0 else j
        elif text.startswith('/*', i):
            j = text.find('*/', i + 2)
            i = n if j < 0 else j + 2
        elif c == 'R' and text.startswith('R"', i):
            m = re.match(r'R"([^(]*)\(', text[i:])
            end = text.find(')' + m.group(1) + '"', i) if m else -1
            i = n if end < 0 else end + len(m.group(1)) + 2
            out.append('""')
        elif c == '"' or (c == "'" and not (i > 0 and text[i - 1].isalnum())):  # 30'000 is a number
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == '\\' else 1
            out.append('""')
            i = j + 1
        elif c == '#' and (not out or ''.join(out[-1:]).endswith('\n') or text[:i].rstrip(' \t').endswith('\n')):
            while True:  # a directive, with its continuation lines
                j = text.find('\n', i)
                if j < 0:
                    i = n
                    break
                if text[j - 1] != '\\':
                    i = j
                    break
                i = j + 1
        else:
            out.append(c)
            i += 1
    return ''.join(out)


def namespace_scope_types(text):
    """(qualified name, kind) of each type defined at namespace scope."""
    tokens = TOKEN.findall(strip_code(text))
    found, stack = [], []  # stack: ('ns', name) | ('type', name) | ('block', None)
    pending = None          # what the next '{' opens
    i = 0
    while i < len(tokens):
        t = tokens[i]
        if t == 'namespace':
            j, parts = i + 1, []
            while j < len(tokens) and tokens[j] not in ('{', ';', '='):
                if tokens[j] != '::':
                    parts.append(tokens[j])
                j += 1
            if j < len(tokens) and tokens[j] == '{':
                pending = ('ns', '::'.join(parts) or '(anonymous)')
                i = j
                continue
            i = j  # namespace alias
        elif t in ('struct', 'class', 'union', 'enum'):
            j = i + 1
            if t == 'enum' and j < len(tokens) and tokens[j] in ('class', 'struct'):
                j += 1
            if j < len(tokens) and re.match(r'[A-Za-z_]', tokens[j]) and tokens[j] not in ('final',):
                name = tokens[j]
                k = j + 1
                while k < len(tokens) and tokens[k] == '::':  # struct std::hash<...>: not ours
                    name, k = tokens[k + 1], k + 2
                # Find what follows the head: '{' (a definition), ';' (forward), or something else
                # (a variable, parameter or template argument).
                depth, opened = 0, None
                for m in range(k, len(tokens)):
                    tok = tokens[m]
                    if tok == '<':
                        depth += 1
                    elif tok == '>':
                        depth -= 1
                        if depth < 0:  # `class T` of a template's parameters
                            break
                    elif depth == 0 and tok in ('{', ';', ')', ',', '=', '('):
                        opened = m if tok == '{' else None
                        break
                specialised = k < len(tokens) and tokens[k] == '<'
                if opened is not None:
                    in_namespace = all(kind == 'ns' for kind, _ in stack)
                    if in_namespace and not specialised:
                        scope = '::'.join(n for _, n in stack)
                        found.append(((scope + '::' if scope else '') + name, t))
                    pending = ('type', name)
                    i = opened
                    continue
            i = j
            continue
        elif t == '{':
            stack.append(pending or ('block', None))
            pending = None
        elif t == '}':
            if stack:
                stack.pop()
            pending = None
        elif t == ';':
            pending = None
        i += 1
    return found


def main(argv):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    args, suffixes = argv[1:], ('.hpp', '.h')
    if args[:1] == ['--source']:
        root, args = os.path.abspath(args[1]), args[2:]
    if args[:1] == ['--sources']:
        suffixes, args = suffixes + ('.cpp',), args[1:]
    roots = args or ['harness', 'reports']
    by_name = {}
    for top in roots:
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for f in sorted(files):
                if not f.endswith(suffixes):
                    continue
                path = os.path.join(dirpath, f)
                with open(path, encoding='utf-8', errors='replace') as fh:
                    text = fh.read()
                rel = os.path.relpath(path, root)
                for qualified, kind in namespace_scope_types(text):
                    by_name.setdefault(qualified.rsplit('::', 1)[-1], []).append((qualified, kind, rel))
    clashes = {n: d for n, d in by_name.items() if len({rel for _, _, rel in d}) > 1}
    failed = False
    for name in sorted(clashes):
        where = ', '.join(f'{q} ({k}, {rel})' for q, k, rel in clashes[name])
        if name in ALLOWED:
            print(f'allowed  {name}: {where} -- {ALLOWED[name]}')
        else:
            print(f'CLASH    {name}: {where}')
            failed = True
    stale = sorted(set(ALLOWED) - set(clashes))
    for name in stale:
        print(f'STALE    {name}: on the allow-list but no longer declared twice; remove it')
    total = sum(len(d) for d in by_name.values())
    print(f'{total} namespace-scope types in {len(by_name)} names under {", ".join(roots)}; '
          f'{len(clashes)} names declared in more than one header, {len(clashes) - len(set(clashes) & set(ALLOWED))} not allowed')
    return 1 if failed or stale else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
