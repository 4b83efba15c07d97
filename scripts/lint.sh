#!/usr/bin/env bash
# The checks that fail CI (.ci/run runs this before the tests; .pre-commit-config.yaml runs the same tools):
#   ruff check and ruff format --check (rules: pyproject.toml [tool.ruff]) on compileiq_cmake/, tests/, scripts/
#   mypy (pyproject.toml [tool.mypy]: the package at default strictness, model/, decide/, flags/ strict)
#   the shell scripts scripts/*.sh, .ci/run and the GPU machine's benchmarks/device/*.sh: ShellCheck (-x: the
#   files they source, e.g. benchmarks/device/lib.sh, followed from the repository root)
#   cmake-lint (cmakelang; .cmake-format.yaml) on cmake/*.cmake
# Every check runs; the exit status is 1 when any of them failed. Tools: the lint extra in .venv (pyproject.toml),
# installed with the test extra when one is missing (as scripts/test.sh sets .venv up).
#   ./scripts/lint.sh            all checks
#   ./scripts/lint.sh --fix      ruff check --fix and ruff format first (then all checks)
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
BIN=.venv/bin
if ! { [ -x "$BIN/ruff" ] && [ -x "$BIN/mypy" ] && [ -x "$BIN/shellcheck" ] && [ -x "$BIN/cmake-lint" ]; }; then
  [ -x "$BIN/python" ] || "$PYTHON" -m venv .venv
  "$BIN/python" -m pip install -q --disable-pip-version-check '.[test]'
fi
PY_PATHS=(compileiq_cmake tests scripts)
if [ "${1:-}" = "--fix" ]; then
  "$BIN/ruff" check --fix -q "${PY_PATHS[@]}" || true
  "$BIN/ruff" format -q "${PY_PATHS[@]}"
fi
failed=()
check() {
  local name=$1
  shift
  local start=$SECONDS
  if "$@"; then
    echo "lint: $name ok ($((SECONDS - start)) s)"
  else
    echo "lint: $name FAILED: $*" >&2
    failed+=("$name")
  fi
}
check "ruff check" "$BIN/ruff" check -q "${PY_PATHS[@]}"
check "ruff format" "$BIN/ruff" format --check -q "${PY_PATHS[@]}"
check "mypy" "$BIN/mypy"
check "shellcheck" "$BIN/shellcheck" -x scripts/*.sh .ci/run benchmarks/device/*.sh
check "cmake-lint" "$BIN/cmake-lint" --suppress-decorations cmake/*.cmake
if [ ${#failed[@]} -gt 0 ]; then
  echo "lint: failed: ${failed[*]} (./scripts/lint.sh --fix fixes what ruff can)" >&2
  exit 1
fi
