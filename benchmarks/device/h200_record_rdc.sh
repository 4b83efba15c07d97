#!/usr/bin/env bash
# Issue 23's relocatable landscapes on the GPU machine, recorded with the learning design through the tool's
# own variant trees (benchmarks/landscapes/record_project.py --learn, device LTO as a dimension):
#   mc_rdc       benchmarks/projects/suite16's mc_rdc: a kernel calling __device__ functions of another file,
#                resolved at the device link (the default)
#   multi_bench  examples/cuda_multifile: six kernels in five files, three of them calling the device helpers
#                of a sixth file in their hot loops (--size 1: about 0.8 s a run on the H200)
# Usage (repository root, device machine, wheels carried in .whl/):
#   bash benchmarks/device/h200_record_rdc.sh [DEADLINE] [mc_rdc|multi_bench]
# Writes $OUT/<target>_learn.json and $OUT/record-<target>.log.
set -u -o pipefail
deadline=${1:-420}
target=${2:-mc_rdc}
case "$target" in
  mc_rdc) project=benchmarks/projects/suite16; bench=mc_rdc; workload=""; random=16
    metric='time_ms=([0-9.eE+-]+)'; pass=PASS ;;
  multi_bench) project=examples/cuda_multifile; bench=multi_bench; workload="--size 1"; random=12
    metric='^time_ms=([0-9.eE+-]+)'; pass='^PASS' ;;  # its kernels' own lines read "kernel <name> time_ms=..."
  *) echo "h200_record_rdc.sh: unknown target '$target' (mc_rdc or multi_bench)" >&2; exit 2 ;;
esac
OUTDIR=${OUT:-/tmp/compileiq-out}; mkdir -p "$OUTDIR"
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 1
  python3 -m pip install -q --no-index --no-deps --no-build-isolation . || exit 1
fi
work=/tmp/rdc-$target; rm -rf "$work"; mkdir -p "$work"
cp -r "$project" "$work/src"
log="$OUTDIR/record-$target.log"
cmake -S "$work/src" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release > "$work/configure.log" 2>&1 || { tail -20 "$work/configure.log"; exit 1; }
cmake --build "$work/build" --target "$target" > "$work/build.log" 2>&1 || { tail -20 "$work/build.log"; exit 1; }
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv; date -u; } > "$log"
python3 benchmarks/landscapes/record_project.py -S "$work/src" -B "$work/build" --target "$target" --bench "$bench" \
  --workload "$workload" --metric "$metric" --pass-regex "$pass" --scale 1000 --learn --dim 'device_lto=-dlto' \
  --core device_lto --core use_fast_math --core ptxas_opt_level --core maxrregcount=0,1,2,3 --core load_cache=0,1,2 \
  --random "$random" --workers 14 --passes 2 --deadline "$deadline" --out "$OUTDIR/${target}_learn.json" >> "$log" 2>&1
echo "rc=$?" >> "$log"
tail -3 "$log"
