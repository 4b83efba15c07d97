"""Running a command with a timeout so that nothing it started outlives it (the one runner of builds,
configures, benchmarks and VERIFY commands): its own session and, where this process may make one, its own
cgroup (else its process tree, recorded while it runs: process_tree.py, which also finds a daemon that left
the session and cleared its environment), a marker in its environment, its output captured to a temporary
file of which the start and the end are kept. At its end, or on a timeout, everything it started is killed:
its cgroup or recorded tree, its session (every process group in it: ninja gives each command one), and
every process carrying its marker. A pid file records the run while it runs, so that the next start
(kill_leftovers) ends what a killed tune left running. A caller may watch the output as it grows (on_output:
a build's progress lines)."""

from __future__ import annotations

import codecs
import ctypes
import json
import os
import secrets
import select
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..model.errors import MeasurementError
from ..model.timebox import Stop
from . import procfs
from .process_tree import Cgroup, Descendants, kill_group, kill_session_and_wait, signal_pid

KEEP_BYTES = 4 << 20  # of a longer output, this much of its start and of its end is kept
MAX_OUTPUT_BYTES = 1 << 30  # a run printing more is stopped (the temporary file would fill the disk)
_KILL_GRACE = 5.0  # seconds to wait for a killed run to be reaped
_POLL = 1.0  # seconds between checks of the output size while waiting
_FEED_EVERY = 0.9  # seconds at least between two reads of the growing output for on_output (one a poll)
MARKER_VARIABLE = "COMPILEIQ_RUN"  # in every run's environment: finds what it left running
_PR_SET_PDEATHSIG = 1
_FIRST_POLL = 0.01  # seconds: the first checks of a run without a cgroup (its tree is recorded at each)
_CGROUP_PREFIX = "compileiq-run-"


@dataclass(frozen=True)
class ProcessResult:
    returncode: int | None  # None: killed by compileiq (see `stopped`)
    output: str  # stdout and stderr, in the order printed (the start and the end of a long output)
    seconds: float
    omitted: int = 0  # bytes of output dropped from the middle (only the start and the end are kept)
    stopped: str = ""  # why compileiq killed it: "" (it ended), "timeout", "output" (printed too much), "cancelled"
    ended: bool = True  # False: some of its processes could not be ended (e.g. stuck in the kernel)
    cancelled: str = ""  # stopped by the tune's Stop token: its reason (interrupted, cancelled, the box ended)

    @property
    def timed_out(self) -> bool:
        return self.stopped == "timeout"


def _marked_pids(marker: str) -> list[int]:
    """Processes (other than this one) whose environment holds MARKER_VARIABLE=marker; [] without /proc."""
    needle = f"{MARKER_VARIABLE}={marker}".encode()
    return [pid for pid in procfs.pids() if pid != os.getpid() and needle in procfs.environ(pid)]


def _kill_marked(marker: str) -> int:
    """SIGKILL every process carrying the run's marker (repeated: they may fork meanwhile); how many."""
    killed = 0
    for _ in range(5):
        pids = _marked_pids(marker)
        if not pids:
            break
        killed += sum(signal_pid(pid, signal.SIGKILL) for pid in pids)
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
        raise MeasurementError(
            f"cannot record the running benchmark in {pid_file}: {exc.strerror or exc}; "
            "is the build directory writable?"
        ) from None


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
    if procfs.available():
        killed += _kill_marked(marker)
    else:
        killed = int(kill_group(pgid))
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

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
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


class _OutputFeed:
    """The run's output as it grows, read from its capture file (pread: the file offset is the run's) at most
    every _FEED_EVERY seconds and given to `hook` as text (UTF-8, a character split between two reads whole in
    the second). Of more than KEEP_BYTES new since the last read, only the end is given, from a line start."""

    def __init__(self, fd: int, hook: Callable[[str], None]) -> None:
        self.fd = fd
        self.hook = hook
        self.offset = 0  # bytes of the output read so far
        self.last = time.monotonic()  # when it was last read (the run's start: the first read a while later)
        self.decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def poll(self) -> None:
        """Give the hook the output's new text, if any and if the last read is old enough."""
        now = time.monotonic()
        if now - self.last < _FEED_EVERY:
            return
        self.last = now
        size = os.fstat(self.fd).st_size
        if size <= self.offset:
            return
        start = max(self.offset, size - KEEP_BYTES)
        data = os.pread(self.fd, size - start, start)
        if start > self.offset:  # a burst: its end, from its first whole line
            self.decoder.reset()
            data = data[data.find(b"\n") + 1 :]
        self.offset = size
        text = self.decoder.decode(data)
        if text:
            self.hook(text)


def _wait_for(
    proc: subprocess.Popen[bytes],
    fd: int,
    timeout: float,
    tree: Descendants | None = None,
    stop: Stop | None = None,
    feed: _OutputFeed | None = None,
) -> str:
    """Wait for the end of the run: "" when it ended, "timeout", "output" (printed too much) or "cancelled"
    (`stop` said so: checked at every poll, about once a second). `tree`: the run's descendants, recorded at
    each check (often at first, when a daemon's parent still lives). `feed`: given the new output at each
    check (it reads at most about once a second)."""
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
            if stop is not None and stop.reason():
                return "cancelled"
            if tree is not None:
                tree.poll()
            if feed is not None:
                feed.poll()
            interval = min(_POLL, 2 * interval)
            if os.fstat(fd).st_size > MAX_OUTPUT_BYTES:
                return "output"
    finally:
        waiter.close()


def run_process(
    argv: list[str],
    cwd: Path | None,
    timeout: float,
    pid_file: Path | None = None,
    env: dict[str, str] | None = None,
    stop: Stop | None = None,
    on_output: Callable[[str], None] | None = None,
) -> ProcessResult:
    """Run argv (in cwd; None: this process's) in its own session (and its own cgroup where this process
    may make one), output (stdout and stderr) to an anonymous temporary file. When it ends, times out or
    the caller is interrupted, its cgroup (else its recorded process tree and what holds its output), its
    process group, the rest of its session (waited for: nothing a build started goes on writing into its
    tree) and every process carrying its marker are killed: nothing it started outlives it, and nothing it
    left holding the output makes the tune wait. On Linux it is killed when the calling thread's process
    dies. While it runs, pid_file (if given) records its process group and marker for kill_leftovers.
    `stop`: the tune's stop token; a run it stops ends with stopped="cancelled" and its reason.
    `on_output`: given the new text of the output while it runs, at most about once a second (nothing after
    its end: the result holds the output); what it raises ends the run as an interrupt does."""
    marker = f"{os.getpid()}-{secrets.token_hex(8)}"
    env = {**os.environ, **(env or {}), MARKER_VARIABLE: marker}  # env: e.g. the GPU of the run
    cgroup = Cgroup.create(_CGROUP_PREFIX + marker)
    with tempfile.TemporaryFile(prefix="compileiq-output-") as capture:
        fd = capture.fileno()
        start = time.perf_counter()
        try:
            proc = subprocess.Popen(
                argv,
                cwd=cwd,
                stdout=fd,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
                preexec_fn=_preexec(cgroup),
            )
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
            if stop is not None and stop.reason():
                stopped = "cancelled"
            else:
                feed = _OutputFeed(fd, on_output) if on_output is not None else None
                stopped = _wait_for(proc, fd, timeout, tree, stop, feed)
            seconds = time.perf_counter() - start
        finally:  # also when the tune itself is interrupted: nothing of the run is left behind
            if tree is not None:
                tree.kill()  # first: killing the group would cut the parent links it follows
            if cgroup is not None:
                cgroup.kill()
            kill_group(proc.pid)
            _kill_marked(marker)
            if stopped:
                try:
                    proc.wait(timeout=_KILL_GRACE)
                except subprocess.TimeoutExpired:  # unkillable (e.g. stuck in the kernel): not waited for
                    pass
            # the leader reaped, the session's id is free once its other process groups are gone
            ended = proc.returncode is not None and kill_session_and_wait(proc.pid)
            if pid_file is not None:
                pid_file.unlink(missing_ok=True)
        output, omitted = _kept_output(fd)
    why = (stop.reason() or "cancelled") if stopped == "cancelled" and stop is not None else ""
    return ProcessResult(None if stopped else proc.returncode, output, seconds, omitted, stopped, ended, why)
