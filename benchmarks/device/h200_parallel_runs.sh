#!/usr/bin/env bash
# Why two GPUs do not halve a tune of the stencil example: the wall time of one benchmark process run alone
# vs. two at once (one per GPU), without any tune or build around them. Writes $OUT/parallel-runs.txt.
# Usage (repository root, the 2-GPU device machine): bash benchmarks/device/h200_parallel_runs.sh [runs]
set -u -o pipefail
N=${1:-30}
OUT=${OUT:-/tmp/compileiq-out}; mkdir -p "$OUT"
work=/tmp/parallel-runs
rm -rf "$work"; cp -r examples/cuda_stencil "$work"
cmake -S "$work" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release > /dev/null && cmake --build "$work/build" -j 16 > /dev/null || exit 1
exe=$work/build/stencil
series() {  # $1 GPU, $2 label, $3 n argument: N runs, one wall time (s) per line
  for _ in $(seq "$N"); do
    s=$(date +%s.%N); CUDA_VISIBLE_DEVICES=$1 "$exe" --n "$3" > /dev/null; e=$(date +%s.%N)
    echo "$2 gpu$1 n$3 $(python3 -c "print(round($e-$s,4))")"
  done
}
{
  nvidia-smi --query-gpu=index,persistence_mode,clocks.sm --format=csv
  for n in 2048 4096; do
    series 0 alone "$n"
    series 0 pair "$n" > /tmp/pair0 & series 1 pair "$n" > /tmp/pair1; wait; cat /tmp/pair0 /tmp/pair1
  done
  CUDA_VISIBLE_DEVICES=0 "$exe" --n 4096 | tail -3
} > "$OUT/parallel-runs.txt" 2>&1
python3 - "$OUT/parallel-runs.txt" <<'PY'
import collections, statistics, sys
d = collections.defaultdict(list)
for line in open(sys.argv[1]):
    p = line.split()
    if len(p) == 4 and p[0] in ("alone", "pair"):
        d[(p[0], p[1], p[2])].append(float(p[3]))
for k, v in sorted(d.items()):
    print(*k, "median %.3f s  min %.3f  max %.3f  (%d runs)" % (statistics.median(v), min(v), max(v), len(v)))
PY
