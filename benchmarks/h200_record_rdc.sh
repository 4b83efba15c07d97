#!/usr/bin/env bash
# Issue 23's relocatable landscape on the GPU machine: benchmarks/projects/suite16's mc_rdc (a kernel calling
# __device__ functions of another file, resolved at the device link) recorded with the learning design through
# the tool's own variant trees (benchmarks/landscapes/record_project.py --learn, device LTO as a dimension).
# Usage (repository root, device machine, wheels carried in .whl/): bash benchmarks/h200_record_rdc.sh [DEADLINE]
# Writes $OUT/mc_rdc_learn.json and $OUT/record-mc_rdc.log.
set -u -o pipefail
deadline=${1:-420}
OUTDIR=${OUT:-/tmp/compileiq-out}; mkdir -p "$OUTDIR"
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 1
  python3 -m pip install -q --no-index --no-deps --no-build-isolation . || exit 1
fi
work=/tmp/rdc; rm -rf "$work"; mkdir -p "$work"
cp -r benchmarks/projects/suite16 "$work/src"
cmake -S "$work/src" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release > "$work/configure.log" 2>&1 || { tail -20 "$work/configure.log"; exit 1; }
cmake --build "$work/build" --target mc_rdc > "$work/build.log" 2>&1 || { tail -20 "$work/build.log"; exit 1; }
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv; date -u; } > "$OUTDIR/record-mc_rdc.log"
python3 benchmarks/landscapes/record_project.py -S "$work/src" -B "$work/build" --target mc_rdc --bench mc_rdc \
  --metric 'time_ms=([0-9.eE+-]+)' --pass-regex PASS --scale 1000 --learn --dim 'device_lto=-dlto' \
  --core device_lto --core use_fast_math --core ptxas_opt_level --core maxrregcount=0,1,2,3 --core load_cache=0,1,2 \
  --random 16 --workers 14 --passes 2 --deadline "$deadline" --out "$OUTDIR/mc_rdc_learn.json" >> "$OUTDIR/record-mc_rdc.log" 2>&1
echo "rc=$?" >> "$OUTDIR/record-mc_rdc.log"
tail -3 "$OUTDIR/record-mc_rdc.log"
