#!/usr/bin/env bash
# Issue 39 evidence on the GPU machine. Parts, each given as an argument (run them in separate calls when a
# call is too short):
#   tradeoffs  a tune of lto_particles (benchmarks/projects/lto: relocatable device code, host .cpp files,
#              device LTO in its space) in a box: every trial's build seconds, size, device-code size and
#              energy per run (NVML), the report with its trade-off plot and Pareto table
#   energy     the same project tuned with --objective energy in a box (the entry's joules, its time beside)
#   nbody      examples/cuda_nbody tuned with --objective energy in a box
#   gate       examples/cuda_nbody tuned through its compileiq_tune target (COMPILEIQ_SUITE_TIME_LIMIT), then
#              configured with -DCOMPILEIQ_ADD_TESTS=ON, built, and its gate run by ctest on the GPU with the
#              resource-spec file of examples/ci/gpus.json
#   bash benchmarks/device/h200_ecosystem.sh tradeoffs:150 energy:120 gate:90
# Raw results: $OUT/ecosystem-<part>.tar.gz
set -u -o pipefail
OUTDIR=${OUT:-/tmp/compileiq-out}; mkdir -p "$OUTDIR"
REPO=$(pwd)
. benchmarks/device/lib.sh
install_wheels || exit 1
export COMPILEIQ_CACHE_DIR=/tmp/eco-cache COMPILEIQ_NO_LEARN=1
CMAKE_DIR=$(cd /tmp && python3 -m compileiq_cmake --cmake-dir) || exit 1
secs() { python3 -c "import time; print(round(time.time() - $1, 1))"; }

lto_tune() {  # part, box seconds, extra tune options...
  local part=$1 box=$2; shift 2
  local raw=/tmp/eco-raw/$part work=/tmp/eco/$part target=particles workload='--n 1048576'
  rm -rf "$raw" "$work"; mkdir -p "$raw" "$work"
  if [ "$part" = nbody ]; then
    cp -r "$REPO/examples/cuda_nbody" "$work/src"; target=nbody; workload='--n 32768'
  else
    cp -r "$REPO/benchmarks/projects/lto/lto_particles" "$work/src"; cp -r "$REPO/benchmarks/projects/lto/common" "$work/common"
  fi
  cmake -S "$work/src" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release > "$raw/configure.log" 2>&1 || { tail "$raw/configure.log"; return 1; }
  local start; start=$(date +%s.%N)
  (cd /tmp && python3 -m compileiq_cmake tune -S "$work/src" -B "$work/build" --target $target --bench $target \
     --metric 'time_ms=([0-9.eE+-]+)' --pass-regex 'PASS' --workload "$workload" --time-limit "$box" --workers 2 \
     --seed 1 --output "$work/src/compileiq.toml" --json-summary "$raw/summary.json" "$@") > "$raw/tune.log" 2>&1
  echo "tune rc=$? wall_s=$(secs "$start")" >> "$raw/tune.log"
  (cd /tmp && python3 -m compileiq_cmake trials -B "$work/build" --csv) > "$raw/trials.csv" 2>/dev/null
  cp "$work/build/compileiq/report.html" "$raw/" 2>/dev/null
  cp -r "$work/build/compileiq/logs" "$raw/logs" 2>/dev/null
  cp "$work/src/compileiq.toml" "$raw/" 2>/dev/null
  grep -E "energy|winner|written|no flag set|device LTO|device_lto|tune rc" "$raw/tune.log" | tail -12
  tar -C /tmp/eco-raw -czf "$OUTDIR/ecosystem-$part.tar.gz" "$part"
}

gate() {  # box seconds
  local raw=/tmp/eco-raw/gate work=/tmp/eco/gate box=$1
  rm -rf "$raw" "$work"; mkdir -p "$raw" "$work"
  cp -r "$REPO/examples/cuda_nbody" "$work/src"
  { nvidia-smi --query-gpu=index,name,driver_version --format=csv; ctest --version | head -1; } > "$raw/machine.txt" 2>&1
  cmake -S "$work/src" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCOMPILEIQ_TUNE=ON \
    -DCOMPILEIQ_SUITE_TIME_LIMIT="$box" -Dcompileiq_cmake_DIR="$CMAKE_DIR" > "$raw/configure-tune.log" 2>&1 || { tail "$raw/configure-tune.log"; return 1; }
  local start; start=$(date +%s.%N)
  cmake --build "$work/build" --target compileiq_tune > "$raw/tune.log" 2>&1
  echo "tune rc=$? wall_s=$(secs "$start")" >> "$raw/tune.log"
  cp "$work/src/compileiq.toml" "$raw/" 2>/dev/null || echo "gate: nothing written" | tee -a "$raw/tune.log"
  cmake -S "$work/src" -B "$work/build" -DCOMPILEIQ_TUNE=OFF -DCOMPILEIQ_ADD_TESTS=ON > "$raw/configure-gate.log" 2>&1
  cmake --build "$work/build" -j 16 > "$raw/build.log" 2>&1
  ctest --test-dir "$work/build" -N -L compileiq > "$raw/ctest-N.txt" 2>&1
  start=$(date +%s.%N)
  ctest --test-dir "$work/build" -L compileiq --resource-spec-file "$REPO/examples/ci/gpus.json" --output-on-failure -V \
    > "$raw/ctest.log" 2>&1
  echo "ctest rc=$? wall_s=$(secs "$start")" >> "$raw/ctest.log"
  grep -E "compileiq|PASS|FAIL|re-measur|Test +#|tests passed|rc=" "$raw/ctest.log" | tail -15
  tar -C /tmp/eco-raw -czf "$OUTDIR/ecosystem-gate.tar.gz" gate
}

{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit,ecc.mode.current --format=csv
  nvcc --version | tail -2; cmake --version | head -1; nproc; date -u; git -C "$REPO" rev-parse HEAD 2>/dev/null; } \
  > "$OUTDIR/machine.txt" 2>&1
for job in "$@"; do
  IFS=: read -r part box <<< "$job"
  case "$part" in
    tradeoffs) lto_tune tradeoffs "$box" ;;
    energy) lto_tune energy "$box" --objective energy ;;
    nbody) lto_tune nbody "$box" --objective energy ;;
    gate) gate "$box" ;;
    *) echo "unknown part $part" ;;
  esac
done
