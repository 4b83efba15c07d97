#!/usr/bin/env bash
# Issue 52: the host kernels' gcc landscapes recorded on the GPU host's CPU (16 cores, otherwise idle), which
# is quieter than the 2-core development machine the earlier recordings came from (docs/benchmarks/prior.md,
# "A host prior"). The kernels are split into PARTS groups, one record_host.py per group, each timing
# its runs on its own core (--pin-core) after building on its share of the cores: the runs of one group never share a
# core with another group's, and every group times its codes in interleaved random rounds as record_host.py
# always does. Raw files (landscapes, record.log, machine facts) go to $OUT/host-record.tgz (one file: the
# device tool brings back only a few files per call), part<N>/ inside.
#
# Usage (repository root, on the device machine): bash benchmarks/device/host_record.sh
#   PARTS=4 (groups = cores used for timing), DEADLINE=420 (seconds after which no round starts),
#   ROUNDS=12, KERNELS=a,b,... (default: all of record_host.py's)
set -u -o pipefail
FINAL_OUT=${OUT:-/tmp/compileiq-out}
OUT=/tmp/host-record-raw/host-record
rm -rf "$OUT"
PARTS=${PARTS:-4}
DEADLINE=${DEADLINE:-420}
ROUNDS=${ROUNDS:-12}
mkdir -p "$OUT"
{ lscpu; echo; g++ --version | head -1; python3 --version; uptime; nproc; } > "$OUT/machine.txt" 2>&1
kernels=${KERNELS:-$(cd benchmarks/landscapes/host && python3 -c "
import sys; sys.argv=['x']; import record_host; print(','.join(record_host.KERNELS))")}
IFS=, read -r -a all <<< "$kernels"
ncpu=$(nproc)
pids=()
for ((p = 0; p < PARTS; p++)); do
  part=()
  for ((i = p; i < ${#all[@]}; i += PARTS)); do part+=("${all[i]}"); done
  [ ${#part[@]} -gt 0 ] || continue
  core=$(( p * ncpu / PARTS ))  # spread over the machine: one core per group, far apart
  dir="$OUT/part$p"; mkdir -p "$dir"
  list=$(IFS=,; echo "${part[*]}")
  ( cd benchmarks/landscapes/host && \
    python3 record_host.py --pin-core "$core" --out "$dir" --kernels "$list" --rounds "$ROUNDS" \
      --deadline "$DEADLINE" --jobs $(( ncpu / PARTS )) --work "/tmp/host-record-work/part$p" > "$dir/console.log" 2>&1
    echo "part $p (core $core, $list): rc=$?" >> "$OUT/parts.txt" ) &
  pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid"; done
uptime >> "$OUT/machine.txt"
mkdir -p "$FINAL_OUT" && tar -C "$(dirname "$OUT")" -czf "$FINAL_OUT/host-record.tgz" host-record
cat "$OUT/parts.txt"; tail -n 8 "$OUT"/part*/console.log
