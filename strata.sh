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
#   ./strata.sh fuzz [seconds] [libFuzzer flags]   (STRATA_FUZZ_HARNESSES="platform" for one)
#                                 build the libFuzzer harnesses of tests/fuzz with clang++ in
#                                 build-fuzz (-DSTRATA_FUZZ=ON; traces, models, sim and the harnesses
#                                 only), run each for `seconds` (default 60) from its seed corpus,
#                                 print its executions and exec/s; a finding fails with its input
#                                 saved under build-fuzz/fuzz/<harness>/findings (docs/fuzzing.md)
#   ./strata.sh <subcommand> ...  any other strata subcommand (models, plan, simulate, ...): builds the
#                                 strata command only
#
# Environment: BUILD_DIR (default build), STRATA_SANITIZE=1 for ASan+UBSan, CI=true makes
# warnings errors, STRATA_CMAKE_ARGS adds options to the configuration (e.g. -DSTRATA_CUDA=OFF).
set -euo pipefail
cd "$(dirname "$0")"

readonly PACKAGES=(build-essential cmake pkg-config libsimgrid-dev libexpat1-dev libboost-graph-dev
                   nlohmann-json3-dev libgtest-dev libbenchmark-dev libcli11-dev
                   libopenblas-dev zlib1g-dev libsqlite3-dev dataset-fashion-mnist
                   libmetis-dev
                   libopenmpi-dev openmpi-bin)
readonly TIDY_PACKAGES=(clang-tidy-14)
# The report's test loads its HTML in a real browser (headless).
readonly TEST_PACKAGES=(chromium)
# clang++ and its runtimes (libFuzzer, ASan, UBSan): Debian 12 ships libFuzzer in libclang-rt-14-dev.
readonly FUZZ_PACKAGES=(clang libclang-rt-14-dev)
readonly FUZZ_HARNESSES=(plan trace calibration experiment set strategy platform)
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

# The number printed after `stat::<name>:` in a libFuzzer log (-print_final_stats=1).
fuzz_stat() { sed -n "s/^stat::$1: *\([0-9]*\)$/\1/p" "$2" | tail -n 1; }

# fuzz_one harness seconds [libFuzzer flags]: runs one harness; its new inputs go to
# build-fuzz/fuzz/<harness>/corpus (the seeds under tests/fuzz/corpus are only read).
fuzz_one() {
  local harness=$1 seconds=$2
  shift 2
  local bin="$FUZZ_DIR/tests/fuzz/strata_fuzz_$harness" work="$FUZZ_DIR/fuzz/$harness"
  if [ ! -x "$bin" ]; then
    echo "fuzz $harness: not built (the platform harness needs STRATA_WITH_SIMGRID=ON)"
    return 0
  fi
  mkdir -p "$work/corpus" "$work/findings"
  local flags=(-max_total_time="$seconds" -print_final_stats=1 -timeout=30 -rss_limit_mb=4096
               -artifact_prefix="$work/findings/")
  [ -f "tests/fuzz/$harness.dict" ] && flags+=(-dict="tests/fuzz/$harness.dict")
  local start=$SECONDS
  # No allocation stacks (half the executions per second of the JSON readers); a finding run
  # alone on its input (docs/fuzzing.md) has them.
  if ! ASAN_OPTIONS=${ASAN_OPTIONS:-malloc_context_size=0} UBSAN_OPTIONS=print_stacktrace=1 "$bin" "${flags[@]}" "$@" "$work/corpus" "tests/fuzz/corpus/$harness" \
       >"$work/log" 2>&1; then
    tail -n 40 "$work/log"
    echo "fuzz $harness: FINDING after $((SECONDS - start)) s; input under $work/findings/, log $work/log"
    return 1
  fi
  printf 'fuzz %-11s %10s executions %8s exec/s %5s s  corpus %s inputs\n' "$harness" \
    "$(fuzz_stat number_of_executed_units "$work/log")" "$(fuzz_stat average_exec_per_sec "$work/log")" \
    "$((SECONDS - start))" "$(find "$work/corpus" "tests/fuzz/corpus/$harness" -type f | wc -l)"
}

fuzz() {
  local seconds=${1:-60}
  [ $# -gt 0 ] && shift
  if ! [[ $seconds =~ ^[1-9][0-9]*$ ]]; then
    echo "strata.sh fuzz: seconds must be a positive whole number, got '$seconds'" >&2
    return 1
  fi
  install_missing "${PACKAGES[@]}" "${FUZZ_PACKAGES[@]}"
  FUZZ_DIR=${FUZZ_DIR:-build-fuzz}
  # -O1 and line tables, as OSS-Fuzz builds: fast to compile, stack traces with lines. No NDEBUG,
  # so that the assertions of nlohmann-json and Boost stay in.
  # shellcheck disable=SC2086 # STRATA_CMAKE_ARGS is a list of options
  cmake -S . -B "$FUZZ_DIR" -DCMAKE_CXX_COMPILER=clang++ -DSTRATA_FUZZ=ON -DSTRATA_BUILD_TESTS=OFF \
        -DSTRATA_CUDA=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only" ${STRATA_CMAKE_ARGS:-} >/dev/null
  cmake --build "$FUZZ_DIR" -j "$(nproc)" --target strata_fuzzers
  local failed=0 harnesses=("${FUZZ_HARNESSES[@]}")
  # STRATA_FUZZ_HARNESSES="platform set" runs only those (a long run of one harness).
  # shellcheck disable=SC2206 # a list of names
  [ -n "${STRATA_FUZZ_HARNESSES:-}" ] && harnesses=(${STRATA_FUZZ_HARNESSES})
  for harness in "${harnesses[@]}"; do
    if [[ ! " ${FUZZ_HARNESSES[*]} " == *" $harness "* ]]; then
      echo "strata.sh fuzz: unknown harness '$harness' in STRATA_FUZZ_HARNESSES (known: ${FUZZ_HARNESSES[*]})" >&2
      return 1
    fi
    fuzz_one "$harness" "$seconds" "$@" || failed=1
  done
  return $failed
}

cmd=${1:-explore}
[ $# -gt 0 ] && shift
case "$cmd" in
  build) build ;;
  test)
    install_missing "${TEST_PACKAGES[@]}"
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
  fuzz) fuzz "$@" ;;
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
