#!/usr/bin/env python3
"""scripts/check-lengths.py on a toy source tree: a class of exactly 300 lines and a function of
exactly 100 pass; one line more in either fails, naming the file, line, kind and length; a lambda
and an enum inside a function count toward that function, not on their own.

    tests/layering/check_lengths_test.py SCRIPT
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
    done = subprocess.run([sys.executable, script, '--source', root, 'harness'], capture_output=True, text=True)
    return done.returncode, done.stdout


def class_of(lines):
    """`class Big {` ... `};` spanning `lines` lines (a member per inner line)."""
    body = [f'  int member_{i} = 0;  // {{ a brace in a comment' for i in range(lines - 2)]
    return 'namespace toy {\nclass Big {\n' + '\n'.join(body) + '\n};\n}  // namespace toy\n'


def function_of(lines):
    """`int f(int x) {` ... `}` spanning `lines` lines, with a lambda and an enum inside."""
    body = ['  enum class Kind { a, b };', '  auto twice = [](int v) {', '    return 2 * v;', '  };']
    body += [f'  x += {i};' for i in range(lines - 2 - len(body) - 1)]
    body.append('  return twice(x);')
    return 'namespace toy {\nint f(int x) {\n' + '\n'.join(body) + '\n}\n}  // namespace toy\n'


def main(argv):
    script = argv[1]
    failures = []
    with tempfile.TemporaryDirectory(prefix='check-lengths-') as root:
        write(root, 'harness/toy/big.hpp', class_of(300))
        write(root, 'harness/toy/f.cpp', function_of(100))
        code, out = run(script, root)
        if code != 0 or '0 over the limits' not in out:
            failures.append(f'at the limits: expected a pass, got {code}:\n{out}')
        write(root, 'harness/toy/big.hpp', class_of(301))
        write(root, 'harness/toy/f.cpp', function_of(101))
        code, out = run(script, root)
        for expected in ['harness/toy/big.hpp:2: class Big is 301 lines (over 300)',
                         'harness/toy/f.cpp:2: function f is 101 lines (over 100)', '2 over the limits']:
            if code != 1 or expected not in out:
                failures.append(f'one line over: expected exit 1 and "{expected}", got {code}:\n{out}')
    for failure in failures:
        print('FAIL', failure)
    print('check-lengths: ' + ('ok' if not failures else f'{len(failures)} failure(s)'))
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
