#!/usr/bin/env bash
# The test command: sets up .venv (Python >= 3.11), installs the package with its test extra, and runs
# pytest on tests/ against the installed package. Extra arguments go to pytest. `--fast` (first argument)
# runs the unit tier only (-m unit: no cmake, compiler, GPU, Ray or browser; markers in pyproject.toml).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check '.[test]'
export PATH="$PWD/.venv/bin:$PATH"
if [ "${1:-}" = "--fast" ]; then
  shift
  set -- -m unit "$@"
fi
exec pytest "$@"
