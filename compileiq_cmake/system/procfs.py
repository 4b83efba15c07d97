"""The one reader of /proc: the live process ids, a process's parent, session, start time and state
(/proc/<pid>/stat), and its environment (/proc/<pid>/environ). Every function answers "nothing" (an empty
list, None) where /proc is missing or the process is gone or another user's."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ProcStat:
    """What /proc/<pid>/stat says about a process."""

    ppid: int
    session: int
    start: int  # start time in clock ticks since boot: with the pid, names one process (pids are reused)
    state: str  # "Z": a zombie (ended, not yet reaped)

    @property
    def alive(self) -> bool:
        return self.state != "Z"


def available() -> bool:
    """Whether this system has /proc (the readers below find nothing without it)."""
    return os.path.isdir("/proc")


def pids() -> list[int]:
    """The ids of the live processes; [] without /proc."""
    try:
        return [int(n) for n in os.listdir("/proc") if n.isdigit()]
    except OSError:
        return []


def stat(pid: int) -> ProcStat | None:
    """The process's parent, session, start time and state; None when it is gone (or without /proc)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text.rsplit(")", 1)[-1].split()  # after the command name, which may hold spaces and ')'
    try:
        return ProcStat(ppid=int(fields[1]), session=int(fields[3]), start=int(fields[19]), state=fields[0])
    except (IndexError, ValueError):
        return None


def environ(pid: int) -> list[bytes]:
    """The process's environment as NAME=value entries; [] when it cannot be read (gone, another user's)."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            return fh.read().split(b"\0")
    except OSError:
        return []
