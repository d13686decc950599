#!/usr/bin/env bash
# Installs the npm dependencies of the node tests (the official openai SDK, v6; tokenizers.js) if missing.
set -euo pipefail
cd "$(dirname "$0")"
if ! command -v npm >/dev/null 2>&1; then
  echo "tests/node: npm not found (scripts/install-deps.sh --test installs it)" >&2
  exit 1
fi
if [[ ! -d node_modules/openai || ! -d node_modules/@huggingface/tokenizers ]]; then
  npm install --no-audit --no-fund
fi
