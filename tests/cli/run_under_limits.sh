#!/usr/bin/env bash
# A real run under address-space limits from 100 MB to 1.5 GB (ulimit -v): each either trains or
# ends with one `strata: error:` line and exit 1, within two minutes; never a hang (OpenBLAS 0.3.21
# retried a failed buffer mapping for ever), a crash or an "internal error".
#   run_under_limits.sh STRATA_BINARY
set -uo pipefail
strata=$(realpath "$1")
dir=$(mktemp -d "${TMPDIR:-/tmp}/strata-limits.XXXXXX")
trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 2
"$strata" plan --model mlp --strategy dp=2 -o p.json >/dev/null || exit 2
failed=0
for limit in $(seq 100000 100000 1500000); do
  (
    ulimit -v "$limit"
    exec timeout 120 "$strata" run --plan p.json --epochs 1 >out.txt 2>err.txt
  )
  status=$?
  lines=$(wc -l <err.txt)
  verdict=PASS
  if [[ $status -eq 0 ]]; then
    :
  elif [[ $status -ne 1 || $lines -ne 1 ]] || ! grep -q '^strata: error: ' err.txt; then
    verdict=FAIL
    failed=$((failed + 1))
  fi
  echo "$verdict  ulimit -v $limit: exit $status $(head -c 200 err.txt)"
done
[[ $failed -eq 0 ]]
