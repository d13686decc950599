#!/usr/bin/env bash
# Start-up footprint of the encbench binary (docs/device.md, "Start-up footprint"): wall time and
# peak RSS of `encbench --version` (GNU time -v), the RSS of an idle `encbench serve` on the sim
# device after it is listening, and whether the CUDA libraries are mapped in it. Give several
# binaries (a build without CUDA, one with it, an older one kept for "before") to compare them.
#   scripts/measure-startup.sh [BINARY...]      (default: build/harness/cli/encbench)
# RUNS=N repeats --version N times (default 5) and prints the smallest and largest figures.
set -euo pipefail
cd "$(dirname "$0")/.."
bins=("$@")
[ ${#bins[@]} -eq 0 ] && bins=(build/harness/cli/encbench)
runs=${RUNS:-5}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "| binary | --version wall s (min-max of $runs) | --version peak RSS KiB (min-max) | idle serve RSS KiB | CUDA libraries mapped in serve |"
echo "|---|---|---|---|---|"
for bin in "${bins[@]}"; do
  walls=(); rss=()
  for _ in $(seq "$runs"); do
    /usr/bin/time -v "$bin" --version >/dev/null 2>"$tmp/time.txt"
    walls+=("$(awk -F': ' '/Elapsed \(wall clock\)/ {split($2, t, ":"); print t[1] * 60 + t[2]}' "$tmp/time.txt")")
    rss+=("$(awk -F': ' '/Maximum resident set size/ {print $2}' "$tmp/time.txt")")
  done
  wall_range=$(printf '%s\n' "${walls[@]}" | sort -g | sed -n '1p;$p' | paste -sd- -)
  rss_range=$(printf '%s\n' "${rss[@]}" | sort -g | sed -n '1p;$p' | paste -sd- -)
  # An idle server on the default sim device: RSS once it has printed its listening line.
  "$bin" serve --port 0 >"$tmp/serve.txt" 2>&1 &
  pid=$!
  for _ in $(seq 100); do
    grep -q "listening" "$tmp/serve.txt" 2>/dev/null && break
    sleep 0.1
  done
  sleep 1
  serve_rss=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status")
  mapped=$(grep -cE 'libcudart|libcublas|libcupti' "/proc/$pid/maps" || true)
  kill "$pid"
  wait "$pid" 2>/dev/null || true
  echo "| $bin | $wall_range | $rss_range | $serve_rss | $([ "$mapped" -gt 0 ] && echo "yes ($mapped maps)" || echo no) |"
done
