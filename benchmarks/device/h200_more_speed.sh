#!/usr/bin/env bash
# Issue 13 on the H200: device LTO and per-file flags on examples/cuda_multifile.
#   bash benchmarks/device/h200_more_speed.sh check   # nvcc facts at the device link, the example's own runs,
#                                              # per-kernel shares by CUPTI (the tool's collector) and by ncu
#   bash benchmarks/device/h200_more_speed.sh tune NAME [options]  # a tune (see below), then a fresh release build
#                                              # with the TOML re-measured against a plain one
# Raw results go to $OUT/more-speed/ (one archive per call: the device tool brings back few files).
set -u -o pipefail
OUTDIR=${OUT:-/tmp/compileiq-out}/more-speed
REPO=$(pwd)
mkdir -p "$OUTDIR"
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 1
  python3 -m pip install -q --no-index --no-deps --no-build-isolation . || exit 1
fi
WORKLOAD=${WORKLOAD:---size 2}
mode=$1
work=/tmp/more-speed
{ nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.max.sm --format=csv; nvcc --version | tail -2
  cmake --version | head -1; nproc; date -u; } > "$OUTDIR/machine.txt" 2>&1

if [ "$1" = check ]; then
  rm -rf "$work"; cp -r "$REPO/examples/cuda_multifile" "$work"
  cd "$work" || exit 1
  # 1. nvcc 13 at the device link under -dlto: which options act there (SASS of the linked code compared)
  {
    for f in src/*.cu; do nvcc -dc -gencode arch=compute_90,code=lto_90 -Iinclude -O3 "$f" -o "${f%.cu}.lto.o" & done; wait
    for f in src/*.cu; do nvcc -dc -gencode arch=compute_90,code=lto_90 -Iinclude -O3 -Xptxas=-O1 -maxrregcount=32 "$f" -o "${f%.cu}.ltoX.o" & done; wait
    mapfile -t objs < <(ls src/*.lto.o); mapfile -t objsx < <(ls src/*.ltoX.o)  # the object files, one argument each
    link() { name=$1; shift; if nvcc -dlink -dlto -arch=sm_90 "$@" -o "dl_$name.o" > "dl_$name.log" 2>&1; then
        h=$(cuobjdump -sass "dl_$name.o" | grep -v -E '^\s*(code for|Fatbin|arch|code version|host|compile_size|\.)' | sha256sum | cut -c1-16)
        r=$(cuobjdump -res-usage "dl_$name.o" 2>/dev/null | grep -o 'REG:[0-9]*' | tr '\n' ' ')
        echo "link $name: ok sass=$h $r"; else echo "link $name: FAILED: $(tail -2 "dl_$name.log" | tr '\n' ' ')"; fi; }
    link plain "${objs[@]}"
    link ptxasO1 -Xptxas=-O1 "${objs[@]}"
    link maxreg32 -maxrregcount=32 "${objs[@]}"
    link fastmath --use_fast_math "${objs[@]}"
    link ftz --ftz=true "${objs[@]}"
    link dlcm_cs -Xptxas=-dlcm=cs "${objs[@]}"
    link compile_step_ptxas_only "${objsx[@]}"
  } > "$OUTDIR/dlink-check.txt" 2>&1
  cat "$OUTDIR/dlink-check.txt"
  # 2. the example as the user builds it, and its runs
  { cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release > "$OUTDIR/configure.log" 2>&1 && cmake --build build -j 16 >> "$OUTDIR/configure.log" 2>&1; } || { tail -20 "$OUTDIR/configure.log"; exit 1; }
  # shellcheck disable=SC2086  # $WORKLOAD is the benchmark's arguments, several words ('--size 2')
  for _ in 1 2 3; do /usr/bin/time -f "wall_s=%e" ./build/multi_bench $WORKLOAD; echo "rc=$?"; done > "$OUTDIR/runs.txt" 2>&1
  ./build/multi_bench --size 1 >> "$OUTDIR/runs.txt" 2>&1; echo "rc=$?" >> "$OUTDIR/runs.txt"
  cat "$OUTDIR/runs.txt"
  # 3. per-kernel time: the tool's CUPTI collector, then ncu once as the second method
  # shellcheck disable=SC2086  # $WORKLOAD is the benchmark's arguments, several words ('--size 2')
  python3 - "$OUTDIR" $WORKLOAD <<'PY'
import json, os, shutil, subprocess, sys
from pathlib import Path
from compileiq_cmake.measure import kernel_times
out = Path(sys.argv[1]); args = sys.argv[2:]
lib = kernel_times.build_collector(shutil.which("nvcc"), Path("/tmp/cupti"))
f = Path("/tmp/cupti/times.tsv")
env = {**os.environ, **kernel_times.injection_env(lib, f)}
p = subprocess.run(["./build/multi_bench", *args], env=env, capture_output=True, text=True)
times = kernel_times.read_times(f)
(out / "cupti-run.txt").write_text(p.stdout + p.stderr)
(out / "cupti-times.tsv").write_text(f.read_text())
total = sum(k.ns for k in times)
json.dump([{"kernel": k.name, "launches": k.launches, "ns": k.ns, "share": k.ns / total} for k in times],
          open(out / "cupti-shares.json", "w"), indent=1)
print("cupti:", [(k.name[:30], k.launches, round(k.ns / total, 4)) for k in times])
PY
  # shellcheck disable=SC2086  # $WORKLOAD is the benchmark's arguments, several words ('--size 2')
  timeout 300 ncu --clock-control none --print-kernel-base mangled --metrics gpu__time_duration.sum --csv \
    ./build/multi_bench $WORKLOAD > "$OUTDIR/ncu.csv" 2> "$OUTDIR/ncu.err"; echo "ncu rc=$?"
  tail -3 "$OUTDIR/ncu.err"
  exit 0
fi

# One tune and a fresh release re-measure of what it wrote:
#   bash benchmarks/device/h200_more_speed.sh tune NAME [tune options...]   -> $OUT/more-speed/NAME/
# Env: EXAMPLE (cuda_multifile), TARGET (multi_bench), BENCH (multi_bench), METRIC, WORKLOAD ('--size 2'),
#      CMAKE_ARGS (e.g. -DCMAKE_CUDA_SEPARABLE_COMPILATION=ON), BUDGET, PER_FILE, WORKERS, MAX_ROUNDS, ROUNDS,
#      TUNE_LIMIT (seconds; the tune is killed after it).
# The issue's comparison (same budget and seed), in separate calls of at most 10 minutes:
#   tune global    --exclude-flags device_lto                      (PER_FILE=0)
#   tune perfile   --exclude-flags device_lto                      (PER_FILE=8)
#   tune lto                                                       (PER_FILE=8: device_lto offered)
#   EXAMPLE=cuda_stencil TARGET=stencil_kernels BENCH=stencil METRIC='time_ms=([0-9.eE+-]+)' WORKLOAD='--n 4096' \
#     CMAKE_ARGS=-DCMAKE_CUDA_SEPARABLE_COMPILATION=ON PER_FILE=0 tune stencil-rdc
if [ "$1" = tune ]; then
  name=$2; shift 2
  OUTDIR=$OUTDIR/$name; mkdir -p "$OUTDIR"
  EXAMPLE=${EXAMPLE:-cuda_multifile}; TARGET=${TARGET:-multi_bench}; BENCH=${BENCH:-multi_bench}
  METRIC=${METRIC:-^time_ms=([0-9.eE+-]+)}
  work=/tmp/more-speed-$name
  rm -rf "$work"; cp -r "$REPO/examples/$EXAMPLE" "$work"
  # shellcheck disable=SC2086  # CMAKE_ARGS is several cmake arguments (or none)
  cmake -S "$work" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release ${CMAKE_ARGS:-} > "$OUTDIR/tune-configure.log" 2>&1 || exit 1
  start=$(date +%s.%N)
  timeout "${TUNE_LIMIT:-3000}" python3 -m compileiq_cmake tune -S "$work" -B "$work/build" --target "$TARGET" --bench "$BENCH" \
    --metric "$METRIC" --pass-regex '^PASS' --workload "$WORKLOAD" \
    --budget "${BUDGET:-16}" --per-file-budget "${PER_FILE:-8}" --seed 1 --workers "${WORKERS:-8}" \
    --max-rounds "${MAX_ROUNDS:-10}" "$@" 2>&1 | tee "$OUTDIR/tune.log" | grep -E "compileiq|\[ *[0-9]+/" | tail -60
  end=$(date +%s.%N)
  echo "tune_wall_seconds=$(python3 -c "print(round($end-$start,1))")" | tee -a "$OUTDIR/tune.log"
  python3 -m compileiq_cmake trials -B "$work/build" --json > "$OUTDIR/trials.json"
  python3 -m compileiq_cmake report -B "$work/build" --json > "$OUTDIR/summary.json" 2>/dev/null
  cp "$work/build/compileiq/report.html" "$OUTDIR/" 2>/dev/null
  cp "$work/compileiq.toml" "$OUTDIR/compileiq.toml" 2>/dev/null
  # fresh release builds, plain and with the TOML, re-measured interleaved
  if [ -f "$work/compileiq.toml" ]; then
    CMAKE_DIR=$(cd /tmp && python3 -m compileiq_cmake --cmake-dir) || exit 1
    apply="-DCMAKE_PROJECT_TOP_LEVEL_INCLUDES=$CMAKE_DIR/compileiq_apply.cmake"
    rm -rf "$work/rel-plain" "$work/rel-tuned"
    # shellcheck disable=SC2086  # CMAKE_ARGS is several cmake arguments (or none)
    cmake -S "$work" -B "$work/rel-plain" -G Ninja -DCMAKE_BUILD_TYPE=Release ${CMAKE_ARGS:-} > "$OUTDIR/rel-plain.log" 2>&1
    # shellcheck disable=SC2086  # CMAKE_ARGS is several cmake arguments (or none)
    cmake -S "$work" -B "$work/rel-tuned" -G Ninja -DCMAKE_BUILD_TYPE=Release ${CMAKE_ARGS:-} -DCMAKE_EXPORT_COMPILE_COMMANDS=ON "$apply" > "$OUTDIR/rel-tuned.log" 2>&1
    cmake --build "$work/rel-plain" -j 8 >> "$OUTDIR/rel-plain.log" 2>&1 & cmake --build "$work/rel-tuned" -j 8 >> "$OUTDIR/rel-tuned.log" 2>&1; wait
    grep compileiq "$OUTDIR/rel-tuned.log" | head
    cp "$work/rel-tuned/compile_commands.json" "$OUTDIR/release-compile_commands.json"
    grep -n "dlto\|LINK_FLAGS" "$work/rel-tuned/build.ninja" | head -20 > "$OUTDIR/release-device-link.txt"
    for _ in $(seq 1 "${ROUNDS:-8}"); do
      # shellcheck disable=SC2086  # $WORKLOAD is the benchmark's arguments, several words ('--size 2')
      for t in plain tuned; do  # the wall time of the run too (the metric of a WALLTIME tune)
        s=$EPOCHREALTIME; o=$("$work/rel-$t/$BENCH" $WORKLOAD | grep -E '^time_ms=|^PASS|^FAIL' | tr '\n' ' '); e=$EPOCHREALTIME
        echo "$t wall_s=$(python3 -c "print(round($e-$s, 4))") $o"; done
    done > "$OUTDIR/release-remeasure.txt"
    tail -4 "$OUTDIR/release-remeasure.txt"
  fi
  OUTDIR=$(dirname "$OUTDIR")
fi
# A per-file landscape of the multi-file example for benchmarks/evaluation/search_efficiency.py (108 points):
#   bash benchmarks/device/h200_more_speed.sh landscape
if [ "$1" = landscape ]; then
  work=/tmp/more-speed-landscape
  rm -rf "$work"; cp -r "$REPO/examples/cuda_multifile" "$work"
  cmake -S "$work" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release > "$OUTDIR/landscape-configure.log" 2>&1 || exit 1
  timeout "${LANDSCAPE_LIMIT:-560}" python3 "$REPO/benchmarks/landscapes/record_project.py" -S "$work" -B "$work/build" \
    --target multi_bench --bench multi_bench --metric '^time_ms=([0-9.eE+-]+)' --pass-regex '^PASS' \
    --workload "${WORKLOAD:---size 1}" --scale 1000 --workers "${WORKERS:-8}" --out "$OUTDIR/multifile_per_file.json" \
    --dim 'compute.cu:use_fast_math=[src/compute.cu]--use_fast_math' \
    --dim 'compute.cu:ptxas_opt_level=[src/compute.cu]-Xptxas=-O1|[src/compute.cu]-Xptxas=-O2' \
    --dim 'gemm.cu:register_usage_level=[src/gemm.cu]-Xptxas=--register-usage-level=0|[src/gemm.cu]-Xptxas=--register-usage-level=10' \
    --dim 'gemm.cu:ptxas_opt_level=[src/gemm.cu]-Xptxas=-O1' \
    --dim 'stream.cu:load_cache=[src/stream.cu]-Xptxas=-dlcm=cg|[src/stream.cu]-Xptxas=-dlcm=cs' \
    2>&1 | tee "$OUTDIR/landscape.log" | tail -5
fi

# the device tool brings back a few files per call: one archive
tar -C "$(dirname "$OUTDIR")" -czf "$(dirname "$OUTDIR")/more-speed-$mode-${name:-}.tar.gz" more-speed && find "$OUTDIR" -mindepth 1 -delete
