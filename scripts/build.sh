#!/usr/bin/env bash
# Configures and builds encbench.   scripts/build.sh [BUILD_DIR] [extra cmake args...]
# BUILD_TARGETS="encbench ..." builds only those targets (the main job needs only the CLI).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${1:-build}
shift || true
jobs=$(nproc)
# A build stopped half-way (Ctrl-C, a killed job, a full disk) can leave a truncated object,
# archive or executable that is newer than its sources, which make then takes as up to date (the
# link fails, or worse, a test binary is half written). While it builds, the build directory holds
# a marker; a run that finds one removes every object, archive and ELF file written since that
# build began, and make builds them again (ccache returns the ones that had finished).
marker=$build_dir/.encbench-build-unfinished
if [[ -f "$marker" ]]; then
  echo "encbench: the last build in $build_dir did not finish; removing what it wrote" >&2
  while IFS= read -r -d '' f; do
    case "$f" in
      *.o|*.a|*.so) rm -f "$f" ;;
      *) [[ "$(head -c 4 "$f" 2>/dev/null)" == $'\x7fELF' ]] && rm -f "$f" ;;
    esac
  done < <(find "$build_dir" -type f -newer "$marker" \( -name '*.o' -o -name '*.a' -o -name '*.so' -o -perm -u+x \) -print0)
fi
mkdir -p "$build_dir"
touch "$marker"
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=${CMAKE_BUILD_TYPE:-Release} "$@" >/dev/null
if [[ -n "${BUILD_TARGETS:-}" ]]; then
  # shellcheck disable=SC2086
  cmake --build "$build_dir" -j "$jobs" --target ${BUILD_TARGETS}
else
  cmake --build "$build_dir" -j "$jobs"
fi
rm -f "$marker"
