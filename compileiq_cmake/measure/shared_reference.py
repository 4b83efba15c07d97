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
    serial: int  # the GPU's run count when it ran: another run started since if the count moved
    ended: float
    shares: int = 1


class ReferenceRuns:
    """Per GPU (its device string): how many runs have started there (outside a suite, where no lease counts
    them) and the last baseline run a paired measurement kept. Driver-side state: a copy sent to another process
    (a Ray worker) starts empty."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._started: dict[str, int] = {}
        self._last: dict[str, _Kept] = {}

    def __reduce__(self):  # (holds a lock: a pickled runner gets a fresh, empty one)
        return (ReferenceRuns, ())

    def note_start(self, device: str) -> None:
        """A run takes the GPU (Runner.holding, outside a suite)."""
        with self._lock:
            self._started[device] = self._started.get(device, 0) + 1

    def started(self, device: str) -> int:
        with self._lock:
            return self._started.get(device, 0)

    def keep(
        self, device: str, tree: Path, workload: tuple[str, ...], value: float, seconds: float, serial: int
    ) -> None:
        """A baseline run just paired with a trial's run on `device` (`serial`: the GPU's run count now)."""
        with self._lock:
            self._last[device] = _Kept(tree, workload, value, seconds, serial, self._clock())

    def last_workload(self, device: str) -> tuple[str, ...] | None:
        """The workload of the last baseline run kept on `device` (a trial may start with it to share it)."""
        with self._lock:
            kept = self._last.get(device)
            return kept.workload if kept is not None else None

    def take(self, device: str, tree: Path, workload: tuple[str, ...], serial: int) -> float | None:
        """The last baseline run on `device` for a trial's first pair, when it may be shared (see the module):
        the same baseline tree and workload, no run since (`serial`: the GPU's run count now), not idle longer
        than twice the run took (SHARE_GAP at least), paired once so far. None: the trial runs the baseline itself."""
        with self._lock:
            kept = self._last.get(device)
            if (
                kept is None
                or kept.shares != 1
                or kept.tree != tree
                or kept.workload != workload
                or kept.serial != serial
                or self._clock() - kept.ended > max(SHARE_GAP, 2 * kept.seconds)
            ):
                return None
            kept.shares += 1
            return kept.value
