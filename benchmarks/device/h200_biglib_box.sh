#!/usr/bin/env bash
# Issue 38 evidence on the GPU machine: benchmarks/projects/biglib (125 .cu files in a shared library, CUDA enabled
# in its subdirectory, loaded by a host benchmark printing total_us) tuned in one box of <box> seconds, resumable
# across back-to-back device calls (a call is 10 minutes at most): the state lives in build-dev/bl (ignored, kept
# on a warm machine between calls); each call runs the same tune command for at most <call> seconds, and a call
# after a cut resumes the tune from its store (its trials and the seconds it spent of the box).
#   bash benchmarks/device/h200_biglib_box.sh build            # the project's own build (timed), once
#   bash benchmarks/device/h200_biglib_box.sh tune <box> <call> # the tune, or its resume
# BL_TAG=x keeps a variant's state apart (build-dev/blx, $OUT/biglib-box-x.tar.gz); TUNE_EXTRA adds tune options
# (e.g. TUNE_EXTRA=--no-race for issue 54's comparison of the same box with and without racing); TRACE=1 runs the
# tune under benchmarks/evaluation/pipeline_trace.py (the conveyor's events timed: raw/trace.jsonl).
# Raw results: $OUT/biglib-box.tar.gz (machine.txt, biglib.log of every call, biglib.json, biglib-trials.json,
# biglib-compiled/: what every build of each variant tree compiled, the TOML written).
set -u -o pipefail
step=$1
OUTDIR=${OUT:-/tmp/compileiq-out}; mkdir -p "$OUTDIR"
REPO=$(pwd)
. benchmarks/device/lib.sh
install_wheels || exit 1
W=$REPO/build-dev/bl${BL_TAG:-}; raw=$W/raw; mkdir -p "$raw"
export COMPILEIQ_CACHE_DIR=$W/cache COMPILEIQ_NO_LEARN=1
secs() { python3 -c "import time; print(round(time.time() - $1, 2))"; }
if [ "$step" = build ]; then
  rm -rf "$W/src" "$W/build"
  { nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv
    nvcc --version | tail -2; cmake --version | head -1; sccache --version; nproc; date -u
    git -C "$REPO" rev-parse HEAD 2>/dev/null; } > "$raw/machine.txt" 2>&1
  cp -r "$REPO/benchmarks/projects/biglib" "$W/src"
  cmake -S "$W/src" -B "$W/build" -G Ninja -DCMAKE_BUILD_TYPE=Release > "$raw/configure.log" 2>&1 \
    || { tail -20 "$raw/configure.log"; exit 1; }
  t=$(date +%s.%N); cmake --build "$W/build" -j 16 > "$raw/build.log" 2>&1 || { tail -20 "$raw/build.log"; exit 1; }
  echo "biglib full build -j16: $(secs "$t") s, $(grep -c 'Building CUDA object' "$raw/build.log") CUDA objects" | tee -a "$raw/machine.txt"
  "$W/build/bench/biglib_bench" > "$raw/own-run.txt" 2>&1; echo "own run rc=$?" >> "$raw/machine.txt"
  exit 0
fi
box=$2; call=$3
echo "=== call at $(date -u +%H:%M:%S), at most $call s" >> "$raw/biglib.log"
t=$(date +%s.%N)
tune_py=(python3 -m compileiq_cmake)
[ -n "${TRACE:-}" ] && tune_py=(python3 "$REPO/benchmarks/evaluation/pipeline_trace.py" --trace "$raw/trace.jsonl" --)
(cd /tmp && timeout "$call" "${tune_py[@]}" tune -S "$W/src" -B "$W/build" \
   --target biglib_cuda --bench biglib_bench --metric "total_us=([0-9.eE+-]+)" --pass-regex PASS \
   --time-limit "$box" --workers 8 --output "$raw/biglib.toml" --json-summary "$raw/biglib.json" ${TUNE_EXTRA:+"$TUNE_EXTRA"}) >> "$raw/biglib.log" 2>&1
echo "biglib tune call rc=$? wall=$(secs "$t")" | tee -a "$raw/machine.txt"
(cd /tmp && python3 -m compileiq_cmake trials -B "$W/build" --json) > "$raw/biglib-trials.json" 2>&1
mkdir -p "$raw/biglib-compiled"; cp "$W"/build/compileiq/logs/*-compiled.log "$raw/biglib-compiled/" 2>/dev/null
grep -E "focus|time box|resuming|search:|wrote|written|no significant|winner|step cache" "$raw/biglib.log" | cut -c1-300 | tail -12
tar -C "$W" -czf "$OUTDIR/biglib-box${BL_TAG:+-$BL_TAG}.tar.gz" raw
