#!/usr/bin/env bash
# The learned prior on a relocatable target it has no data of (benchmarks/projects/slow_check: a math-heavy
# kernel in src/main.cu calling a __device__ function of src/kernels.cu, so device LTO is in its space; each
# run ~3-5 s because of a CPU check), tuned twice from scratch with the same budget, seed and time limit:
# with the shipped prior (trained on 35 landscapes, slow_check not among them) and with --no-prior (the
# default order). Each in a build tree and user cache of its own, no local learning, back to back.
# Usage (repository root, device machine, wheels in .whl/): bash benchmarks/device/h200_prior_heldout.sh [LIMIT]
#   -> $OUT/{prior,noprior}.{json,log}, $OUT/walls.txt
set -u -o pipefail
limit=${1:-150}
OUTDIR=${OUT:-/tmp/compileiq-out}; mkdir -p "$OUTDIR"
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null && export PYTHONPATH=/tmp/site || exit 1
  python3 -m pip install -q --no-index --no-deps --no-build-isolation . || exit 1
fi
work=/tmp/pho; rm -rf "$work"; mkdir -p "$work"; cp -r benchmarks/projects/slow_check "$work/src"
export COMPILEIQ_NO_LEARN=1
nvidia-smi --query-gpu=name,driver_version --format=csv > "$OUTDIR/walls.txt"
for v in prior noprior; do
  cmake -S "$work/src" -B "$work/b-$v" -G Ninja -DCMAKE_BUILD_TYPE=Release > "$work/configure-$v.log" 2>&1 || exit 1
  cmake --build "$work/b-$v" --target slow_check -j 16 > /dev/null 2>&1 || exit 1
  extra=(); [ "$v" = noprior ] && extra=(--no-prior)
  t0=$(date +%s.%N)
  (cd /tmp && COMPILEIQ_CACHE_DIR=/tmp/pho-cache-$v timeout $((limit + 40)) python3 -m compileiq_cmake tune -S "$work/src" \
     -B "$work/b-$v" --target slow_check --bench slow_check --metric 'kernel_ms=([0-9.eE+-]+)' --pass-regex PASS \
     --budget 10 --seed 3 --workers 8 --time-limit "$limit" --output "$work/$v.toml" --json-summary "$OUTDIR/$v.json" \
     "${extra[@]}") > "$OUTDIR/$v.log" 2>&1
  echo "$v rc=$? wall=$(python3 -c "import time; print(round(time.time() - $t0, 1))")" | tee -a "$OUTDIR/walls.txt"
done
