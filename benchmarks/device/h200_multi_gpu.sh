#!/usr/bin/env bash
# One GPU against every GPU of the host, same tune otherwise: the stencil example through the CLI route,
# same budget, seed and workers, no time limit; nvidia-smi samples each GPU's utilization every 200 ms
# during the tune. Raw results go to $OUT/multi-gpu-<gpus>.tar.gz; benchmarks/reports/multi_gpu_report.py turns
# them into docs/benchmarks/multi-gpu.md.
#
# Usage (repository root, the 2-GPU device machine, wheels carried in .whl/), both in one call:
#   bash benchmarks/device/h200_multi_gpu.sh 0 all
# WORKLOADS='--n 4096 --reps 1000' (';' between workloads) gives runs whose GPU time dominates.
set -u -o pipefail
FINAL_OUT=${OUT:-/tmp/compileiq-out}
REPO=$(pwd)
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 1
  python3 -m pip install -q --no-index --no-deps --no-build-isolation . || exit 1
fi
for gpus in "$@"; do
name=multi-gpu-${gpus//,/_}
OUT=/tmp/compileiq-raw/$name
rm -rf "$OUT"; mkdir -p "$OUT" "$FINAL_OUT"
{ nvidia-smi --query-gpu=index,name,driver_version,pci.bus_id,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv
  nvcc --version | tail -2; cmake --version | head -1; nproc; date -u; } > "$OUT/machine.txt" 2>&1
work=/tmp/compileiq-work/$name
rm -rf "$work"; mkdir -p "$(dirname "$work")"; cp -r "$REPO/examples/cuda_stencil" "$work"
cmake -S "$work" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release > "$OUT/configure.log" 2>&1 || { tail -5 "$OUT/configure.log"; exit 1; }
nvidia-smi --query-gpu=timestamp,index,utilization.gpu,clocks.sm --format=csv,noheader,nounits -lms 200 > "$OUT/utilization.csv" &
smi=$!
wl=()
IFS=';' read -r -a ws <<< "${WORKLOADS:---n 2048;--n 4096}"; for w in "${ws[@]}"; do wl+=(--workload "$w"); done
start=$(date +%s.%N)
python3 -m compileiq_cmake tune -S "$work" -B "$work/build" --target stencil_kernels --bench stencil \
  --metric 'time_ms=([0-9.eE+-]+)' --pass-regex PASS "${wl[@]}" \
  --budget "${BUDGET:-24}" --seed 1 --workers "${WORKERS:-8}" --gpus "$gpus" 2>&1 | tee "$OUT/tune.log" | grep -E "compileiq|\[ *[0-9]+/" | tail -50
end=$(date +%s.%N)
kill $smi
echo "tune_start=$start tune_end=$end tune_wall_seconds=$(python3 -c "print(round($end-$start,1))")" | tee -a "$OUT/tune.log"
python3 -m compileiq_cmake trials -B "$work/build" --json > "$OUT/trials.json"
cp "$work/compileiq.toml" "$OUT/compileiq.toml" 2>/dev/null
cp -r "$work/build/compileiq/logs" "$OUT/logs" 2>/dev/null
tar -C "$(dirname "$OUT")" -czf "$FINAL_OUT/$name.tar.gz" "$name"
done
