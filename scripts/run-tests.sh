#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite: once in a Release build and
# once under AddressSanitizer + UndefinedBehaviorSanitizer.
#
# Every stage's wall time is printed at the end, with the total, also when a stage failed or the
# run was stopped; a stage over its budget in scripts/ci-stage-budget.tsv gets a warning (never a
# failure). A run stopped half-way (Ctrl-C, a killed job) can simply be started again: the build
# directories drop what an unfinished build wrote (scripts/build.sh), and the gate removes its own
# stale worktrees and results (scripts/ci-gate.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)

# Stage times and budgets (scripts/stage-times.sh): `stage NAME COMMAND...` runs and times a stage;
# the table is printed when this script exits, however it exits.
source scripts/stage-times.sh

release_tests() { (cd build && ctest --output-on-failure -j "$jobs" --timeout 600); }
asan_tests() {
  (cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ENCBENCH_SANITIZED=1 ctest --output-on-failure -j "$jobs" --timeout 900)
}

stage install-deps scripts/install-deps.sh --test
if [[ -x tests/node/install.sh ]]; then stage node-deps tests/node/install.sh; fi
stage release-build scripts/build.sh build
stage release-tests release_tests
# The sanitizer build runs every test; it skips what only benchmarks use (encbench-micro, CUDA)
# and compiles at -O1 with line tables only, which keeps CI inside its time budget.
stage asan-build scripts/build.sh build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1" \
  "-DENCBENCH_SANITIZE=address;undefined" -DENCBENCH_CUDA=OFF -DENCBENCH_BUILD_MICRO=OFF
stage asan-tests asan_tests
# Fuzzing (docs/fuzzing.md): every parser of user- or server-controlled data as a libFuzzer target,
# built with clang + ASan + UBSan (build-fuzz). Each replays its committed corpus (the regression
# test), then fuzzes for ENCBENCH_FUZZ_BUDGET_S / targets seconds (default 240 s in all: 24 s for
# each of the 10). A crash fails CI and prints its reproducer (path, hexdump, base64). The build
# is its own stage (fuzz.sh --ci then finds it up to date).
stage fuzz-build scripts/fuzz.sh --build
stage fuzz-runs scripts/fuzz.sh --ci "${ENCBENCH_FUZZ_BUDGET_S:-240}"
# Performance gate (docs/reports.md, "CI recipe"): the commit under test against its first parent,
# both built here the same way, each in its own worktree (ccache makes the shared code free):
# HEAD no longer reuses the test build, so the two sides differ in nothing but the commit (an A/A
# comparison of a docs-only commit had flagged the real-clock sim's encoder idle % between a
# test-tree HEAD and a worktree BASE). Deterministic metrics first (instruction
# counts under valgrind, encbench-instr, and sim virtual-clock times: 1 %), then the wall-clock
# runs interleaved on this machine, which fail only on a regression that clears significance,
# threshold and the spread between rounds. Both sides are configured like build (same compile
# commands), so every translation unit they share with it is a ccache hit. The gate records its
# builds, instruction counts and rounds as stages gate-builds, gate-instr and gate-rounds.
if git rev-parse -q --verify 'HEAD~1^{commit}' >/dev/null 2>&1; then
  stage gate scripts/ci-gate.sh --base HEAD~1 --configure-like build --rounds 3 --warmup-rounds 1 --micro-reps 3 \
    --micro-min-time 0.1 --micro-filter "$(cat scenarios/ci-micro-filter.txt)" --out ci-gate-out \
    --serving-cmd '{bin} run --scenario scenarios/preset-ab-ci.json --result {out} --result-dir {out}.d'
else
  echo "encbench: no parent commit to gate against; performance gate skipped"
fi
