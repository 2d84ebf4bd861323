#!/usr/bin/env bash
# tools/validation.sh — the table of docs/validation.md: calibrate this machine, then validate
# {MLP, LeNet-5} × {1 worker, dp=2, pp=2 GPipe, pp=2 1F1B} × {threads, MPI} and print one
# Markdown row per cell (predicted and measured iteration time, their error, and the median and
# p90 |error| of compute-task durations).
#
#   tools/validation.sh [BUILD_DIR] [cpu|cuda]   (default build, cpu; MPI cells need a build with
#                                               OpenMPI; cuda: the GPU executor on GPU 0, every
#                                               worker a pair of streams, threads transport only)
#
# Run it on a quiet machine: other work on the cores shows up as measurement noise.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${1:-build}
DEVICE=${2:-cpu}
STRATA="$BUILD_DIR/cli/strata"
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

transports=(threads)
if [ "$DEVICE" = cpu ] && "$STRATA" run --help 2>/dev/null | grep -q "mpi" && command -v mpirun >/dev/null; then transports+=(mpi); fi
MPIRUN=(mpirun --oversubscribe -np)
[ "$(id -u)" -eq 0 ] && MPIRUN=(mpirun --oversubscribe --allow-run-as-root -np)

"$STRATA" calibrate -o "$OUT/calib.json" --transport "$(IFS=,; echo "${transports[*]}")" --device "$DEVICE" >&2

echo "| model | strategy | transport | predicted iteration | measured iteration (median, p10–p90) | error | compute tasks: median \|error\| | p90 \|error\| |"
echo "|---|---|---|---|---|---|---|---|"
for model in mlp lenet5; do
  for cell in "dp=1:" "dp=2:" "pp=2:--schedule gpipe" "pp=2:--schedule 1f1b"; do
    strategy=${cell%%:*}
    extra=${cell#*:}
    for transport in "${transports[@]}"; do
      workers=1
      [ "$strategy" != "dp=1" ] && workers=2
      cmd=("$STRATA" validate --model "$model" --strategy "$strategy" $extra --transport "$transport" --device "$DEVICE"
           --calibration "$OUT/calib.json" --json "$OUT/cell.json" --perfetto "" --svg "")
      if [ "$transport" = mpi ]; then cmd=("${MPIRUN[@]}" "$workers" "${cmd[@]}"); fi
      "${cmd[@]}" >"$OUT/cell.txt" 2>&1 || { echo "| $model | $strategy $extra | $transport | failed: $(tail -1 "$OUT/cell.txt") |"; continue; }
      awk -v m="$model" -v s="$strategy ${extra#--schedule }" -v t="$([ "$DEVICE" = cuda ] && echo "GPU streams" || echo "$transport")" '
        /^iteration time:/ { pred = $4 " " $5; meas = $7 " " $8; p10 = $11 " " $12; p90 = $14 " " $15;
                             err = $(NF-1) " " $NF; sub(/,$/, "", pred); sub(/,$/, "", p90); sub(/\)/, "", p90);
                             sub(/,$/, "", p10); sub(/:$/, "", p90) }
        /^compute tasks:/  { med = $5 " " $6; p = $8 " " $9; sub(/,$/, "", med) }
        END { printf "| %s | %s | %s | %s | %s (%s – %s) | %s | %s | %s |\n", m, s, t, pred, meas, p10, p90, err, med, p }
      ' "$OUT/cell.txt"
    done
  done
done
