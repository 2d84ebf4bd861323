#!/usr/bin/env bash
# A 10^6-task Plan written and then simulated, each under a 2 GB address-space limit (issue 14:
# the Plan reader and writer used to build a DOM of the whole file, 4.2 GB to write and 3.7 GB to
# simulate). Prints each step's peak resident memory when /usr/bin/time is there.
#   big_plan_under_limit.sh STRATA_BINARY PLATFORMS_DIR
set -euo pipefail
strata="$1"
platforms="$2"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT

timed() {  # step command...
  local step="$1"
  shift
  if [[ -x /usr/bin/time ]]; then
    /usr/bin/time -f "$step: peak RSS %M KiB, %e s" "$@"
  else
    "$@"
  fi
}

ulimit -v 2000000
timed plan "$strata" plan --model mlp --strategy dp=2 --iterations 30304 -o "$dir/big.json"
timed simulate "$strata" simulate --plan "$dir/big.json" --platform "$platforms/a100-node-8.xml" \
  --report "$dir/report.json" > /dev/null
grep -q '"tasks"' "$dir/report.json" || grep -q 'iteration' "$dir/report.json"
echo "10^6-task Plan written and simulated under ulimit -v 2000000"
