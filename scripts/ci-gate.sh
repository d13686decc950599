#!/usr/bin/env bash
# CI performance gate: build BASE and HEAD in one job, run their benchmarks interleaved on this one
# machine, compare, and fail only on a regression (docs/reports.md, "CI recipe").
#
#   scripts/ci-gate.sh [--base REF] [--head REF] [--rounds N] [--out DIR] [--gate FILE]
#                      [--micro-filter REGEX] [--micro-reps N] [--micro-min-time S]
#                      [--serving-cmd CMD] [--warmup-rounds N] [--instr-filter RE] [--no-instr]
#                      [--keep]
#
#   --base REF          baseline commit (default: merge-base of HEAD and origin/main, else main;
#                       on main itself that is HEAD: pass --base HEAD~1 to judge the last commit)
#   --head REF          commit under test (default: HEAD)
#   --rounds N          interleaved rounds (default 3); each round runs base and head once, in
#                       alternating order (ABBA...) so slow drift of the machine cancels out
#   --warmup-rounds N   unmeasured rounds first (default 1): the first runs on a fresh machine pay
#                       for page faults and cold caches that later runs do not
#   --micro-reps N      Google Benchmark repetitions per round (default 3; rounds x reps >= 9 is
#                       what compare's U test wants)
#   --micro-filter RE   --benchmark_filter for encbench-micro (default: all)
#   --micro-min-time S  --benchmark_min_time in seconds (default: Google Benchmark's own)
#   --serving-cmd CMD   closed-loop serving run per round, run in that side's source tree; {bin}
#                       is replaced by the build's encbench, {out} by the result JSON path, e.g.
#                       '{bin} run --scenario scenarios/closed-loop-ci.json --result {out}'
#                       (default: none; the step is skipped with a message)
#   --instr-filter RE   cases of encbench-instr to count (default: all); the deterministic step:
#                       instruction counts under Valgrind, once per side (they do not vary), run
#                       first and judged at 1 % (docs/reports.md, "Deterministic metrics")
#   --no-instr          skip the instruction-count step
#   --gate FILE         gate (default scenarios/gates/ci.json of HEAD)
#   --out DIR           where results, tables, JUnit XML and the HTML report go (default ci-gate-out)
#   --base-build DIR    use this existing build tree for BASE instead of building it (it must hold
#   --head-build DIR    harness/cli/encbench and harness/micro/encbench-micro; e.g. a CI cache)
#   --configure-like DIR  build both sides here, configured like this build tree (build type,
#                       compilers and flags, CUDA, sanitizers, MPI, BLIS): the sides then differ
#                       only in their commit, and compile every file they share with DIR with the
#                       same command, so ccache returns DIR's objects for them
#   --keep              keep the temporary worktrees and builds
#
# A commit that moves a gated figure on purpose declares it in its message, one line per metric
# glob: "Gate-Accept: GLOB=REASON" (e.g. "Gate-Accept: *virtual*=host time is now modelled").
# Every such line in BASE..HEAD becomes compare --accept: the metric is shown ACCEPTED, not failed.
#
# A side that is built here is configured like the reference build (--configure-like, else
# --head-build or --base-build) and compiled through ccache when it is installed, so the translation
# units it shares with that build and with the other side are cache hits
# (cmake/EncbenchCcache.cmake). The log says, per side, how many translation units compile exactly
# as in the reference build, and the ccache hits and compiles of that side's build alone.
#
# Exit status: 0 no regression, 1 regression, 2 invalid input or a failed build/run.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

base_ref="" head_ref="HEAD" rounds=3 out="ci-gate-out" gate="" micro_filter="" micro_reps=3
serving_cmd="" keep=0 base_build="" head_build="" micro_min_time="" warmup_rounds=1 configure_like=""
instr=1 instr_filter="" serving_unusable=0
while (($#)); do
  case "$1" in
    --base) base_ref=$2; shift 2 ;;
    --head) head_ref=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --gate) gate=$2; shift 2 ;;
    --micro-filter) micro_filter=$2; shift 2 ;;
    --micro-reps) micro_reps=$2; shift 2 ;;
    --micro-min-time) micro_min_time=$2; shift 2 ;;
    --warmup-rounds) warmup_rounds=$2; shift 2 ;;
    --serving-cmd) serving_cmd=$2; shift 2 ;;
    --base-build) base_build=$2; shift 2 ;;
    --head-build) head_build=$2; shift 2 ;;
    --configure-like) configure_like=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    --instr-filter) instr_filter=$2; shift 2 ;;
    --no-instr) instr=0; shift ;;
    -h|--help) sed -n '2,41p' "$0"; exit 0 ;;
    *) echo "ci-gate: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "ci-gate: --rounds must be a positive integer" >&2; exit 2; }
[[ "$micro_reps" =~ ^[1-9][0-9]*$ ]] || { echo "ci-gate: --micro-reps must be a positive integer" >&2; exit 2; }
[[ "$warmup_rounds" =~ ^[0-9]+$ ]] || { echo "ci-gate: --warmup-rounds must be a non-negative integer" >&2; exit 2; }
[[ -z "$micro_min_time" || "$micro_min_time" =~ ^[0-9]*\.?[0-9]+$ ]] \
  || { echo "ci-gate: --micro-min-time must be a number of seconds" >&2; exit 2; }
for d in "$base_build" "$head_build" "$configure_like"; do
  [[ -z "$d" || -d "$d" ]] || { echo "ci-gate: no such build directory: $d" >&2; exit 2; }
done
if [[ -z "$base_ref" ]]; then
  base_ref=$(git merge-base HEAD origin/main 2>/dev/null || git merge-base HEAD main 2>/dev/null || true)
  [[ -n "$base_ref" ]] || { echo "ci-gate: cannot find a merge base; pass --base REF" >&2; exit 2; }
fi
base_sha=$(git rev-parse --verify "$base_ref^{commit}") || { echo "ci-gate: bad --base $base_ref" >&2; exit 2; }
head_sha=$(git rev-parse --verify "$head_ref^{commit}") || { echo "ci-gate: bad --head $head_ref" >&2; exit 2; }
# Intended changes: a commit under test (BASE..HEAD) that moves a gated figure on purpose says so
# in its message, one line each: "Gate-Accept: GLOB=REASON" (compare --accept). The waiver is
# printed, kept in the compare JSON and shown as ACCEPTED; it never hides an unrelated metric.
accept_args=()
while IFS= read -r line; do
  [[ -n "$line" ]] || continue
  accept_args+=(--accept "$line")
  echo "ci-gate: accepted change declared by a commit under test: $line"
done < <(git log --format=%B "$base_sha..$head_sha" | sed -n 's/^Gate-Accept:[[:space:]]*//p')

mkdir -p "$out"
out=$(cd "$out" && pwd)
# A run stopped half-way (Ctrl-C, a killed job) must not leak into this one: results of its rounds
# would be judged with ours (compare reads whole directories; a stale instr-compare.json would enter
# the verdict when this run skips that step). Only what this script writes is removed.
rm -rf "$out/micro" "$out/serving" "$out/warmup" "$out/instr"
rm -f "$out"/{instr,micro,serving}{.md,.txt,-junit.xml,-compare.json} "$out"/{build,instr}-{base,head}.log \
  "$out"/{base,head}-round*-{micro,serving}.log "$out/report.html"
# Worktrees of earlier gate runs that were killed before their cleanup (SIGKILL, OOM, a lost
# machine): a run records its process id in its work directory; one whose process is gone is
# removed. Runs of other users of the same repository that are still going are left alone.
git -C "$repo" worktree prune 2>/dev/null || true
while IFS= read -r wt; do
  stale_work=${wt%/*}
  [[ "$stale_work" == */encbench-ci-gate.* && -f "$stale_work/owner" ]] || continue
  read -r owner_host owner_pid <"$stale_work/owner" || continue
  [[ "$owner_host" == "$HOSTNAME" && ! -d "/proc/$owner_pid" ]] || continue
  echo "ci-gate: removing the worktree $wt of a stopped gate run (pid $owner_pid)"
  git -C "$repo" worktree remove --force "$wt" >/dev/null 2>&1 || true
  [[ -d "$stale_work/base" || -d "$stale_work/head" ]] || rm -rf "$stale_work"
done < <(git -C "$repo" worktree list --porcelain | sed -n 's/^worktree //p')
work=$(mktemp -d "${TMPDIR:-/tmp}/encbench-ci-gate.XXXXXX")
echo "$HOSTNAME $$" >"$work/owner"
cleanup() {
  # A kept work directory has no owner, so no later run takes it for a stale one.
  if ((keep)); then rm -f "$work/owner"; echo "ci-gate: kept $work" >&2; return; fi
  git -C "$repo" worktree remove --force "$work/base" >/dev/null 2>&1 || true
  git -C "$repo" worktree remove --force "$work/head" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
# Ctrl-C or a TERM from the CI runner: exit through the EXIT trap, so the worktrees go too.
trap 'exit 130' INT
trap 'exit 143' TERM
# Stage times for scripts/run-tests.sh's summary: "NAME SECONDS" lines appended to the file named by
# ENCBENCH_STAGE_TIMES, when it is set.
stage_time() {
  [[ -n "${ENCBENCH_STAGE_TIMES:-}" ]] && echo "$1 $2" >>"$ENCBENCH_STAGE_TIMES"
  return 0
}

echo "ci-gate: base $base_sha, head $head_sha, $rounds rounds; output in $out"
jobs=$(nproc)
# Configure a side built here like the prebuilt one, so both sides are the same kind of build
# (and share ccache entries); otherwise Release without CUDA. With --configure-like, every cache
# entry that enters a compile command is copied (compilers, flags, sanitizers, CUDA, MPI, BLIS), and
# the side's build directory sits at the same place in its checkout as the reference's does in
# this one: ccache (base_dir = the checkout) then sees the very command lines the reference build
# compiled, and every translation unit the commit did not change is a hit. ENCBENCH_BUILD_TESTS=OFF
# only leaves out the test executables and GTest; it changes no compile command.
configure_args=(-DCMAKE_BUILD_TYPE=Release -DENCBENCH_BUILD_TESTS=OFF -DENCBENCH_CUDA=OFF)
reference_build=${configure_like:-${head_build:-$base_build}}
side_build_rel=build reference_src=""
if [[ -n "$reference_build" && -f "$reference_build/CMakeCache.txt" ]]; then
  reference_build=$(cd "$reference_build" && pwd)
  cache_value() { sed -n "s/^$1:[A-Z]*=//p" "$reference_build/CMakeCache.txt" | head -1; }
  build_type=$(cache_value CMAKE_BUILD_TYPE)
  configure_args=(-DENCBENCH_BUILD_TESTS=OFF "-DCMAKE_BUILD_TYPE=$build_type")
  for var in ENCBENCH_CUDA CMAKE_CUDA_ARCHITECTURES ENCBENCH_SANITIZE ENCBENCH_MPI ENCBENCH_BLIS \
             CMAKE_C_COMPILER CMAKE_CXX_COMPILER CMAKE_C_FLAGS CMAKE_CXX_FLAGS \
             "CMAKE_C_FLAGS_${build_type^^}" "CMAKE_CXX_FLAGS_${build_type^^}"; do
    grep -q "^$var:" "$reference_build/CMakeCache.txt" && configure_args+=("-D$var=$(cache_value "$var")")
  done
  reference_src=$(cache_value CMAKE_HOME_DIRECTORY)
  case "$reference_build" in
    "$reference_src"/*) side_build_rel=${reference_build#"$reference_src"/} ;;
  esac
fi
# compile_commands.json of a side against the reference's: how many translation units compile with
# the same command line once each checkout's own paths are mapped out of the path arguments (what
# ccache's base_dir does). A shared file whose command differs is a cache miss however little the
# commit changed. A -D whose value holds the checkout's path is not mapped by ccache: such a file
# still hits in ccache's preprocessed mode unless it expands the macro; those are counted apart.
same_commands() {  # same_commands SIDE_SRC SIDE_BUILD
  [[ -n "$reference_src" && -f "$reference_build/compile_commands.json" && -f "$2/compile_commands.json" ]] \
    && command -v python3 >/dev/null 2>&1 || return 0
  python3 - "$reference_src" "$reference_build" "$1" "$2" <<'PY' || true
import json, shlex, sys
def load(src, build):
    cmds = {}
    norm = lambda t: t.replace(build, "<build>").replace(src, "<src>")
    for e in json.load(open(build + "/compile_commands.json")):
        args = e.get("arguments") or shlex.split(e["command"])
        paths = [a if a.startswith("-D") else norm(a) for a in args]
        cmds[norm(e["file"])] = (paths, [norm(a) for a in args])
    return cmds
ref, side = load(sys.argv[1], sys.argv[2]), load(sys.argv[3], sys.argv[4])
shared = sorted(set(ref) & set(side))
differ = [f for f in shared if ref[f][0] != side[f][0]]
in_define = [f for f in differ if ref[f][1] == side[f][1]]
other = [f for f in differ if f not in in_define]
msg = f"{len(shared) - len(differ)} of {len(shared)} shared translation units compile exactly as in the reference build"
if in_define:
    msg += f", {len(in_define)} more differ only in a -D holding the checkout's path"
if other:
    msg += (f"; {len(other)} differ otherwise, e.g. {other[0]}:\n  reference: {' '.join(ref[other[0]][0])}"
            f"\n  this side: {' '.join(side[other[0]][0])}")
print(msg)
PY
}
# Hits and misses of the compiles a side's build ran, from a ccache stats log of its own
# (stats_log): the global counters also count every other build on the machine.
# The files it compiled are named (up to 12), so a miss that should have been a hit is seen.
ccache_side_stats() {  # ccache_side_stats STATS_LOG
  [[ -f "$1" ]] || return 0
  awk '/^# / {file = $2} $1 ~ /^(direct|preprocessed)_cache_hit$/ {h++}
    $1 == "cache_miss" {m++; if (m <= 12) { n = split(file, p, "/"); list = list " " p[n] }}
    END {printf ", ccache: %d hits, %d compiled%s", h, m, (m ? ":" list (m > 12 ? " ..." : "") : "")}' "$1"
}
declare -A build_dir src_dir
builds_started=$SECONDS
for side in base head; do
  sha_var="${side}_sha"
  prebuilt_var="${side}_build"
  if [[ -n "${!prebuilt_var}" ]]; then
    build_dir[$side]=$(cd "${!prebuilt_var}" && pwd)
    src_dir[$side]=$repo
    echo "ci-gate: using the existing build ${build_dir[$side]} for $side"
  else
    git worktree add --detach "$work/$side" "${!sha_var}" >/dev/null
    src_dir[$side]=$work/$side
    build_dir[$side]=$work/$side/$side_build_rel
    launcher=()
    # The commit's own cmake/EncbenchCcache.cmake sets the launcher and the debug prefix map that
    # the reference build compiled with; a commit that predates it gets the launcher from here.
    if command -v ccache >/dev/null 2>&1 && [[ ! -f "$work/$side/cmake/EncbenchCcache.cmake" ]]; then
      l="$(command -v cmake);-E;env;CCACHE_BASEDIR=$work/$side;$(command -v ccache)"
      launcher=("-DCMAKE_C_COMPILER_LAUNCHER=$l" "-DCMAKE_CXX_COMPILER_LAUNCHER=$l" "-DCMAKE_CUDA_COMPILER_LAUNCHER=$l")
    fi
    echo "ci-gate: building $side (${!sha_var:0:12}) in $side_build_rel: ${configure_args[*]}"
    started=$SECONDS
    cmake -S "$work/$side" -B "${build_dir[$side]}" "${configure_args[@]}" ${launcher[@]+"${launcher[@]}"} \
      >"$out/build-$side.log" 2>&1 || { echo "ci-gate: configure of $side failed, see $out/build-$side.log" >&2; exit 2; }
    same=$(same_commands "$work/$side" "${build_dir[$side]}")
    [[ -n "$same" ]] && echo "ci-gate: $side: $same"
    # Only what the gate runs. Commits before encbench-instr have no such target: the instruction
    # step is then skipped; otherwise the three are built in one go, so their compiles overlap.
    targets=(encbench encbench-micro)
    if ((instr)) && grep -rqs --include=CMakeLists.txt 'encbench-instr' "$work/$side"; then
      targets+=(encbench-instr)
    elif ((instr)); then
      echo "ci-gate: $side has no encbench-instr target"
    fi
    CCACHE_STATSLOG=$work/$side-ccache-stats.log \
      cmake --build "${build_dir[$side]}" -j "$jobs" --target "${targets[@]}" >>"$out/build-$side.log" 2>&1 \
      || { echo "ci-gate: build of $side failed, see $out/build-$side.log" >&2; exit 2; }
    echo "ci-gate: built $side in $((SECONDS - started)) s$(ccache_side_stats "$work/$side-ccache-stats.log")"
  fi
  for exe in harness/cli/encbench harness/micro/encbench-micro; do
    [[ -x "${build_dir[$side]}/$exe" ]] || { echo "ci-gate: ${build_dir[$side]}/$exe is missing" >&2; exit 2; }
  done
done
stage_time gate-builds $((SECONDS - builds_started))
bin() { echo "${build_dir[$1]}/harness/cli/encbench"; }
micro() { echo "${build_dir[$1]}/harness/micro/encbench-micro"; }
gate=${gate:-${src_dir[head]}/scenarios/gates/ci.json}
encbench_head=$(bin head)  # compare/report of the commit under test judge both sides

mkdir -p "$out/micro/base" "$out/micro/head" "$out/serving/base" "$out/serving/head" "$out/warmup"

# Deterministic step first: instruction counts under callgrind. Identical in every run of the same
# code, so one run per side is enough and no rounds or interleaving are needed.
instr_ran=0
instr_started=$SECONDS
if ((instr)); then
  instr_bin() { echo "${build_dir[$1]}/harness/micro/encbench-instr"; }
  if ! command -v valgrind >/dev/null 2>&1; then
    echo "ci-gate: valgrind is not installed; instruction-count step skipped (apt-get install valgrind)"
  elif [[ ! -x "$(instr_bin base)" || ! -x "$(instr_bin head)" ]]; then
    echo "ci-gate: encbench-instr missing on one side; instruction-count step skipped"
  else
    mkdir -p "$out/instr/base" "$out/instr/head"
    for side in base head; do
      echo "ci-gate: instruction counts: $side"
      started=$SECONDS
      args=(--out "$out/instr/$side/run1.json")
      [[ -n "$instr_filter" ]] && args+=(--filter "$instr_filter")
      "$(instr_bin "$side")" "${args[@]}" >"$out/instr-$side.log" 2>&1 \
        || { echo "ci-gate: encbench-instr ($side) failed, see $out/instr-$side.log" >&2; exit 2; }
      echo "ci-gate: instruction counts: $side took $((SECONDS - started)) s"
    done
    instr_ran=1
  fi
fi
stage_time gate-instr $((SECONDS - instr_started))
rounds_started=$SECONDS
run_side() {  # run_side SIDE MICRO_JSON SERVING_JSON LOG_STEM REPS
  local side=$1 args
  args=(--benchmark_repetitions="$5" --benchmark_enable_random_interleaving=true
        --benchmark_out="$2" --benchmark_out_format=json)
  [[ -n "$micro_filter" ]] && args+=(--benchmark_filter="$micro_filter")
  [[ -n "$micro_min_time" ]] && args+=(--benchmark_min_time="$micro_min_time")
  # Both builds on the cache-size tiles: each would otherwise calibrate its own (and overwrite the
  # other's cache), and a verdict would compare two tile choices rather than two commits.
  ENCBENCH_TILE=default "$(micro "$side")" "${args[@]}" >"$4-micro.log" 2>&1 \
    || { echo "ci-gate: encbench-micro ($side) failed, see $4-micro.log" >&2; exit 2; }
  if [[ -n "$serving_cmd" ]]; then
    local cmd=${serving_cmd//\{bin\}/$(bin "$side")}
    cmd=${cmd//\{out\}/$3}
    if ! (cd "${src_dir[$side]}" && bash -c "$cmd") >"$4-serving.log" 2>&1; then
      # `encbench run` exits 2 with "NO VERDICT" when this machine could not keep the schedule
      # (client lag, sim lateness): wall-clock data a loaded runner cannot give. The closed-loop
      # gate is then skipped; the deterministic and micro gates still stand. Failed requests
      # are never excused.
      if [[ -s "$3" ]] && grep -q 'could not keep' "$3" && ! grep -q ' failed / ' "$3"; then
        echo "ci-gate: serving run ($side) could not keep its schedule on this machine (see $4-serving.log); closed-loop gate will be skipped"
        serving_unusable=1
      else
        echo "ci-gate: serving run ($side) failed, see $4-serving.log" >&2
        exit 2
      fi
    fi
  fi
  return 0
}
for ((r = 1; r <= warmup_rounds; r++)); do
  for side in base head; do
    echo "ci-gate: warm-up $r/$warmup_rounds: $side (not measured)"
    run_side "$side" "$out/warmup/$side-micro$r.json" "$out/warmup/$side-serving$r.json" "$out/warmup/$side$r" 1
  done
done
for ((r = 1; r <= rounds; r++)); do
  # ABBA order: base first in odd rounds, head first in even rounds.
  order=(base head)
  ((r % 2 == 0)) && order=(head base)
  for side in "${order[@]}"; do
    echo "ci-gate: round $r/$rounds: $side"
    run_side "$side" "$out/micro/$side/round$r.json" "$out/serving/$side/round$r.json" "$out/$side-round$r" "$micro_reps"
  done
done

status=0
judge() {  # judge NAME BASE_DIR HEAD_DIR
  local name=$1 rc=0
  "$encbench_head" compare "$2" "$3" --gate "$gate" ${accept_args[@]+"${accept_args[@]}"} --junit "$out/$name-junit.xml" \
    --markdown "$out/$name.md" --json "$out/$name-compare.json" | tee "$out/$name.txt" || rc=${PIPESTATUS[0]}
  echo "ci-gate: $name: exit $rc"
  ((rc > status)) && status=$rc
  return 0
}
if ((instr_ran)); then
  judge instr "$out/instr/base" "$out/instr/head"
fi
# A micro binary with no registered cases writes "benchmarks": [] - nothing to judge.
if grep -q '"run_name"' "$out/micro/head/round1.json" 2>/dev/null; then
  judge micro "$out/micro/base" "$out/micro/head"
else
  echo "ci-gate: encbench-micro has no benchmarks at $head_sha; micro gate skipped"
fi
if [[ -n "$serving_cmd" ]] && ((serving_unusable)); then
  echo "ci-gate: closed-loop gate skipped: this machine could not keep the serving schedule (NO VERDICT)"
elif [[ -n "$serving_cmd" ]]; then
  judge serving "$out/serving/base" "$out/serving/head"
else
  echo "ci-gate: no --serving-cmd; closed-loop gate skipped"
fi
reports=()
for f in "$out"/instr/*/run*.json "$out"/micro/*/round*.json "$out"/serving/*/round*.json; do [[ -s "$f" ]] && reports+=("$f"); done
# The verdict the page opens with: the compare results and the gate's exit status.
verdict_args=(--gate-exit "$status")
for f in "$out/instr-compare.json" "$out/micro-compare.json" "$out/serving-compare.json"; do [[ -s "$f" ]] && verdict_args+=(--compare "$f"); done
if ((${#reports[@]})) && grep -q '"run_name"\|"completed"' "${reports[@]}" 2>/dev/null; then
  "$encbench_head" report "${reports[@]}" "${verdict_args[@]}" --html "$out/report.html" \
    --title "ci-gate ${base_sha:0:12} vs ${head_sha:0:12}" \
    >/dev/null 2>&1 || echo "ci-gate: HTML report could not be written" >&2
fi
stage_time gate-rounds $((SECONDS - rounds_started))
case $status in
  0) echo "ci-gate: PASS" ;;
  1) echo "ci-gate: FAIL: performance regression (see $out/*.md)" ;;
  *) echo "ci-gate: ERROR: invalid or mismatched results (exit $status)" ;;
esac
exit "$status"
