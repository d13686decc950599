#!/usr/bin/env bash
# The live `encbench serve` against the virtual clock when the client sends duplicates (vLLM's
# oversampling): 60 prompts of one 1024x768 JPEG at 4 req/s from a 20-row dataset (40 repeats:
# processor-cache, prefix-cache and encoder-cache hits) and, as the control, from a 60-row one (none).
# Live: encbench serve (calibrated serving model, virtual-clock encoder, encoder budget 16384 as
# `encbench run` uses) driven by encbench bench serve over the dataset. Virtual: encbench run
# --clock virtual over `encbench dataset stats` of the same dataset (dataset_rows set, so the same
# number of repeats; the shapes and the repeats' rows are its own draws, not the live client's).
# Prints mean/median TTFT both sides, the stage's and the engine's cache counters, and the load.
#   scripts/measure-live-duplicates.sh [BUILD_DIR] [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build}/harness/cli/encbench
out=${2:-encbench-results/live-duplicates}
model=scenarios/serving/ascend-910b-qwen3-vl-8b.json
mkdir -p "$out"
for rows in 20 60; do
  "$bin" dataset generate --num "$rows" --width 1024 --height 768 --image-format jpeg --out "$out/va$rows.jsonl" >/dev/null
  "$bin" dataset stats --dataset "$out/va$rows.jsonl" --out "$out/w$rows.json" >/dev/null
  "$bin" serve --port 0 --serving-model "$model" --encoder-clock virtual --max-num-encoder-input-tokens 16384 \
    --result-json "$out/serve$rows.json" >"$out/serve$rows.log" 2>&1 &
  server=$!
  port=
  for _ in $(seq 1 240); do
    port=$(grep -oE 'port=[0-9]+' "$out/serve$rows.log" | head -1 | cut -d= -f2 || true)
    [ -n "$port" ] && break
    sleep 0.5
  done
  [ -n "$port" ] || { echo "encbench serve did not start; see $out/serve$rows.log" >&2; kill "$server"; exit 1; }
  before=$(cut -d' ' -f1-3 /proc/loadavg)
  "$bin" bench serve --port "$port" --model qwen3-vl-8b --backend openai-chat --endpoint /v1/chat/completions \
    --dataset-name hf --dataset-path "$out/va$rows.jsonl" --num-prompts 60 --request-rate 4 --burstiness 5 \
    --output-len 32 --ignore-eos --seed 0 --save-result --result-dir "$out" --result-filename "live$rows.json" \
    >"$out/bench$rows.log" 2>&1
  after=$(cut -d' ' -f1-3 /proc/loadavg)
  kill -INT "$server"
  wait "$server"
  "$bin" run --clock virtual --workload "$out/w$rows.json" --serving-model "$model" --presets baseline,baseline \
    --num-prompts 60 --request-rate 4 --burstiness 5 --output-len 32 --seed 0 --max-num-batched-tokens 8192 \
    --max-num-encoder-input-tokens 16384 --allow-no-verdict --result-dir "$out" --result "$out/virtual$rows.json" >/dev/null
  python3 - "$out" "$rows" "$before" "$after" <<'PY'
import json, sys
out, rows, before, after = sys.argv[1:]
live = json.load(open(f"{out}/live{rows}.json"))
serve = json.load(open(f"{out}/serve{rows}.json"))["summary"]
virt = json.load(open(f"{out}/virtual{rows}.json"))["arms"][0]["seeds"][0]
vm = virt["serving"]
print(f"\n60 prompts from {rows} rows at 4 req/s; load average before {before}, after {after}")
print(f"| side | mean TTFT ms | median TTFT ms | processor-cache hits | prefix-cache hit tokens | encoder-cache hits |")
print("|---|---|---|---|---|---|")
a, e = serve["api_server"], serve["engine"]
print(f"| live | {live['mean_ttft_ms']:.2f} | {live['median_ttft_ms']:.2f} | {a['processor_cache_hits']} | "
      f"{e['prefix_cache_hits']} | {e['encoder_cache_hits']} |")
ve = virt["engine"]
print(f"| virtual | {vm['mean_ttft_ms']:.2f} | {vm['median_ttft_ms']:.2f} | {ve['api_server_cache_hits']} | "
      f"{ve['prefix_cache_hits']} | {ve['encoder_cache_hits']} |")
print(f"mean TTFT virtual/real {vm['mean_ttft_ms'] / live['mean_ttft_ms']:.3f}")
PY
done
