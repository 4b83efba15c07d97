"""A suite's shares of time and slots: `allot` (a target's share of the suite's remaining seconds, the floors
checked first: `check_floors`) and the `Scheduler` that ranks the targets in flight for the shared build and
GPU slots (execute.shared)."""

from __future__ import annotations

import math
import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from ..execute.shared import BUILD, SharedSlots
from ..model.errors import UsageError
from ..model.events import Event, PriorPrediction, SearchProgress
from ..model.suite import Suite, SuiteTarget
from ..model.wording import plural


def allot(
    remaining: float,
    target: SuiteTarget,
    rest: list[SuiteTarget],
    floor: float,
    jobs: int = 1,
    held: float = 0.0,
    in_flight: int = 0,
) -> float:
    """This target's share of `remaining` seconds; `rest`: the targets after it (their floors are kept).
    With `jobs` targets in flight at a time, the wall time is shared by that many at once: the suite has
    `remaining` x (the targets that can run at once) target-seconds, less `held`, what the `in_flight`
    targets' shares still hold; this target gets its priority's part of the rest (at most all that is left),
    the floors of the rest kept per job. Equal priorities get equal shares whether they start first or
    beside others (the old rule, blind to the targets in flight, gave 200/270/100 s)."""
    floor_of = lambda t: t.min_seconds if t.min_seconds is not None else floor  # noqa: E731
    weights = target.priority + sum(t.priority for t in rest)
    capacity = remaining * min(jobs, 1 + len(rest) + in_flight) - held
    share = max(0.0, capacity) * target.priority / weights
    return max(floor_of(target), min(share, remaining, remaining - sum(floor_of(t) for t in rest) / jobs))


SETUP_MARGIN = 1.5  # a target starts with at least this many times the targets' median setup and baseline time
OPTIMISM = 0.02  # the gain a target that found none yet is still credited with when the slots are shared out


@dataclass
class _Progress:
    priority: float
    floor: float
    started: float
    best: float = 1.0  # the best speedup its search has shown so far
    predicted: float = 1.0  # the learned prior's prediction for its first trials (1.0: none, or no gain)
    setup: float | None = None  # seconds from its start to its first trial's line (setup and baseline)


class Scheduler:
    """Ranks the suite's targets in flight for the shared slots (execute.shared): a target within its floor
    (the first `floor` seconds after its start) first, the least served first; then by expected gain per
    second of device time: its priority x (the larger of the best speedup so far and the prior's prediction
    for its first trials, - 1, + OPTIMISM) / its seconds per run."""

    def __init__(self, build_slots: int = 1) -> None:
        self.slots = SharedSlots({BUILD: max(1, build_slots)}, self.rank)
        self._targets: dict[str, _Progress] = {}
        self._lock = threading.Lock()
        self.shared: Callable[[str], float] = lambda name: 0.0  # a target's seconds of the suite's shared setup

    def join(self, target: SuiteTarget, floor: float) -> None:
        with self._lock:
            self._targets[target.name] = _Progress(target.priority, floor, time.perf_counter())

    def heard(self, target: str, event: Event) -> None:
        """A target's event: its trials' progress moves its rank."""
        best = event.payload.best if isinstance(event.payload, SearchProgress) else None
        predicted = event.payload.speedup if isinstance(event.payload, PriorPrediction) else None
        with self._lock:
            p = self._targets.get(target)
            if p is None:
                return
            if isinstance(best, (int, float)) and math.isfinite(best):
                p.best = max(p.best, float(best))
                if p.setup is None:  # (not the suite's shared setup: the targets after it do not pay it)
                    p.setup = time.perf_counter() - p.started - self.shared(target)
            if isinstance(predicted, (int, float)) and math.isfinite(predicted):
                p.predicted = float(predicted)

    def setup_estimate(self) -> float | None:
        """The median seconds the targets started so far took to their first trial (None: none got there)."""
        with self._lock:
            seen = [p.setup for p in self._targets.values() if p.setup is not None]
        return statistics.median(seen) if seen else None

    def rank(self, owner: str) -> float:
        with self._lock:
            p = self._targets.get(owner)
        if p is None:
            return 0.0
        held, runs = self.slots.device_use(owner)
        if time.perf_counter() - p.started < p.floor:
            return 1e9 - held  # within its floor: first, the least served first
        per_run = held / runs if runs else 1e-3
        return p.priority * (max(p.best - 1.0, p.predicted - 1.0, 0.0) + OPTIMISM) / max(per_run, 1e-3)


def check_floors(suite: Suite, time_limit: float | None, jobs: int) -> None:
    """Bad input when the suite's time cannot give every target its floor."""
    floors = sum(suite.floor(t) for t in suite.ordered)
    if time_limit is not None and time_limit < floors / jobs:
        raise UsageError(
            f"--time-limit {time_limit:g} s is less than the floors of the suite's "
            f"{plural(len(suite.ordered), 'target')} ({floors:g} s in all"
            + (f", {floors / jobs:g} s with {jobs} at a time" if jobs > 1 else "")
            + "); raise it or lower min_seconds"
        )
