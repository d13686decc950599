#!/usr/bin/env python3
"""scripts/check-layering.py on a toy source tree: two rooms that include each other fail with both
includes named; one arrow alone passes; a free function name in two rooms' headers is reported
without failing.

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
        if code != 0 or 'area() is declared in the headers of harness/engine, harness/geometry' not in out:
            failures.append(f'one arrow and a shared name: expected a pass with the name reported, got {code}:\n{out}')

        write(root, 'harness/geometry/shape.cpp', '#include "harness/engine/step.hpp"\n')
        code, out = run(script, root)
        expected = ('harness/engine/ and harness/geometry/ include each other (a two-way tie): '
                    'harness/engine/step.hpp:1 includes harness/geometry/shape.hpp; '
                    'harness/geometry/shape.cpp:1 includes harness/engine/step.hpp')
        if code != 1 or expected not in out:
            failures.append(f'two-way tie: expected exit 1 naming both includes, got {code}:\n{out}')
    for failure in failures:
        print('FAIL', failure)
    print('check-layering: ' + ('ok' if not failures else f'{len(failures)} failure(s)'))
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
