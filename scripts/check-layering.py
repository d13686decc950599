#!/usr/bin/env python3
"""Checks the include layering that docs/design.md sets out (rooms and who may include whom), so
that CI keeps it true:

- harness/scenario/ includes nothing from harness/server/ but request parsing
  (openai_request.hpp), and its library does not link encbench_server (the CLI starts the live
  servers: harness/cli/preset_server.*);
- the rooms below them (core, imaging, raster, timeline, trace_read, device, device_cuda, vision,
  encoder, serving, tokenizer, client, trace) include nothing from scenario/, server/ or cli/;
- nothing outside harness/cli/ includes harness/cli/;
- no two rooms include each other (a two-way tie): the rooms are the folders under harness/, plus
  reports/ and kernels/, and each pair may have an arrow one way only.

It also reports, without failing, each free function name declared at namespace scope in the
headers of more than one room (to_json beside to_json, say): overloads on different types are
usual there, so the list is for a reader deciding whether two functions are one rule told twice.

    scripts/check-layering.py [--source DIR]     (DIR: the source tree; default: this script's)
Prints each breach with file:line and exits 1 if there is one.
"""
import importlib.util
import os
import re
import sys

LOWER_ROOMS = ['core', 'judgement', 'imaging', 'raster', 'timeline', 'trace_read', 'device', 'device_cuda', 'vision',
               'encoder', 'serving', 'tokenizer', 'parquet', 'client', 'trace']
SCENARIO_MAY_INCLUDE_FROM_SERVER = {'harness/server/openai_request.hpp'}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def includes(root, folder):
    for dirpath, _, files in os.walk(os.path.join(root, folder)):
        for f in sorted(files):
            if f.endswith(('.hpp', '.h', '.cpp', '.cu')):
                path = os.path.join(dirpath, f)
                rel = os.path.relpath(path, root)
                with open(path, encoding='utf-8', errors='replace') as fh:
                    for n, line in enumerate(fh, 1):
                        m = INCLUDE.match(line)
                        if m:
                            yield rel, n, m.group(1)


def room_of(path):
    """The room a source path or include path belongs to: harness/<folder>, reports or kernels."""
    parts = path.split('/')
    if parts[0] == 'harness' and len(parts) > 2:
        return 'harness/' + parts[1]
    if parts[0] in ('reports', 'kernels') and len(parts) > 1:
        return parts[0]
    return None


def two_way_ties(root):
    """One breach per pair of rooms that include each other, naming one include each way."""
    first_arrow = {}  # (from room, to room) -> 'file:line'
    for folder in ['harness', 'reports', 'kernels']:
        for rel, n, inc in includes(root, folder):
            source, target = room_of(rel), room_of(inc)
            if source and target and source != target:
                first_arrow.setdefault((source, target), f'{rel}:{n} includes {inc}')
    breaches = []
    for (a, b), where in sorted(first_arrow.items()):
        if a < b and (b, a) in first_arrow:
            breaches.append(f'{a}/ and {b}/ include each other (a two-way tie): {where}; '
                            f'{first_arrow[(b, a)]}')
    return breaches


def load_strip_code():
    """check-type-names.py's comment and literal stripper (one copy of that scanner)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'check-type-names.py')
    spec = importlib.util.spec_from_file_location('check_type_names', path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.strip_code


FUNCTION_TOKEN = re.compile(r'[A-Za-z_]\w*|::|[{};<>()=,:~]')
NOT_A_FUNCTION = {'struct', 'class', 'union', 'enum', 'using', 'typedef', 'static_assert', 'operator',
                  'friend', 'namespace', 'return'}


def namespace_scope_functions(text, strip_code):
    """Names of the free functions declared or defined at namespace scope in a header's text."""
    tokens = FUNCTION_TOKEN.findall(strip_code(text))
    names, stack, statement = set(), [], []  # stack: True for a namespace (or extern "C") block
    i = 0
    while i < len(tokens):
        t = tokens[i]
        at_namespace_scope = all(stack)
        if t == '{':
            stack.append(bool(statement) and statement[0] in ('namespace', 'extern') and '(' not in statement)
            statement = []
        elif t == '}':
            if stack:
                stack.pop()
            statement = []
        elif t == ';':
            statement = []
        elif t == '(' and at_namespace_scope and statement:
            angle = statement.count('<') - statement.count('>')
            name = statement[-1]
            if (angle <= 0 and re.match(r'[A-Za-z_]\w*$', name) and not name.isupper()
                    and not (NOT_A_FUNCTION & set(statement)) and '=' not in statement
                    and (len(statement) < 2 or statement[-2] != '::')):
                names.add(name)
            depth = 1  # skip the parameter list; what follows it (body or ';') closes the statement
            while depth and i + 1 < len(tokens):
                i += 1
                depth += {'(': 1, ')': -1}.get(tokens[i], 0)
            statement.append('()')
        else:
            statement.append(t)
        i += 1
    return names


def shared_function_names(root):
    """name -> sorted rooms, for free function names declared in the headers of two or more rooms."""
    strip_code = load_strip_code()
    rooms_by_name = {}
    for folder in ['harness', 'reports', 'kernels']:
        for dirpath, _, files in os.walk(os.path.join(root, folder)):
            for f in sorted(files):
                if not f.endswith(('.hpp', '.h')):
                    continue
                path = os.path.join(dirpath, f)
                room = room_of(os.path.relpath(path, root))
                with open(path, encoding='utf-8', errors='replace') as fh:
                    for name in namespace_scope_functions(fh.read(), strip_code):
                        rooms_by_name.setdefault(name, set()).add(room)
    return {name: sorted(rooms) for name, rooms in rooms_by_name.items() if len(rooms) > 1}


def main(argv):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if argv[1:2] == ['--source']:
        root = os.path.abspath(argv[2])
    breaches = []
    for rel, n, inc in includes(root, 'harness/scenario'):
        if inc.startswith('harness/server/') and inc not in SCENARIO_MAY_INCLUDE_FROM_SERVER:
            breaches.append(f'{rel}:{n}: scenario/ includes {inc} (only request parsing may be included)')
    for room in LOWER_ROOMS:
        for rel, n, inc in includes(root, 'harness/' + room):
            if inc.startswith(('harness/scenario/', 'harness/server/', 'harness/cli/')):
                breaches.append(f'{rel}:{n}: {room}/ is below scenario/, server/ and cli/ but includes {inc}')
    for folder in ['harness', 'reports', 'kernels']:
        for rel, n, inc in includes(root, folder):
            if inc.startswith('harness/cli/') and not rel.startswith('harness/cli/'):
                breaches.append(f'{rel}:{n}: includes {inc} (cli/ is the top: nothing below calls back into it)')
    cmake = os.path.join(root, 'harness/scenario/CMakeLists.txt')
    with open(cmake, encoding='utf-8') as fh:
        text = re.sub(r'#[^\n]*', '', fh.read())
    if re.search(r'\bencbench_server\b(?!_)', text):
        breaches.append('harness/scenario/CMakeLists.txt: a scenario library links encbench_server '
                        '(encbench_server_request is the request parsing it may use)')
    breaches += two_way_ties(root)
    shared = shared_function_names(root)
    for name in sorted(shared):
        print(f'note: free function {name}() is declared in the headers of {", ".join(shared[name])}')
    print(f'layering: {len(shared)} free function name(s) declared in more than one room (a report, not a breach)')
    for b in breaches:
        print(b)
    print(f'layering: {len(breaches)} breach(es)')
    return 1 if breaches else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
