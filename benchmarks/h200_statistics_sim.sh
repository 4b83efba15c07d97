#!/usr/bin/env bash
# Issue 36: the decision procedure's simulator (benchmarks/statistics_sim.py) over several seeds on the device
# machine's 16 cores (no GPU is used: only its cores). Resumable: a seed whose JSON is in $OUT is skipped.
#   benchmarks/h200_statistics_sim.sh SEEDS [EXTRA]   SEEDS e.g. "1 2"; EXTRA "noguard" runs the A/A rows of
#                                                     the correlated models without the guard
# Results: $OUT/statistics/sim-seed<N>.json (and sim-noguard-seed<N>.json); docs/benchmarks/statistics.md.
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT/statistics"
JOBS=$(nproc)
for seed in $1; do
  f="$OUT/statistics/sim-seed$seed.json"
  [ -s "$f" ] || python3 benchmarks/statistics_sim.py --tunes 4000 --power-tunes 1000 --gains 0.005,0.01,0.02,0.05 \
    --jobs "$JOBS" --seed "$seed" --json "$f" > "$OUT/statistics/sim-seed$seed.txt" 2>&1
done
if [ "${2:-}" = noguard ]; then
  f="$OUT/statistics/sim-noguard-seed1.json"
  [ -s "$f" ] || python3 benchmarks/statistics_sim.py --tunes 4000 --power-tunes 1000 --gains 0.01 --no-guard \
    --models gaussian,ar1-build-0.2,ar1-build-0.5 --jobs "$JOBS" --seed 1 --json "$f" > "${f%.json}.txt" 2>&1
fi
ls -l "$OUT/statistics"
