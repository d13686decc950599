#!/usr/bin/env bash
# Hostile peers against `encbench serve`, with the server's RSS read from /proc
# (the figures in docs/server.md). Each scenario starts a fresh server on a free port.
#   scripts/measure-server-hostile.sh [ENCBENCH] [HOSTILE_TOOL]
# The same against another build (e.g. one without the server's per-peer limits), some scenarios only:
#   SCENARIOS="refused inflight noread" scripts/measure-server-hostile.sh OTHER/encbench
# (leave out fifo there: a server without those limits blocks in open() of the FIFO for good).
# Build first: cmake --build build --target encbench encbench_server_hostile
set -euo pipefail
cd "$(dirname "$0")/.."
ENCBENCH=${1:-build/harness/cli/encbench}
TOOL=${2:-build/tests/server/encbench_server_hostile}
MODEL=qwen3-vl-8b
WORK=$(mktemp -d)
SERVER_PID=""
trap '[[ -n "$SERVER_PID" ]] && kill "$SERVER_PID" 2>/dev/null; rm -rf "$WORK"' EXIT

start_server() {  # flags...; sets PORT and SERVER_PID
  "$ENCBENCH" serve --port 0 --model "$MODEL" "$@" >"$WORK/server.log" 2>&1 &
  SERVER_PID=$!
  for _ in $(seq 1 600); do
    PORT=$(sed -n 's/.*listening url=.* port=\([0-9]*\).*/\1/p' "$WORK/server.log")
    [[ -n "$PORT" ]] && return 0
    sleep 0.1
  done
  echo "server did not start: $(cat "$WORK/server.log")" >&2; exit 1
}
# A server with decodes still queued may take a while to stop: 10 s, then SIGKILL.
stop_server() {
  kill "$SERVER_PID"
  for _ in $(seq 1 100); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$SERVER_PID" 2>/dev/null || true
  wait "$SERVER_PID" 2>/dev/null || true
  SERVER_PID=""
}
want() { [[ " ${SCENARIOS:-refused decoded inflight noread fifo} " == *" $1 "* ]]; }
mib() { awk -v k="$1" '$1 == k":" {printf "%d", $2 / 1024}' "/proc/$SERVER_PID/status"; }
report() { echo "$1 server_rss_mib=$(mib VmRSS) server_peak_mib=$(mib VmHWM)"; }

for format in png jpeg; do
  # The issue's case: refused (mm_item_too_large, 16384 tokens > 8192) from the header.
  want refused || continue
  start_server
  echo "images $format refused: idle rss $(mib VmRSS) MiB"
  report "$("$TOOL" images "$PORT" "$MODEL" "$format")"
  stop_server
  want decoded || continue
  # Accepted (budget raised): every image decoded in full on the image lane; --null keeps the
  # encoder out so the text lane is what is measured.
  start_server --null --max-num-encoder-input-tokens 65536
  echo "images $format decoded: idle rss $(mib VmRSS) MiB"
  report "$("$TOOL" images "$PORT" "$MODEL" "$format")"
  stop_server
done

if want inflight; then
  start_server
  report "$("$TOOL" inflight "$PORT" "$MODEL")"
  stop_server
fi

want noread && for mode in --null ""; do
  # shellcheck disable=SC2086
  start_server $mode --max-model-len 32768
  idle=$(mib VmRSS)
  "$TOOL" noread "$PORT" "$MODEL" 200 32000 8 >"$WORK/noread.json" &
  sleep 7
  during=$(mib VmRSS)
  wait $!
  echo "noread ${mode:-engine}: $(cat "$WORK/noread.json") server_rss_idle_mib=$idle server_rss_during_mib=$during"
  stop_server
done

want fifo || exit 0
mkdir "$WORK/media" && mkfifo "$WORK/media/pipe.png"
start_server --allowed-local-media-path "$WORK/media"
report "$("$TOOL" file "$PORT" "$MODEL" "file://$WORK/media/pipe.png")"
stop_server
