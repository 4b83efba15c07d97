"""Issue 10, benchmark runs: no hang on a detached child holding the output, no orphans, bounded output,
no benchmark outliving the tune, and metric values that cannot be a time make the run invalid with the
real reason. Real processes; time limits are generous (the machine may be loaded)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from compileiq_cmake.measure.bench import run_benchmark
from compileiq_cmake.measure.metrics import parse_gbench
from compileiq_cmake.model.records import Status
from compileiq_cmake.model.spec import MetricSpec
from compileiq_cmake.system.processes import kill_leftovers, run_process

PY = sys.executable
REGEX = MetricSpec.parse(r"time_ms=(\S+)", lower_is_better=True)
THROUGHPUT = MetricSpec.parse(r"gflops=(\S+)", lower_is_better=False)


def _script(tmp_path: Path, body: str, name: str = "bench.py") -> list[str]:
    path = tmp_path / name
    path.write_text(body)
    return [PY, str(path)]


def _alive(pid: int) -> bool:
    """Whether pid is a live (not zombie) process."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _wait_dead(pid: int, within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.1)
    return False


def _wait_file(path: Path, within: float = 30.0) -> str:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return path.read_text().strip()
        time.sleep(0.05)
    raise AssertionError(f"{path} never appeared")


def _detached_child(tmp_path: Path, pid_path: Path, seconds: int = 25) -> str:
    """Code that starts a child in its own session (setsid), holding the benchmark's stdout."""
    child = tmp_path / "detached.py"
    child.write_text(f"import os, time\nopen({str(pid_path)!r}, 'w').write(str(os.getpid()))\ntime.sleep({seconds})\n")
    return f"import subprocess, sys\nsubprocess.Popen([sys.executable, {str(child)!r}], start_new_session=True)\n"


@pytest.mark.unit
def test_setsid_child_holding_stdout_does_not_outlive_the_timeout(tmp_path):
    pid_path = tmp_path / "child.pid"
    body = _detached_child(tmp_path, pid_path) + "import time\ntime.sleep(60)\n"
    start = time.monotonic()
    out = run_benchmark(_script(tmp_path, body), tmp_path, REGEX, None, timeout=3)
    assert out.status is Status.TIMEOUT
    assert time.monotonic() - start < 20, "the run waited for the detached child after the timeout"
    assert _wait_dead(int(_wait_file(pid_path))), "the detached child survived the timeout"


@pytest.mark.unit
def test_finished_benchmark_with_a_setsid_child_holding_stdout_returns_and_leaves_no_orphan(tmp_path):
    pid_path = tmp_path / "child.pid"
    body = (
        _detached_child(tmp_path, pid_path)
        + f"import time\nwhile not __import__('os').path.exists({str(pid_path)!r}): "
        "time.sleep(0.05)\nprint('time_ms=2.5')\n"
    )
    start = time.monotonic()
    out = run_benchmark(_script(tmp_path, body), tmp_path, REGEX, None, timeout=60)
    assert out.status is Status.OK and out.value == 2.5, out.reason
    assert time.monotonic() - start < 20, "the run waited for the detached child's end of the output"
    assert _wait_dead(int(_wait_file(pid_path))), "the benchmark left an orphan process"


@pytest.mark.unit
def test_double_forked_daemon_is_killed_with_the_run(tmp_path):
    pid_path = tmp_path / "daemon.pid"
    body = (
        "import os, sys, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        "        devnull = os.open(os.devnull, os.O_RDWR)\n"
        "        for fd in (0, 1, 2): os.dup2(devnull, fd)\n"
        f"        open({str(pid_path)!r}, 'w').write(str(os.getpid()))\n"
        "        time.sleep(30)\n"
        "    os._exit(0)\n"
        f"while not os.path.exists({str(pid_path)!r}): time.sleep(0.05)\n"
        "print('time_ms=1.5')\n"
    )
    out = run_benchmark(_script(tmp_path, body), tmp_path, REGEX, None, timeout=60)
    assert out.status is Status.OK, out.reason
    assert _wait_dead(int(_wait_file(pid_path))), "a fully detached child of the benchmark was left running"


@pytest.mark.unit
def test_huge_output_is_kept_bounded_and_said_to_be_truncated(tmp_path):
    body = (
        "import sys\nline = 'x' * 99 + '\\n'\nfor _ in range(300000): sys.stdout.write(line)\n"
        "print('time_ms=2.5')\nprint('PASS')\n"
    )
    out = run_benchmark(_script(tmp_path, body), tmp_path, REGEX, "PASS", timeout=120)
    assert out.status is Status.OK and out.value == 2.5, out.reason
    assert len(out.output) < 12 << 20, f"{len(out.output)} characters of output kept"
    assert any("truncated" in w for w in out.warnings), out.warnings
    assert "x" * 99 + "\ntime_ms=2.5" in out.output  # whole lines at the cut, the end kept


_PARENT = """
import sys
from pathlib import Path
from compileiq_cmake.system.processes import run_process
run_process([sys.executable, sys.argv[1]], Path(sys.argv[2]), 120, pid_file=Path(sys.argv[3]))
"""


def _tune_that_dies(tmp_path: Path, bench_body: str) -> tuple[subprocess.Popen, Path]:
    bench = tmp_path / "long_bench.py"
    bench.write_text(bench_body)
    parent = tmp_path / "parent.py"
    parent.write_text(_PARENT)
    pid_file = tmp_path / "state" / "bench.pid"
    pid_file.parent.mkdir()
    proc = subprocess.Popen([PY, str(parent), str(bench), str(tmp_path), str(pid_file)], cwd="/")
    return proc, pid_file


@pytest.mark.unit
def test_benchmark_dies_with_the_tune_and_leftovers_are_killed_on_the_next_start(tmp_path):
    bench_pid, grandchild_pid = tmp_path / "bench.pid.txt", tmp_path / "grandchild.pid.txt"
    grandchild = tmp_path / "grandchild.py"
    grandchild.write_text(
        f"import os, time\nopen({str(grandchild_pid)!r}, 'w').write(str(os.getpid()))\ntime.sleep(60)\n"
    )
    body = (
        "import os, subprocess, sys, time\n"
        f"subprocess.Popen([sys.executable, {str(grandchild)!r}])\n"
        f"open({str(bench_pid)!r}, 'w').write(str(os.getpid()))\n"
        "time.sleep(60)\n"
    )
    tune, pid_file = _tune_that_dies(tmp_path, body)
    try:
        bench = int(_wait_file(bench_pid))
        child = int(_wait_file(grandchild_pid))
        assert pid_file.is_file(), "the running benchmark's process group was not recorded"
        tune.send_signal(signal.SIGKILL)
        tune.wait(30)
        assert _wait_dead(bench), "the benchmark survived the death of the tune"
        assert _alive(child)  # only the direct child gets the parent-death signal
        assert kill_leftovers(pid_file) >= 1
        assert _wait_dead(child), "kill_leftovers left the previous run's process group running"
        assert not pid_file.exists()
        assert kill_leftovers(pid_file) == 0  # nothing recorded: nothing to do
    finally:
        for path in (bench_pid, grandchild_pid):
            if path.exists():
                try:
                    os.kill(int(path.read_text()), signal.SIGKILL)
                except (ProcessLookupError, ValueError):
                    pass


@pytest.mark.unit
def test_pid_file_is_removed_after_a_normal_run_and_a_stale_one_kills_nothing(tmp_path):
    pid_file = tmp_path / "bench.pid"
    res = run_process([PY, "-c", "print('hi')"], tmp_path, 30, pid_file=pid_file)
    assert res.returncode == 0 and res.output == "hi\n"
    assert not pid_file.exists()
    sleeper = subprocess.Popen([PY, "-c", "import time; time.sleep(30)"], start_new_session=True)
    try:
        # a record naming a live group that is not a compileiq run (the pid was reused): left alone
        pid_file.write_text(json.dumps({"pgid": sleeper.pid, "marker": "not-this-one"}))
        assert kill_leftovers(pid_file) == 0 and sleeper.poll() is None
        pid_file.write_text("garbage")
        assert kill_leftovers(pid_file) == 0 and not pid_file.exists()
    finally:
        sleeper.kill()
        sleeper.wait()


def _value_run(tmp_path: Path, printed: str, metric: MetricSpec = REGEX):
    return run_benchmark(_script(tmp_path, f"print({printed!r})"), tmp_path, metric, None, 30)


@pytest.mark.unit
def test_negative_and_zero_times_make_the_run_invalid_with_the_reason(tmp_path):
    out = _value_run(tmp_path, "time_ms=-3.2")
    assert out.status is not Status.OK and "metric is -3.2: not a positive time" in out.reason
    out = _value_run(tmp_path, "time_ms=0")
    assert out.status is not Status.OK and "metric is 0.0: not a positive time" in out.reason
    out = _value_run(tmp_path, "gflops=0", THROUGHPUT)
    assert out.status is not Status.OK and "metric is 0.0" in out.reason
    assert _value_run(tmp_path, "gflops=12.5", THROUGHPUT).value == 12.5


@pytest.mark.unit
def test_non_finite_metric_is_invalid_with_the_reason_not_never_matched(tmp_path):
    for printed, shown in (("nan", "nan"), ("inf", "inf"), ("1e999", "inf"), ("-inf", "-inf")):
        out = _value_run(tmp_path, f"time_ms={printed}")
        assert out.status is Status.RUN_FAILED, (printed, out)
        assert f"metric is {shown}" in out.reason and "not found" not in out.reason, out.reason
    out = _value_run(tmp_path, "time_ms=abc")
    assert out.status is Status.RUN_FAILED and "'abc'" in out.reason and "not a number" in out.reason


@pytest.mark.unit
def test_gbench_with_a_zero_time_is_invalid(tmp_path):
    report = {
        "benchmarks": [
            {"name": "a", "run_type": "iteration", "real_time": 2.0, "time_unit": "ms"},
            {"name": "b", "run_type": "iteration", "real_time": 0.0, "time_unit": "ms"},
        ]
    }
    assert parse_gbench(json.dumps(report)) == 0.0  # not silently the geomean of the others
    body = f"import sys\nprint({json.dumps(report)!r})\n"
    out = run_benchmark(_script(tmp_path, body), tmp_path, MetricSpec.parse("GBENCH", True), None, 30)
    assert out.status is not Status.OK and "not a positive time" in out.reason


@pytest.mark.unit
def test_metric_printed_several_times_with_different_values_warns_once_and_last_counts(tmp_path):
    argv = _script(tmp_path, "print('time_ms=5.0'); print('time_ms=2.5'); print('time_ms=2.5')")
    out = run_benchmark(argv, tmp_path, REGEX, None, 30)
    assert out.status is Status.OK and out.value == 2.5
    assert len(out.warnings) == 1 and "different values" in out.warnings[0] and "last" in out.warnings[0]
    argv = _script(tmp_path, "print('time_ms=2.5'); print('time_ms=2.5')")
    assert run_benchmark(argv, tmp_path, REGEX, None, 30).warnings == ()
