"""Running a benchmark command: process-group timeouts, metric parsers (regex, Google Benchmark JSON,
nvbench JSON, wall time), PASS_REGEX and VERIFY checks."""

from __future__ import annotations

import json
import math
import os
import re
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from .records import Status
from .spec import MetricSpec

_TIME_UNITS_MS = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}


@dataclass(frozen=True)
class ProcessResult:
    returncode: int | None  # None: killed on timeout
    output: str
    seconds: float

    @property
    def timed_out(self) -> bool:
        return self.returncode is None


def run_process(argv: list[str], cwd: Path, timeout: float) -> ProcessResult:
    """Run argv in its own process group; on timeout the whole group is killed."""
    start = time.perf_counter()
    try:
        proc = subprocess.Popen(
            argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            errors="replace", start_new_session=True,
        )
    except OSError as exc:
        return ProcessResult(returncode=127, output=f"cannot start {argv[0]}: {exc}", seconds=0.0)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, _ = proc.communicate()
        return ProcessResult(returncode=None, output=out or "", seconds=time.perf_counter() - start)
    return ProcessResult(returncode=proc.returncode, output=out or "", seconds=time.perf_counter() - start)


def _geomean(values: list[float]) -> float | None:
    values = [v for v in values if v > 0]
    if not values:
        return None
    return math.exp(sum(math.log(v) for v in values) / len(values))


def parse_gbench(text: str) -> float | None:
    """Geometric mean of the real times (ms) of a Google Benchmark JSON report (aggregates skipped)."""
    start = text.find("{")
    if start < 0:
        return None
    try:
        report = json.loads(text[start:])
    except json.JSONDecodeError:
        return None
    times = [
        b["real_time"] * _TIME_UNITS_MS.get(b.get("time_unit", "ns"), 1e-6)
        for b in report.get("benchmarks", [])
        if b.get("run_type", "iteration") == "iteration" and "real_time" in b
    ]
    return _geomean(times)


def parse_nvbench(path: Path) -> float | None:
    """Geometric mean (ms) of the 'nv/cold/time/gpu/mean' summaries of an nvbench --json file."""
    try:
        report = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None
    times: list[float] = []
    for bench in report.get("benchmarks", []):
        for state in bench.get("states", []):
            for summary in state.get("summaries", []) or []:
                if summary.get("tag") != "nv/cold/time/gpu/mean":
                    continue
                for datum in summary.get("data", []):
                    if datum.get("name") == "value":
                        times.append(float(datum["value"]) * 1e3)
    return _geomean(times)


def parse_regex(pattern: str, text: str) -> float | None:
    """The capture group of the LAST match of the pattern in the output."""
    matches = list(re.finditer(pattern, text, flags=re.MULTILINE))
    if not matches:
        return None
    try:
        return float(matches[-1].group(1))
    except (ValueError, IndexError):
        return None


@dataclass(frozen=True)
class RunOutcome:
    status: Status
    value: float | None
    reason: str
    seconds: float
    output: str  # everything the command printed (stdout and stderr)

    def last_line(self) -> str:
        lines = self.output.strip().splitlines()
        return lines[-1][:200] if lines else "no output"


def run_benchmark(
    argv: list[str], cwd: Path, metric: MetricSpec, pass_regex: str | None, timeout: float
) -> RunOutcome:
    """One run of the benchmark command; the outcome is OK only if it exited 0, printed PASS_REGEX (if
    given) and the metric could be read."""
    extra: list[str] = []
    json_path: Path | None = None
    if metric.kind == "gbench":
        extra = ["--benchmark_format=json"]
    elif metric.kind == "nvbench":
        handle, name = tempfile.mkstemp(prefix="compileiq-nvbench-", suffix=".json")
        os.close(handle)
        json_path = Path(name)
        extra = ["--json", str(json_path)]
    try:
        res = run_process(argv + extra, cwd, timeout)
        tail = res.output
        if res.timed_out:
            return RunOutcome(Status.TIMEOUT, None, f"timed out after {timeout:.0f} s", res.seconds, tail)
        if res.returncode != 0:
            what = f"killed by signal {-res.returncode}" if res.returncode < 0 else f"exit code {res.returncode}"
            return RunOutcome(Status.RUN_FAILED, None, f"benchmark failed ({what})", res.seconds, tail)
        if pass_regex is not None and not re.search(pass_regex, res.output, flags=re.MULTILINE):
            return RunOutcome(Status.PASS_MISSING, None, f"PASS_REGEX {pass_regex!r} not in output", res.seconds, tail)
        if metric.kind == "regex":
            value = parse_regex(metric.pattern, res.output)
        elif metric.kind == "gbench":
            value = parse_gbench(res.output)
        elif metric.kind == "nvbench":
            value = parse_nvbench(json_path) if json_path else None
        else:
            value = res.seconds * 1e3
        if value is None or not math.isfinite(value):
            return RunOutcome(Status.METRIC_MISSING, None, f"metric {metric.label!r} not found in output", res.seconds, tail)
        return RunOutcome(Status.OK, value, "", res.seconds, res.output)
    finally:
        if json_path is not None:
            json_path.unlink(missing_ok=True)


def run_verify(argv: list[str], cwd: Path, timeout: float) -> RunOutcome:
    res = run_process(argv, cwd, timeout)
    if res.timed_out:
        return RunOutcome(Status.VERIFY_FAILED, None, f"VERIFY timed out after {timeout:.0f} s", res.seconds, res.output[-600:])
    if res.returncode != 0:
        return RunOutcome(Status.VERIFY_FAILED, None, f"VERIFY failed (exit code {res.returncode})", res.seconds, res.output[-600:])
    return RunOutcome(Status.OK, None, "", res.seconds, "")
