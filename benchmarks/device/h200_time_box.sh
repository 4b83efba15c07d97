#!/usr/bin/env bash
# Issue 21 evidence: whole tunes under --time-limit on the GPU machine, through the unmodified route
# (compileiq-cmake tune on a configured build tree). Each job: "<project>:<limit>[:<tag>]", project one of
# slow_check (benchmarks/projects: ~3 s runs, relocatable, device LTO in its space), many_tu (tests/projects:
# 20 CUDA files), nbody (examples/cuda_nbody). A tag "warm" reuses the screening cache of the project's
# previous job (a fresh build tree, the same user cache); otherwise each job starts with an empty cache.
# Raw logs, summaries and wall times go to $OUT/<project>-<limit>[-tag]/.
#
# Usage (repository root, device machine, wheels carried in .whl/):
#   bash benchmarks/device/h200_time_box.sh slow_check:120 many_tu:120 many_tu:120:warm nbody:120
set -u -o pipefail
PACKED=${OUT:-/tmp/compileiq-out}; mkdir -p "$PACKED"
FINAL_OUT=/tmp/tb-raw; mkdir -p "$FINAL_OUT"  # packed into $OUT/time-box-raw.tar.gz after each job
REPO=$(pwd)
if [ -d .whl ] && [ -z "${COMPILEIQ_NO_WHEELS:-}" ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 1
  python3 -m pip install -q --no-index --no-deps --no-build-isolation . || exit 1
fi
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv
  nvcc --version | tail -2; cmake --version | head -1; nproc; date -u; } > "$FINAL_OUT/machine.txt" 2>&1
for job in "$@"; do
  IFS=: read -r project limit tag <<< "$job"
  case $project in
    slow_check) src_dir=$REPO/benchmarks/projects/slow_check; target=slow_check; bench="slow_check"
                metric='kernel_ms=([0-9.eE+-]+)'; extra=();;
    many_tu) src_dir=$REPO/tests/projects/many_tu; target=many_bench; bench="many_bench"
             metric='time_ms=([0-9.eE+-]+)'; extra=();;
    nbody) src_dir=$REPO/examples/cuda_nbody; target=nbody; bench="nbody --n 32768"
           metric='time_ms=([0-9.eE+-]+)'; extra=(--workload "--n 16384" --workload "--n 32768");;
    *) echo "unknown project $project"; continue;;
  esac
  name=$project-$limit${tag:+-$tag}
  out=$FINAL_OUT/$name; mkdir -p "$out"
  work=/tmp/tb/$name; rm -rf "$work"; mkdir -p "$work"
  srcs=/tmp/tb-src/$project  # a warm job tunes the same source tree again, in a new build tree
  if [ "${tag:-}" != "warm" ]; then
    rm -rf "/tmp/tb-cache/$project" "$srcs"; mkdir -p "$srcs"
    cp -r "$src_dir" "$srcs/src"; cp -r "$REPO/tests/projects/common" "$srcs/common"
  fi
  ln -s "$srcs/src" "$work/src"
  export COMPILEIQ_CACHE_DIR=/tmp/tb-cache/$project
  cmake -S "$work/src" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release > "$out/configure.log" 2>&1 \
    || { tail -5 "$out/configure.log"; continue; }
  echo "=== $name"
  start=$(date +%s.%N)
  (cd /tmp && python3 -m compileiq_cmake tune -S "$work/src" -B "$work/build" --target "$target" --bench "$bench" \
     --metric "$metric" --pass-regex PASS --budget 200 --time-limit "$limit" --workers 4 "${extra[@]}" \
     --output "$work/compileiq.toml" --json-summary "$out/summary.json") > "$out/tune.log" 2>&1
  rc=$?
  end=$(date +%s.%N)
  wall=$(python3 -c "print(round($end-$start,1))")
  echo "rc=$rc wall_seconds=$wall limit=$limit" | tee "$out/wall.txt"
  grep -E "plan for|time box|screening|driver overhead|winner|no flag set|no significant|search phase" "$out/tune.log" | head -20
  [ -f "$work/compileiq.toml" ] && cp "$work/compileiq.toml" "$out/"
  tar -C "$FINAL_OUT" -czf "$PACKED/time-box-raw.tar.gz" .
done
