#!/usr/bin/env bash
# tools/admm_scaling.sh — the predicted pdADMM scaling of docs/solvers.md: a 33-layer MLP (784,
# 31 x 256, 10), N = 10,000 samples, fp32, 2 sweeps per Plan, on 1-32 workers of two shipped
# clusters. Prints the Markdown table and writes the plot of speedup against workers
# (docs/img/pdadmm-scaling.svg: one line per cluster, and the ideal speedup W).
#
#   tools/admm_scaling.sh [BUILD_DIR]     (default build)
set -euo pipefail
cd "$(dirname "$0")/.."
STRATA="${1:-build}/cli/strata"
SIZES="784$(printf ',256%.0s' $(seq 31)),10"
CLUSTERS=(a100-cluster-64 h100-cluster-1024)
WORKERS=(1 2 4 8 16 32)
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

for c in "${CLUSTERS[@]}"; do
  for w in "${WORKERS[@]}"; do
    # "iteration time      7.384 ms (mean of 2 iterations)" -> seconds
    "$STRATA" simulate --model mlp --set sizes="$SIZES" --solver pdadmm --workers "$w" --set admm_iterations=2 \
      --global-batch 10000 --platform "platforms/$c.xml" |
      awk -v c="$c" -v w="$w" '/^iteration time/ { v = $3; u = $4; s = (u == "ms") ? v / 1e3 : (u == "µs") ? v / 1e6 : (u == "s") ? v : v / 1e9;
                                                      printf "%s %s %.9g %s %s\n", c, w, s, v, u }' >>"$OUT/times"
  done
done

echo "| workers | ${CLUSTERS[0]}: time per iteration | speedup | ${CLUSTERS[1]}: time per iteration | speedup |"
echo "|---|---|---|---|---|"
awk -v a="${CLUSTERS[0]}" -v b="${CLUSTERS[1]}" '
  { t[$1, $2] = $3; shown[$1, $2] = $4 " " $5; if ($2 == 1) base[$1] = $3; ws[$2] = 1 }
  END { n = split("1 2 4 8 16 32", w, " ");
        for (i = 1; i <= n; ++i) printf "| %s | %s | %.2f | %s | %.2f |\n", w[i], shown[a, w[i]], base[a] / t[a, w[i]],
                                        shown[b, w[i]], base[b] / t[b, w[i]] }' "$OUT/times"

# The plot: speedup against workers, log2 x axis from 1 to 32, linear y from 0 to 32.
awk -v a="${CLUSTERS[0]}" -v b="${CLUSTERS[1]}" '
  function x(w) { return 70 + 460 * log(w) / log(32) }
  function y(s) { return 330 - 290 * s / 32 }
  { t[$1, $2] = $3; if ($2 == 1) base[$1] = $3 }
  END {
    print "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"720\" height=\"380\" font-family=\"sans-serif\" font-size=\"12\">"
    print "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>"
    print "<text x=\"70\" y=\"22\" font-size=\"14\">pdADMM, 33-layer MLP, N = 10,000: predicted speedup per iteration</text>"
    print "<rect x=\"70\" y=\"40\" width=\"460\" height=\"290\" fill=\"none\" stroke=\"#444\"/>"
    n = split("1 2 4 8 16 32", w, " ")
    for (i = 1; i <= n; ++i) printf "<text x=\"%.1f\" y=\"348\" text-anchor=\"middle\">%s</text>\n", x(w[i]), w[i]
    for (s = 0; s <= 32; s += 8) printf "<text x=\"64\" y=\"%.1f\" text-anchor=\"end\">%d</text><line x1=\"70\" x2=\"530\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#eee\"/>\n", y(s) + 4, s, y(s), y(s)
    print "<text x=\"300\" y=\"370\" text-anchor=\"middle\">workers</text>"
    print "<text x=\"20\" y=\"185\" transform=\"rotate(-90 20 185)\" text-anchor=\"middle\">speedup over 1 worker (x)</text>"
    printf "<polyline fill=\"none\" stroke=\"#999\" stroke-dasharray=\"4 3\" points=\""; for (i = 1; i <= n; ++i) printf "%.1f,%.1f ", x(w[i]), y(w[i]); print "\"/>"
    split(a " " b, names, " "); split("#1f77b4 #d62728", colours, " ")
    for (c = 1; c <= 2; ++c) {
      printf "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", colours[c]
      for (i = 1; i <= n; ++i) printf "%.1f,%.1f ", x(w[i]), y(base[names[c]] / t[names[c], w[i]])
      print "\"/>"
      printf "<text x=\"545\" y=\"%d\" fill=\"%s\">%s</text>\n", 60 + 18 * c, colours[c], names[c]
    }
    print "<text x=\"545\" y=\"60\" fill=\"#999\">ideal (W)</text>"
    print "</svg>"
  }' "$OUT/times" >docs/img/pdadmm-scaling.svg.tmp
mv docs/img/pdadmm-scaling.svg.tmp docs/img/pdadmm-scaling.svg
echo "plot -> docs/img/pdadmm-scaling.svg" >&2
