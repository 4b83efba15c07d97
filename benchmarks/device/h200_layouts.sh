#!/usr/bin/env bash
# Trap projects of tests/projects/ (layouts real CUDA projects use) tuned on the GPU machine through the
# UNMODIFIED route (`compileiq-cmake tune`, the project's CMakeLists.txt untouched), then a release
# configure that applies the TOML through CMAKE_PROJECT_TOP_LEVEL_INCLUDES=compileiq_apply.cmake (checked
# in compile_commands.json for every CUDA source of the target), and an interleaved re-measure of the
# release binaries (plain vs tuned) in a separate process. Raw results go to $OUT/<project>/;
# docs/benchmarks/h200-layouts.md quotes them.
#
# Usage (repository root, device machine, wheels carried in .whl/):
#   bash benchmarks/device/h200_layouts.sh <project>      (cpp_cuda | arch_by_hand | many_tu | libs_layout)
set -u -o pipefail
p=$1
FINAL_OUT=${OUT:-/tmp/compileiq-out}
OUT=/tmp/compileiq-raw/$p  # many files: packed into $FINAL_OUT/<project>.tar.gz at the end
rm -rf "$OUT"; mkdir -p "$OUT" "$FINAL_OUT"
trap 'tar -C "$(dirname "$OUT")" -czf "$FINAL_OUT/$p.tar.gz" "$p"' EXIT
REPO=$(pwd)
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 1
  python3 -m pip install -q --no-index --no-deps --no-build-isolation . || exit 1
fi
CMAKE_DIR=$(cd /tmp && python3 -m compileiq_cmake --cmake-dir) || exit 1
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv
  nvcc --version | tail -2; cmake --version | head -1; nproc; date -u; } > "$OUT/machine.txt" 2>&1
case $p in
  cpp_cuda) target=cpp_bench; bench=cpp_bench; arch=(); workloads=("--n 4194304" "--n 16777216");;
  arch_by_hand) target=handarch_bench; bench=handarch_bench; arch=(); workloads=("--n 262144" "--n 1048576");;
  many_tu) target=many_bench; bench=many_bench; arch=(-DCMAKE_CUDA_ARCHITECTURES=90); workloads=("--n 1048576" "--n 4194304");;
  libs_layout) target=kern_static; bench=libs_bench; arch=(-DCMAKE_CUDA_ARCHITECTURES=90); workloads=("--n 4194304" "--n 16777216");;
  *) echo "unknown project $p"; exit 2;;
esac
work=/tmp/compileiq-work/$p
rm -rf "$work"; mkdir -p "$(dirname "$work")"; cp -r "$REPO/tests/projects/$p" "$work"
cp -r "$REPO/tests/projects/common" "$(dirname "$work")/"  # the shared bench.h (../common)
common=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_EXPORT_COMPILE_COMMANDS=ON -DCMAKE_POLICY_VERSION_MINIMUM=3.5 "${arch[@]}")
echo "=== $p: configure (the user's build, unmodified project)"
cmake -S "$work" -B "$work/build" "${common[@]}" > "$OUT/configure.log" 2>&1 || { tail -5 "$OUT/configure.log"; exit 1; }
wl=(); for w in "${workloads[@]}"; do wl+=(--workload "$w"); done
start=$(date +%s.%N)
python3 -m compileiq_cmake tune -S "$work" -B "$work/build" --target "$target" --bench "$bench" \
  --metric 'time_ms=([0-9.eE+-]+)' --pass-regex PASS "${wl[@]}" --budget "${BUDGET:-14}" \
  --time-limit "${TIME_LIMIT:-150}" --workers 4 2>&1 | tee "$OUT/tune.log" | grep -E "^\[|compileiq" | tail -45
end=$(date +%s.%N)
echo "tune_wall_seconds=$(python3 -c "print(round($end-$start,1))")" | tee -a "$OUT/tune.log"
python3 -m compileiq_cmake trials -B "$work/build" --json > "$OUT/trials.json"
[ -f "$work/compileiq.toml" ] && cp "$work/compileiq.toml" "$OUT/compileiq.toml"
echo "=== $p: release builds (plain, and with the TOML applied through compileiq_apply.cmake)"
apply=(-DCMAKE_PROJECT_TOP_LEVEL_INCLUDES="$CMAKE_DIR/compileiq_apply.cmake")
cmake -S "$work" -B "$work/rel-plain" "${common[@]}" "${apply[@]}" -DCOMPILEIQ_APPLY=OFF > "$OUT/release.log" 2>&1
cmake -S "$work" -B "$work/rel-tuned" "${common[@]}" "${apply[@]}" >> "$OUT/release.log" 2>&1
grep -A2 compileiq "$OUT/release.log" | tee "$OUT/apply.txt"
cmake --build "$work/rel-plain" -j 16 >> "$OUT/release.log" 2>&1 && cmake --build "$work/rel-tuned" -j 16 >> "$OUT/release.log" 2>&1 || echo "release build failed"
cp "$work/rel-tuned/compile_commands.json" "$OUT/release-compile_commands.json"
python3 - "$work" "$target" > "$OUT/flags_check.json" <<'PY'
import json, sys, tomllib
from pathlib import Path
from compileiq_cmake.project.file_api import read_codemodel, write_query
from compileiq_cmake.project.nvcc_command import normalize, tokens
work, target = Path(sys.argv[1]), sys.argv[2]
toml = work / "compileiq.toml"
flags = tomllib.loads(toml.read_text())["entry"][0]["flags"] if toml.is_file() else []
tree = work / "rel-tuned"
write_query(tree)
import subprocess; subprocess.run(["cmake", str(tree)], capture_output=True)
cuda = {str(p) for p in read_codemodel(tree).target(target).sources_in("CUDA")}
rows = [{"file": e["file"], "has_all_flags": all(f in normalize(tokens(e)) for f in flags)}
        for e in json.loads((tree / "compile_commands.json").read_text()) if str(Path(e["file"]).resolve()) in cuda]
print(json.dumps({"flags": flags, "cuda_sources": len(cuda), "commands": rows,
                  "all_sources_have_flags": bool(rows) and len(rows) == len(cuda) and all(r["has_all_flags"] for r in rows)}, indent=1))
PY
tail -3 "$OUT/flags_check.json"
cp -r "$work/build/compileiq/logs" "$OUT/logs" 2>/dev/null
python3 "$REPO/benchmarks/device/remeasure_release.py" "$work" "$p" 11 > "$OUT/remeasure.json" || echo "re-measure failed"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); [print(w['args'], 'plain', w['plain_median'], 'tuned', w['tuned_median'], 'speedup %.4f [%.4f..%.4f]' % (w['speedup'], *w['ci'])) for w in d['workloads']]" "$OUT/remeasure.json"
