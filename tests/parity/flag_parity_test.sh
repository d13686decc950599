#!/usr/bin/env bash
# vLLM flag parity of `encbench bench serve`: every long flag of vLLM's `vllm bench
# serve` parser, as vLLM lists them for its own Rust port (vllm_bench_serve_flags.txt, commit
# pinned there and in docs/client.md), must appear in `encbench bench serve --help`; and the flags
# accepted but not implemented must refuse with exit 2 and one line saying why.
#   tests/parity/flag_parity_test.sh path/to/encbench
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
encbench="$1"
help="$("$encbench" bench serve --help 2>&1)" || { echo "bench serve --help failed" >&2; exit 1; }
# The help's flags: every --name token (CLI11 prints "--name TYPE" or "--name,-x").
offered="$(grep -oE -- '--[a-z0-9][a-z0-9-]*' <<<"$help" | sort -u)"
listed="$(grep -vE '^(#|$)' "$here/vllm_bench_serve_flags.txt")"
count=$(wc -l <<<"$listed")
if ((count < 100)); then echo "the flag list has only $count flags: truncated?" >&2; exit 1; fi
missing="$(comm -23 <(sort -u <<<"$listed") <(printf '%s\n' "$offered"))"
if [[ -n "$missing" ]]; then
  echo "flags of vllm bench serve that encbench bench serve --help lacks:" >&2
  printf '  %s\n' $missing >&2
  exit 1
fi
echo "all $count vllm bench serve flags are in encbench bench serve --help"

# Refusals: exit 2, one line naming the flag, before any server is contacted (port 9: discard).
status=0
expect_exit2() {
  local what="$1"; shift
  local out rc
  out="$("$encbench" bench serve --base-url http://127.0.0.1:9 --model m --num-prompts 2 "$@" 2>&1)"
  rc=$?
  if [[ $rc -ne 2 || "$out" != *"$what"* ]]; then
    echo "expected exit 2 mentioning '$what' for: $*; got $rc: $out" >&2
    status=1
  fi
}
expect_exit2 "--probe-request-rate must be a finite rate >= 0" --probe-request-rate -1
expect_exit2 "--probe-request-rate must be a finite rate >= 0" --probe-request-rate inf
expect_exit2 "--dataset-name spec_bench" --dataset-name spec_bench
expect_exit2 "--dataset-name mmvu: vLLM's mmvu dataset is a video dataset" --dataset-name mmvu
expect_exit2 "--dataset-name sonnet needs --dataset-path" --dataset-name sonnet --tokenizer "$here/../tokenizer/data/tiny-qwen2"
expect_exit2 "--dataset-name sharegpt makes and counts its prompts with the model's tokenizer" --dataset-name sharegpt --dataset-path /dev/null
trace="$(mktemp)"
printf '{"timestamp": 2, "input_length": 8, "output_length": 2}\n{"timestamp": 1, "input_length": 8, "output_length": 2}\n' >"$trace"
expect_exit2 "$trace:2: timestamp 1" --dataset-name timed_trace --dataset-path "$trace" --tokenizer "$here/../tokenizer/data/tiny-qwen2"
# vLLM's main_async: timed_trace's list[int] prompts need a completions backend; --self-timed is
# timed_trace's only. A row vLLM would send 1.7e9 s after the start (an epoch trace in ms) is refused.
expect_exit2 "needs a completions backend" --dataset-name timed_trace --dataset-path "$trace" \
  --tokenizer "$here/../tokenizer/data/tiny-qwen2" --backend openai-chat --endpoint /v1/chat/completions
printf '{"timestamp": 1700000000000, "input_length": 8, "output_length": 2}\n' >"$trace"
expect_exit2 "$trace:1: timestamp x --timed-trace-sec-multiplier = 1700000000" --dataset-name timed_trace \
  --dataset-path "$trace" --timed-trace-sec-multiplier 0.001 --tokenizer "$here/../tokenizer/data/tiny-qwen2"
rm -f "$trace"
expect_exit2 "--self-timed/--no-self-timed is only supported with --dataset-name timed_trace" --self-timed
expect_exit2 "--self-timed/--no-self-timed is only supported with --dataset-name timed_trace" --no-self-timed --dataset-name random
expect_exit2 "--lora-assignment must be random or round-robin" --lora-modules a b --lora-assignment sticky
expect_exit2 "--timeline-itl-thresholds expects two increasing" --timeline-itl-thresholds 50,25
expect_exit2 "--timeline-itl-thresholds expects two increasing" --timeline-itl-thresholds 25
expect_exit2 "--timeline-itl-thresholds expects two increasing" --timeline-itl-thresholds 50 25
exit $status
