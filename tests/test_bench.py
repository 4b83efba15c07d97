import json
import sys
import time
from pathlib import Path

import pytest

from compileiq_cmake.measure.bench import run_benchmark
from compileiq_cmake.measure.metrics import parse_gbench, parse_nvbench, parse_regex
from compileiq_cmake.model.records import Status
from compileiq_cmake.model.spec import MetricSpec
from compileiq_cmake.system.processes import run_process

PY = sys.executable
REGEX = MetricSpec.parse(r"time_ms=([0-9.eE+-]+)", lower_is_better=True)


def _script(tmp_path: Path, body: str) -> list[str]:
    path = tmp_path / "bench.py"
    path.write_text(body)
    return [PY, str(path)]


@pytest.mark.unit
def test_regex_metric_takes_the_last_match_and_pass_regex(tmp_path):
    argv = _script(tmp_path, "print('time_ms=5.0'); print('time_ms=2.5'); print('PASS')")
    out = run_benchmark(argv, tmp_path, REGEX, "PASS", timeout=30)
    assert out.status is Status.OK and out.value == 2.5


@pytest.mark.unit
def test_exit_code_zero_without_pass_is_invalid(tmp_path):
    argv = _script(tmp_path, "print('time_ms=1.0'); print('FAIL: max error 3e-2')")
    out = run_benchmark(argv, tmp_path, REGEX, "PASS", timeout=30)
    assert out.status is Status.PASS_MISSING


@pytest.mark.unit
def test_nonzero_exit_crash_and_missing_metric_are_invalid(tmp_path):
    assert (
        run_benchmark(
            _script(tmp_path, "import sys; print('time_ms=1'); sys.exit(3)"), tmp_path, REGEX, None, 30
        ).status
        is Status.RUN_FAILED
    )
    crash = run_benchmark(
        _script(tmp_path, "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"), tmp_path, REGEX, None, 30
    )
    assert crash.status is Status.RUN_FAILED and "signal 11" in crash.reason
    assert (
        run_benchmark(_script(tmp_path, "print('elapsed 3 ms')"), tmp_path, REGEX, None, 30).status
        is Status.METRIC_MISSING
    )


@pytest.mark.unit
def test_timeout_kills_the_whole_process_group(tmp_path):
    marker = tmp_path / "child_alive"
    child = tmp_path / "child.py"
    child.write_text(f"import time\ntime.sleep(3)\nopen({str(marker)!r}, 'w').write('x')\n")
    body = f"import subprocess, sys, time\nsubprocess.Popen([sys.executable, {str(child)!r}])\ntime.sleep(60)\n"
    start = time.perf_counter()
    out = run_benchmark(_script(tmp_path, body), tmp_path, REGEX, None, timeout=1)
    assert out.status is Status.TIMEOUT and time.perf_counter() - start < 10
    time.sleep(3.5)
    assert not marker.exists(), "the benchmark's child survived the timeout"


@pytest.mark.unit
def test_missing_program_is_a_run_failure(tmp_path):
    res = run_process(["/nonexistent/bench"], tmp_path, 5)
    assert res.returncode == 127


@pytest.mark.unit
def test_walltime_metric(tmp_path):
    out = run_benchmark(
        _script(tmp_path, "import time; time.sleep(0.2)"), tmp_path, MetricSpec.parse("WALLTIME", True), None, 30
    )
    assert out.status is Status.OK and 150 < out.value < 5000


@pytest.mark.unit
def test_gbench_and_nvbench_parsers(tmp_path):
    report = {
        "benchmarks": [
            {"name": "a", "run_type": "iteration", "real_time": 2000.0, "time_unit": "us"},
            {"name": "b", "run_type": "iteration", "real_time": 8.0, "time_unit": "ms"},
            {"name": "a_mean", "run_type": "aggregate", "real_time": 1.0, "time_unit": "ms"},
        ]
    }
    assert abs(parse_gbench("noise\n" + json.dumps(report)) - 4.0) < 1e-9
    nv = {
        "benchmarks": [
            {
                "states": [
                    {
                        "summaries": [
                            {
                                "tag": "nv/cold/time/gpu/mean",
                                "data": [{"name": "value", "type": "float64", "value": "0.002"}],
                            },
                            {
                                "tag": "nv/cold/time/cpu/mean",
                                "data": [{"name": "value", "type": "float64", "value": "9"}],
                            },
                        ]
                    }
                ]
            }
        ]
    }
    path = tmp_path / "nv.json"
    path.write_text(json.dumps(nv))
    assert abs(parse_nvbench(path) - 2.0) < 1e-9
    assert parse_regex(r"t=([0-9.]+)", "t=abc") is None
