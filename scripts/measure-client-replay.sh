#!/usr/bin/env bash
# The client's two replay targets, measured against `encbench serve --null` (the null server):
#  1. a timed_trace replay at ~1,000 req/s: are send times the trace's timestamps x
#     --timed-trace-sec-multiplier, within 1 ms? (intended times vs the trace, exactly; sent times,
#     curl's CURLOPT_PREREQFUNCTION, vs intended: the dispatch lag);
#  2. client capacity with a tokenizer loaded: 5,000 req/s of random prompts made with the
#     tokenizer before the run, dispatch lag p99 < 1 ms?, alternating with --skip-tokenizer-init.
#
#   scripts/measure-client-replay.sh [--rows 3000] [--rate 5000] [--seconds 3] [--repeats 3]
#       [--tokenizer tests/tokenizer/data/tiny-qwen2] [--out DIR] [--build DIR]
#
# Writes DIR/summary.json (schema encbench-client-replay, version 1) and every run's result JSON.
# Wall clock: the figures depend on what else runs on the machine (say so when you quote them).
set -euo pipefail
ROWS=3000
RATE=5000
SECS=3
REPEATS=3
TOKENIZER=tests/tokenizer/data/tiny-qwen2
OUT=""
BUILD=build
while [[ $# -gt 0 ]]; do
  case "$1" in
    --rows) ROWS="$2"; shift 2 ;;
    --rate) RATE="$2"; shift 2 ;;
    --seconds) SECS="$2"; shift 2 ;;
    --repeats) REPEATS="$2"; shift 2 ;;
    --tokenizer) TOKENIZER="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    --build) BUILD="$2"; shift 2 ;;
    -h|--help) sed -n 2,13p "$0"; exit 0 ;;
    *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
done
cd "$(dirname "$0")/.."
ENCBENCH="$BUILD/harness/cli/encbench"
[[ -x "$ENCBENCH" ]] || { echo "no $ENCBENCH: build first (scripts/build.sh)" >&2; exit 2; }
OUT="${OUT:-$(mktemp -d /tmp/encbench-replay.XXXXXX)}"
mkdir -p "$OUT"
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$ENCBENCH" serve --null --port "$PORT" --served-model-name m --max-waiting 1000000 >"$OUT/server.log" 2>&1 &
SERVER_PID=$!
trap 'kill $SERVER_PID 2>/dev/null; wait $SERVER_PID 2>/dev/null || true' EXIT
for _ in $(seq 1 200); do
  curl -sf -o /dev/null -X POST -H 'Content-Type: application/json' \
    -d '{"model":"m","prompt":"hi","max_tokens":1}' "http://127.0.0.1:$PORT/v1/completions" && break
  sleep 0.05
done

# 1. The trace: Poisson arrivals at 1,000 req/s, timestamps in ms (Mooncake's unit), x 0.001.
python3 - "$OUT/trace.jsonl" "$ROWS" <<'PY'
import json, random, sys
path, rows = sys.argv[1], int(sys.argv[2])
rng = random.Random(36)
t = 0.0
with open(path, "w") as f:
    for i in range(rows):
        t += rng.expovariate(1.0)  # ms
        f.write(json.dumps({"timestamp": round(t, 3), "input_length": 64, "output_length": 4,
                            "hash_ids": [rng.randrange(50), rng.randrange(1000), rng.randrange(10**6), rng.randrange(10**6)]}) + "\n")
PY
for k in $(seq 1 "$REPEATS"); do
  "$ENCBENCH" bench serve --backend openai --base-url "http://127.0.0.1:$PORT" --model m --tokenizer "$TOKENIZER" \
    --dataset-name timed_trace --dataset-path "$OUT/trace.jsonl" --timed-trace-sec-multiplier 0.001 \
    --num-prompts "$ROWS" --disable-tqdm --save-result --save-detailed --result-dir "$OUT" \
    --result-filename "trace-$k.json" >"$OUT/trace-$k.log" 2>&1 || true
done
# 2. Capacity: tokenizer loaded (prompts made before the run) vs none, alternating.
N=$((RATE * SECS))
for k in $(seq 1 "$REPEATS"); do
  for mode in tokenizer none; do
    extra=(--tokenizer "$TOKENIZER"); [[ $mode == none ]] && extra=(--skip-tokenizer-init)
    "$ENCBENCH" bench serve --backend openai-chat --base-url "http://127.0.0.1:$PORT" --model m "${extra[@]}" \
      --dataset-name random --random-input-len 64 --random-output-len 4 --num-prompts "$N" --request-rate "$RATE" \
      --disable-tqdm --save-result --result-dir "$OUT" --result-filename "capacity-$mode-$k.json" \
      >"$OUT/capacity-$mode-$k.log" 2>&1 || true
  done
done
python3 - "$OUT" "$REPEATS" "$RATE" <<'PY'
import glob, json, os, sys
out, repeats, rate = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
def pct(xs, q):
    xs = sorted(xs); 
    if not xs: return None
    pos = (len(xs) - 1) * q / 100; lo = int(pos); hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)
trace = [json.loads(l) for l in open(os.path.join(out, "trace.jsonl"))]
ts0 = trace[0]["timestamp"]
summary = {"schema": "encbench-client-replay", "schema_version": 1, "load_average": os.getloadavg(),
           "trace_rows": len(trace), "trace": [], "capacity": []}
for k in range(1, repeats + 1):
    p = os.path.join(out, f"trace-{k}.json")
    if not os.path.exists(p): summary["trace"].append({"run": k, "error": "no result"}); continue
    r = json.load(open(p))
    it, st = r["intended_times"], r["sent_times"]
    # intended vs the trace (schedule arithmetic), sent vs the trace (what left the client)
    sched_err_ms = [abs((it[i] - it[0]) - (trace[i]["timestamp"] - ts0) * 0.001) * 1e3 for i in range(len(it))]
    send_err_ms = [((st[i] - it[0]) - (trace[i]["timestamp"] - ts0) * 0.001) * 1e3 for i in range(len(st))]
    summary["trace"].append({"run": k, "requests": len(st), "completed": r["completed"],
        "offered_rate": len(trace) / ((trace[-1]["timestamp"] - ts0) * 0.001),
        "max_intended_vs_trace_ms": max(sched_err_ms), "send_vs_trace_ms_p50": pct(send_err_ms, 50),
        "send_vs_trace_ms_p99": pct(send_err_ms, 99), "send_vs_trace_ms_max": max(send_err_ms),
        "share_within_1ms": sum(1 for e in send_err_ms if abs(e) <= 1.0) / len(send_err_ms)})
for k in range(1, repeats + 1):
    for mode in ("tokenizer", "none"):
        p = os.path.join(out, f"capacity-{mode}-{k}.json")
        if not os.path.exists(p): summary["capacity"].append({"run": k, "mode": mode, "error": "no result"}); continue
        r = json.load(open(p))
        summary["capacity"].append({"run": k, "mode": mode, "offered": rate, "achieved": r["completed"] / r["duration"],
            "failed": r["failed"], "dispatch_lag_p50_ms": r["dispatch_lag_ms"]["p50"], "dispatch_lag_p99_ms": r["dispatch_lag_ms"]["p99"],
            "prepare_s": r["prepare_s"], "client_cpu_utilization": r["client_cpu_utilization"],
            "saturated": r["client_saturation"]["saturated"]})
json.dump(summary, open(os.path.join(out, "summary.json"), "w"), indent=1)
print(json.dumps(summary, indent=1))
PY
