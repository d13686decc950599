# shellcheck shell=bash
# Sourced by scripts/run-tests.sh: each stage's wall time, printed with the total when the sourcing
# script exits (also when a stage failed or it was stopped), and a warning, never a failure, for a
# stage over its budget.
#   stage NAME COMMAND...     runs COMMAND (a failure exits as under set -e) and records its time
# Stage times are "NAME SECONDS" lines in the file named by ENCBENCH_STAGE_TIMES, which child
# scripts append their own parts to (scripts/ci-gate.sh: gate-builds, gate-instr, gate-rounds).
# Budgets: ENCBENCH_STAGE_BUDGET (default scripts/ci-stage-budget.tsv), "NAME SECONDS" lines, '#'
# comments; "total" is the whole run.
stage_file=$(mktemp "${TMPDIR:-/tmp}/encbench-stage-times.XXXXXX")
export ENCBENCH_STAGE_TIMES=$stage_file
run_started=$SECONDS
current_stage="" current_started=0
stage() {  # stage NAME COMMAND...: runs COMMAND and records its wall time under NAME
  current_stage=$1 current_started=$SECONDS
  shift
  "$@"
  echo "$current_stage $((SECONDS - current_started))" >>"$stage_file"
  current_stage=""
}
print_stage_times() {
  local rc=$? total=$((SECONDS - run_started))
  trap - EXIT
  [[ -n "$current_stage" ]] \
    && echo "$current_stage $((SECONDS - current_started)) did-not-finish" >>"$stage_file"
  echo "total $total" >>"$stage_file"
  echo "encbench: stage times (wall clock; gate-* are parts of gate):"
  awk -v budget_file="${ENCBENCH_STAGE_BUDGET:-scripts/ci-stage-budget.tsv}" '
    BEGIN { while ((getline line < budget_file) > 0) {
              if (line ~ /^[[:space:]]*(#|$)/) continue
              split(line, f, /[[:space:]]+/); budget[f[1]] = f[2] } }
    { note = ($3 == "did-not-finish") ? "  (failed or stopped)" : ""
      if ($1 in budget) note = note sprintf("  (budget %d s)", budget[$1])
      printf "encbench:   %-14s %6d s  %3d min %02d s%s\n", $1, $2, $2 / 60, $2 % 60, note
      if (($1 in budget) && $2 > budget[$1])
        warn[++n] = sprintf("encbench: WARNING: stage %s took %d s, over its budget of %d s (%s)",
                            $1, $2, budget[$1], budget_file) }
    END { for (i = 1; i <= n; i++) print warn[i] }' "$stage_file"
  rm -f "$stage_file"
  exit "$rc"
}
trap print_stage_times EXIT
# Ctrl-C or a TERM from the CI runner: exit through the EXIT trap, so the times are printed.
trap 'exit 130' INT
trap 'exit 143' TERM
