"""Progress lines of a long build: the build tool's own progress read from its output as it grows (Ninja's
`[12/126] Building CUDA object ...`: steps done of the build's steps; Make's `[ 45%] Building CXX object ...`:
percent), said as one line (`build of app in worker-0: 45 of 126 steps, 30 s, about 54 s left`) once the build
has run FIRST_AFTER seconds, then at most every EVERY seconds. A shorter build says nothing. The time left
is the elapsed time scaled by the fraction still to do, said from 5 % done on."""

from __future__ import annotations

import re
import time
from collections.abc import Callable

MIN_FRACTION = 0.05  # below this fraction done, no time left is said (too rough)
_NINJA = re.compile(r"^(?:\x1b\[[0-9;]*m)*\[\s*(\d+)/(\d+)\]")  # [done/total] (NINJA_STATUS's default)
_MAKE = re.compile(r"^(?:\x1b\[[0-9;]*m)*\[\s*(\d+)%\]")  # [ 45%] (a colored line: after its escapes)
_LINE_START = 256  # characters of an unfinished line kept (its progress is at its start)
_NEWLINES = re.compile(r"\r\n|\r|\n")


class BuildProgress:
    """Fed a build's output text (any chunks, split anywhere), says its progress through `say`: first when the
    build has run `first_after` seconds (default FIRST_AFTER), then at most every `every` seconds (default
    EVERY), each time new output comes. `label` opens each line (e.g. "build of app in worker-0"); `clock`:
    seconds (time.monotonic; a test's fake), read once here: the build's start."""

    FIRST_AFTER = 20.0  # seconds: a build shorter than this says nothing
    EVERY = 15.0  # seconds at least between two lines

    def __init__(
        self,
        say: Callable[[str], object],
        label: str,
        clock: Callable[[], float] = time.monotonic,
        first_after: float | None = None,
        every: float | None = None,
    ) -> None:
        self.say = say
        self.label = label
        self.clock = clock
        self.first_after = self.FIRST_AFTER if first_after is None else first_after
        self.every = self.EVERY if every is None else every
        self.start = clock()
        self.done: tuple[int, int] | None = None  # the last progress read: (steps done, steps) or (percent, 100)
        self.steps = True  # whether `done` counts steps (Ninja) rather than percent (Make)
        self._partial = ""  # the start of the output's unfinished last line
        self._said: float | None = None  # the clock at the last line said

    def feed(self, text: str) -> None:
        """Read the progress in the output's new text, and say it when it is time to."""
        self._read(text)
        now = self.clock()
        if self.done is None or now - self.start < self.first_after:
            return
        if self._said is not None and now - self._said < self.every:
            return
        self._said = now
        self.say(self.line(now - self.start))

    def _read(self, text: str) -> None:
        """The progress of each whole line of the output so far (the last one read wins)."""
        lines = _NEWLINES.split(self._partial + text)
        self._partial = lines.pop()[:_LINE_START]
        for line in lines:
            self._read_line(line)

    def _read_line(self, line: str) -> None:
        ninja = _NINJA.match(line)
        if ninja is not None and int(ninja.group(2)) > 0:
            self.done, self.steps = (int(ninja.group(1)), int(ninja.group(2))), True
            return
        make = _MAKE.match(line)
        if make is not None:
            self.done, self.steps = (min(int(make.group(1)), 100), 100), False

    def line(self, elapsed: float) -> str:
        """The progress line after `elapsed` seconds (the last progress read; there must be one)."""
        assert self.done is not None
        done, total = self.done
        where = f"{done} of {total} steps" if self.steps else f"{done}% done"
        text = f"{self.label}: {where}, {_duration(elapsed)}"
        fraction = done / total
        if MIN_FRACTION <= fraction < 1:
            text += f", about {_duration(elapsed * (1 - fraction) / fraction)} left"
        return text


def _duration(seconds: float) -> str:
    """`37 s`, or from two minutes on `12 min 5 s`."""
    whole = round(seconds)
    return f"{whole} s" if whole < 120 else f"{whole // 60} min {whole % 60} s"
