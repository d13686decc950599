#!/usr/bin/env bash
# The test command's own machinery, on fake stages and a toy project (no encbench build needed):
# scripts/stage-times.sh prints each stage's time and the total however the run ends and warns,
# without failing, past a budget; scripts/build.sh rebuilds what a build stopped half-way wrote.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/encbench-script-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# --- stage times: a run of fake stages, one over its budget, the gate's parts appended by a child
printf '# comment\nfast 100\nslow 0\ntotal 1000\n' >"$tmp/budget.tsv"
cat >"$tmp/run.sh" <<SH
set -euo pipefail
export ENCBENCH_STAGE_BUDGET=$tmp/budget.tsv
source $src/scripts/stage-times.sh
stage fast true
stage slow sleep 1
child() { echo "child-part 7" >>"\$ENCBENCH_STAGE_TIMES"; \${FAIL_CMD:-true}; }
stage child child
SH
out=$(bash "$tmp/run.sh") || fail "a run within budget must exit 0, got $?"
grep -Eq '^encbench:   fast +0 s .*\(budget 100 s\)$' <<<"$out" || fail "no line for fast: $out"
grep -Eq '^encbench:   child-part +7 s' <<<"$out" || fail "no line for a child's part: $out"
grep -Eq '^encbench:   total +[0-9]+ s' <<<"$out" || fail "no total line: $out"
grep -q 'WARNING: stage slow took 1 s, over its budget of 0 s' <<<"$out" || fail "no budget warning: $out"
! grep -q 'WARNING: stage fast' <<<"$out" || fail "fast is within its budget: $out"

# a failing stage: its exit status is kept, the table is still printed and marks the stage
rc=0; out=$(FAIL_CMD=false bash "$tmp/run.sh") || rc=$?
((rc == 1)) || fail "a failing stage must exit 1, got $rc"
grep -Eq '^encbench:   child .*\(failed or stopped\)' <<<"$out" || fail "failed stage not marked: $out"
grep -Eq '^encbench:   total ' <<<"$out" || fail "no total after a failure: $out"

# a run stopped half-way (TERM, as a CI runner or timeout sends it): the table is still printed
rc=0; out=$(FAIL_CMD="sleep 30" timeout -s TERM 3 bash "$tmp/run.sh") || rc=$?
((rc != 0)) || fail "a stopped run must not exit 0"
grep -Eq '^encbench:   child .*\(failed or stopped\)' <<<"$out" || fail "stopped stage not marked: $out"

# --- build.sh after a build that was stopped half-way
toy=$tmp/toy
mkdir -p "$toy/scripts"
cp "$src/scripts/build.sh" "$toy/scripts/"
printf 'cmake_minimum_required(VERSION 3.16)\nproject(toy C)\nadd_library(l STATIC l.c)\nadd_executable(t t.c)\ntarget_link_libraries(t l)\n' >"$toy/CMakeLists.txt"
echo 'int l(void) { return 3; }' >"$toy/l.c"
printf 'int l(void);\nint main(void) { return l() - 3; }\n' >"$toy/t.c"
(cd "$toy" && scripts/build.sh b >/dev/null) || fail "toy build"
[[ ! -e "$toy/b/.encbench-build-unfinished" ]] || fail "marker left after a finished build"
# what a killed compiler and linker leave: a truncated object and executable, newer than the sources
sleep 1; touch "$toy/b/.encbench-build-unfinished"; sleep 1
obj=$(find "$toy/b" -name 'l.c.o')
: >"$obj"
head -c 64 "$toy/b/t" >"$toy/b/t.part" && mv "$toy/b/t.part" "$toy/b/t" && chmod +x "$toy/b/t"
(cd "$toy" && scripts/build.sh b >/dev/null 2>&1) || fail "rebuild after a stopped build"
[[ -s "$obj" ]] || fail "the truncated object was kept"
"$toy/b/t" || fail "the rebuilt executable does not run"
echo "stage_times_test: OK"
