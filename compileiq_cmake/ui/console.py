"""What the console shows: the sink of the event stream (each event's line, as far as the verbosity lets it
through)."""

from __future__ import annotations

import re
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


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


class Visible:
    """A text stream that writes control characters (an escape sequence of a file's name or id, a NUL, a
    carriage return) as \\xNN: what the tool prints comes partly from files others wrote, and none of it
    may move the cursor, recolour the terminal or forge a line. Newlines and tabs pass."""

    def __init__(self, out) -> None:
        self._out = out

    def write(self, text: str) -> int:
        return self._out.write(_CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text))

    def __getattr__(self, name: str):
        return getattr(self._out, name)
