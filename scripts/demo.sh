#!/usr/bin/env bash
# The main job: sets up .venv, tunes an example for real through the opt-in route, shows the TOML, and
# builds a release configure that applies it. With an NVIDIA GPU (and nvcc) it tunes the CUDA n-body
# example; otherwise the host C++ example. The example is copied to $DEMO_DIR (default: a new temp dir),
# because a tune writes compileiq.toml into the project's source tree.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 && command -v nvcc >/dev/null 2>&1; then
  example=${EXAMPLE:-cuda_nbody}; extra='.[gpu]'
else
  example=${EXAMPLE:-host_cpp}; extra='.'
fi
echo "== installing compileiq-cmake and its dependencies into .venv (about a minute the first time)"
.venv/bin/python -m pip install -q --disable-pip-version-check "$extra"
export PATH="$PWD/.venv/bin:$PATH"
demo_dir=${DEMO_DIR:-$(mktemp -d /tmp/compileiq-demo.XXXXXX)}
mkdir -p "$demo_dir"
work="$demo_dir/$example"
rm -rf "$work"; cp -r "examples/$example" "$work"
cmake_dir=$(cd / && compileiq-cmake --cmake-dir)
echo "== tuning $example in $work (opt-in route: -DCOMPILEIQ_TUNE=ON, target compileiq_tune)"
echo "== configuring $example"
cmake -S "$work" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DCOMPILEIQ_TUNE=ON -Dcompileiq_cmake_DIR="$cmake_dir" >/dev/null
cmake --build "$work/build" --target compileiq_tune
if [ -f "$work/compileiq.toml" ]; then
  compileiq-cmake show "$work/compileiq.toml"
else
  echo "== no flags beat the project's own build: no compileiq.toml written"
fi
echo "== release configure (applies compileiq.toml) and build"
cmake -S "$work" -B "$work/release" -DCMAKE_BUILD_TYPE=Release -Dcompileiq_cmake_DIR="$cmake_dir" | grep -i compileiq || true
cmake --build "$work/release" >/dev/null
echo "== done: tuned project in $work, release build in $work/release"
