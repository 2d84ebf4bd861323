#!/usr/bin/env bash
# Property: for every subcommand, an output path equal to any input path (a flag's file, the
# results store, a file an input names such as a search spec's platform), directly or through a
# symlink, is refused before any work: exit 1, one `strata: error:` line saying that an output
# never overwrites an input (the up-front check names both flags), and every file in the folder
# byte for byte as it was (the results store's checksum among them).
#
# `strata --file-flags` lists each subcommand's input and output flags; every subcommand with an
# output and an input must have a base invocation below and every output flag is tried against
# every input file of it, so a new flag or subcommand fails this test until it is covered.
#   outputs_never_inputs.sh STRATA_BINARY PLATFORMS_DIR
set -uo pipefail
strata=$(realpath "$1")
platforms=$(realpath "$2")
work=$(mktemp -d "${TMPDIR:-/tmp}/strata-outputs.XXXXXX")
trap 'rm -rf "$work"' EXIT
fixtures=$work/fixtures
mkdir -p "$fixtures"
cd "$fixtures" || exit 2
# The inputs. Their contents do not matter: the check compares paths (and inodes) before anything
# is read, but for the search spec, whose named files are read from it.
for f in p.json t.json s.json c.json plat.xml hosts.txt jobs.csv apps.json piper.json wf.json \
  data.json from.json; do
  echo "input $f" >"$f"
done
printf '%s' '{"model":{"name":"mlp"},"search":{"platform":"named.xml","accuracy":{"source":"curves","file":"curves.json"}}}' >srch.json
echo "named platform" >named.xml
echo "named curves" >curves.json
"$strata" simulate --platform "$platforms/test-flat-4.xml" --model mlp --db s.db >/dev/null 2>&1 || {
  # The store itself must be a real one: --db is opened only after the check, but a real store
  # is what users lose.
  echo "outputs_never_inputs.sh: cannot make a results store with $strata" >&2
  exit 2
}

# Base invocations: each input flag of the subcommand with a fixture, no output.
declare -A base
base[compare-solvers]='--spec s.json --platform plat.xml --calibration c.json'
base[explore]='--spec s.json --platform plat.xml --calibration c.json --db s.db'
base[hybrid]='--spec s.json --platform plat.xml --calibration c.json'
base[jobs]='--trace jobs.csv --platform plat.xml --applications apps.json'
base[partition]='--piper piper.json --stages 2'
base[plan]='--spec s.json --platform plat.xml'
base[report]='--db s.db'
base[run]='--spec s.json --plan p.json --platform plat.xml --db s.db'
base[schedule]='--spec s.json --platform plat.xml --calibration c.json --workflow wf.json'
base[search]='--spec srch.json --db s.db'
base[simulate]='--spec s.json --plan p.json --platform plat.xml --calibration c.json --placement hosts.txt --db s.db'
base[spec]='--spec s.json --from from.json'
base[trace-export]='t.json'
base[validate]='--spec s.json --plan p.json --platform plat.xml --calibration c.json --db s.db'
base[validate-published]='--data data.json'
# Files an input names, by subcommand.
declare -A named
named[search]='named.xml curves.json'

snapshot() {
  find . -mindepth 1 -printf '%p %y %s %T@ %l\n' | sort
  find . -type f -exec md5sum {} + | sort
}

passed=0
failed=0
# refused SUBCOMMAND ARGS...: strata SUBCOMMAND ARGS... in a copy of the fixtures must be refused
# by the up-front check, with nothing changed.
refused() {
  local dir=$work/case
  rm -rf "$dir" && cp -a "$fixtures" "$dir"
  local before after status problem=""
  before=$(cd "$dir" && snapshot)
  (cd "$dir" && exec "$strata" "$@" >"$work/out" 2>"$work/err" </dev/null)
  status=$?
  after=$(cd "$dir" && snapshot)
  [[ $status -eq 1 ]] || problem+="exit $status; "
  [[ $(wc -l <"$work/err") -eq 1 ]] || problem+="$(wc -l <"$work/err") lines on stderr; "
  grep -Eq '^strata: error: .*same file as (--|trace ).*\(an output never overwrites an input\)$' "$work/err" ||
    problem+="not the up-front refusal; "
  [[ $before == "$after" ]] || problem+="files changed; "
  if [[ -z $problem ]]; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAIL  strata $*: [$problem] $(head -c 300 "$work/err")"
  fi
}

listing=$("$strata" --file-flags) || {
  echo "outputs_never_inputs.sh: strata --file-flags failed" >&2
  exit 2
}
commands=$(python3 -c 'import json,sys; print(" ".join(sorted(json.loads(sys.stdin.read()))))' <<<"$listing")
for cmd in $commands; do
  outputs=$(python3 -c "import json,sys; print(' '.join(json.loads(sys.stdin.read())['$cmd']['outputs']))" <<<"$listing")
  inputs=$(python3 -c "import json,sys; print(' '.join(json.loads(sys.stdin.read())['$cmd']['inputs']))" <<<"$listing")
  [[ -n $outputs && -n $inputs ]] || continue
  if [[ -z ${base[$cmd]+x} ]]; then
    failed=$((failed + 1))
    echo "FAIL  strata $cmd: no base invocation in this test (inputs: $inputs; outputs: $outputs)"
    continue
  fi
  read -r -a args <<<"${base[$cmd]}"
  # Every input flag the subcommand has appears in its base invocation.
  for flag in $inputs; do
    [[ $flag == trace && $cmd == trace-export ]] && continue # the positional argument
    if [[ " ${base[$cmd]} " != *" $flag "* ]]; then
      failed=$((failed + 1))
      echo "FAIL  strata $cmd: input flag $flag missing from the base invocation"
    fi
  done
  files=()
  for a in "${args[@]}"; do [[ -f $fixtures/$a ]] && files+=("$a"); done
  # shellcheck disable=SC2206 # a list of names
  files+=(${named[$cmd]:-})
  for out in $outputs; do
    for f in "${files[@]}"; do
      refused "$cmd" "${args[@]}" "$out" "$f"
      ln -sf "$f" "$fixtures/link-$f"
      refused "$cmd" "${args[@]}" "$out" "link-$f"
      rm -f "$fixtures/link-$f"
    done
  done
done
# The store a command writes by default (strata.db in the current folder) is an input too.
for cmd in explore search validate; do
  read -r -a args <<<"${base[$cmd]//--db s.db/}"
  refused "$cmd" "${args[@]}" --json strata.db
done
# A companion output (a run log's <log>.experiment.json) is an output too.
cp "$fixtures/s.json" "$fixtures/l.csv.experiment.json"
refused run --spec l.csv.experiment.json --log l.csv

echo "$passed of $((passed + failed)) outputs pointed at an input refused before any work"
[[ $failed -eq 0 ]]
