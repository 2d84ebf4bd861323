#!/usr/bin/env bash
# Bad inputs, each answered as strata promises: exit status 1, exactly one line on stderr that
# starts with "strata: error:", and no file created or changed in the folder it runs in.
#
# Usage: tools/bad_inputs.sh [strata binary]   (default: build/cli/strata)
# Prints one line per case (PASS or FAIL, the arguments, strata's message) and a total; exits 1 if
# any case fails. CTest runs it (test bad_inputs, label cli).
#
# Adding a case: one line at the end,
#   bad "what is wrong" ARGS...                     runs `strata ARGS...` in a fresh scratch folder
#   SETUP='ln -s p.json a.json' bad "..." ARGS...   runs SETUP there first (before the snapshot)
#   LIMIT='ulimit -v 1000000' bad "..." ARGS...     runs strata under that limit
# The scratch folder is a copy of the fixtures made below: p.json (a Plan, mlp dp=2), t.json (its
# Trace), r.json (its report), s.json (an experiment spec); $PLATFORMS is the shipped platforms
# folder.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
STRATA=$(realpath "${1:-$ROOT/build/cli/strata}")
PLATFORMS=$ROOT/platforms
WORK=$(mktemp -d "${TMPDIR:-/tmp}/strata-bad-inputs.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

FIXTURES=$WORK/fixtures
mkdir -p "$FIXTURES"
(
  cd "$FIXTURES" &&
    "$STRATA" plan --model mlp --strategy dp=2 -o p.json >/dev/null &&
    "$STRATA" simulate --platform "$PLATFORMS/test-flat-4.xml" --plan p.json --trace t.json \
      --report r.json >/dev/null &&
    "$STRATA" spec --model mlp --workers 2 -o s.json >/dev/null
) || {
  echo "bad_inputs.sh: cannot make the fixtures with $STRATA" >&2
  exit 2
}

# Every entry of the current folder with its type, size, mtime, link target and checksum.
snapshot() {
  find . -mindepth 1 -printf '%p %y %s %T@ %l\n' | sort
  find . -type f -exec md5sum {} + | sort
  ls -l /dev/null /dev/full
}

passed=0
failed=0
n=0
bad() {
  local what=$1
  shift
  n=$((n + 1))
  local dir=$WORK/case-$n
  cp -a "$FIXTURES" "$dir"
  local verdict=PASS problem=""
  (cd "$dir" && eval "${SETUP:-true}") || { verdict=FAIL problem="setup failed; "; }
  local before after status
  before=$(cd "$dir" && snapshot)
  (cd "$dir" && eval "${LIMIT:-true}" && exec "$STRATA" "$@" >"$WORK/out" 2>"$WORK/err" </dev/null)
  status=$?
  after=$(cd "$dir" && snapshot)
  local lines message
  lines=$(wc -l <"$WORK/err")
  message=$(head -n 1 "$WORK/err")
  [[ $status -eq 1 ]] || problem+="exit $status; "
  [[ $lines -eq 1 ]] || problem+="$lines lines on stderr; "
  [[ $message == "strata: error: "* ]] || problem+="no 'strata: error:' prefix; "
  [[ $before == "$after" ]] || problem+="files changed: $(diff <(echo "$before") <(echo "$after") | grep '^[<>]' | head -n 3 | tr '\n' ' '); "
  [[ -z $problem ]] || verdict=FAIL
  if [[ $verdict == PASS ]]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
  printf '%s  %-44s strata %s\n      %s%s\n' "$verdict" "$what" "$*" "${problem:+[$problem] }" "$message"
  rm -rf "$dir"
}

FLAT4=$PLATFORMS/test-flat-4.xml

# ---- numbers in flags -------------------------------------------------------------------------
bad "negative count" plan --model mlp -o x.json --workers -2
bad "zero count" plan --model mlp -o x.json --workers 0
bad "trailing garbage in a count" plan --model mlp -o x.json --workers 5abc
bad "hexadecimal count" plan --model mlp -o x.json --workers 0x10
bad "exponent in a count" plan --model mlp -o x.json --workers 1e3
bad "count beyond 64 bits" plan --model mlp -o x.json --workers 99999999999999999999
bad "space before a count" plan --model mlp -o x.json --workers ' 5'
bad "empty count" plan --model mlp -o x.json --iterations ''
bad "zero microbatches" plan --model mlp -o x.json --microbatches 0
bad "negative global batch" plan --model mlp -o x.json --global-batch -8
bad "fractional iterations" plan --model mlp -o x.json --iterations 2.5
bad "seed that is no number" plan --model mlp -o x.json --seed abc
bad "--set number with garbage" plan --model mlp -o x.json --set bucket_mb=5abc
bad "NaN target accuracy" compare-solvers --platform "$FLAT4" --target nan
bad "infinite target accuracy" compare-solvers --platform "$FLAT4" --target 1e999
bad "target accuracy above 1" compare-solvers --platform "$FLAT4" --target 2
bad "negative rows" explore --rows -1
bad "negative top" explore --top -1
bad "zero SVG workers" trace-export t.json --svg x.svg --svg-workers 0
bad "zero measured runs" validate --plan p.json --runs 0

# ---- CLI11 parse errors -------------------------------------------------------------------------
bad "unknown flag" plan --model mlp -o x.json --bogus
bad "flag without its value" plan --model mlp -o
bad "required flag missing" plan --model mlp
bad "unknown subcommand" frobnicate
bad "no subcommand"

# ---- a Plan file beside the flags that build one --------------------------------------------------
bad "--plan with --workers" simulate --platform "$FLAT4" --plan p.json --workers 2
bad "--plan with --model" simulate --platform "$FLAT4" --plan p.json --model mlp
bad "--plan with --spec" simulate --platform "$FLAT4" --plan p.json --spec s.json
bad "--plan with --strategy (run)" run --plan p.json --strategy dp=2
bad "--plan with a model --set (validate)" validate --plan p.json --set layers=2

# ---- outputs ----------------------------------------------------------------------------------
bad "output is the input Plan" simulate --platform "$FLAT4" --plan p.json --trace p.json
SETUP='ln -s p.json alias.json' bad "output is a link to the input" \
  simulate --platform "$FLAT4" --plan p.json --report alias.json
bad "output is the input trace" trace-export t.json -o t.json
bad "output is the --from file" spec --from r.json -o r.json
bad "two outputs into one file" simulate --platform "$FLAT4" --plan p.json --trace o.json --perfetto ./o.json
bad "second output's folder missing" simulate --platform "$FLAT4" --plan p.json --trace o.json --perfetto nodir/f.json
SETUP='mkdir out' bad "output is a directory" plan --model mlp -o out
bad "explore output's folder missing" explore --top 1 --trace best.json --svg nodir/x.svg
bad "calibrate output's folder missing" calibrate -o nodir/c.json
bad "run log's folder missing" run --plan p.json --epochs 1 --log nodir/l.csv
bad "validate output's folder missing" validate --plan p.json --json nodir/v.json
bad "device that refuses the bytes" plan --model mlp -o /dev/full
# ---- the results store (docs/results.md) --------------------------------------------------------
bad "query of a missing store" query --db none.db
SETUP='"$STRATA" simulate --platform "$PLATFORMS/test-flat-4.xml" --plan p.json --db r.db >/dev/null' \
  bad "query ordered by an unknown column" query --db r.db --order-by speed
SETUP='"$STRATA" simulate --platform "$PLATFORMS/test-flat-4.xml" --plan p.json --db r.db >/dev/null' \
  bad "query that would write" query --db r.db --sql "delete from results"
SETUP='"$STRATA" simulate --platform "$PLATFORMS/test-flat-4.xml" --plan p.json --db r.db >/dev/null' \
  bad "diff of a key not stored" query --db r.db --diff a/b/step/0 a/b/step/1
bad "report of a missing store" report --db none.db -o r.html
SETUP='"$STRATA" simulate --platform "$PLATFORMS/test-flat-4.xml" --plan p.json --db r.db >/dev/null' \
  bad "report of no row" report --db r.db -o r.html --where "model = 'none'"
bad "report of a file that is no store" report --db p.json -o r.html
SETUP='"$STRATA" simulate --platform "$PLATFORMS/test-flat-4.xml" --plan p.json --db ro.db >/dev/null && chmod 444 ro.db' \
  bad "read-only store" simulate --platform "$FLAT4" --plan p.json --db ro.db
bad "store that is no store" simulate --platform "$FLAT4" --plan p.json --db p.json
bad "store that is a folder" explore --top 0 --db .
bad "store in a missing folder" simulate --platform "$FLAT4" --plan p.json --db nodir/r.db
bad "negative lock wait" explore --top 0 --db-wait -1
bad "work fails after the check" simulate --platform "$FLAT4" --model mlp --strategy dp=8 --trace o.json

# ---- platforms (checked before SimGrid sees them) --------------------------------------------------
# A copy of test-flat-4.xml with one edit: `platform_bad NAME SED-EXPRESSION`.
platform_bad() {
  local what=$1 expr=$2
  shift 2
  SETUP="sed '$expr' '$FLAT4' > f.xml" bad "$what" simulate --platform f.xml --model mlp --report o.json "$@"
}
platform_bad "zero bandwidth" 's/bw="100GBps"/bw="0Bps"/'
platform_bad "NaN bandwidth" 's/bw="100GBps"/bw="nanGBps"/'
platform_bad "negative bandwidth" 's/bw="100GBps"/bw="-100GBps"/'
platform_bad "bandwidth without a unit SimGrid knows" 's/bw="100GBps"/bw="10GB\/s"/'
platform_bad "negative latency" 's/lat="1us"/lat="-1us"/'
platform_bad "NaN latency" 's/lat="1us"/lat="nanus"/'
platform_bad "zero cores" 's/core="1"/core="0"/'
platform_bad "trailing garbage in cores" 's/core="1"/core="1abc"/'
platform_bad "speed overflowing double" 's/"flops_fp32" value="19.5e12"/"flops_fp32" value="1e308Pf"/'
platform_bad "denormal memory bandwidth" 's/"mem_bw" value="2.039e12"/"mem_bw" value="1e-320"/'
platform_bad "misspelled flops_bf16" 's/"flops_bf16"/"flops_bf61"/'
platform_bad "misspelled flops_fp16" 's/"flops_fp16"/"flops_fp61"/'
platform_bad "misspelled gpu_memory" 's/"gpu_memory"/"gpu_memroy"/'
platform_bad "unknown fabric" 's/"fabric_inter" value="ideal"/"fabric_inter" value="ib-xdr"/'
platform_bad "bus-bandwidth sizes not increasing" 's/<prop id="fabric_inter" value="ideal"\/>/<prop id="busbw_allreduce_inter" value="64MiB:90GBps 1MiB:20GBps"\/>/'
platform_bad "bus bandwidth above the link's" 's/<prop id="fabric_inter" value="ideal"\/>/<prop id="busbw_allreduce_inter" value="1MiB:20GBps 64MiB:150GBps"\/>/'
platform_bad "10^8 hosts" 's/radical="0-3"/radical="0-99999999"/'
platform_bad "non-UTF-8 host names" 's/prefix="node-"/prefix="n\xe9ud-"/'
platform_bad "not XML at all" '1,$c\this is not a platform'
platform_bad "a <config> element" 's/<platform version="4.1">/&<config><prop id="network\/model" value="CM02"\/><\/config>/'
SETUP='mkdir d' bad "a directory as platform" simulate --platform d --model mlp
bad "missing platform file" simulate --platform nowhere.xml --model mlp
bad "unknown network model" simulate --platform "$FLAT4" --model mlp --network-model Bogus
bad "empty network model" simulate --platform "$FLAT4" --model mlp --network-model ''
bad "unknown comm-stream rule" simulate --platform "$FLAT4" --model mlp --comm-streams bogus

# ---- memory options (checked against the model) --------------------------------------------------
bad "a ZeRO stage outside 0-3" simulate --platform "$FLAT4" --model mlp --set zero=4 --report o.json
bad "interleaving that does not divide the blocks" simulate --platform "$FLAT4" --model gpt2-small \
  --strategy pp=2 --set interleave=5 --report o.json
bad "recomputation granularity above a stage's blocks" simulate --platform "$FLAT4" --model gpt2-small \
  --strategy pp=2 --set recompute=full --set recompute_blocks=13 --report o.json

# ---- Plans ----------------------------------------------------------------------------------------
# A pipeline Plan (mlp pp=2, sends and receives) with one edit: `plan_bad NAME SED-EXPRESSION`.
plan_bad() {
  local what=$1 expr=$2
  SETUP="\"\$STRATA\" plan --model mlp --strategy pp=2 -o pp.json >/dev/null && sed '$expr' pp.json > bad.json" \
    bad "$what" simulate --platform "$FLAT4" --plan bad.json --report o.json
}
plan_bad "a receive with no send" '/"kind":"recv"/s/"data_deps":\[[^]]*\]/"data_deps":[]/'
plan_bad "a send of 10^30 bytes" '0,/"kind":"send"/s/"comm_bytes":16384.0/"comm_bytes":1e30/'
plan_bad "a receive of another size" '0,/"kind":"recv"/s/"comm_bytes":0.0/"comm_bytes":12345/'
plan_bad "FLOPs of 10^30" '0,/"flops":[0-9.e+]*/s/"flops":[0-9.e+]*/"flops":1e30/'
plan_bad "a number beyond double" '0,/"flops":[0-9.e+]*/s/"flops":[0-9.e+]*/"flops":1e999/'
plan_bad "NaN FLOPs" '0,/"flops":[0-9.e+]*/s/"flops":[0-9.e+]*/"flops":NaN/'
plan_bad "truncated Plan" '$d'
bad "/dev/zero as a Plan" simulate --platform "$FLAT4" --plan /dev/zero
bad "a Plan that is an array" simulate --platform "$FLAT4" --plan <(echo '[]')
bad "missing Plan file" simulate --platform "$FLAT4" --plan nothing.json

# ---- specs and --set --------------------------------------------------------------------------------
bad "spec with a string for dp" simulate --platform "$FLAT4" --spec <(echo '{"schema_version":1,"model":{"name":"mlp"},"strategy":{"dp":"2"}}')
bad "spec from a newer strata" simulate --platform "$FLAT4" --spec <(echo '{"schema_version":99,"model":{"name":"mlp"}}')
bad "spec with a batch beyond double" simulate --platform "$FLAT4" --spec <(echo '{"schema_version":1,"model":{"name":"mlp"},"global_batch":1e400}')
bad "--set value with trailing garbage" plan --model mlp -o x.json --set bucket_mb=5abc
bad "--set key unknown to the model" plan --model mlp -o x.json --set layers=2
bad "--strategy with a zero" plan --model mlp -o x.json --strategy dp=0
bad "unknown model" plan --model nosuch -o x.json
bad "ZeRO with one worker" plan --model mlp -o x.json --set zero=1
bad "compression with one worker" plan --model mlp -o x.json --set compression=int8
bad "compression on a gradient-free solver" plan --model mlp -o x.json --solver pdadmm --workers 2 --set compression=topk
bad "unknown codec" plan --model mlp -o x.json --strategy dp=2 --set compression=qsgd
bad "top-k ratio of zero" plan --model mlp -o x.json --strategy dp=2 --set compression=topk --set topk_ratio=0
bad "top-k ratio above one" plan --model mlp -o x.json --strategy dp=2 --set compression=topk --set topk_ratio=1.5
bad "PowerSGD rank above min(m, n)" plan --model mlp -o x.json --strategy dp=2 --set compression=powersgd --set powersgd_rank=11

# ---- memory ---------------------------------------------------------------------------------------
LIMIT='ulimit -v 1000000' bad "a Plan too large for the address space" \
  plan --model mlp --strategy dp=2 --iterations 300000 -o x.json

# ---- scheduling -----------------------------------------------------------------------------------
HETERO=$PLATFORMS/test-hetero-8.xml
printf 'node-1\nnode-3\n' > "$FIXTURES/hosts.txt"
bad "a policy beside --placement" simulate --platform "$HETERO" --model mlp --strategy dp=2 --schedule-policy heft --placement hosts.txt
bad "an unknown placement policy" simulate --platform "$HETERO" --model mlp --strategy dp=2 --schedule-policy fastest
bad "a policy without a platform" plan --model mlp --strategy dp=2 --schedule-policy heft -o x.json
bad "a balanced cut without a platform" plan --model gpt2-small --strategy pp=6 --partition balanced -o x.json
bad "an unknown partition" plan --model gpt2-small --strategy pp=6 --partition greedy -o x.json
bad "stage blocks not summing to the model's" plan --model gpt2-small --strategy pp=6 --set stage_blocks=2,2,2,2,2,3 -o x.json
bad "stage_tp not dividing the heads" plan --model gpt2-small --strategy pp=2 --set stage_tp=5,1 -o x.json
bad "stage_tp beside tp" plan --model gpt2-small --strategy tp=2,pp=2 --set stage_tp=2,2 -o x.json
bad "a workflow file missing" schedule --platform "$HETERO" --workflow nofile.xml
sed 's/value="0.0000166667"/value="-1"/' "$PLATFORMS/hybrid-serverless.xml" > "$FIXTURES/negative-price.xml"
bad "a negative function price" simulate --platform negative-price.xml --model mlp
sed 's/"function_mb_per_vcpu"/"function_mb_per_cpu"/' "$PLATFORMS/hybrid-serverless.xml" > "$FIXTURES/near-miss.xml"
bad "a misspelt function property" simulate --platform near-miss.xml --model mlp
bad "a deadline no plan meets" hybrid --model mlp --deadline 1s
bad "a budget below the cheapest plan" hybrid --model mlp --budget 0.00001usd
bad "a function memory size not offered" hybrid --model mlp --memory 100
bad "a deadline and a budget together" hybrid --model mlp --deadline 10min --budget 1usd
bad "an unknown policy to compare" schedule --platform "$HETERO" --model mlp --policies heft,fastest
SERVERLESS=$PLATFORMS/hybrid-serverless.xml
bad "a store exchange on a platform with no store" simulate --platform "$HETERO" --model mlp --strategy dp=2 --set dp_algo=storage_allreduce
bad "a store exchange of tensor parallelism" simulate --platform "$SERVERLESS" --model gpt2-small --strategy tp=2 --set tp_algo=storage_allreduce
bad "a store exchange with ZeRO" simulate --platform "$SERVERLESS" --model mlp --strategy dp=2 --set zero=1 --set dp_algo=storage_scatter_reduce
bad "functions of a size not offered" simulate --platform "$SERVERLESS" --model mlp --strategy dp=2 --function-memory 20000
bad "functions on a platform with no pool" simulate --platform "$HETERO" --model mlp --strategy dp=2 --function-memory 1769
bad "functions beside a list scheduler" simulate --platform "$SERVERLESS" --model mlp --strategy dp=2 --function-memory 1769 --schedule-policy heft
bad "functions without a platform" plan --model mlp --strategy dp=2 --function-memory 1769 -o x.json

# ---- validate-published ---------------------------------------------------------------------------
bad "published runs file missing" validate-published --data nofile.json
bad "published runs file that is a Plan" validate-published --data p.json
bad "negative --max-error" validate-published --max-error -1
bad "validate-published output's folder missing" validate-published --csv nodir/v.csv
bad "a Piper graph with fewer nodes than stages" partition --piper "$ROOT/tests/data/piper/four_nodes.json" --stages 9
bad "a cache exchange on a platform without a cache" simulate --platform "$PLATFORMS/test-flat-4.xml" --model mlp --strategy dp=2 --set dp_algo=cache_allreduce

# ---- the results store and every file an input names are inputs too ------------------------------
STORE='"$STRATA" simulate --platform "$PLATFORMS/test-flat-4.xml" --plan p.json --db s.db >/dev/null'
SETUP="$STORE" bad "report over its own store" report --db s.db -o s.db
SETUP="$STORE && ln -s s.db link.db" bad "report over a link to its store" report --db s.db -o link.db
SETUP="$STORE" bad "simulate's trace over its store" simulate --platform "$FLAT4" --plan p.json --db s.db --trace s.db
SETUP="$STORE && ln -s s.db link.db" bad "simulate's report over a link to its store" \
  simulate --platform "$FLAT4" --plan p.json --db s.db --report link.db
bad "explore's CSV over the default store" explore --platform "$FLAT4" --model mlp --workers 4 --csv strata.db
SETUP='cp "$PLATFORMS/test-flat-4.xml" plat.xml && printf "%s" "{\"format\":\"strata-experiment\",\"schema_version\":1,\"model\":{\"name\":\"mlp\"},\"global_batch\":64,\"search\":{\"platform\":\"plat.xml\",\"cluster_gpus\":2,\"policy\":\"random\",\"max_epochs\":2,\"trials\":2,\"space\":{\"lr\":{\"log_uniform\":[0.001,0.1]}}}}" > srch.json' \
  bad "search's CSV over the platform its spec names" search --spec srch.json --timing closed-form --no-db --csv plat.xml
SETUP='cp -r "$ROOT/examples/curves" curves && sed "s#platforms/a100-node-8.xml#$PLATFORMS/a100-node-8.xml#" "$ROOT/examples/search-curves.json" > sc.json' \
  bad "search's JSON over the curve file its spec names" search --spec sc.json --no-db --json curves/fashion-mnist-mlp.json

# ---- nonsense that used to be accepted -------------------------------------------------------------
SETUP='mkdir hosts' bad "a folder as --placement" simulate --platform "$HETERO" --model mlp --strategy dp=2 --placement hosts
SETUP=': > empty.txt' bad "an empty placement file" simulate --platform "$HETERO" --model mlp --strategy dp=2 --placement empty.txt
plan_bad "a Plan with no tasks" '/"tasks":\[/,$c\"tasks":[]}'
platform_bad "zero memory bandwidth" 's/"mem_bw" value="2.039e12"/"mem_bw" value="0"/'
platform_bad "zero BF16 FLOP/s" 's/"flops_bf16" value="312e12"/"flops_bf16" value="0"/'
platform_bad "zero GPU memory" 's/"gpu_memory" value="80e9"/"gpu_memory" value="0"/'
SETUP='ln -s loop.xml loop.xml' bad "a symlink loop as platform" simulate --platform loop.xml --model mlp
bad "a newline in --model" plan --model $'mlp\nx' -o x.json
bad "compare-solvers on more workers than the platform holds" compare-solvers --platform "$FLAT4" --workers 100000
bad "explore with an astronomical global batch" explore --platform "$FLAT4" --model mlp --workers 4 --global-batch 1000000000000000 --no-db
bad "explore with no valid configuration" explore --platform "$FLAT4" --model mlp --workers 4 --global-batch 3 --no-db --csv e.csv
LIMIT='ulimit -v 500000' bad "a real run under a 500 MB address space" run --plan p.json --epochs 1
bad "a billion microbatches" simulate --platform "$FLAT4" --model mlp --strategy dp=2 --microbatches 1000000000 --report o.json

# ---- job streams (strata jobs): times within the stated ranges, the engine always ends -------------
SETUP='printf "id,arrival_s,gpus,service_s\nA,1e17,1,10\n" > j.csv' bad "a job arriving at 1e17 s" jobs --trace j.csv
SETUP='printf "id,arrival_s,gpus,service_s\nA,-1,1,10\n" > j.csv' bad "a job arriving before 0 s" jobs --trace j.csv
SETUP='printf "id,arrival_s,gpus,service_s\nA,0,1,1e308\n" > j.csv' bad "a service of 1e308 s" jobs --trace j.csv
SETUP='printf "id,arrival_s,gpus,service_s\nA,0,1,1e-9\n" > j.csv' bad "a service of 1e-9 s" jobs --trace j.csv
SETUP='printf "id,arrival_s,gpus,service_s\nA,0,1,10\n" > j.csv' bad "a themis lease of 1e-9 s" jobs --trace j.csv --policy themis --lease 1e-9
SETUP='printf "id,arrival_s,gpus,service_s\nA,0,1,1e12\n" > j.csv' bad "a themis lease that would end 1e15 times" jobs --trace j.csv --policy themis --lease 0.001
SETUP='printf "id,arrival_s,gpus,service_s\nA,0,1,10\n" > j.csv' bad "a LAS threshold of 1e25 GPU-s" jobs --trace j.csv --policy las --las-thresholds 1e25
SETUP='printf "id,arrival_s,gpus,service_s\nA,0,1,10\n" > j.csv' bad "17 LAS thresholds" jobs --trace j.csv --policy las --las-thresholds 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17
SETUP='printf "id,arrival_s,gpus,service_s\nA,0,1,10\n" > j.csv' bad "rounds of 1e13 s" jobs --trace j.csv --interval 1e13
SETUP='printf "id,arrival_s,gpus,service_s\nA,0,1,10\n" > j.csv' bad "restarts of 1e13 s" jobs --trace j.csv --interval 60 --restart 1e13
SETUP='mkdir j.csv' bad "a folder as the job trace" jobs --trace j.csv
bad "an unknown framework preset" simulate --platform "$PLATFORMS/test-flat-4.xml" --model gpt2-small --set framework=megatron-2020
bad "an unknown tensor-parallel mode" simulate --platform "$PLATFORMS/test-flat-4.xml" --model gpt2-small --set tp_comm=overlapped
bad "an unknown p2p mode" simulate --platform "$PLATFORMS/test-flat-4.xml" --model gpt2-small --set p2p=nonblocking
bad "scatter-gather of 2" simulate --platform "$PLATFORMS/test-flat-4.xml" --model gpt2-small --set p2p_scatter_gather=2
SETUP='sed "s/\"stream_order\":\"issue\"/\"stream_order\":\"program\"/" p.json > q.json' bad "an unknown stream order in a Plan" simulate --platform "$PLATFORMS/test-flat-4.xml" --plan q.json

echo "$passed of $n bad inputs answered as promised, $failed failed"
[[ $failed -eq 0 ]]
