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
  reports/ and kernels/, and each pair may have an arrow one way only;
- no longer circle either (a includes b includes c includes a): the rooms' arrows form a ladder.

It also lists each free function name declared at namespace scope in the headers of more than one
room (to_json beside to_json, say). A name in SHARED_FUNCTION_NAMES (each with the reason it may be
shared: overloads on different types, one function declared at a seam, ...) is listed as a note;
any other shared name is a breach: two rooms with one name for two rules (rename one to what it
does), or one rule told twice (keep one).

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


def room_arrows(root):
    """(from room, to room) -> 'file:line includes path', the first include each way."""
    first_arrow = {}
    for folder in ['harness', 'reports', 'kernels']:
        for rel, n, inc in includes(root, folder):
            source, target = room_of(rel), room_of(inc)
            if source and target and source != target:
                first_arrow.setdefault((source, target), f'{rel}:{n} includes {inc}')
    return first_arrow


def circles(first_arrow):
    """One breach per circle of three or more rooms (two-way ties are two_way_ties' breaches),
    naming the include behind each of its arrows."""
    after = {}
    for a, b in first_arrow:
        if (b, a) not in first_arrow:  # a two-way tie is told once, by two_way_ties
            after.setdefault(a, []).append(b)
    breaches, seen_cycles, state = [], set(), {}

    def visit(room, path):
        state[room] = 'open'
        for nxt in sorted(after.get(room, [])):
            if state.get(nxt) == 'open':
                cycle = path[path.index(nxt):] + [nxt]
                key = frozenset(cycle)
                if key not in seen_cycles:
                    seen_cycles.add(key)
                    steps = '; '.join(first_arrow[(cycle[i], cycle[i + 1])] for i in range(len(cycle) - 1))
                    breaches.append(f'{" -> ".join(c + "/" for c in cycle)} include each other in a circle: {steps}')
            elif nxt not in state:
                visit(nxt, path + [nxt])
        state[room] = 'done'

    for room in sorted(after):
        if room not in state:
            visit(room, [room])
    return breaches


def two_way_ties(root):
    """One breach per pair of rooms that include each other, naming one include each way, and one
    per longer circle."""
    first_arrow = room_arrows(root)
    breaches = []
    for (a, b), where in sorted(first_arrow.items()):
        if a < b and (b, a) in first_arrow:
            breaches.append(f'{a}/ and {b}/ include each other (a two-way tie): {where}; '
                            f'{first_arrow[(b, a)]}')
    return breaches + circles(first_arrow)


def load_strip_code():
    """check-type-names.py's comment and literal stripper (one copy of that scanner)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'check-type-names.py')
    spec = importlib.util.spec_from_file_location('check_type_names', path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.strip_code


# name -> why rooms may share it. Keep it to names whose meaning is one across the rooms.
SHARED_FUNCTION_NAMES = {
    'to_json': 'overloads on each room\'s record type: one meaning, a record as its versioned JSON',
    'to_string': 'overloads on each room\'s enums and small records: one meaning, the value as its text',
    'describe': 'overloads on each room\'s option and result types: one meaning, a one-line summary',
    'validate': 'overloads on each room\'s option and file types: one meaning, throw InvalidInput when invalid',
    'make_cuda_device': 'one function: declared at the seam (device/cuda_backend.hpp) and in device_cuda/, '
                        'which defines it',
    'encode_jpeg': 'client/ overloads imaging/\'s encoder on its RgbImage and calls it: one rule',
    'encode_png': 'client/ overloads imaging/\'s encoder on its RgbImage and calls it: one rule',
    'quick_gelu': 'one formula in two forms: encoder/host_math in place over the host path\'s buffer, '
                  'kernels/ out of place as the kernel under test',
    'gelu_tanh': 'one formula in two forms: encoder/host_math in place, kernels/ out of place (as quick_gelu)',
    'silu_mul': 'one formula in two forms: encoder/host_math on one gate_up buffer, kernels/ on gate and up '
                '(as quick_gelu)',
    'attention_reference': 'one reference in two forms: encoder/host_math on the host path\'s q, k, v, '
                           'kernels/ on varlen arguments; tests/encoder/host_math_test.cpp holds them to each other',
}

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
        where = f'free function {name}() is declared in the headers of {", ".join(shared[name])}'
        if name in SHARED_FUNCTION_NAMES:
            print(f'note: {where}: {SHARED_FUNCTION_NAMES[name]}')
        else:
            breaches.append(f'{where} (one name for two rules: rename one, or say in SHARED_FUNCTION_NAMES '
                            'why it is one)')
    print(f'layering: {len(shared)} free function name(s) declared in more than one room, '
          f'{len([n for n in shared if n not in SHARED_FUNCTION_NAMES])} not explained')
    for b in breaches:
        print(b)
    print(f'layering: {len(breaches)} breach(es)')
    return 1 if breaches else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
