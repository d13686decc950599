#!/usr/bin/env bash
# libFuzzer campaigns over the fuzz targets of tests/fuzz (docs/fuzzing.md). Builds build-fuzz
# with clang (-DENCBENCH_FUZZ=ON: only the parsers under test, ASan + UBSan) first.
#   scripts/fuzz.sh TARGET SECONDS [libFuzzer flags...]   one campaign (e.g. fuzz_image_decode 3600)
#   scripts/fuzz.sh --ci [BUDGET_SECONDS]                  CI: every target over its committed corpus
#                                                          (regression), then BUDGET/targets seconds
#                                                          of new fuzzing each (default 240)
#   scripts/fuzz.sh --list                                 the targets
#   scripts/fuzz.sh --build                                only build them (run-tests.sh times the
#                                                          build and the runs as separate stages)
# New inputs go to build-fuzz/corpus/TARGET (the committed seeds are read, never written); a crash
# fails the run and its reproducer is printed (path, size, hexdump, base64). Reproduce one with
#   build-fuzz/tests/fuzz/TARGET FILE
set -euo pipefail
cd "$(dirname "$0")/.."
build=build-fuzz
bin_dir=$build/tests/fuzz

build_targets() {
  # -O1: libFuzzer's recommended level, and the build is part of CI's time. Through build.sh, which
  # also cleans up after a build that was stopped half-way.
  CC=clang CXX=clang++ scripts/build.sh "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1" -DENCBENCH_FUZZ=ON >/dev/null
}

dict_for() {  # the dictionary that helps a target, if any
  case "$1" in
    fuzz_image_decode) echo tests/fuzz/image.dict ;;
    fuzz_sse) echo tests/fuzz/sse.dict ;;
    fuzz_openai_request|fuzz_chunk_json|fuzz_trace_import|fuzz_result_json|fuzz_scenario_json|fuzz_model_files|fuzz_dataset|fuzz_tokenizer_json)
      echo tests/fuzz/json.dict ;;
    fuzz_chat_template) echo tests/fuzz/jinja.dict ;;
  esac
}

show_reproducer() {  # prints what is needed to replay a crash from the CI log alone
  local file=$1
  echo "fuzz: REPRODUCER $file ($(stat -c %s "$file") bytes)"
  echo "fuzz: replay with: $bin_dir/$2 $file"
  head -c 512 "$file" | od -A x -t x1z -v | sed 's/^/fuzz:   /'
  echo "fuzz: base64 (decode with base64 -d > repro):"
  base64 -w 100 "$file" | head -c 20000 | sed 's/^/fuzz:   /'
  echo
}

# Runs libFuzzer; on a crash shows the reproducer and returns 1. Summary on stdout.
run_target() {
  local target=$1 seconds=$2; shift 2
  local exe=$bin_dir/$target seeds=tests/fuzz/corpus/$target
  local work=$build/corpus/$target crashes=$build/crashes/$target log=$build/logs/$target.log
  mkdir -p "$work" "$crashes" "$build/logs"
  local dict; dict=$(dict_for "$target")
  local args=(-max_total_time="$seconds" -print_final_stats=1 -timeout=10 -rss_limit_mb=2048
              -max_len=65536 -artifact_prefix="$crashes/" ${dict:+-dict=$dict})
  local status=0
  ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "$exe" "${args[@]}" "$@" "$work" "$seeds" >"$log" 2>&1 || status=$?
  local summary; summary=$(grep -E '^#[0-9]+[[:space:]]+(DONE|INITED)' "$log" | tail -1 || true)
  local execs rate
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  echo "fuzz: $target ${seconds}s: ${execs:-?} runs, ${rate:-?} exec/s, $(grep -o 'cov: [0-9]*' <<<"$summary" || echo 'cov: ?') $(grep -o 'ft: [0-9]*' <<<"$summary" || echo 'ft: ?')"
  if ((status != 0)); then
    echo "fuzz: $target FAILED (exit $status); log $log:"
    grep -E 'ERROR|SUMMARY|==[0-9]+==|#[0-9]+ in ' "$log" | head -40 | sed 's/^/fuzz:   /'
    local file
    for file in $(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log"); do show_reproducer "$file" "$target"; done
    return 1
  fi
}

# Every committed seed once (-runs=0 runs the loaded corpus, then stops): the regression test.
replay_corpus() {
  local target=$1 log=$build/logs/$1.replay.log
  mkdir -p "$build/logs" "$build/crashes/$1"
  if ! ASAN_OPTIONS=detect_leaks=1 "$bin_dir/$target" -runs=0 -artifact_prefix="$build/crashes/$1/" \
       "tests/fuzz/corpus/$target" >"$log" 2>&1; then
    echo "fuzz: $target corpus replay FAILED; log $log:"
    grep -E 'ERROR|SUMMARY|#[0-9]+ in ' "$log" | head -40 | sed 's/^/fuzz:   /'
    local file
    for file in $(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log"); do show_reproducer "$file" "$target"; done
    return 1
  fi
}

case "${1:-}" in
  --list)
    build_targets
    cat "$build/fuzz_targets.txt" ;;
  --build)
    build_targets ;;
  --ci)
    budget=${2:-${ENCBENCH_FUZZ_BUDGET_S:-240}}
    build_targets
    mapfile -t targets < "$build/fuzz_targets.txt"
    per=$((budget / ${#targets[@]}))
    failed=0
    for t in "${targets[@]}"; do replay_corpus "$t" || failed=1; done
    ((failed == 0)) && echo "fuzz: every corpus replayed clean (${#targets[@]} targets)"
    if ((per >= 1)); then
      # A fixed seed (ENCBENCH_FUZZ_SEED, default 1) makes a CI run repeatable: a failure seen there
      # is seen again here with the same command. Campaigns (fuzz.sh TARGET SECONDS) draw a new seed.
      for t in "${targets[@]}"; do run_target "$t" "$per" -seed="${ENCBENCH_FUZZ_SEED:-1}" || failed=1; done
    fi
    exit "$failed" ;;
  ""|-h|--help)
    sed -n '2,14p' "$0"; exit 2 ;;
  *)
    [[ $# -ge 2 ]] || { sed -n '2,14p' "$0"; exit 2; }
    target=$1 seconds=$2; shift 2
    build_targets
    grep -qx "$target" "$build/fuzz_targets.txt" || { echo "fuzz: unknown target $target (--list)"; exit 2; }
    run_target "$target" "$seconds" "$@" ;;
esac
