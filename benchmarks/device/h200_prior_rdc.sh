#!/usr/bin/env bash
# Issue 23/24 evidence on the GPU machine, one device call:
# 1. suite16's relocatable mc_rdc tuned twice from scratch with the same budget and seed: with the shipped prior
#    (trained with mc_rdc's landscape: its first trials are its predicted best) and with --no-prior (today's
#    default order); each in a build tree of its own, no local learning.
# 2. `check --remeasure` of the suite's TOML (docs/benchmarks/raw/suite-h200-400/compileiq.toml) in a fresh
#    release build of suite16: every entry re-measured against the plain build.
# Usage (repository root, wheels in .whl/): bash benchmarks/device/h200_prior_rdc.sh   -> $OUT/{prior,noprior}.{json,log},
# $OUT/check.json, $OUT/check.log
set -u -o pipefail
OUTDIR=${OUT:-/tmp/compileiq-out}; mkdir -p "$OUTDIR"
REPO=$(pwd)
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null && export PYTHONPATH=/tmp/site || exit 1
  python3 -m pip install -q --no-index --no-deps --no-build-isolation . || exit 1
fi
work=/tmp/prd; rm -rf "$work"; mkdir -p "$work"; cp -r benchmarks/projects/suite16 "$work/src"
export COMPILEIQ_NO_LEARN=1
for v in prior noprior; do
  cmake -S "$work/src" -B "$work/b-$v" -G Ninja -DCMAKE_BUILD_TYPE=Release > "$work/configure-$v.log" 2>&1 || exit 1
  cmake --build "$work/b-$v" --target mc_rdc -j 16 > /dev/null 2>&1 || exit 1
  extra=(); [ "$v" = noprior ] && extra=(--no-prior)
  t0=$(date +%s.%N)
  (cd /tmp && COMPILEIQ_CACHE_DIR=/tmp/prd-cache-$v timeout 170 python3 -m compileiq_cmake tune -S "$work/src" -B "$work/b-$v" \
     --target mc_rdc --bench mc_rdc --metric 'time_ms=([0-9.eE+-]+)' --pass-regex PASS --budget 10 --seed 3 \
     --workers 8 --time-limit 150 --output "$work/$v.toml" --json-summary "$OUTDIR/$v.json" "${extra[@]}") > "$OUTDIR/$v.log" 2>&1
  echo "$v rc=$? wall=$(python3 -c "import time; print(round(time.time() - $t0, 1))")" | tee -a "$OUTDIR/walls.txt"
done
cp "$REPO/docs/benchmarks/raw/suite-h200-400/compileiq.toml" "$work/src/compileiq.toml"
cmake -S "$work/src" -B "$work/rel" -G Ninja -DCMAKE_BUILD_TYPE=Release > "$work/configure-rel.log" 2>&1 || exit 1
t0=$(date +%s.%N)
(cd /tmp && timeout 230 python3 -m compileiq_cmake check -S "$work/src" -B "$work/rel" --remeasure --rounds 5 --json) \
  > "$OUTDIR/check.json" 2> "$OUTDIR/check.log"
echo "check rc=$? wall=$(python3 -c "import time; print(round(time.time() - $t0, 1))")" | tee -a "$OUTDIR/walls.txt"
