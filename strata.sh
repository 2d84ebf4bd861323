#!/usr/bin/env bash
# strata.sh — set up, build and run strata on Debian 12.
#
#   ./strata.sh explore [flags]   install what is missing, build (Release), run the main what-if
#                                 exploration (gpt3-13b on the 64-GPU A100 cluster by default)
#   ./strata.sh test              same set-up, then the whole test suite (ctest -j2)
#   ./strata.sh bench             same set-up, then the benchmarks under tests/bench/
#   ./strata.sh build             set-up and build only
#   ./strata.sh <subcommand> ...  any other strata subcommand (models, plan, simulate, ...)
#
# Environment: BUILD_DIR (default build), STRATA_SANITIZE=1 for ASan+UBSan, CI=true makes
# warnings errors.
set -euo pipefail
cd "$(dirname "$0")"

readonly PACKAGES=(build-essential cmake pkg-config libsimgrid-dev libboost-graph-dev
                   nlohmann-json3-dev libgtest-dev libbenchmark-dev libcli11-dev
                   libopenblas-dev zlib1g-dev dataset-fashion-mnist
                   libopenmpi-dev openmpi-bin)
BUILD_DIR=${BUILD_DIR:-build}

install_missing() {
  local missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "strata.sh: installing ${missing[*]}" >&2
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
}

build() {
  install_missing
  local werror=OFF sanitize=OFF
  [ "${CI:-}" = "true" ] && werror=ON
  [ "${STRATA_SANITIZE:-0}" = "1" ] && sanitize=ON
  cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DSTRATA_WERROR=$werror \
        -DSTRATA_SANITIZE=$sanitize >/dev/null
  cmake --build "$BUILD_DIR" -j "$(nproc)"
}

cmd=${1:-explore}
[ $# -gt 0 ] && shift
case "$cmd" in
  build) build ;;
  test)
    build
    ctest --test-dir "$BUILD_DIR" -j 2 --output-on-failure "$@"
    ;;
  bench)
    build
    for b in "$BUILD_DIR"/tests/bench/strata_bench_*; do [ -x "$b" ] && "$b" "$@"; done
    ;;
  explore)
    build
    exec "$BUILD_DIR/cli/strata" explore "$@"
    ;;
  *)
    build >/dev/null
    exec "$BUILD_DIR/cli/strata" "$cmd" "$@"
    ;;
esac
