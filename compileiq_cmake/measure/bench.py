"""Running a benchmark: one run of the benchmark command (through the one runner, system/processes.py,
which kills everything the run started) judged into a RunOutcome (exit status, PASS_REGEX, the metric read
by metrics.py and checked as a usable time), and VERIFY runs."""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..model.records import Status
from ..model.spec import MetricSpec
from ..model.timebox import Stop
from ..system.processes import KEEP_BYTES, MAX_OUTPUT_BYTES, ProcessResult, run_process
from .metrics import pass_problem, read_metric, value_problem


def _truncation_warnings(res: ProcessResult) -> tuple[str, ...]:
    """The warning for an output of which only the start and the end were kept (none otherwise)."""
    if not res.omitted:
        return ()
    return (
        f"the benchmark prints more than {2 * KEEP_BYTES >> 20} MiB; its output was truncated to the first "
        f"and last {KEEP_BYTES >> 20} MiB (PASS_REGEX, the metric and output comparison see only those)",
    )


@dataclass(frozen=True)
class RunOutcome:
    status: Status
    value: float | None
    reason: str
    seconds: float
    output: str  # what the command printed (stdout and stderr; start and end of a very long output)
    printed: str = ""  # regex metrics: the metric as the program printed it
    warnings: tuple[str, ...] = ()  # the same text for every run, so that a caller can print each once

    def last_line(self) -> str:
        lines = self.output.strip().splitlines()
        return lines[-1][:200] if lines else "no output"


def _outcome(
    res: ProcessResult, metric: MetricSpec, pass_regex: str | None, timeout: float, json_path: Path | None
) -> RunOutcome:
    out, secs, warnings = res.output, res.seconds, _truncation_warnings(res)
    if res.cancelled:
        return RunOutcome(Status.CANCELLED, None, res.cancelled, secs, out, warnings=warnings)
    if res.timed_out:
        return RunOutcome(Status.TIMEOUT, None, f"timed out after {timeout:.0f} s", secs, out, warnings=warnings)
    if res.stopped == "output":
        return RunOutcome(
            Status.RUN_FAILED,
            None,
            f"stopped: printed more than {MAX_OUTPUT_BYTES >> 30} GiB of output",
            secs,
            out,
            warnings=warnings,
        )
    if res.returncode is not None and res.returncode != 0:
        what = f"killed by signal {-res.returncode}" if res.returncode < 0 else f"exit code {res.returncode}"
        return RunOutcome(Status.RUN_FAILED, None, f"benchmark failed ({what})", secs, out, warnings=warnings)
    missing = pass_problem(pass_regex, out, metric.regex_seconds)
    if missing:
        return RunOutcome(Status.PASS_MISSING, None, missing, secs, out, warnings=warnings)
    reading = read_metric(metric, out, secs, json_path)
    warnings += (reading.warning,) if reading.warning else ()
    problem = reading.problem or (value_problem(reading.value, metric) if reading.value is not None else "")
    if problem:
        return RunOutcome(Status.RUN_FAILED, None, problem, secs, out, reading.printed, warnings)
    if reading.value is None:
        return RunOutcome(
            Status.METRIC_MISSING, None, f"metric {metric.label!r} not found in output", secs, out, warnings=warnings
        )
    return RunOutcome(Status.OK, reading.value, "", secs, out, reading.printed, warnings)


def run_benchmark(
    argv: list[str],
    cwd: Path,
    metric: MetricSpec,
    pass_regex: str | None,
    timeout: float,
    pid_file: Path | None = None,
    env: dict[str, str] | None = None,
    stop: Stop | None = None,
) -> RunOutcome:
    """One run of the benchmark command; the outcome is OK only if it exited 0, printed PASS_REGEX (if
    given) and the metric could be read as a positive finite number."""
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
        return _outcome(
            run_process(argv + extra, cwd, timeout, pid_file, env, stop), metric, pass_regex, timeout, json_path
        )
    finally:
        if json_path is not None:
            json_path.unlink(missing_ok=True)


def run_verify(
    argv: list[str],
    cwd: Path,
    timeout: float,
    pid_file: Path | None = None,
    env: dict[str, str] | None = None,
    stop: Stop | None = None,
) -> RunOutcome:
    res = run_process(argv, cwd, timeout, pid_file, env, stop)
    if res.cancelled:
        return RunOutcome(Status.CANCELLED, None, res.cancelled, res.seconds, "")
    if res.returncode is None:
        why = f"timed out after {timeout:.0f} s" if res.timed_out else "stopped: printed too much output"
        return RunOutcome(Status.VERIFY_FAILED, None, f"VERIFY {why}", res.seconds, res.output[-600:])
    if res.returncode != 0:
        return RunOutcome(
            Status.VERIFY_FAILED, None, f"VERIFY failed (exit code {res.returncode})", res.seconds, res.output[-600:]
        )
    return RunOutcome(Status.OK, None, "", res.seconds, "")
