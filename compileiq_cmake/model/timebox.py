"""The time box of a tune (--time-limit): one clock from the tune's start that every stage asks before it
starts work (a build, a benchmark run, a validation round), so that the whole tune ends inside the box with
an overshoot of at most the one build or run that was already under way."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable


@dataclass(frozen=True)
class TimeBox:
    limit: float | None  # seconds for the whole tune; None: no limit
    clock: Callable[[], float] = field(default=time.perf_counter, compare=False, repr=False)
    started: float = field(default=math.nan)

    def __post_init__(self) -> None:
        if math.isnan(self.started):
            object.__setattr__(self, "started", self.clock())

    def elapsed(self) -> float:
        return self.clock() - self.started

    def remaining(self) -> float:
        """Seconds left (inf without a limit; never negative)."""
        return math.inf if self.limit is None else max(0.0, self.limit - self.elapsed())

    def fits(self, seconds: float, reserve: float = 0.0) -> bool:
        """Whether work of `seconds` still fits, keeping `reserve` seconds for what must come after it."""
        return self.limit is None or seconds + reserve <= self.remaining()

    @property
    def bounded(self) -> bool:
        return self.limit is not None
