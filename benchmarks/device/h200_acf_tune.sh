#!/usr/bin/env bash
# Issue 50 on the GPU machine: one of the ACF landscape's kernels as a small CMake project
# (benchmarks/acf/projects/PROJECT: spill_app, the spilling kernel, by default; attn_app, the attention kernel;
# gemm_app, biglib's gemm_small.cu) tuned through the CMake route (Route 2: tune -S -B --target) twice in one box
# each, back to back on one machine:
#   joint:  public flags + Advanced Controls (the 160 sampled control files carried in .acfcarry2/acf, --acf each,
#           --acf-candidates 0: compileiq is not on that machine)
#   public: public flags alone (--acf-candidates 0, no --acf)
# then each winner re-measured against the project's own build in a fresh release tree with the apply
# (check --remeasure). The toolkit: the machine's nvcc with ptxas 13.3 from NVIDIA's PyPI toolkit beside it
# (.acfcarry2/ptxas.xz, cuobjdump 13.3): the Advanced Controls are ptxas's; the whole PyPI toolkit does not
# fit the 64 MiB carry with the repository. The project is copied to /tmp/<variant>/PROJECT with the sources it
# includes from outside its folder beside it (the include path in its CMakeLists.txt rewritten to them); the
# executable and target are named PROJECT. Raw output under $OUT/PROJECT (several projects can run in one call).
# Usage (repo root, .whl and .acfcarry2 carried): bash benchmarks/device/h200_acf_tune.sh BOX_SECONDS [PROJECT]
# VARIANTS="joint" (or "public") runs one of the two; both by default. SEED=N: the tunes' --seed (default: the tool's).
set -uo pipefail
BOX=${1:-150}
PROJ=${2:-spill_app}
case $PROJ in
  spill_app | attn_app | gemm_app) ;;
  *) echo "unknown project '$PROJ': spill_app, attn_app or gemm_app" >&2; exit 2 ;;
esac
O=$OUT/$PROJ
mkdir -p "$O" || exit 1
# shellcheck disable=SC1091  # lib.sh: shellcheck -x from the repository root follows it
source benchmarks/device/lib.sh
install_wheels || exit 1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader > "$O/gpu.txt"
C=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
[ -f "$C/bin/nvcc.profile" ] || C=/usr/local/cuda
H=/tmp/hyb
rm -rf $H && mkdir -p $H && cp -a "$C/bin" $H/bin
xz -dc .acfcarry2/ptxas.xz > $H/bin/ptxas && cp .acfcarry2/cuobjdump $H/bin/cuobjdump && chmod +x $H/bin/ptxas $H/bin/cuobjdump
for d in nvvm targets lib64 include lib; do [ -e "$C/$d" ] && ln -s "$C/$d" "$H/$d"; done
{ $H/bin/nvcc --version | tail -1; $H/bin/ptxas --version | tail -1; } > "$O/toolkit.txt"
ACFS=()
for f in .acfcarry2/acf/*.acf; do ACFS+=(--acf "$PWD/$f"); done
for variant in ${VARIANTS:-joint public}; do
  P=/tmp/$variant/$PROJ
  rm -rf "$P" && mkdir -p "/tmp/$variant" && cp -a "benchmarks/acf/projects/$PROJ" "$P" || exit 1
  # shellcheck disable=SC2016  # the sed patterns are CMake's literal ${CMAKE_CURRENT_SOURCE_DIR}
  case $PROJ in  # the sources from outside the folder beside the copy, the include path rewritten to them
    gemm_app)
      mkdir -p "/tmp/$variant/biglib/hot" "/tmp/$variant/biglib/include" \
        && cp benchmarks/projects/biglib/backend/hot/gemm_small.cu "/tmp/$variant/biglib/hot/" \
        && cp benchmarks/projects/biglib/backend/include/*.h "/tmp/$variant/biglib/include/" \
        && sed -i 's|${CMAKE_CURRENT_SOURCE_DIR}/../../../projects/biglib/backend/|${CMAKE_CURRENT_SOURCE_DIR}/../biglib/|g' "$P/CMakeLists.txt" ;;
    *)
      mkdir -p "/tmp/$variant/kernels" && cp "benchmarks/acf/kernels/${PROJ%_app}.cu" "/tmp/$variant/kernels/" \
        && sed -i 's|${CMAKE_CURRENT_SOURCE_DIR}/../../kernels|${CMAKE_CURRENT_SOURCE_DIR}/../kernels|' "$P/CMakeLists.txt" ;;
  esac || exit 1
  cmake -S "$P" -B "$P/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_COMPILER=$H/bin/nvcc > "$O/$variant-configure.log" 2>&1
  cmake --build "$P/build" >> "$O/$variant-configure.log" 2>&1
  extra=()
  [ "$variant" = joint ] && extra=("${ACFS[@]}")
  start=$(date +%s.%N)
  python3 -m compileiq_cmake tune -S "$P" -B "$P/build" --target "$PROJ" --bench "$PROJ" \
    --metric "time_ms=([0-9.eE+-]+)" --pass-regex PASS --compare-output "checksum=([0-9.eE+-]+)" \
    --time-limit "$BOX" --acf-candidates 0 ${SEED:+--seed "$SEED"} "${extra[@]}" --json-summary "$O/$variant-summary.json" \
    > "$O/$variant-tune.log" 2>&1
  echo "$variant tune rc=$? wall=$(python3 -c "import sys; print(round(float(sys.argv[1]) - float(sys.argv[2]), 1))" "$(date +%s.%N)" "$start")" >> "$O/walls.txt"
  cp "$P/compileiq.toml" "$O/$variant-compileiq.toml" 2>/dev/null
  if [ -f "$P/compileiq.toml" ]; then
    cmake -S "$P" -B "$P/rel" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_COMPILER=$H/bin/nvcc \
      -DCMAKE_PROJECT_TOP_LEVEL_INCLUDES="$(python3 -m compileiq_cmake --cmake-dir)/compileiq_apply.cmake" \
      > "$O/$variant-release.log" 2>&1
    cmake --build "$P/rel" >> "$O/$variant-release.log" 2>&1
    python3 -m compileiq_cmake check -S "$P" -B "$P/rel" --remeasure --bench "$PROJ" --json > "$O/$variant-remeasure.json" 2> "$O/$variant-remeasure.err"
    echo "$variant remeasure rc=$?" >> "$O/walls.txt"
  fi
done
