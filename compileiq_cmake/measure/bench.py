"""Running a benchmark command: timeouts that kill everything the run started (its process group, its
cgroup or recorded process tree (process_tree.py: also a daemon that left the session and cleared its
environment), and any process that carries the run's marker in its environment), output captured to a
temporary file of which the start and the end are kept, metric parsers (regex, Google Benchmark JSON,
nvbench JSON, wall time) with the checks that make a value a usable time, PASS_REGEX and VERIFY checks."""

from __future__ import annotations

import ctypes
import json
import math
import os
import re
import secrets
import select
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..model.errors import MeasurementError
from ..system.process_tree import Cgroup, Descendants
from ..model.records import Status
from ..model.spec import MetricSpec

_TIME_UNITS_MS = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}
KEEP_BYTES = 4 << 20  # of a longer output, this much of its start and of its end is kept
MAX_OUTPUT_BYTES = 1 << 30  # a run printing more is stopped (the temporary file would fill the disk)
_KILL_GRACE = 5.0  # seconds to wait for a killed benchmark to be reaped
_POLL = 1.0  # seconds between checks of the output size while waiting
MARKER_VARIABLE = "COMPILEIQ_RUN"  # in every benchmark's environment: finds what it left running
_PR_SET_PDEATHSIG = 1
_FIRST_POLL = 0.01  # seconds: the first checks of a run without a cgroup (its tree is recorded at each)
_CGROUP_PREFIX = "compileiq-run-"


@dataclass(frozen=True)
class ProcessResult:
    returncode: int | None  # None: killed by compileiq (see `stopped`)
    output: str
    seconds: float
    omitted: int = 0  # bytes of output dropped from the middle (only the start and the end are kept)
    stopped: str = ""  # why compileiq killed it: "" (it ended), "timeout" or "output" (printed too much)

    @property
    def timed_out(self) -> bool:
        return self.stopped == "timeout"

    def warnings(self) -> tuple[str, ...]:
        if not self.omitted:
            return ()
        return (f"the benchmark prints more than {2 * KEEP_BYTES >> 20} MiB; its output was truncated to the first "
                f"and last {KEEP_BYTES >> 20} MiB (PASS_REGEX, the metric and output comparison see only those)",)


def _marked_pids(marker: str) -> list[int]:
    """Processes (other than this one) whose environment holds MARKER_VARIABLE=marker; [] without /proc."""
    needle = f"{MARKER_VARIABLE}={marker}".encode()
    found = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    for name in names:
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as fh:
                environ = fh.read()
        except OSError:  # gone, or another user's
            continue
        if needle in environ.split(b"\0"):
            found.append(int(name))
    return found


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _kill_marked(marker: str) -> int:
    """SIGKILL every process carrying the run's marker (repeated: they may fork meanwhile); how many."""
    killed = 0
    for _ in range(5):
        pids = _marked_pids(marker)
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
                killed += 1
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.01)
    return killed


def _record_run(pid_file: Path, pgid: int, marker: str, cgroup: Cgroup | None = None) -> None:
    tmp = pid_file.with_name(pid_file.name + ".tmp")
    record = {"pgid": pgid, "marker": marker, **({"cgroup": str(cgroup.path)} if cgroup is not None else {})}
    try:
        pid_file.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(record))
        os.replace(tmp, pid_file)
    except OSError as exc:
        raise MeasurementError(f"cannot record the running benchmark in {pid_file}: {exc.strerror or exc}; "
                               "is the build directory writable?") from None


def kill_leftovers(pid_file: Path) -> int:
    """Kill what a previous run recorded in pid_file left running (the tune died while its benchmark
    ran): every process of that run, found by its cgroup (when it had one) and by the marker in its
    environment (its process group and any detached child; an unrelated process that reuses the group id
    carries no marker and is left alone).
    Without /proc, the recorded process group is killed. Removes the file; returns how many processes
    were killed (0 when the file is missing, unreadable or everything already ended). Empty cgroups of
    killed tunes (any build tree) are removed."""
    Cgroup.remove_stale(_CGROUP_PREFIX)
    try:
        record = json.loads(pid_file.read_text())
        pgid, marker = int(record["pgid"]), str(record["marker"])
    except FileNotFoundError:
        return 0
    except (OSError, ValueError, KeyError, TypeError):
        pid_file.unlink(missing_ok=True)
        return 0
    group = record.get("cgroup")
    if isinstance(group, str) and Path(group).name.startswith(_CGROUP_PREFIX) and Path(group).is_dir():
        killed = Cgroup(Path(group)).kill()  # the run's own cgroup: all of it, detached or not
    else:
        killed = 0
    if os.path.isdir("/proc"):
        killed += _kill_marked(marker)
    else:
        try:
            os.killpg(pgid, signal.SIGKILL)
            killed = 1
        except (ProcessLookupError, PermissionError):
            killed = 0
    pid_file.unlink(missing_ok=True)
    return killed


def _preexec(cgroup: Cgroup | None) -> Callable[[], None] | None:
    """Between fork and exec: into the run's cgroup (if any), then die with the parent (_die_with_parent)."""
    die = _die_with_parent()
    if cgroup is None:
        return die

    def preexec() -> None:
        cgroup.join()
        if die is not None:
            die()

    return preexec


def _die_with_parent() -> Callable[[], None] | None:
    """A preexec function that makes the kernel SIGKILL the child when the process (thread) that started
    it dies (Linux prctl PR_SET_PDEATHSIG); None elsewhere."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def preexec() -> None:
        prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        if os.getppid() != parent:  # the parent died before the prctl
            os.kill(os.getpid(), signal.SIGKILL)

    return preexec


class _ExitWaiter:
    """wait(seconds) -> whether the process has ended; woken at once by a pidfd where the system has one
    (so that a wall-time metric is not rounded up by polling)."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.proc = proc
        try:
            self._pidfd: int | None = os.pidfd_open(proc.pid)
        except (AttributeError, OSError):
            self._pidfd = None

    def wait(self, seconds: float) -> bool:
        if self._pidfd is not None:
            poller = select.poll()
            poller.register(self._pidfd, select.POLLIN)
            if not poller.poll(max(0, int(seconds * 1000))):
                return False
        try:
            self.proc.wait(timeout=seconds)
            return True
        except subprocess.TimeoutExpired:
            return False

    def close(self) -> None:
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None


def _kept_output(fd: int) -> tuple[str, int]:
    """The captured output (start and end when longer than 2 * KEEP_BYTES, cut at line ends, except that the
    end of a last line longer than KEEP_BYTES is kept) and how many bytes were dropped. pread: the file
    offset is shared with whatever may still write to it."""
    size = os.fstat(fd).st_size
    if size <= 2 * KEEP_BYTES:
        data = os.pread(fd, size, 0)
        omitted = 0
    else:
        head = os.pread(fd, KEEP_BYTES, 0)
        tail = os.pread(fd, KEEP_BYTES, size - KEEP_BYTES)
        head = head[: head.rfind(b"\n") + 1]
        cut = tail.find(b"\n") + 1
        if tail[cut:].strip():  # a whole line starts in the tail: cut there
            tail = tail[cut:]
        # else the last line is longer than the tail: its end is kept (the metric is read at the last match)
        omitted = size - len(head) - len(tail)
        data = head + tail
    text = data.decode(errors="replace").replace("\r\n", "\n").replace("\r", "\n")
    return text, omitted


def _wait_for(proc: subprocess.Popen, fd: int, timeout: float, tree: Descendants | None = None) -> str:
    """Wait for the end of the run: "" when it ended, "timeout" or "output" (printed too much). `tree`: the
    run's descendants, recorded at each check (often at first, when a daemon's parent still lives)."""
    deadline = time.monotonic() + timeout
    waiter = _ExitWaiter(proc)
    interval = _POLL if tree is None else _FIRST_POLL
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return "timeout"
            if waiter.wait(min(interval, left)):
                return ""
            if tree is not None:
                tree.poll()
            interval = min(_POLL, 2 * interval)
            if os.fstat(fd).st_size > MAX_OUTPUT_BYTES:
                return "output"
    finally:
        waiter.close()


def run_process(argv: list[str], cwd: Path, timeout: float, pid_file: Path | None = None,
                env: dict[str, str] | None = None) -> ProcessResult:
    """Run argv in its own session (and its own cgroup where this process may make one), output (stdout
    and stderr) to an anonymous temporary file. When it ends or times out, its cgroup (else its recorded
    process tree and what holds its output), its process group and every process carrying its marker are
    killed: nothing it started outlives it, and nothing it left holding the output makes the tune wait. On Linux it is
    killed when the calling thread's process dies. While it runs, pid_file (if given) records its
    process group and marker for kill_leftovers."""
    marker = f"{os.getpid()}-{secrets.token_hex(8)}"
    env = {**os.environ, **(env or {}), MARKER_VARIABLE: marker}  # env: e.g. the GPU of the run
    cgroup = Cgroup.create(_CGROUP_PREFIX + marker)
    with tempfile.TemporaryFile(prefix="compileiq-output-") as capture:
        fd = capture.fileno()
        start = time.perf_counter()
        try:
            proc = subprocess.Popen(argv, cwd=cwd, stdout=fd, stderr=subprocess.STDOUT,
                                    env=env, start_new_session=True, preexec_fn=_preexec(cgroup))
        except (OSError, subprocess.SubprocessError) as exc:
            if cgroup is not None:
                cgroup.kill()
            return ProcessResult(returncode=127, output=f"cannot start {argv[0]}: {exc}", seconds=0.0)
        # without a cgroup that holds the run: its process tree, recorded while it runs
        tree = None if cgroup is not None and cgroup.holds(proc.pid) else Descendants(proc.pid, fd)
        stopped, seconds = "interrupted", 0.0
        try:
            if pid_file is not None:
                _record_run(pid_file, proc.pid, marker, cgroup)
            stopped = _wait_for(proc, fd, timeout, tree)
            seconds = time.perf_counter() - start
        finally:  # also when the tune itself is interrupted: nothing of the run is left behind
            if tree is not None:
                tree.kill()  # first: killing the group would cut the parent links it follows
            if cgroup is not None:
                cgroup.kill()
            _kill_group(proc.pid)
            _kill_marked(marker)
            if stopped:
                try:
                    proc.wait(timeout=_KILL_GRACE)
                except subprocess.TimeoutExpired:  # unkillable (e.g. stuck in the kernel): not waited for
                    pass
            if pid_file is not None:
                pid_file.unlink(missing_ok=True)
        output, omitted = _kept_output(fd)
    return ProcessResult(None if stopped else proc.returncode, output, seconds, omitted, stopped)


def _geomean(values: list[float]) -> float | None:
    """Geometric mean; a value that is not a positive finite time is returned as it is, so that the run is
    invalid with it as the reason (not silently left out)."""
    if not values:
        return None
    for v in values:
        if not (math.isfinite(v) and v > 0):
            return v
    return math.exp(sum(math.log(v) for v in values) / len(values))


def parse_gbench(text: str) -> float | None:
    """Geometric mean of the real times (ms) of a Google Benchmark JSON report (aggregates skipped)."""
    start = text.find("{")
    if start < 0:
        return None
    try:
        report = json.loads(text[start:])
        times = [
            float(b["real_time"]) * _TIME_UNITS_MS.get(b.get("time_unit", "ns"), 1e-6)
            for b in report.get("benchmarks", [])
            if b.get("run_type", "iteration") == "iteration" and "real_time" in b
        ]
    except (json.JSONDecodeError, AttributeError, TypeError, ValueError):
        return None
    return _geomean(times)


def parse_nvbench(path: Path) -> float | None:
    """Geometric mean (ms) of the 'nv/cold/time/gpu/mean' summaries of an nvbench --json file."""
    try:
        report = json.loads(path.read_text())
        times = [
            float(datum["value"]) * 1e3
            for bench in report.get("benchmarks", [])
            for state in bench.get("states", [])
            for summary in state.get("summaries", []) or []
            if summary.get("tag") == "nv/cold/time/gpu/mean"
            for datum in summary.get("data", [])
            if datum.get("name") == "value"
        ]
    except (OSError, json.JSONDecodeError, AttributeError, KeyError, TypeError, ValueError):
        return None
    return _geomean(times)


def parse_regex(pattern: str, text: str) -> float | None:
    """The capture group of the LAST match of the pattern in the output."""
    return read_regex(pattern, text).value


@dataclass(frozen=True)
class MetricReading:
    value: float | None  # None: not found, or not a number (see problem)
    printed: str = ""  # regex metrics: the number as the program printed it (last match)
    problem: str = ""  # why the value cannot be used ("" when it can, or when nothing matched)
    warning: str = ""


def read_regex(pattern: str, text: str) -> MetricReading:
    """The capture group of the LAST match (documented: a program that prints the metric several times is
    read at its last line), with a warning when the matches disagree."""
    printed = [m.group(1) for m in re.finditer(pattern, text, flags=re.MULTILINE)]
    if not printed:
        return MetricReading(None)
    last = printed[-1]
    try:
        values = {repr(float(p)) for p in printed if p is not None}
        value = float(last)
    except (TypeError, ValueError):
        return MetricReading(None, last or "", f"metric {pattern!r} matched {last!r}, which is not a number")
    warning = ""
    if len(values) > 1:
        warning = (f"the metric {pattern!r} is printed several times per run with different values; "
                   "the last one printed counts")
    return MetricReading(value, last, "", warning)


def value_problem(value: float, metric: MetricSpec) -> str:
    """Why a metric value cannot be compared ("" when it can): results are compared as ratios (logs), so
    it must be a positive finite number; for a time (lower is better), zero or less is no time at all."""
    if not math.isfinite(value):
        return f"metric is {value}: not a finite number ({metric.label})"
    if value <= 0:
        what = "time" if metric.lower_is_better or metric.kind != "regex" else "value (results are compared as ratios)"
        return f"metric is {value}: not a positive {what} ({metric.label})"
    return ""


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


def _read_metric(metric: MetricSpec, res: ProcessResult, json_path: Path | None) -> MetricReading:
    if metric.kind == "regex":
        return read_regex(metric.pattern, res.output)
    if metric.kind == "gbench":
        return MetricReading(parse_gbench(res.output))
    if metric.kind == "nvbench":
        return MetricReading(parse_nvbench(json_path) if json_path else None)
    return MetricReading(res.seconds * 1e3)


def _outcome(res: ProcessResult, metric: MetricSpec, pass_regex: str | None, timeout: float,
             json_path: Path | None) -> RunOutcome:
    out, secs, warnings = res.output, res.seconds, res.warnings()
    if res.timed_out:
        return RunOutcome(Status.TIMEOUT, None, f"timed out after {timeout:.0f} s", secs, out, warnings=warnings)
    if res.stopped == "output":
        return RunOutcome(Status.RUN_FAILED, None, f"stopped: printed more than {MAX_OUTPUT_BYTES >> 30} GiB of output",
                          secs, out, warnings=warnings)
    if res.returncode != 0:
        what = f"killed by signal {-res.returncode}" if res.returncode < 0 else f"exit code {res.returncode}"
        return RunOutcome(Status.RUN_FAILED, None, f"benchmark failed ({what})", secs, out, warnings=warnings)
    if pass_regex is not None and not re.search(pass_regex, out, flags=re.MULTILINE):
        return RunOutcome(Status.PASS_MISSING, None, f"PASS_REGEX {pass_regex!r} not in output", secs, out,
                          warnings=warnings)
    reading = _read_metric(metric, res, json_path)
    warnings += (reading.warning,) if reading.warning else ()
    problem = reading.problem or (value_problem(reading.value, metric) if reading.value is not None else "")
    if problem:
        return RunOutcome(Status.RUN_FAILED, None, problem, secs, out, reading.printed, warnings)
    if reading.value is None:
        return RunOutcome(Status.METRIC_MISSING, None, f"metric {metric.label!r} not found in output", secs, out,
                          warnings=warnings)
    return RunOutcome(Status.OK, reading.value, "", secs, out, reading.printed, warnings)


def run_benchmark(argv: list[str], cwd: Path, metric: MetricSpec, pass_regex: str | None, timeout: float,
                  pid_file: Path | None = None, env: dict[str, str] | None = None) -> RunOutcome:
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
        return _outcome(run_process(argv + extra, cwd, timeout, pid_file, env), metric, pass_regex, timeout, json_path)
    finally:
        if json_path is not None:
            json_path.unlink(missing_ok=True)


def run_verify(argv: list[str], cwd: Path, timeout: float, pid_file: Path | None = None,
               env: dict[str, str] | None = None) -> RunOutcome:
    res = run_process(argv, cwd, timeout, pid_file, env)
    if res.returncode is None:
        why = f"timed out after {timeout:.0f} s" if res.timed_out else "stopped: printed too much output"
        return RunOutcome(Status.VERIFY_FAILED, None, f"VERIFY {why}", res.seconds, res.output[-600:])
    if res.returncode != 0:
        return RunOutcome(Status.VERIFY_FAILED, None, f"VERIFY failed (exit code {res.returncode})", res.seconds, res.output[-600:])
    return RunOutcome(Status.OK, None, "", res.seconds, "")
