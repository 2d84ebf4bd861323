#!/usr/bin/env bash
# strata.sh — set up, build and run strata on Debian 12.
#
#   ./strata.sh explore [flags]   install what is missing, build build/cli/strata-sim only (the
#                                 simulator's subcommands; Release), run the main what-if
#                                 exploration (gpt3-13b on the 64-GPU A100 cluster by default)
#   ./strata.sh test [ctest args] same set-up, build everything, then the test suite without the
#                                 `slow` label (ctest -j2)
#   ./strata.sh slow [ctest args] the tests labelled `slow` (convergence runs of minutes)
#   ./strata.sh bench             build everything, then the benchmarks under tests/bench/
#   ./strata.sh build             set-up and build everything
#   ./strata.sh tidy [files]      clang-tidy (.clang-tidy: the naming scheme) over every .cpp file of
#                                 compile_commands.json (not the .cu files), or over the files named
#   ./strata.sh <subcommand> ...  any other strata subcommand (models, plan, simulate, ...): builds the
#                                 strata command only
#
# Environment: BUILD_DIR (default build), STRATA_SANITIZE=1 for ASan+UBSan, CI=true makes
# warnings errors, STRATA_CMAKE_ARGS adds options to the configuration (e.g. -DSTRATA_CUDA=OFF).
set -euo pipefail
cd "$(dirname "$0")"

readonly PACKAGES=(build-essential cmake pkg-config libsimgrid-dev libexpat1-dev libboost-graph-dev
                   nlohmann-json3-dev libgtest-dev libbenchmark-dev libcli11-dev
                   libopenblas-dev zlib1g-dev dataset-fashion-mnist
                   libopenmpi-dev openmpi-bin)
readonly TIDY_PACKAGES=(clang-tidy-14)
BUILD_DIR=${BUILD_DIR:-build}

install_missing() {
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "strata.sh: installing ${missing[*]}" >&2
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
}

configure() {
  install_missing "${PACKAGES[@]}"
  local werror=OFF sanitize=OFF
  [ "${CI:-}" = "true" ] && werror=ON
  [ "${STRATA_SANITIZE:-0}" = "1" ] && sanitize=ON
  # shellcheck disable=SC2086 # STRATA_CMAKE_ARGS is a list of options
  cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DSTRATA_WERROR=$werror \
        -DSTRATA_SANITIZE=$sanitize ${STRATA_CMAKE_ARGS:-} >/dev/null
}

# build [target...]: everything, or only the targets named (and what they need).
build() {
  configure
  local targets=()
  for t in "$@"; do targets+=(--target "$t"); done
  cmake --build "$BUILD_DIR" -j "$(nproc)" "${targets[@]}"
}

tidy() {
  install_missing "${TIDY_PACKAGES[@]}"
  configure  # writes compile_commands.json; nothing needs to be built
  # run-clang-tidy takes regular expressions over the paths of compile_commands.json.
  local files=("$@")
  [ ${#files[@]} -eq 0 ] && files=('\.cpp$')
  # -quiet: only findings. The build's warning options are g++'s: clang does not know some of them,
  # and its own warnings are not errors here (g++ builds with -Werror in CI).
  run-clang-tidy-14 -quiet -p "$BUILD_DIR" -j "$(nproc)" \
    -extra-arg=-Wno-unknown-warning-option -extra-arg=-Wno-error "${files[@]}"
}

cmd=${1:-explore}
[ $# -gt 0 ] && shift
case "$cmd" in
  build) build ;;
  test)
    build
    ctest --test-dir "$BUILD_DIR" -j 2 --output-on-failure -LE slow "$@"
    ;;
  slow)
    build
    ctest --test-dir "$BUILD_DIR" -j 2 --output-on-failure -L slow "$@"
    ;;
  bench)
    build
    for b in "$BUILD_DIR"/tests/bench/strata_bench_*; do [ -x "$b" ] && "$b" "$@"; done
    ;;
  tidy) tidy "$@" ;;
  explore)
    # strata-sim: the simulator's subcommands without the real executor, a third less to compile.
    build strata_sim_cli
    exec "$BUILD_DIR/cli/strata-sim" explore "$@"
    ;;
  *)
    build strata >/dev/null
    exec "$BUILD_DIR/cli/strata" "$cmd" "$@"
    ;;
esac
