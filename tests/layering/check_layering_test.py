#!/usr/bin/env python3
"""scripts/check-layering.py on a toy source tree: two rooms that include each other fail with both
includes named; one arrow alone passes; a free function name in two rooms' headers fails unless
it is one of the explained names (to_json), which is listed as a note; a circle of three rooms
fails with its three includes named, the same three rooms as a ladder pass.

    tests/layering/check_layering_test.py SCRIPT
"""
import os
import subprocess
import sys
import tempfile


def write(root, rel, text):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w', encoding='utf-8') as fh:
        fh.write(text)


def run(script, root):
    done = subprocess.run([sys.executable, script, '--source', root], capture_output=True, text=True)
    return done.returncode, done.stdout


def main(argv):
    script = argv[1]
    failures = []
    with tempfile.TemporaryDirectory(prefix='check-layering-') as root:
        write(root, 'harness/scenario/CMakeLists.txt', 'encbench_library(encbench_scenario)\n')
        write(root, 'harness/geometry/shape.hpp',
              'namespace encbench::geometry {\nstruct Shape { int w = 0; };\n'
              'int area(const Shape& shape);\n}  // namespace encbench::geometry\n')
        write(root, 'harness/engine/step.hpp',
              '#include "harness/geometry/shape.hpp"\nnamespace encbench::engine {\n'
              'int area(const geometry::Shape& shape, int scale);\n}  // namespace encbench::engine\n')
        code, out = run(script, root)
        expected = ('free function area() is declared in the headers of harness/engine, harness/geometry '
                    '(one name for two rules')
        if code != 1 or expected not in out or '1 breach(es)' not in out:
            failures.append(f'one arrow and an unexplained shared name: expected one breach, got {code}:\n{out}')

        write(root, 'harness/engine/step.hpp',
              '#include "harness/geometry/shape.hpp"\nnamespace encbench::engine {\n'
              'int to_json(const geometry::Shape& shape, int scale);\n}  // namespace encbench::engine\n')
        write(root, 'harness/geometry/shape.hpp',
              'namespace encbench::geometry {\nstruct Shape { int w = 0; };\n'
              'int to_json(const Shape& shape);\n}  // namespace encbench::geometry\n')
        code, out = run(script, root)
        if code != 0 or 'note: free function to_json() is declared in the headers of harness/engine, harness/geometry' not in out:
            failures.append(f'one arrow and an explained shared name: expected a pass with a note, got {code}:\n{out}')

        write(root, 'harness/geometry/shape.cpp', '#include "harness/engine/step.hpp"\n')
        code, out = run(script, root)
        expected = ('harness/engine/ and harness/geometry/ include each other (a two-way tie): '
                    'harness/engine/step.hpp:1 includes harness/geometry/shape.hpp; '
                    'harness/geometry/shape.cpp:1 includes harness/engine/step.hpp')
        if code != 1 or expected not in out:
            failures.append(f'two-way tie: expected exit 1 naming both includes, got {code}:\n{out}')
    with tempfile.TemporaryDirectory(prefix='check-layering-') as root:
        write(root, 'harness/scenario/CMakeLists.txt', 'encbench_library(encbench_scenario)\n')
        write(root, 'harness/alpha/a.hpp', '#include "harness/beta/b.hpp"\n')
        write(root, 'harness/beta/b.hpp', '#include "harness/gamma/c.hpp"\n')
        code, out = run(script, root)
        if code != 0:
            failures.append(f'a ladder of three rooms: expected a pass, got {code}:\n{out}')
        write(root, 'harness/gamma/c.cpp', '#include "harness/alpha/a.hpp"\n')
        code, out = run(script, root)
        expected = ('harness/alpha/ -> harness/beta/ -> harness/gamma/ -> harness/alpha/ include each other in a '
                    'circle: harness/alpha/a.hpp:1 includes harness/beta/b.hpp; harness/beta/b.hpp:1 includes '
                    'harness/gamma/c.hpp; harness/gamma/c.cpp:1 includes harness/alpha/a.hpp')
        if code != 1 or expected not in out or '1 breach(es)' not in out:
            failures.append(f'a circle of three rooms: expected one breach naming its three includes, got {code}:\n{out}')
    for failure in failures:
        print('FAIL', failure)
    print('check-layering: ' + ('ok' if not failures else f'{len(failures)} failure(s)'))
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
