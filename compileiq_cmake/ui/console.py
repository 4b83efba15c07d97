"""What the console shows: the sink of the event stream (each event's line, as far as the verbosity lets it
through)."""

from __future__ import annotations

import sys
from typing import TextIO

from ..model.events import Event
from ..model.wording import printable

VERBOSITIES = ("quiet", "normal", "verbose")
SHOWN = {  # the kinds each verbosity prints (errors are no events: the command line prints them on stderr)
    "quiet": frozenset({"warning", "stage"}),
    "normal": frozenset({"progress", "info", "note", "warning", "stage"}),
    "verbose": frozenset({"progress", "info", "note", "warning", "stage", "detail"}),
}


class Console:
    """The event sink of the command line: prints each event's line that the verbosity shows (quiet: warnings
    and stage results; normal: all but details; verbose: all) on `out` (default: stdout at the time of the
    event), flushed at once so that a tune's progress shows while it runs; every control character escaped
    (model/wording.printable), so that no text can forge a line or move the cursor."""

    def __init__(self, verbosity: str = "normal", out: TextIO | None = None) -> None:
        if verbosity not in SHOWN:
            raise ValueError(f"verbosity {verbosity!r} is not one of {', '.join(VERBOSITIES)}")
        self.verbosity = verbosity
        self._kinds = SHOWN[verbosity]
        self._out = out

    def shows(self, event: Event) -> bool:
        return event.kind in self._kinds

    def __call__(self, event: Event) -> None:
        if self.shows(event):
            # one line each: control characters from files others wrote (a TOML's fields in `check`) escaped
            print(printable(event.line()), file=self._out or sys.stdout, flush=True)
