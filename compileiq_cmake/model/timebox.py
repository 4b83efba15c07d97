"""The clock of a tune's time box (--time-limit) and its stop token. TimeBox: seconds from the tune's start,
less the seconds it was not charged (a suite's target waiting for a slot another target holds), plus what
an earlier, killed run of the same tune already spent (a resume); an optional outer deadline (the suite's
own end) bounds it too. Stop: what a build or a benchmark run asks while it waits (system.processes): set
(Ctrl-C, the suite's interrupt, trials the plan cancels) or past the box's end, the run is killed. The
owner of the box's policy is tune.budget.Budget; this module is only the clock."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field


def no_wait() -> float:
    """Waits not charged to a box outside a suite: none."""
    return 0.0


@dataclass(frozen=True)
class TimeBox:
    limit: float | None  # seconds for the whole tune; None: no limit
    clock: Callable[[], float] = field(default=time.perf_counter, compare=False, repr=False)
    started: float = field(default=math.nan)
    spent_before: float = 0.0  # seconds of the same box an earlier, interrupted run spent (a resume)
    waited: Callable[[], float] = field(default=no_wait, compare=False, repr=False)  # not charged (slot waits)
    deadline: float = math.inf  # an outer end on `clock`'s scale (a suite's), whatever the limit says

    def __post_init__(self) -> None:
        if math.isnan(self.started):
            object.__setattr__(self, "started", self.clock())

    def elapsed(self) -> float:
        """Seconds charged to the box: the wall time since the start, less the waits, plus the earlier run's."""
        return self.clock() - self.started - self.waited() + self.spent_before

    def remaining(self) -> float:
        """Seconds left (inf without a limit or deadline; never negative)."""
        own = math.inf if self.limit is None else self.limit - self.elapsed()
        return max(0.0, min(own, self.deadline - self.clock()))

    def fits(self, seconds: float, reserve: float = 0.0) -> bool:
        """Whether work of `seconds` still fits, keeping `reserve` seconds for what must come after it."""
        return not self.bounded or seconds + reserve <= self.remaining()

    @property
    def bounded(self) -> bool:
        return self.limit is not None or math.isfinite(self.deadline)


class Interrupted(Exception):
    """The tune was interrupted (Ctrl-C, or the suite it belongs to was): its finished work is stored and
    nothing more is written. Not a CompileIQError: no stage may take it for a failed trial."""


@dataclass
class Stop:
    """The stop token of a tune: `cancel(reason)` ends every build and run under way within about a second;
    `box` (optional): runs and builds are also ended when it has nothing left. `parent`: a suite's token (its
    Ctrl-C stops every target). `reason()` is "" while work may go on."""

    box: TimeBox | None = None
    parent: Stop | None = None
    _event: threading.Event = field(default_factory=threading.Event, repr=False)
    _why: str = ""

    def cancel(self, reason: str) -> None:
        if not self._event.is_set():
            self._why = reason
            self._event.set()

    @property
    def interrupted(self) -> bool:
        """Cancelled by an interrupt (its own or the parent's), not by the box."""
        return (
            self._event.is_set()
            and self._why.startswith("interrupted")
            or (self.parent is not None and self.parent.interrupted)
        )

    def reason(self) -> str:
        if self._event.is_set():
            return self._why
        if self.parent is not None and self.parent.reason():
            return self.parent.reason()
        if self.box is not None and self.box.bounded and self.box.remaining() <= 0:
            return "stopped at the end of the time box"
        return ""

    def __getstate__(self) -> dict[str, object]:
        """Sent to another process (a Ray task): a token nobody there sets (the tune drops what comes back)."""
        return {}

    def __setstate__(self, state: dict[str, object]) -> None:
        self.box, self.parent, self._event, self._why = None, None, threading.Event(), ""

    def wait(self, seconds: float) -> bool:
        """Sleep up to `seconds`; True when stopped meanwhile (early)."""
        end = time.monotonic() + seconds
        while True:
            if self.reason():
                return True
            left = end - time.monotonic()
            if left <= 0:
                return False
            self._event.wait(min(left, 0.25))
