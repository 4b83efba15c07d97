"""What a started command left running, found and ended: a build's session (every process group in it,
killed and waited for), and every descendant of a benchmark, also one that left the group and the session (setsid)
and cleared its
environment (env -i). Where this process may make a cgroup (v2) of its own, the run goes into one and the
cgroup is killed; else the tree of its descendants is recorded while it runs (pid and start time, so that a
reused pid is never killed) and the processes still holding its captured output are found at the end."""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import procfs

_TICKS_UNKNOWN = -1


def signal_pid(pid: int, sig: int) -> bool:
    """Send sig to the process; whether it was sent (False: gone, or another user's)."""
    try:
        os.kill(pid, sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def kill_group(pgid: int) -> bool:
    """SIGKILL the process group; whether it was sent (False: no such group, or another user's)."""
    try:
        os.killpg(pgid, signal.SIGKILL)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def _session_members(sid: int) -> list[int]:
    """The live processes of session sid (found through /proc)."""
    return [pid for pid in procfs.pids() if (st := procfs.stat(pid)) is not None and st.session == sid and st.alive]


def kill_session_and_wait(sid: int, within: float = 10.0) -> bool:
    """SIGKILL the session sid (started with start_new_session: its leader's pid) and wait, at most `within`
    seconds, until none of it is left; its process groups included (ninja puts each command into a group
    of its own). The leader must have been reaped by the caller. Without /proc, its leader's process group.
    True when it is gone. A session's id is not reused while any of its processes lives."""
    deadline = time.monotonic() + within
    while True:
        kill_group(sid)
        members = _session_members(sid) if procfs.available() else []
        for pid in members:
            signal_pid(pid, signal.SIGKILL)
        if not members and not procfs.available():
            try:
                os.killpg(sid, 0)
            except (ProcessLookupError, PermissionError):
                return True
        elif not members:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)


def _cgroup2_dir() -> Path | None:
    """This process's own cgroup v2 directory, or None (no unified hierarchy mounted)."""
    try:
        own = next((ln[3:] for ln in Path("/proc/self/cgroup").read_text().splitlines() if ln.startswith("0::")), None)
        mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return None
    if own is None or ".." in own.split("/"):  # outside this cgroup namespace's view
        return None
    for line in mounts:
        left, _, right = line.partition(" - ")
        if right.split(" ", 1)[0] != "cgroup2":
            continue
        parts = left.split()
        root, point = parts[3], parts[4]
        if own == root or own.startswith(root.rstrip("/") + "/"):
            return Path(point) / own[len(root) :].lstrip("/")
    return None


@dataclass
class Cgroup:
    """A cgroup v2 of its own for one run: the run joins it before it execs (join), and every process in it
    is killed at the end (kill), wherever it moved in the process tree."""

    path: Path

    @classmethod
    def create(cls, name: str) -> Cgroup | None:
        """A new child cgroup of this process's own; None where that is not allowed (no cgroup v2, not
        delegated to this user, a read-only cgroup file system) or not possible."""
        base = _cgroup2_dir()
        if base is None:
            return None
        path = base / name
        try:
            path.mkdir()
        except OSError:
            return None
        return cls(path)

    @staticmethod
    def remove_stale(prefix: str) -> None:
        """Remove the cgroups <prefix><pid>-... next to this process's own whose <pid> (the process that made
        them, e.g. a killed tune) no longer runs and which hold no process (rmdir refuses a populated one)."""
        base = _cgroup2_dir()
        try:
            names = [n for n in os.listdir(base) if n.startswith(prefix)] if base is not None else []
        except OSError:
            return
        if base is None:
            return
        for name in names:
            owner = name[len(prefix) :].split("-", 1)[0]
            if owner.isdigit() and int(owner) != os.getpid() and procfs.stat(int(owner)) is None:
                try:
                    (base / name).rmdir()
                except OSError:
                    pass

    def join(self) -> None:
        """Move the calling process into the cgroup (for a child between fork and exec); errors ignored (the
        process tree is then the fallback)."""
        try:
            fd = os.open(self.path / "cgroup.procs", os.O_WRONLY)
            try:
                os.write(fd, b"0")
            finally:
                os.close(fd)
        except OSError:
            pass

    def pids(self) -> list[int]:
        try:
            return [int(p) for p in (self.path / "cgroup.procs").read_text().split()]
        except (OSError, ValueError):
            return []

    def holds(self, pid: int) -> bool:
        return pid in self.pids()

    def kill(self, within: float = 5.0) -> int:
        """SIGKILL everything in the cgroup, wait until it is empty and remove it; how many were signalled."""
        killed: set[int] = set()  # a process may take several passes to leave: counted once
        deadline = time.monotonic() + within
        while True:
            pids = self.pids()
            if not pids:
                break
            try:
                (self.path / "cgroup.kill").write_text("1")
            except OSError:
                pass
            killed.update(p for p in pids if signal_pid(p, signal.SIGKILL))
            if time.monotonic() > deadline:
                break
            time.sleep(0.01)
        for _ in range(1000):  # the kernel empties it once the killed processes are reaped (often at once)
            try:
                self.path.rmdir()
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.005)
        return len(killed)


def _children_files() -> bool:
    """Whether the kernel lists each task's children (/proc/<pid>/task/<tid>/children)."""
    return os.path.exists(f"/proc/{os.getpid()}/task/{os.getpid()}/children")


@dataclass
class Descendants:
    """The processes a run started, recorded while it runs (poll) by parent links from its pid, each with its
    start time; `kill` stops them (SIGSTOP, so that none forks meanwhile), records what they started
    meanwhile, then SIGKILLs them all, and also those still holding the run's output file (`output_fd`):
    a daemon that left the session and cleared its environment still has it as stdout/stderr, unless it
    closed it."""

    root: int
    output_fd: int | None = None
    known: dict[int, int] = field(default_factory=dict)  # pid -> start time (clock ticks)

    def __post_init__(self) -> None:
        stat = procfs.stat(self.root)
        self.known[self.root] = stat.start if stat else _TICKS_UNKNOWN

    def _same(self, pid: int, start: int) -> bool:
        stat = procfs.stat(pid)
        return stat is not None and stat.alive and (start == _TICKS_UNKNOWN or stat.start == start)

    def poll(self) -> None:
        """Add every live process whose parent is a recorded process (still the same one), transitively:
        through the recorded processes' /proc/<pid>/task/<tid>/children where the kernel has them (a few
        reads: a check does not slow the measured run), else through all of /proc."""
        if _children_files():
            self._poll_children()
            return
        table = {pid: stat for pid in procfs.pids() if pid != os.getpid() and (stat := procfs.stat(pid)) is not None}
        alive = {pid for pid, start in self.known.items() if pid in table and table[pid].start == start}
        added = True
        while added:
            added = False
            for pid, st in table.items():
                if st.ppid in alive and pid not in alive and st.alive and self.known.get(pid) != st.start:
                    self.known[pid] = st.start
                    alive.add(pid)
                    added = True

    def _poll_children(self) -> None:
        todo = [pid for pid, start in self.known.items() if self._same(pid, start)]
        while todo:
            pid = todo.pop()
            try:
                tasks = os.listdir(f"/proc/{pid}/task")
            except OSError:
                continue
            for tid in tasks:
                try:
                    children = Path(f"/proc/{pid}/task/{tid}/children").read_text().split()
                except OSError:
                    continue
                for child in map(int, children):
                    stat = procfs.stat(child)
                    if stat is not None and stat.ppid == pid and stat.alive and self.known.get(child) != stat.start:
                        self.known[child] = stat.start
                        todo.append(child)

    def _holding_output(self) -> list[int]:
        if self.output_fd is None:
            return []
        try:
            mine = os.fstat(self.output_fd)
        except OSError:
            return []
        found = []
        for pid in procfs.pids():
            stat = procfs.stat(pid)
            # this process, and its own children (another run's command between fork and exec holds every
            # descriptor of this process for a moment): never the run's daemons
            if pid == os.getpid() or stat is None or stat.ppid == os.getpid():
                continue
            try:
                fds = os.listdir(f"/proc/{pid}/fd")
            except OSError:
                continue
            for fd in fds:
                try:
                    st = os.stat(f"/proc/{pid}/fd/{fd}")
                except OSError:
                    continue
                if st.st_ino == mine.st_ino and st.st_dev == mine.st_dev:
                    found.append(pid)
                    break
        return found

    def kill(self) -> int:
        """SIGKILL what was recorded and is still the same process, what it started meanwhile, and what
        holds the output; how many were signalled."""
        stopped: set[int] = set()
        for _ in range(20):
            self.poll()
            new = [p for p, start in self.known.items() if p not in stopped and self._same(p, start)]
            if not new:
                break
            for pid in new:
                if signal_pid(pid, signal.SIGSTOP):
                    stopped.add(pid)
        holders = [p for p in self._holding_output() if p not in stopped]
        return sum(signal_pid(p, signal.SIGKILL) for p in (*stopped, *holders))
