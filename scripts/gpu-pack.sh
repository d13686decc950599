#!/usr/bin/env bash
# Packs a CUDA build made here (a build machine with the CUDA toolkit but no GPU) for a GPU machine
# that lacks the Debian -dev packages the project builds against:
#   scripts/gpu-pack.sh [BUILD_DIR=build] [DEST=.gpu-pack]
# DEST/bin gets encbench, encbench-micro and cuda_tests; DEST/lib the shared libraries they load
# that are neither glibc's (those must come from the GPU machine's own loader) nor CUDA's big ones
# (cuBLAS/cuBLASLt, hundreds of MB, which a CUDA machine has). libcudart and libcupti go to
# DEST/lib-cuda, a fallback for a machine whose toolkit lacks them.
# Then, on the GPU machine: scripts/gpu-verify.sh --prebuilt DEST [--quick]
# GPU_PACK_ARCHIVE=1 also writes DEST.tar.xz (for a transfer with a size limit).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
dest=${2:-.gpu-pack}
bins=("$build/harness/cli/encbench" "$build/harness/micro/encbench-micro" "$build/tests/cuda/cuda_tests")
for b in "${bins[@]}"; do
  [[ -x "$b" ]] || { echo "gpu-pack: $b is missing: build with the CUDA toolkit first (scripts/build.sh $build)" >&2; exit 2; }
done
if ! ldd "$build/harness/cli/encbench" 2>/dev/null | grep -q libcudart; then
  echo "gpu-pack: $build was built without the CUDA backend (ENCBENCH_CUDA found no toolkit)" >&2
  exit 2
fi
rm -rf "$dest"
mkdir -p "$dest/bin" "$dest/lib" "$dest/lib-cuda"
cp "${bins[@]}" "$dest/bin/"
# glibc's own libraries and the dynamic loader stay the target's; so does the CUDA driver.
glibc='^(linux-vdso|ld-linux|libc|libm|libpthread|libdl|librt|libutil|libresolv|libcuda)\.so'
big_cuda='^(libcublas|libcublasLt)\.so'
small_cuda='^(libcudart|libcupti)\.so'
ldd "${bins[@]}" | awk '/=> \//{print $1, $3}' | sort -u | while read -r name path; do
  if [[ "$name" =~ $glibc || "$name" =~ $big_cuda ]]; then continue; fi
  if [[ "$name" =~ $small_cuda ]]; then cp -L "$path" "$dest/lib-cuda/$name"; else cp -L "$path" "$dest/lib/$name"; fi
done
git rev-parse HEAD > "$dest/commit" 2>/dev/null || true
echo "gpu-pack: $(du -sh "$dest" | cut -f1) in $dest ($(ls "$dest/lib" | wc -l) libraries, commit $(cut -c1-12 "$dest/commit" 2>/dev/null))"
# The device tool carries at most 64 MiB with the working tree: an archive is a quarter of that.
if [[ "${GPU_PACK_ARCHIVE:-0}" == 1 ]]; then
  tar -cJf "$dest.tar.xz" "$dest"
  echo "gpu-pack: $(du -sh "$dest.tar.xz" | cut -f1) in $dest.tar.xz (unpack with tar -xJf)"
fi
