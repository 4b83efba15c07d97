#!/usr/bin/env bash
# Issues 36/37: the decision procedure's simulator (benchmarks/evaluation/statistics_sim.py) over several seeds on the
# device machine's 16 cores (no GPU is used: only its cores). Resumable: a result whose JSON is in $OUT is skipped.
#   benchmarks/device/h200_statistics_sim.sh SEEDS [EXTRA...]   SEEDS e.g. "1 2"; EXTRA:
#     short     the same seeds in the shape where the rounds' correlation is estimated from least: one finalist
#               on one workload, a box that holds 6 validation rounds (--finalists 1 --workloads 1 --cut 6),
#               and that shape at 30% noise with a 3x and a 20x gain (the CI failure of issue 37's session)
#     noguard   the A/A rows of the correlated models without the guard (seed 1)
# Results: $OUT/statistics/sim-seed<N>.json, sim-short-seed<N>.json, sim-short-noisy-seed<N>.json,
# sim-noguard-seed1.json; docs/benchmarks/statistics.md.
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT/statistics"
JOBS=$(nproc)
SEEDS=$1; shift
sim() {  # sim FILE ARGS...: one run, skipped when its JSON is there
  local f=$1; shift
  [ -s "$f" ] || python3 benchmarks/evaluation/statistics_sim.py --jobs "$JOBS" --json "$f" "$@" > "${f%.json}.txt" 2>&1
}
for extra in "$@"; do
  for seed in $SEEDS; do
    case "$extra" in
      short)
        sim "$OUT/statistics/sim-short-seed$seed.json" --tunes 4000 --power-tunes 1000 --gains 0.01,0.02,0.05 \
          --finalists 1 --workloads 1 --cut 6 --seed "$seed"
        sim "$OUT/statistics/sim-short-noisy-seed$seed.json" --tunes 1000 --power-tunes 1000 --gains 2,19 --sigma 0.3 \
          --models gaussian,ar1-build-0.5 --finalists 1 --workloads 1 --cut 6 --seed "$seed" ;;
      noguard)
        [ "$seed" = 1 ] && sim "$OUT/statistics/sim-noguard-seed1.json" --tunes 4000 --power-tunes 1000 --gains 0.01 \
          --no-guard --models gaussian,ar1-build-0.2,ar1-build-0.5 --seed 1 ;;
    esac
  done
done
for seed in ${DEFAULT_SEEDS-$SEEDS}; do  # DEFAULT_SEEDS="" skips the default shape
  sim "$OUT/statistics/sim-seed$seed.json" --tunes 4000 --power-tunes 1000 --gains 0.005,0.01,0.02,0.05 --seed "$seed"
done
ls -l "$OUT/statistics"
