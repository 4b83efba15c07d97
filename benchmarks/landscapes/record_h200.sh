#!/usr/bin/env bash
# One device call that records landscapes on the GPU machine (pycuda from the carried wheels first:
# without it record.py stops after compiling). Writes <kernel>.json and record.log to $OUT/landscapes.
#
# Usage (repository root, device machine, `.whl` carried):
#   bash benchmarks/landscapes/record_h200.sh [kernel,kernel,...]     (default: blackscholes,spmv_csr, the hold-outs)
set -u -o pipefail
OUT_DIR=${OUT:-/tmp/compileiq-out}/landscapes
mkdir -p "$OUT_DIR"
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site
fi
python3 -c "import pycuda.driver, numpy" || { echo "pycuda or numpy missing: carry .whl"; exit 1; }
python3 benchmarks/landscapes/record.py --out "$OUT_DIR" --work /tmp/landscape-work \
  --kernels "${1:-blackscholes,spmv_csr}" --jobs "$(nproc)" 2>&1 | tee "$OUT_DIR/record-console.log"
