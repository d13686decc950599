#!/usr/bin/env bash
# Peak device memory per configuration (docs/encoder.md, "Device memory"): the seeds' OOM argument
# as numbers. For each model, input set and configuration: one encode on the virtual-clock sim
# (no tensor memory is materialised, so this runs in seconds), then the peak in use, the peak
# reserved (what a budget bounds: the smallest --device-memory-gb that still runs), and bytes
# allocated per forward.   scripts/measure-memory.sh [BUILD_DIR] [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build}/harness/cli/encbench
out=${2:-encbench-results/memory}
mkdir -p "$out"
configs=("preset=baseline" "preset=pr6448" "preset=pr7104" "preset=optimized"
         "flash-unpad:--preset pr7104 --kernel flash-unpad --pad-method three-pads"
         "fused-varlen:--preset pr7104 --kernel fused-varlen --pad-method none")
inputs=("448x448:--image 448x448" "1344x1344:--image 1344x1344"
        "4x1344x1344:--image 1344x1344 --image 1344x1344 --image 1344x1344 --image 1344x1344")
echo "| model | inputs | configuration | peak in use MB | peak reserved MB (smallest budget) | allocated per forward MB |"
echo "|---|---|---|---|---|---|"
for model in qwen2.5-vl-7b qwen3-vl-8b; do
  for input in "${inputs[@]}"; do
    input_name=${input%%:*}; input_flags=${input#*:}
    for config in "${configs[@]}"; do
      if [[ $config == preset=* ]]; then name=${config#preset=}; flags="--preset $name"
      else name=${config%%:*}; flags=${config#*:}; fi
      f="$out/${model}_${input_name}_${name}.json"
      # shellcheck disable=SC2086
      # --no-mlp: the tables this script's docs show were measured on the attention blocks alone
      "$bin" encode --model "$model" $input_flags --device sim:ascend-910b $flags --no-mlp --forwards 1 --warmup 1 \
        --json "$f" >/dev/null
      python3 - "$f" "$model" "$input_name" "$name" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); s = d["summary"]
print("| %s | %s | %s | %.1f | %.1f | %.1f |" % (sys.argv[2], sys.argv[3], sys.argv[4],
      s["peak_device_memory_bytes"] / 1e6, s["peak_device_memory_reserved_bytes"] / 1e6,
      s["bytes_allocated_per_forward"] / 1e6))
PY
    done
  done
done
