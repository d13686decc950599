#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite: once in a Release build and
# once under AddressSanitizer + UndefinedBehaviorSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --test
[[ -x tests/node/install.sh ]] && tests/node/install.sh
jobs=$(nproc)
scripts/build.sh build
(cd build && ctest --output-on-failure -j "$jobs" --timeout 600)
# The sanitizer build runs every test; it skips what only benchmarks use (encbench-micro, CUDA)
# and compiles at -O1 with line tables only, which keeps CI inside its time budget.
scripts/build.sh build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1" \
  "-DENCBENCH_SANITIZE=address;undefined" -DENCBENCH_CUDA=OFF -DENCBENCH_BUILD_MICRO=OFF
(cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ENCBENCH_SANITIZED=1 ctest --output-on-failure -j "$jobs" --timeout 900)
# Fuzzing (docs/fuzzing.md): every parser of user- or server-controlled data as a libFuzzer target,
# built with clang + ASan + UBSan (build-fuzz). Each replays its committed corpus (the regression
# test), then fuzzes for ENCBENCH_FUZZ_BUDGET_S / targets seconds (default 240 s in all: 24 s for
# each of the 10). A crash fails CI and prints its reproducer (path, hexdump, base64).
scripts/fuzz.sh --ci "${ENCBENCH_FUZZ_BUDGET_S:-240}"
# Performance gate (docs/reports.md, "CI recipe"): the commit under test against its first parent,
# both built here the same way, each in its own worktree (ccache makes the shared code free):
# HEAD no longer reuses the test build, so the two sides differ in nothing but the commit (an A/A
# comparison of a docs-only commit had flagged the real-clock sim's encoder idle % between a
# test-tree HEAD and a worktree BASE). Deterministic metrics first (instruction
# counts under valgrind, encbench-instr, and sim virtual-clock times: 1 %), then the wall-clock
# runs interleaved on this machine, which fail only on a regression that clears significance,
# threshold and the spread between rounds.
if git rev-parse -q --verify 'HEAD~1^{commit}' >/dev/null 2>&1; then
  scripts/ci-gate.sh --base HEAD~1 --configure-like build --rounds 3 --warmup-rounds 1 --micro-reps 3 \
    --micro-min-time 0.1 --micro-filter "$(cat scenarios/ci-micro-filter.txt)" --out ci-gate-out \
    --serving-cmd '{bin} run --scenario scenarios/closed-loop-ci.json --result {out} --result-dir {out}.d'
else
  echo "encbench: no parent commit to gate against; performance gate skipped"
fi
