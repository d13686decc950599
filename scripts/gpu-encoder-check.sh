#!/usr/bin/env bash
# The encoder forward on a CUDA GPU in one short call (sized for a 15-minute device lease):
#   scripts/gpu-encoder-check.sh --prebuilt DIR
# DIR is scripts/gpu-pack.sh's output (binaries built here with their libraries). Steps, each with
# a time limit (GPU_CHECK_STEP_LIMIT_S, 150 s) so one slow step cannot eat the lease:
#   1. accuracy: encode --verify at 448x448 (the fp64 CPU reference of larger sets takes minutes),
#      both models, optimized preset, GEMMs in fp32 and in TF32; baseline in fp32;
#   2. forward time and idle gaps by cause (--mlp, the realistic layer), both models, baseline and
#      optimized, fp32 and TF32 GEMMs, at 1280x720, 4x448x448 and 448x448 (result JSON per run);
#      no run starts after GPU_CHECK_DEADLINE_S (330 s), so the largest shapes come first;
#   3. a table of the medians: forward, device busy, idle share, syncs per forward.
# Results go to $OUT/gpu-encoder (the device tool's output folder) or reports/results/<device>/encoder.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
prebuilt=""
while (($#)); do
  case "$1" in
    --prebuilt) prebuilt=${2:-}; shift ;;
    *) echo "gpu-encoder-check: unknown argument '$1' (accepted: --prebuilt DIR)" >&2; exit 2 ;;
  esac
  shift
done
[[ -x "$prebuilt/bin/encbench" ]] || { echo "gpu-encoder-check: --prebuilt DIR with bin/encbench is required (scripts/gpu-pack.sh)" >&2; exit 2; }
limit=${GPU_CHECK_STEP_LIMIT_S:-150}
# No new run starts after this many seconds (the runs are ordered by what matters most).
deadline=$((SECONDS + ${GPU_CHECK_DEADLINE_S:-330}))
late() { ((SECONDS >= deadline)) && { note "  (deadline reached: $1 and what follows skipped)"; return 0; }; return 1; }
cuda_dirs=$(dirname "$(find /usr/local /opt /usr/lib -name 'libcublasLt.so.13' 2>/dev/null | head -1)" 2>/dev/null || true)
export LD_LIBRARY_PATH="$PWD/$prebuilt/lib:/usr/local/cuda/lib64:${cuda_dirs}:$PWD/$prebuilt/lib-cuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export ENCBENCH_SOURCE_DIR="$PWD" ENCBENCH_SCENARIOS_DIR="$PWD/scenarios"
encbench="$prebuilt/bin/encbench"
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 | tr ' ' '-' | tr 'A-Z' 'a-z')
results=${OUT:+$OUT/gpu-encoder}
results=${results:-reports/results/${gpu:-unknown-gpu}/encoder}
mkdir -p "$results/json" "$results/logs"
summary="$results/summary.txt"
failed=0
note() { echo "$*" | tee -a "$summary"; }
note "gpu-encoder-check $(date -u +%FT%TZ) on ${gpu:-?}, pack commit $(cut -c1-12 "$prebuilt/commit" 2>/dev/null)"

# ---- 1. accuracy ------------------------------------------------------------------------------
note "accuracy (encode --verify --image 448x448 --forwards 2; tolerance on cuda 5e-3):"
for model in qwen2.5-vl-7b qwen3-vl-8b; do
  for cfg in "optimized fp32" "optimized tf32" "baseline fp32"; do
    read -r preset math <<< "$cfg"
    tag="verify.$model.$preset.$math"
    late "$tag" && break 2
    # --no-mlp: the tables this script's docs show were measured on the attention blocks alone
    timeout "$limit" "$encbench" encode --model "$model" --image 448x448 --preset "$preset" --device cuda --no-mlp \
      --cuda-gemm-math "$math" --verify --forwards 2 --json "$results/json/$tag.json" > "$results/logs/$tag.log" 2>&1
    rc=$?
    line=$(grep -E '^accuracy' "$results/logs/$tag.log" | head -1)
    note "  rc=$rc $tag: ${line:-no accuracy line (see logs/$tag.log)}"
    ((rc == 0)) || failed=$((failed + 1))
  done
done

# ---- 2. forward time and gaps -----------------------------------------------------------------
note ""
note "forward time (--mlp --forwards 10 --warmup 2; medians; idle by cause per forward):"
for set in "1280x720" "448x448,448x448,448x448,448x448" "448x448"; do
  for model in qwen2.5-vl-7b qwen3-vl-8b; do
    images=$(echo "$set" | tr ',' '\n' | sed 's/^/--image /' | tr '\n' ' ')
    setname="$(echo "$set" | tr ',' '\n' | wc -l)x$(echo "$set" | cut -d, -f1)"
    for cfg in "baseline fp32" "optimized fp32" "optimized tf32" "baseline tf32"; do
      read -r preset math <<< "$cfg"
      tag="time.$model.$setname.$preset.$math"
      late "$tag" && break 3
      # shellcheck disable=SC2086
      timeout "$limit" "$encbench" encode --model "$model" $images --preset "$preset" --device cuda --mlp \
        --cuda-gemm-math "$math" --forwards 10 --warmup 2 --max-gaps 20 --json "$results/json/$tag.json" \
        > "$results/logs/$tag.log" 2>&1 || { failed=$((failed + 1)); note "  FAILED $tag (logs/$tag.log)"; continue; }
      fwd=$(grep -E 'forward time' "$results/logs/$tag.log" | grep -Eo 'median [0-9.]+ ms' | head -1)
      busy=$(grep -E 'device busy' "$results/logs/$tag.log" | grep -Eo 'median [0-9.]+ ms' | head -1)
      idle=$(grep -E 'device idle' "$results/logs/$tag.log" | sed 's/^ *device idle *//' | head -1)
      syncs=$(grep -E 'syncs/forward' "$results/logs/$tag.log" | grep -Eo '[0-9]+' | head -1)
      note "  $tag: forward $fwd, busy $busy, syncs $syncs, idle $idle"
    done
  done
done

note ""
note "gpu-encoder-check finished: $failed failed step(s); results in $results"
exit "$failed"
