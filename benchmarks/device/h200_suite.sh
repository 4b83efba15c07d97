#!/usr/bin/env bash
# Issue 24 evidence on the GPU machine: the 16-target project benchmarks/projects/suite16 tuned in one command
# (`tune --suite`, the one scheduler, every GPU of the machine) with a time box, against each target tuned
# alone (its own `tune --target` command) with the same total time shared by priority (T x p / sum p each).
#
# Usage (repository root, device machine, wheels carried in .whl/):
#   bash benchmarks/device/h200_suite.sh suite 420      # the suite in one command, --time-limit 420
#   bash benchmarks/device/h200_suite.sh alone 420      # every target alone, 420 s in all
#   SUITE_ONLY=nbody,mc_rdc MIN_SECONDS=20 bash benchmarks/device/h200_suite.sh suite 150   # a part of the suite
#   DEADLINE=540 bash benchmarks/device/h200_suite.sh alone 420; RESUME=1 DEADLINE=540 bash ... alone 420
#       alone in parts (one device call each): no target starts that would end after DEADLINE seconds of this
#       call; RESUME=1 (same machine, next call) keeps the build and the finished targets and goes on
# Raw logs and summaries go to $OUT/<mode>-<T>.tar.gz (the suite: suite.json, suite.log, compileiq.toml;
# alone: <target>.json and .log per target, alone.tsv with each command's wall time).
set -u -o pipefail
mode=$1; total=$2
OUTDIR=${OUT:-/tmp/compileiq-out}; mkdir -p "$OUTDIR"
REPO=$(pwd)
if [ -d .whl ] && [ -z "${COMPILEIQ_NO_WHEELS:-}" ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 1
  python3 -m pip install -q --no-index --no-deps --no-build-isolation . || exit 1
fi
raw=/tmp/s16-raw/$mode-$total
call_start=$(date +%s)
[ -n "${RESUME:-}" ] || rm -rf "$raw" "/tmp/s16/$mode"
mkdir -p "$raw"
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv
  nvcc --version | tail -2; cmake --version | head -1; nproc; date -u; git -C "$REPO" rev-parse HEAD 2>/dev/null; } >> "$raw/machine.txt" 2>&1
work=/tmp/s16/$mode
if [ ! -d "$work/src" ]; then
mkdir -p "$work"
cp -r "$REPO/benchmarks/projects/suite16" "$work/src"
if [ -n "${SUITE_ONLY:-}${MIN_SECONDS:-}" ]; then  # the other targets excluded (said in the summary), another floor
  python3 - "$work/src/suite.toml" "${SUITE_ONLY:-}" "${MIN_SECONDS:-}" <<'PY'
import re, sys
path, only, floor = sys.argv[1], [n for n in sys.argv[2].split(",") if n], sys.argv[3]
text = open(path).read()
if floor:
    text = re.sub(r"(?m)^min_seconds = .*$", f"min_seconds = {floor}", text, count=1)
if only:
    blocks = text.split("[[target]]")
    text = blocks[0] + "".join("[[target]]" + b if re.search(r'name = "([^"]+)"', b).group(1) in only
                               else "[[target]]" + b.rstrip("\n") + "\nexclude = true\n\n" for b in blocks[1:])
open(path, "w").write(text)
PY
fi
fi
export COMPILEIQ_CACHE_DIR=/tmp/s16-cache/$mode COMPILEIQ_NO_LEARN=1
cmake -S "$work/src" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release > "$raw/configure.log" 2>&1 \
  || { tail -20 "$raw/configure.log"; exit 1; }
cmake --build "$work/build" -j 16 > "$raw/build.log" 2>&1 || { tail -20 "$raw/build.log"; exit 1; }
start=$(date +%s.%N)
if [ "$mode" = suite ]; then
  (cd /tmp && python3 -m compileiq_cmake tune --suite "$work/src/suite.toml" -S "$work/src" -B "$work/build" \
     --time-limit "$total" --workers 8 --budget 200 --output "$raw/compileiq.toml" --json-summary "$raw/suite.json") \
     2>&1 | tee "$OUTDIR/suite.log" > "$raw/suite.log"
  echo "suite rc=$? wall=$(python3 -c "import time; print(round(time.time() - $start, 1))")" | tee -a "$raw/machine.txt"
else
  python3 - "$work/src/suite.toml" "$total" > "$raw/plan.tsv" <<'EOF'
import sys, tomllib
doc = tomllib.load(open(sys.argv[1], "rb"))
targets = [t for t in doc["target"] if not t.get("exclude")]
weights = sum(t.get("priority", 1.0) for t in targets)
for t in targets:
    print("\t".join([t["name"], t["benchmark"], t["metric"], t.get("pass_regex", ""),
                     f"{float(sys.argv[2]) * t.get('priority', 1.0) / weights:.1f}",
                     "|".join(t.get("workloads", []))]))
EOF
  while IFS=$'\t' read -r name bench metric pass limit workloads; do
    if grep -q "^$name	" "$raw/alone.tsv" 2>/dev/null; then continue; fi  # finished in an earlier part
    if [ -n "${DEADLINE:-}" ] && python3 -c "import sys,time; sys.exit(0 if time.time() - $call_start + $limit + 45 > ${DEADLINE} else 1)"; then
      echo "part ends: $name would end after ${DEADLINE} s of this call (RESUME=1 goes on)" | tee -a "$raw/machine.txt"; break
    fi
    extra=(); IFS='|' read -ra ws <<< "$workloads"; for w in "${ws[@]}"; do [ -n "$w" ] && extra+=(--workload "$w"); done
    t0=$(date +%s.%N)
    (cd /tmp && python3 -m compileiq_cmake tune -S "$work/src" -B "$work/build" --target "$name" --bench "$bench" \
       --metric "$metric" ${pass:+--pass-regex "$pass"} --time-limit "$limit" --workers 8 --budget 200 "${extra[@]}" \
       --output "$raw/compileiq.toml" --json-summary "$raw/$name.json") > "$raw/$name.log" 2>&1
    rc=$?
    printf '%s\t%s\t%s\t%s\n' "$name" "$limit" "$rc" "$(python3 -c "import time; print(round(time.time() - $t0, 1))")" | tee -a "$raw/alone.tsv"
  done < "$raw/plan.tsv"
  echo "alone wall=$(python3 -c "import time; print(round(time.time() - $start, 1))")" | tee -a "$raw/machine.txt"
fi
tar -C /tmp/s16-raw -czf "$OUTDIR/$mode-$total.tar.gz" "$mode-$total"
for f in suite.json compileiq.toml; do [ -f "$raw/$f" ] && cp "$raw/$f" "$OUTDIR/"; done
