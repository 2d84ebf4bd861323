#!/usr/bin/env bash
# examples/search-mlp.json with every policy (label `slow`, about 3 minutes on 2 cores): the 16
# configurations train for real once (grid, the first policy), the other policies take their
# curves from the store; each prints its best accuracy and time to target (docs/search.md).
#   search_mlp_example.sh STRATA_BINARY EXAMPLES_DIR
set -euo pipefail
strata="$1"
examples="$2"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
cd "$dir"
for policy in grid random asha sha hyperband asha-stop pop; do
  "$strata" search --spec "$examples/search-mlp.json" --policy "$policy" --db s.db > out.txt
  echo "$policy: $(grep -E '^best|^time to|^makespan|^pop' out.txt | tr '\n' ' ')"
done
[[ "$("$strata" query --db s.db --csv --where "fidelity = 'real'" | wc -l)" -eq 17 ]]
echo "ok"
