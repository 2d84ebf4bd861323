#!/usr/bin/env bash
# ResNet-20 on Fashion-MNIST padded to 32x32 (label `slow`, about 40 minutes on 2 cores): backprop
# on one worker, and the serial-parallel hybrid on two with a serial warm-up epoch
# (--set warmup_epochs=1), 2 epochs each with Adam. Backprop must reach 90 % test accuracy and the
# hybrid come within 1.5 points of it; both figures and their training seconds are printed
# (docs/solvers.md, "The serial-parallel hybrid").
#   resnet20_hybrid_accuracy.sh STRATA_BINARY
set -euo pipefail
strata="$1"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
cd "$dir"
"$strata" run --model resnet20 --workers 1 --epochs 2 --optimizer adam > backprop.txt
"$strata" run --model resnet20 --solver serial-parallel --workers 2 --epochs 2 --optimizer adam \
  --set warmup_epochs=1 > hybrid.txt
grep '^epoch' backprop.txt hybrid.txt
# The last line: "test accuracy NN.NN % after 2 epoch(s), S s training".
read -r bp bp_s < <(tail -n 1 backprop.txt | awk '{print $3, $8}')
read -r hy hy_s < <(tail -n 1 hybrid.txt | awk '{print $3, $8}')
echo "backprop, 1 worker: ${bp} % after 2 epochs, ${bp_s} s training"
echo "hybrid, 2 workers (warm-up epoch + hybrid epoch): ${hy} % after 2 epochs, ${hy_s} s training"
awk -v bp="$bp" -v hy="$hy" -v bs="$bp_s" -v hs="$hy_s" 'BEGIN {
  printf "gap %.2f points (at most 1.50), training time ratio %.2fx\n", bp - hy, bs / hs
  if (bp < 90) { print "backprop below 90 %"; exit 1 }
  if (bp - hy > 1.5) { print "the hybrid is more than 1.5 points behind backprop"; exit 1 }
}'
echo "ok"
