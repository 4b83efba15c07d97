#!/usr/bin/env bash
# The test command: sets up .venv (Python >= 3.11), installs the package with its test extra, and runs
# pytest on tests/ against the installed package. Extra arguments go to pytest.
#   ./scripts/test.sh            the full suite in two phases: every test but the `serial` and `ray` ones on
#                                all cores (pytest-xdist, -n $TEST_JOBS, default: the number of CPUs; worksteal)
#                                and, beside it in one process of their own, those (time boxes, kills at a moment,
#                                Ray)
#   ./scripts/test.sh --fast     the unit tier only (-m unit: no cmake, compiler, GPU, Ray or browser), with two
#                                workers per CPU (-n $FAST_JOBS), an idle worker taking tests queued for a busy one
#                                (--dist worksteal): its tests wait on sleeping programs, kills and locks much of
#                                the time (2 cores: about 60 s)
#   ./scripts/test.sh ARGS       with a test path, -k or -m in ARGS: plain `pytest ARGS`, one process
# Markers: pyproject.toml.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
# (re)installed when what goes into the wheel changed since the last install (a stamp of its files' contents in
# .venv): a run after a change always tests the change, a second run skips pip's 4 s
stamp=$(find compileiq_cmake cmake templates CMakeLists.txt pyproject.toml README.md -type f \
  ! -path '*/__pycache__/*' -print0 | sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1)
if [ "$(cat .venv/.compileiq-installed 2> /dev/null)" != "$stamp" ]; then
  rm -f .venv/.compileiq-installed
  .venv/bin/python -m pip install -q --disable-pip-version-check '.[test]'
  echo "$stamp" > .venv/.compileiq-installed
fi
export PATH="$PWD/.venv/bin:$PATH"
JOBS=${TEST_JOBS:-$(nproc)}
if [ "${1:-}" = "--fast" ]; then
  shift
  exec pytest -n "${FAST_JOBS:-$((2 * JOBS))}" --dist worksteal -m unit "$@"
fi
for arg in "$@"; do
  case "$arg" in
    -k|-m|-k*|-m*|tests*|*.py|*::*) exec pytest "$@" ;;
  esac
done
# The serial tests (one process, one at a time) run beside the parallel phase, not after it: they spend most of
# their wall time waiting on their time boxes and sleeping benchmarks (about 50 s of CPU in 210 s) and assert on
# the tool's own accounting with margins, not on an idle machine. Their output comes after the parallel phase's.
serial_log=$(mktemp)
trap 'rm -f "$serial_log"' EXIT
pytest -m "serial or ray" "$@" > "$serial_log" 2>&1 &
serial_pid=$!
status=0
pytest -n "$JOBS" --dist worksteal -m "not serial and not ray" "$@" || status=$?
serial_status=0
wait "$serial_pid" || serial_status=$?
echo "---- the serial phase (ran beside the parallel one):"
cat "$serial_log"
exit "$((status ? status : serial_status))"
