#!/usr/bin/env bash
# Installs the Debian 12 packages encbench needs, only those that are missing.
#   scripts/install-deps.sh          build + run dependencies
#   scripts/install-deps.sh --test   also what the test suite needs (node/npm, chromium,
#                                    PyTorch for /usr/bin/python3: the encoder_torch_golden_* ctests,
#                                    and Jinja2: the chat-template reference, chat_template_test)
set -euo pipefail
want=(cmake g++ make git pkg-config libbenchmark-dev libgtest-dev libgmock-dev nlohmann-json3-dev
      libcli11-dev libcurl4-openssl-dev libboost-dev libboost-system-dev
      libturbojpeg0-dev libpng-dev libwebp-dev  # harness/imaging: image decoders for untrusted data
      libsnappy-dev libzstd-dev  # harness/parquet: the hub's parquet pages (zlib1g-dev: GZIP pages)
      libsqlite3-dev zlib1g-dev ca-certificates ccache openmpi-bin libopenmpi-dev
      libblis-dev  # BLIS: encbench-micro's GEMM anchor on AVX2 (kernels/gemm_vs_anchor; optional)
      libopenblas0-pthread  # OpenBLAS: the GEMM anchor on AVX-512, dlopen'ed by its full path
      valgrind  # callgrind.h and the CI gate's instruction counts (encbench-instr)
      time)  # /usr/bin/time -v: peak RSS in scripts/measure-startup.sh and the docs' measurements
if [[ "${1:-}" == "--test" ]]; then
  want+=(chromium python3-torch python3-numpy python3-jinja2)
  want+=(linux-perf)  # perf stat: docs/device.md's start-up CPU time
  want+=(clang libclang-rt-14-dev)  # libFuzzer + ASan/UBSan runtimes for scripts/fuzz.sh (build-fuzz)
  command -v node >/dev/null 2>&1 || want+=(nodejs)
  command -v npm >/dev/null 2>&1 || want+=(npm)
fi
missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "encbench: installing ${missing[*]}" >&2
  SUDO=""
  [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -q
  # libopenblas0-pthread registers itself, at a higher priority, as the system's libblas.so.3 /
  # liblapack.so.3: keep the alternatives other programs use pointing where they pointed before.
  blas_alt=libblas.so.3-x86_64-linux-gnu lapack_alt=liblapack.so.3-x86_64-linux-gnu
  keep_blas=$(update-alternatives --query "$blas_alt" 2>/dev/null | sed -n 's/^Value: //p' || true)
  keep_lapack=$(update-alternatives --query "$lapack_alt" 2>/dev/null | sed -n 's/^Value: //p' || true)
  $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
  if [[ -n "$keep_blas" ]]; then $SUDO update-alternatives --set "$blas_alt" "$keep_blas"; fi
  if [[ -n "$keep_lapack" ]]; then $SUDO update-alternatives --set "$lapack_alt" "$keep_lapack"; fi
fi
