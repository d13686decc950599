#!/usr/bin/env bash
# Measures how well the live `encbench serve` agrees with the virtual clock:
# scenarios/main-live.json (the #7104 arms on the calibrated serving model, 1024x768 images,
# 32 output tokens) run with --clock both, i.e. the live in-process server + client, then the
# same requests in virtual time, at the issue's load (60 prompts at 4 req/s) and at a heavier one
# (120 prompts at 8 req/s: near the modelled API server's ~8.7 req/s for these images, so bursts queue there).
# Prints, per load and preset, mean/median TTFT, TPOT and ITL real vs virtual with this machine's
# load average before and after each run (the real clock's figures move with it; the virtual
# ones do not).
#   scripts/measure-clock-agreement.sh [BUILD_DIR] [OUT_DIR]
# LOADS="60:4 120:8" picks the (prompts:rate) points; EXTRA="--live-encoder-clock real" compares
# with the real-clock sim encoder instead (what the sim device's per-op sleeps add).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build}/harness/cli/encbench
out=${2:-encbench-results/clock-agreement}
mkdir -p "$out"
for point in ${LOADS:-60:4 120:8}; do
  prompts=${point%%:*}
  rate=${point##*:}
  before=$(cut -d' ' -f1-3 /proc/loadavg)
  # shellcheck disable=SC2086
  "$bin" run --scenario scenarios/main-live.json --num-prompts "$prompts" --request-rate "$rate" \
    --allow-no-verdict --result-dir "$out" --result "$out/agreement-$prompts-at-$rate.json" ${EXTRA:-} >/dev/null
  after=$(cut -d' ' -f1-3 /proc/loadavg)
  python3 - "$out/agreement-$prompts-at-$rate-agreement.json" "$prompts" "$rate" "$before" "$after" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
print(f"\n{sys.argv[2]} prompts at {sys.argv[3]} req/s; load average before {sys.argv[4]}, after {sys.argv[5]}")
print("| preset | metric | real | virtual | virtual/real |")
print("|---|---|---|---|---|")
for r in doc["rows"]:
    print(f"| {r['preset']} | {r['metric']} | {r['real']:.2f} | {r['virtual']:.2f} | {r['ratio']:.3f} |")
PY
done
