#!/usr/bin/env bash
# Installs the npm dependencies of the node tests (the official openai SDK, v6; tokenizers.js; the parquet
# writers and reader of make_parquet_fixtures.mjs) if missing.
set -euo pipefail
cd "$(dirname "$0")"
if ! command -v npm >/dev/null 2>&1; then
  echo "tests/node: npm not found (scripts/install-deps.sh --test installs it)" >&2
  exit 1
fi
# An install that was stopped half-way leaves its marker, and a partial node_modules that the
# directory checks above would take for a complete one: it is removed and installed again.
marker=node_modules/.encbench-install-unfinished
if [[ -f "$marker" ]]; then
  echo "tests/node: the last npm install did not finish; installing again" >&2
  rm -rf node_modules
fi
if [[ ! -d node_modules/openai || ! -d node_modules/@huggingface/tokenizers || ! -d node_modules/hyparquet-writer ||
      ! -d node_modules/parquetjs-lite ]]; then
  mkdir -p node_modules
  touch "$marker"
  npm install --no-audit --no-fund
  rm -f "$marker"
fi
