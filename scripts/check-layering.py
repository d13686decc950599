#!/usr/bin/env python3
"""Checks the include layering that issue 34 set as targets, so that CI keeps it true:

- harness/scenario/ includes nothing from harness/server/ but request parsing
  (openai_request.hpp), and its library does not link encbench_server (the CLI starts the live
  servers: harness/cli/preset_server.*);
- the rooms below them (core, imaging, raster, timeline, trace_read, device, device_cuda, encoder,
  serving, tokenizer, client, trace) include nothing from scenario/, server/ or cli/;
- nothing outside harness/cli/ includes harness/cli/.

    scripts/check-layering.py [--source DIR]     (DIR: the source tree; default: this script's)
Prints each breach with file:line and exits 1 if there is one.
"""
import os
import re
import sys

LOWER_ROOMS = ['core', 'judgement', 'imaging', 'raster', 'timeline', 'trace_read', 'device', 'device_cuda', 'encoder', 'serving',
               'tokenizer', 'client', 'trace']
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
    for b in breaches:
        print(b)
    print(f'layering: {len(breaches)} breach(es)')
    return 1 if breaches else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
