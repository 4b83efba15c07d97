#!/usr/bin/env bash
# The full tuning loop on each CUDA example, on the GPU machine, through the opt-in route
# (cmake -DCOMPILEIQ_TUNE=ON; cmake --build --target compileiq_tune), then a release configure that
# applies the TOML, checked in compile_commands.json, and an interleaved re-measure of the release
# binaries (plain vs tuned). Raw results go to $OUT; benchmarks/reports/h200_report.py turns them into
# docs/benchmarks/h200-examples.md.
#
# Usage (from the repository root, on the device machine, wheels carried in .whl/):
#   bash benchmarks/device/h200_examples.sh [example ...]      (default: cuda_nbody cuda_stencil)
set -u -o pipefail
FINAL_OUT=${OUT:-/tmp/compileiq-out}
OUT=/tmp/compileiq-raw  # many small files; packed into $FINAL_OUT/h200-raw.tar.gz after each example
rm -rf "$OUT"; mkdir -p "$OUT" "$FINAL_OUT"
pack() { tar -C "$OUT" -czf "$FINAL_OUT/h200-raw.tar.gz" .; }
REPO=$(pwd)
if [ -d .whl ] && [ -z "${COMPILEIQ_NO_WHEELS:-}" ]; then  # the device machine: carried wheels
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 1
  python3 -m pip install -q --no-index --no-deps --no-build-isolation . || exit 1
fi
CMAKE_DIR=$(cd /tmp && python3 -m compileiq_cmake --cmake-dir) || exit 1  # the installed package's
export COMPILEIQ_WORKERS=${COMPILEIQ_WORKERS:-4}
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv
  nvcc --version | tail -2; cmake --version | head -1; nproc; date -u; } > "$OUT/machine.txt" 2>&1
examples=("$@")
[ ${#examples[@]} -gt 0 ] || examples=(cuda_nbody cuda_stencil)
for ex in "${examples[@]}"; do
  work=/tmp/compileiq-work/$ex
  rm -rf "$work"; mkdir -p "$(dirname "$work")"; cp -r "$REPO/examples/$ex" "$work"
  echo "=== $ex: configure with COMPILEIQ_TUNE=ON"
  cmake -S "$work" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCOMPILEIQ_TUNE=ON -Dcompileiq_cmake_DIR="$CMAKE_DIR" > "$OUT/$ex-configure.log" 2>&1 || { tail -5 "$OUT/$ex-configure.log"; continue; }
  start=$(date +%s.%N)
  cmake --build "$work/build" --target compileiq_tune 2>&1 | tee "$OUT/$ex-tune.log" | grep -E "^\[|compileiq" | tail -60
  end=$(date +%s.%N)
  echo "tune_wall_seconds=$(python3 -c "print(round($end-$start,1))")" >> "$OUT/$ex-tune.log"
  python3 -m compileiq_cmake trials -B "$work/build" --json > "$OUT/$ex-trials.json"
  if [ -f "$work/compileiq.toml" ]; then
    cp "$work/compileiq.toml" "$OUT/$ex-compileiq.toml"
  fi
  echo "=== $ex: release builds (plain, and with the TOML applied)"
  cmake -S "$work" -B "$work/rel-plain" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCOMPILEIQ_APPLY=OFF -DCMAKE_EXPORT_COMPILE_COMMANDS=ON -Dcompileiq_cmake_DIR="$CMAKE_DIR" > "$OUT/$ex-release.log" 2>&1
  cmake -S "$work" -B "$work/rel-tuned" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_EXPORT_COMPILE_COMMANDS=ON -Dcompileiq_cmake_DIR="$CMAKE_DIR" >> "$OUT/$ex-release.log" 2>&1
  grep compileiq "$OUT/$ex-release.log"
  cmake --build "$work/rel-plain" -j 16 >> "$OUT/$ex-release.log" 2>&1 && cmake --build "$work/rel-tuned" -j 16 >> "$OUT/$ex-release.log" 2>&1
  cp "$work/rel-tuned/compile_commands.json" "$OUT/$ex-release-compile_commands.json"
  python3 "$REPO/benchmarks/device/remeasure_release.py" "$work" "$ex" > "$OUT/$ex-remeasure.json" || echo "re-measure failed"
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); [print(w['args'], 'plain', w['plain_median'], 'tuned', w['tuned_median'], 'speedup %.4f' % w['speedup']) for w in d['workloads']]" "$OUT/$ex-remeasure.json"
  pack
done
pack
