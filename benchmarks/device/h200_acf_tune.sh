#!/usr/bin/env bash
# Issue 50 on the GPU machine: the ACF landscape's spilling kernel (benchmarks/acf/projects/spill_app) tuned
# through the CMake route (Route 2: tune -S -B --target) twice in one box each, back to back on one machine:
#   joint:  public flags + Advanced Controls (the 160 sampled control files carried in .acfcarry2/acf, --acf each,
#           --acf-candidates 0: compileiq is not on that machine)
#   public: public flags alone (--acf-candidates 0, no --acf)
# then each winner re-measured against the project's own build in a fresh release tree with the apply
# (check --remeasure). The toolkit: the machine's nvcc with ptxas 13.3 from NVIDIA's PyPI toolkit beside it
# (.acfcarry2/ptxas.xz, cuobjdump 13.3): the Advanced Controls are ptxas's; the whole PyPI toolkit does not
# fit the 64 MiB carry with the repository. Raw output under $OUT.
# Usage (repo root, .whl and .acfcarry2 carried): bash benchmarks/device/h200_acf_tune.sh BOX_SECONDS
set -uo pipefail
BOX=${1:-150}
source benchmarks/device/lib.sh
install_wheels || exit 1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader > "$OUT/gpu.txt"
C=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
[ -f "$C/bin/nvcc.profile" ] || C=/usr/local/cuda
H=/tmp/hyb
rm -rf $H && mkdir -p $H && cp -a "$C/bin" $H/bin
xz -dc .acfcarry2/ptxas.xz > $H/bin/ptxas && cp .acfcarry2/cuobjdump $H/bin/cuobjdump && chmod +x $H/bin/ptxas $H/bin/cuobjdump
for d in nvvm targets lib64 include lib; do [ -e "$C/$d" ] && ln -s "$C/$d" "$H/$d"; done
{ $H/bin/nvcc --version | tail -1; $H/bin/ptxas --version | tail -1; } > "$OUT/toolkit.txt"
ACFS=()
for f in .acfcarry2/acf/*.acf; do ACFS+=(--acf "$PWD/$f"); done
for variant in joint public; do
  P=/tmp/$variant/spill_app
  mkdir -p /tmp/$variant && cp -a benchmarks/acf/projects/spill_app $P && mkdir -p /tmp/$variant/kernels \
    && cp benchmarks/acf/kernels/spill.cu /tmp/$variant/kernels/ \
    && sed -i 's|${CMAKE_CURRENT_SOURCE_DIR}/../../kernels|${CMAKE_CURRENT_SOURCE_DIR}/../kernels|' $P/CMakeLists.txt
  cmake -S $P -B $P/build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_COMPILER=$H/bin/nvcc > "$OUT/$variant-configure.log" 2>&1
  cmake --build $P/build >> "$OUT/$variant-configure.log" 2>&1
  extra=()
  [ $variant = joint ] && extra=("${ACFS[@]}")
  start=$(date +%s.%N)
  python3 -m compileiq_cmake tune -S $P -B $P/build --target spill_app --bench spill_app \
    --metric "time_ms=([0-9.eE+-]+)" --pass-regex PASS --compare-output "checksum=([0-9.eE+-]+)" \
    --time-limit "$BOX" --acf-candidates 0 "${extra[@]}" --json-summary "$OUT/$variant-summary.json" \
    > "$OUT/$variant-tune.log" 2>&1
  echo "$variant tune rc=$? wall=$(echo "$(date +%s.%N) - $start" | bc)" >> "$OUT/walls.txt"
  cp $P/compileiq.toml "$OUT/$variant-compileiq.toml" 2>/dev/null
  if [ -f $P/compileiq.toml ]; then
    cmake -S $P -B $P/rel -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_COMPILER=$H/bin/nvcc \
      -DCMAKE_PROJECT_TOP_LEVEL_INCLUDES="$(python3 -m compileiq_cmake --cmake-dir)/compileiq_apply.cmake" \
      > "$OUT/$variant-release.log" 2>&1
    cmake --build $P/rel >> "$OUT/$variant-release.log" 2>&1
    python3 -m compileiq_cmake check -S $P -B $P/rel --remeasure --bench spill_app --json > "$OUT/$variant-remeasure.json" 2> "$OUT/$variant-remeasure.err"
    echo "$variant remeasure rc=$?" >> "$OUT/walls.txt"
  fi
done
