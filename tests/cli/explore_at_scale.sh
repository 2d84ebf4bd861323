#!/usr/bin/env bash
# The results store's and the multi-fidelity explorer's checks at the sizes users sweep
# (docs/results.md), too long for the default test run (label `slow`):
#
#   explore_at_scale.sh STRATA_BINARY PLATFORMS_DIR halving
#     successive halving across fidelities (--fidelity step, eta 3) on gpt3-1.3b over 16 of
#     a100-cluster-64's GPUs (N = 2,688 configurations) picks the configuration that replaying
#     all N (--top 2688, the same collectives rule as its last rung) picks, with at most
#     ceil(N/3) + ceil(N/9) = 1,195 simulations (plus one per rung whose choice the last rung did
#     not reach). About 30 minutes on 2 cores.
#   explore_at_scale.sh STRATA_BINARY PLATFORMS_DIR resume
#     explore --model gpt3-175b on h100-cluster-1024 --top 12 finishes within 15 minutes; the same
#     sweep killed (SIGKILL) after 3 s and again after 6 s and run to its end leaves a store with
#     the same rows (strata query --csv, every column) as the uninterrupted one. About 10 minutes.
set -euo pipefail
strata="$1"
platforms="$2"
check="$3"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
cd "$dir"

seconds() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(seconds)" 'BEGIN { printf "%.1f", b - a }'; }

case "$check" in
  halving)
    sweep=(explore --platform "$platforms/a100-cluster-64.xml" --model gpt3-1.3b --workers 16 --no-db)
    t0=$(seconds)
    "$strata" "${sweep[@]}" --fidelity step > halving.txt
    echo "successive halving: $(elapsed "$t0") s"
    t0=$(seconds)
    "$strata" "${sweep[@]}" --top 2688 > all.txt
    echo "every configuration replayed: $(elapsed "$t0") s"
    grep -q "2688 configurations" all.txt
    best_halving=$(grep '^best:' halving.txt)
    best_all=$(grep '^best:' all.txt)
    echo "halving: $best_halving"
    echo "all:     $best_all"
    [[ "$best_halving" == "$best_all" ]] || { echo "different choice"; exit 1; }
    simulations=$(grep -o '[0-9]* simulations run' halving.txt | cut -d' ' -f1)
    echo "simulations: $simulations (bound 1195 + 2)"
    (( simulations <= 1197 ))
    ;;
  resume)
    sweep=(explore --model gpt3-175b --platform "$platforms/h100-cluster-1024.xml" --top 12)
    t0=$(seconds)
    timeout 900 "$strata" "${sweep[@]}" --db a.db > /dev/null
    echo "uninterrupted: $(elapsed "$t0") s (limit 900 s)"
    for after in 3 6; do
      (timeout -s KILL "$after" "$strata" "${sweep[@]}" --db b.db > /dev/null 2>&1) 2> /dev/null || true
      echo "killed after $after s"
    done
    t0=$(seconds)
    "$strata" "${sweep[@]}" --db b.db > /dev/null
    echo "resumed: $(elapsed "$t0") s"
    "$strata" query --db a.db --csv > a.csv
    "$strata" query --db b.db --csv > b.csv
    echo "rows: $(($(wc -l < a.csv) - 1)) and $(($(wc -l < b.csv) - 1))"
    cmp a.csv b.csv
    ;;
  *)
    echo "explore_at_scale.sh: unknown check '$check' (halving or resume)" >&2
    exit 1
    ;;
esac
echo "ok"
