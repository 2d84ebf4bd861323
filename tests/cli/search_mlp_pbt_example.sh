#!/usr/bin/env bash
# examples/search-mlp-pbt.json (label `slow`, about 2 minutes on 2 cores): PBT over real training
# (8 members, the learning rate perturbed every epoch) and the random policy over the same
# initial draws; each prints its best accuracy, time to target and clones (docs/search.md).
#   search_mlp_pbt_example.sh STRATA_BINARY EXAMPLES_DIR
set -euo pipefail
strata="$1"
examples="$2"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
cd "$dir"
for policy in pbt random; do
  "$strata" search --spec "$examples/search-mlp-pbt.json" --policy "$policy" --no-db > "$policy.txt"
  echo "$policy: $(grep -E '^best|^time to|^makespan|^pbt' "$policy.txt" | tr '\n' ' ')"
done
grep -q '^pbt: [1-9][0-9]* clones' pbt.txt
echo "ok"
