#!/usr/bin/env bash
# The test command: sets up .venv (Python >= 3.11), installs the package with its test extra, and runs
# pytest on tests/ against the installed package. Extra arguments go to pytest.
#   ./scripts/test.sh            the full suite in two phases: every test but the `serial` and `ray` ones on
#                                all cores (pytest-xdist, -n $TEST_JOBS, default: the number of CPUs), then
#                                those alone (they assert on wall time, kill at a moment or start Ray)
#   ./scripts/test.sh --fast     the unit tier only (-m unit: no cmake, compiler, GPU, Ray or browser), with two
#                                workers per CPU (-n $FAST_JOBS): its tests wait on sleeping programs, kills and
#                                locks much of the time (2 cores: 90 s with -n 2, 68 s with -n 4)
#   ./scripts/test.sh ARGS       with a test path, -k or -m in ARGS: plain `pytest ARGS`, one process
# Markers: pyproject.toml.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check '.[test]'
export PATH="$PWD/.venv/bin:$PATH"
JOBS=${TEST_JOBS:-$(nproc)}
if [ "${1:-}" = "--fast" ]; then
  shift
  exec pytest -n "${FAST_JOBS:-$((2 * JOBS))}" -m unit "$@"
fi
for arg in "$@"; do
  case "$arg" in
    -k|-m|-k*|-m*|tests*|*.py|*::*) exec pytest "$@" ;;
  esac
done
status=0
pytest -n "$JOBS" -m "not serial and not ray" "$@" || status=$?
pytest -m "serial or ray" "$@" || status=$((status ? status : $?))
exit "$status"
