#!/usr/bin/env bash
# Line coverage of the installed package over the whole suite, both phases of ./scripts/test.sh (the
# parallel one and the serial/ray one, appended), in-process lines only (the CLI runs that tests start as
# subprocesses are not traced). Writes build/coverage/coverage.json and prints the per-module table.
#   ./scripts/coverage.sh                      the whole suite
#   ./scripts/coverage.sh --fast               the unit tier only
# Compare two runs (e.g. before and after a restructuring) with scripts/coverage_compare.py.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check '.[test]' pytest-cov
export PATH="$PWD/.venv/bin:$PATH"
# the installed copy, by path: --cov=compileiq_cmake would name the source folder here, which the tests never run
ROOT=$PWD
PKG=$(cd / && "$ROOT/.venv/bin/python" -c 'import compileiq_cmake, os; print(os.path.dirname(compileiq_cmake.__file__))')
OUTDIR=build/coverage
mkdir -p "$OUTDIR"
rm -f .coverage .coverage.*
JOBS=${TEST_JOBS:-$(nproc)}
COV=(--cov="$PKG" -p no:cacheprovider)
if [ "${1:-}" = "--fast" ]; then
  shift
  exec pytest -q -n "$JOBS" -m unit "${COV[@]}" --cov-report="json:$OUTDIR/coverage.json" --cov-report=term "$@"
fi
status=0
pytest -q -n "$JOBS" -m "not serial and not ray" "${COV[@]}" --cov-report= "$@" || status=$?
pytest -q -m "serial or ray" "${COV[@]}" --cov-append --cov-report="json:$OUTDIR/coverage.json" --cov-report=term "$@" \
  || status=$((status ? status : $?))
exit "$status"
