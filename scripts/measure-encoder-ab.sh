#!/usr/bin/env bash
# Measures the README's encoder table: baseline vs optimized at one 448x448 image for
# qwen2.5-vl-7b and qwen3-vl-8b, on cpu and sim:ascend-910b, with and without 20 us of launch
# overhead per op. Writes one encbench-ab JSON per row pair under OUT_DIR and prints a Markdown
# table of their summaries.   scripts/measure-encoder-ab.sh [BUILD_DIR] [OUT_DIR]
# DEVICES="sim:ascend-910b" limits the devices; TABLE_ONLY=1 only prints the table. sim rows use
# the virtual clock (encode/ab's default there): their figures do not move with machine load.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build}/harness/cli/encbench
out=${2:-encbench-results/encoder-ab}
mkdir -p "$out"
[[ "${TABLE_ONLY:-0}" == 1 ]] || for device in ${DEVICES:-sim:ascend-910b cpu}; do
  reps=9; [[ $device == cpu ]] && reps=3
  for model in qwen2.5-vl-7b qwen3-vl-8b; do
    for overhead in 0 20; do
      f="$out/${model}_${device/:/-}_lo${overhead}.json"
      verify=(); [[ $overhead == 0 ]] && verify=(--verify)
      # --no-mlp: the tables this script's docs show were measured on the attention blocks alone
      "$bin" ab --model "$model" --image 448x448 --device "$device" --a baseline --b optimized --no-mlp \
        --repetitions "$reps" --warmup 1 --launch-overhead-us "$overhead" "${verify[@]}" \
        --json "$f" >/dev/null
      echo "measured $f" >&2
    done
  done
done
python3 - "$out" <<'PY'
import json, sys, glob, os
print("| model | device (clock) | launch overhead us/op | preset | forward ms (median) | idle % | syncs/forward | host us/layer | peak device memory MB | accuracy | B vs A |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for f in sorted(glob.glob(os.path.join(sys.argv[1], "*.json"))):
    r = json.load(open(f))
    c = r.get("comparison", {}).get("forward_ms", {})
    for side in ("a", "b"):
        s = r[side]; m = s["summary"]; acc = s.get("accuracy", {})
        verdict = acc.get("verdict", "SKIPPED")
        if verdict != "SKIPPED" and "max_rel_error" in acc:
            verdict += " (%.1e)" % acc["max_rel_error"]
        cmp = ""
        if side == "b" and c:
            cmp = "%+.1f %% (p=%.4f)" % (c.get("change_pct", 0), c.get("p_value", 1))
        print("| %s | %s (%s) | %s | %s | %.2f | %.1f | %g | %.1f | %.0f | %s | %s |" % (
            s["model"]["name"] if isinstance(s["model"], dict) else s["model"], s["device"]["kind"],
            s["device"].get("clock", "real"), s.get("launch_overhead_us", 0), s["preset"],
            m["forward_ms"], 100 * m["idle_fraction"], m["syncs_per_forward"],
            m["host_us_per_layer"], m.get("peak_device_memory_bytes", 0) / 1e6, verdict, cmp))
PY
