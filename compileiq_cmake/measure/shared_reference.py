"""The project's own build's runs on each GPU, kept so that a trial measured next may pair its first run with the
last of them instead of running the baseline once more (issue 54: baseline runs shared between trials).

On a noisy machine every run of a search trial is paired with a run of the project's own build next to it on
the same GPU (tune.trial.reference_trees), which doubles the runs. Two trials measured one after the other on a
GPU may share the baseline run that lies between them, on three conditions that keep the pair as close as one of
the trial's own: nothing else ran on that GPU since (no other trial's run, warm-up, VERIFY or another tune's
run: every run is counted where it takes its GPU), the GPU idled no longer than two of that baseline run's
length (`SHARE_GAP` at least: the driver's work and the next build between two trials; the drift that pairing
cancels, of clocks, heat and background load, moves over seconds), and the run was paired once only, with
another trial. Within one trial every pair has a
baseline run of its own, so a trial's ratios stay independent of each other; only neighbouring trials' ratios
share one run's noise, which cancels when they are compared with each other."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

SHARE_GAP = 1.0  # seconds the GPU may idle between the shared baseline run and the trial's run, at least


@dataclass
class _Kept:
    tree: Path
    workload: tuple[str, ...]
    value: float
    seconds: float
    serial: int  # the GPU's run count when it took the GPU: the next run there takes serial + 1
    ended: float
    shares: int = 1


class ReferenceRuns:
    """Per GPU (its device string): how many runs have begun there (outside a suite, where no lease counts
    them), the count and time at which this tune's last run there took the GPU, and the last baseline run a
    paired measurement kept. Driver-side state: a copy sent to another process (a Ray worker) starts empty."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._started: dict[str, int] = {}
        self._mine: dict[str, tuple[int, float]] = {}  # device -> (the GPU's run count, time) at my last run's start
        self._last: dict[str, _Kept] = {}

    def __reduce__(self):  # (holds a lock: a pickled runner gets a fresh, empty one)
        return (ReferenceRuns, ())

    def count_start(self, device: str) -> int:
        """A run takes the GPU outside a suite (Runner.holding): counted here; the count now."""
        with self._lock:
            self._started[device] = self._started.get(device, 0) + 1
            return self._started[device]

    def began(self, device: str, count: int) -> None:
        """This tune's run has just taken the GPU, the `count`-th run begun there (Runner.holding, inside the hold:
        in a suite no other tune's run can begin in between)."""
        with self._lock:
            self._mine[device] = (count, self._clock())

    def keep(self, device: str, tree: Path, workload: tuple[str, ...], value: float, seconds: float) -> None:
        """The baseline run just made on `device` (this tune's last run there), paired with a trial's run."""
        with self._lock:
            count, _ = self._mine.get(device, (-1, 0.0))
            self._last[device] = _Kept(tree, workload, value, seconds, count, self._clock())

    def last_workload(self, device: str) -> tuple[str, ...] | None:
        """The workload of the last baseline run kept on `device` (a trial may start with it to share it)."""
        with self._lock:
            kept = self._last.get(device)
            return kept.workload if kept is not None else None

    def take(self, device: str, tree: Path, workload: tuple[str, ...]) -> float | None:
        """For a trial's first run on `device`, just made (this tune's last run there): the baseline run before
        it, when it may be shared (see the module): the same baseline tree and workload, the run right before
        this one on the GPU (its count one less: no other run, of this tune or another, began in between), the
        GPU idle between them no longer than twice the baseline run took (SHARE_GAP at least), paired once so
        far. None: the trial's pair needs a baseline run of its own."""
        with self._lock:
            kept = self._last.get(device)
            count, began = self._mine.get(device, (-1, 0.0))
            if (
                kept is None
                or kept.shares != 1
                or kept.tree != tree
                or kept.workload != workload
                or count != kept.serial + 1
                or began - kept.ended > max(SHARE_GAP, 2 * kept.seconds)
            ):
                return None
            kept.shares += 1
            return kept.value
