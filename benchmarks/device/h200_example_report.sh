#!/usr/bin/env bash
# An example report of a real H200 tune: the stencil example through the CLI route (budget 12), with
# --json-summary; the HTML report the tune writes and the summary come back in $OUT (committed under
# docs/report-example/).
# Usage (repository root, the device machine, wheels carried in .whl/): bash benchmarks/device/h200_example_report.sh
set -u -o pipefail
OUT=${OUT:-/tmp/compileiq-out}; mkdir -p "$OUT"
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 1
  python3 -m pip install -q --no-index --no-deps --no-build-isolation . || exit 1
fi
work=/tmp/compileiq-work/report-example
rm -rf "$work"; mkdir -p "$(dirname "$work")"; cp -r examples/cuda_stencil "$work"
cmake -S "$work" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release > "$OUT/configure.log" 2>&1 || exit 1
python3 -m compileiq_cmake tune -S "$work" -B "$work/build" --target stencil_kernels --bench stencil \
  --metric 'time_ms=([0-9.eE+-]+)' --pass-regex PASS --workload "--n 2048" --workload "--n 4096" \
  --budget "${BUDGET:-12}" --seed 1 --workers 6 --json-summary "$OUT/summary.json" > "$OUT/tune.log" 2>&1
tail -25 "$OUT/tune.log"
cp "$work/build/compileiq/report.html" "$OUT/report.html"
cp "$work/compileiq.toml" "$OUT/compileiq.toml" 2>/dev/null
true
