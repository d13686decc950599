#!/usr/bin/env bash
# Configures and builds encbench.   scripts/build.sh [BUILD_DIR] [extra cmake args...]
# BUILD_TARGETS="encbench ..." builds only those targets (the main job needs only the CLI).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${1:-build}
shift || true
jobs=$(nproc)
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=${CMAKE_BUILD_TYPE:-Release} "$@" >/dev/null
if [[ -n "${BUILD_TARGETS:-}" ]]; then
  # shellcheck disable=SC2086
  cmake --build "$build_dir" -j "$jobs" --target ${BUILD_TARGETS}
else
  cmake --build "$build_dir" -j "$jobs"
fi
