#!/usr/bin/env bash
# Issue 34 on the H200: CUDA-only device LTO on relocatable projects with host .cpp files and a hard-coded list
# of architectures (benchmarks/projects/lto/*), one of them a static library of device code linked into two
# executables. Each job: a tune that searches device LTO alone (--include-flags device_lto), then fresh Release
# trees of the unmodified project (its own architecture list), one plain and one with the TOML applied
# (compileiq_apply.cmake), run interleaved; the apply's lines, compile commands and device-link lines kept.
#   bash benchmarks/device/h200_device_lto.sh PROJECT:TARGET:BENCH:WORKLOAD:LIMIT [...]
#     e.g. lto_particles:particles:particles:--n=1048576:90   (WORKLOAD: '=' for spaces)
#   ALSO=bench_b  (lto_staticlib: the consumer the tune did not measure, re-measured plain vs tuned too)
# Raw results: $OUT/device-lto/<project>/ (one archive per call).
set -u -o pipefail
OUTROOT=${OUT:-/tmp/compileiq-out}
REPO=$(pwd)
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 1
  python3 -m pip install -q --no-index --no-deps --no-build-isolation . || exit 1
fi
mkdir -p "$OUTROOT/device-lto"
{ nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.max.sm --format=csv; nvcc --version | tail -2
  cmake --version | head -1; g++ --version | head -1; nproc; date -u; } > "$OUTROOT/device-lto/machine.txt" 2>&1
CMAKE_DIR=$(cd /tmp && python3 -m compileiq_cmake --cmake-dir) || exit 1
ROUNDS=${ROUNDS:-10}
for job in "$@"; do
  IFS=: read -r proj target bench workload limit <<< "$job"
  workload=${workload//=/ }
  out=$OUTROOT/device-lto/$proj; mkdir -p "$out"
  work=/tmp/dlto/$proj; rm -rf "$work"; mkdir -p "$work"; cp -r "$REPO/benchmarks/projects/lto/$proj" "$work/src"
  cp -r "$REPO/benchmarks/projects/lto/common" "$work/common"  # ../common of the project
  cmake -S "$work/src" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release > "$out/configure.log" 2>&1 || { tail "$out/configure.log"; continue; }
  start=$EPOCHREALTIME
  (cd /tmp && python3 -m compileiq_cmake tune -S "$work/src" -B "$work/build" --target "$target" --bench "$bench" \
     --metric 'time_ms=([0-9.eE+-]+)' --pass-regex '^PASS' --workload "$workload" --include-flags device_lto \
     --time-limit "$limit" --workers 2 --seed 1 --output "$work/src/compileiq.toml" --json-summary "$out/summary.json") \
     > "$out/tune.log" 2>&1
  echo "tune rc=$? wall_s=$(python3 -c "print(round($EPOCHREALTIME-$start,1))")" >> "$out/tune.log"
  grep -E "device_lto|device LTO|winner|no flag set|written|\[ *[0-9]+/|plan for|validat" "$out/tune.log" | head -20
  (cd /tmp && python3 -m compileiq_cmake trials -B "$work/build" --json) > "$out/trials.json" 2>/dev/null
  cp "$work/src/compileiq.toml" "$out/" 2>/dev/null || { echo "$proj: nothing written"; continue; }
  # what the apply produces in a release build of the project's own architecture list
  cmake -S "$work/src" -B "$work/rel-plain" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_EXPORT_COMPILE_COMMANDS=ON > "$out/rel-plain.log" 2>&1
  cmake -S "$work/src" -B "$work/rel-tuned" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_EXPORT_COMPILE_COMMANDS=ON \
    "-DCMAKE_PROJECT_TOP_LEVEL_INCLUDES=$CMAKE_DIR/compileiq_apply.cmake" > "$out/rel-tuned.log" 2>&1
  cmake --build "$work/rel-plain" -j 8 -v >> "$out/rel-plain.log" 2>&1 & cmake --build "$work/rel-tuned" -j 8 -v >> "$out/rel-tuned.log" 2>&1; wait
  grep "compileiq" "$out/rel-tuned.log" | head -5
  for t in plain tuned; do cp "$work/rel-$t/compile_commands.json" "$out/rel-$t-compile_commands.json"; done
  grep -E " -dlink |cmake_device_link" "$out/rel-tuned.log" > "$out/rel-tuned-device-links.txt"
  for b in "$bench" ${ALSO:-}; do
    [ -x "$work/rel-tuned/$b" ] || continue
    for _ in $(seq 1 "$ROUNDS"); do
      # shellcheck disable=SC2086  # $workload is the benchmark's arguments, several words (split on spaces)
      for t in plain tuned; do
        o=$("$work/rel-$t/$b" $workload | grep -E '^time_ms=|^PASS|^FAIL' | tr '\n' ' '); echo "$b $t $o"
      done
    done
  done > "$out/release-remeasure.txt"
  tail -4 "$out/release-remeasure.txt"
done
tar -C "$OUTROOT" -czf "$OUTROOT/device-lto-$(date +%H%M%S).tar.gz" device-lto && rm -rf "$OUTROOT/device-lto"
