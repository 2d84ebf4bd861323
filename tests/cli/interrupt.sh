#!/usr/bin/env bash
# SIGINT and SIGTERM end a command as the user asked (docs/results.md, "Interrupting a command"):
# exit status 130 or 143, at most one line on stderr naming the signal, no core, nothing written
# into the folder (no output, no temporary), and the replay processes an `explore` forked gone with
# it. Signals arrive at several moments of a replay that runs for seconds (SimGrid's own SIGINT
# handler used to exit mid-simulation: a segfault in 6 of 7 tries).
#   interrupt.sh STRATA_BINARY PLATFORMS_DIR
set -uo pipefail
strata=$(realpath "$1")
platforms=$(realpath "$2")
dir=$(mktemp -d "${TMPDIR:-/tmp}/strata-interrupt.XXXXXX")
trap 'rm -rf "$dir"' EXIT
ulimit -c 0 # a core would be a file left behind; the status says whether one was dumped
failed=0

# signal_case SIGNAL DELAY_S EXPECTED_STATUS ARGS...: runs `strata ARGS...` in an empty folder,
# sends SIGNAL to it after DELAY_S seconds.
signal_case() {
  local signal=$1 delay=$2 expected=$3
  shift 3
  local run=$dir/run
  rm -rf "$run" && mkdir "$run"
  (cd "$run" && exec "$strata" "$@" >"$dir/out" 2>"$dir/err" </dev/null) &
  local pid=$!
  sleep "$delay"
  kill -s "$signal" "$pid" 2>/dev/null
  wait "$pid"
  local status=$? problem=""
  [[ $status -eq $expected ]] || problem+="exit $status, expected $expected; "
  local lines
  lines=$(wc -l <"$dir/err")
  [[ $lines -le 1 ]] || problem+="$lines lines on stderr; "
  if [[ $lines -eq 1 ]] && ! grep -Eq "^strata: (interrupted \(SIGINT\)|terminated \(SIGTERM\))$" "$dir/err"; then
    problem+="stderr: $(head -c 200 "$dir/err"); "
  fi
  local left
  left=$(find "$run" -mindepth 1 | head -n 3 | tr '\n' ' ')
  [[ -z $left ]] || problem+="left in the folder: $left; "
  sleep 0.5
  local children
  children=$(pgrep -f -- "$dir/" | tr '\n' ' ')
  [[ -z $children ]] || problem+="processes still running: $children; "
  if [[ -n $problem ]]; then
    failed=$((failed + 1))
    echo "FAIL  $signal after $delay s: strata $*: $problem"
  else
    echo "PASS  $signal after $delay s: strata $* (exit $status)"
  fi
}

simulate=(simulate --platform "$platforms/a100-cluster-64.xml" --model gpt3-1.3b --workers 64
  --strategy dp=8,tp=2,pp=4 --microbatches 16 --schedule 1f1b --report r.json --trace t.json)
for delay in 0.3 0.8 1.2; do
  signal_case INT "$delay" 130 "${simulate[@]}"
done
signal_case TERM 0.8 143 "${simulate[@]}"
# explore replays its front in forked processes: the parent alone is signalled (a kill, not a
# terminal's Ctrl-C to the whole group) and its children must not outlive it. The store (rows
# committed before the signal are kept: a sweep resumes) is outside the run folder, and its path
# on the command line lets pgrep find the children.
explore=(explore --platform "$platforms/a100-cluster-64.xml" --model gpt3-1.3b --workers 64 --top 8
  --db "$dir/x.db" --csv e.csv)
signal_case TERM 2 143 "${explore[@]}"
signal_case INT 2 130 "${explore[@]}"

[[ $failed -eq 0 ]] && echo "every interrupted command ended cleanly"
[[ $failed -eq 0 ]]
