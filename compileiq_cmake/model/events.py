"""The event stream of a tune (and of check, report, space): every line a user may see is an Event, emitted
once; the console and the tests subscribe to it, and so does the JSON summary (a tune's Recorder: its notes,
warnings and stage results, results/summary.event_records), from which the HTML report is drawn. Nothing here
prints.

Kinds: `progress` (one line per finished trial), `info` (what the tune does and found), `note` (something the
user should know: a capability that did not run and why), `warning` (something that may make the result
worse), `stage` (a stage's result: baseline, search, finalists, publish), `detail` (shown with --verbose only).
Which kinds a console shows is its verbosity (ui/console.py); the stream itself filters nothing.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

KINDS = ("progress", "info", "note", "warning", "stage", "detail")
_PREFIX = re.compile(r"^compileiq:\s*")
_KIND_PREFIX = re.compile(r"^(note|warning):\s*")
_PROGRESS = re.compile(r"^\[\s*\d+/\d+\]")  # a trial's line: "[  3/30] #2 ..."


@dataclass(frozen=True)
class SearchProgress:
    """A tune's trial finished: the best speed-up its search has measured so far (a suite's scheduler ranks
    the target by it)."""

    best: float


@dataclass(frozen=True)
class PriorPrediction:
    """The learned prior's prediction of a tune's first trials (the scheduler's rank before they speak)."""

    speedup: float


Payload = SearchProgress | PriorPrediction  # what a subscriber acts on, typed (`data` is what the line says)


@dataclass(frozen=True)
class Event:
    kind: str  # one of KINDS
    text: str  # one line, without the "compileiq: " prefix and without the kind's "note: " / "warning: "
    stage: str = ""  # setup, baseline, search, finalists, publish, check, ... ("" when not in a stage)
    data: Mapping[str, Any] = field(default_factory=dict)  # what the line says, typed, for the summary and tests
    at: float = field(default_factory=time.time)
    bare: bool = False  # printed as it is, without "compileiq: " (the final table's rows, blank lines)
    payload: Payload | None = None  # for subscribers that act on the event (never parsed from its text)

    def line(self) -> str:
        """The line as the console prints it: progress and bare lines as they are, the others after
        "compileiq: " (and "note: " / "warning: ")."""
        if self.bare or self.kind == "progress":
            return self.text
        label = f"{self.kind}: " if self.kind in ("note", "warning") else ""
        return f"compileiq: {label}{self.text}"


Subscriber = Callable[[Event], object]


PHASES = ("setup", "baseline", "search", "validation", "ablation", "confirmation", "publish")


class EventStream:
    """Fan-out of events to subscribers, safe to call from worker threads. Callable with a line (the former
    `log(str)` interface): a "compileiq: note: ..." / "compileiq: warning: ..." line becomes that kind."""

    def __init__(self, *subscribers: Subscriber) -> None:
        self._subscribers: list[Subscriber] = list(subscribers)
        self._lock = threading.Lock()
        self._warned: set[str] = set()  # the texts warning_once said
        self.stage = ""  # the current stage, stamped on events that do not name one

    def subscribe(self, subscriber: Subscriber) -> Callable[[], None]:
        """Adds a subscriber; returns the function that removes it."""
        with self._lock:
            self._subscribers.append(subscriber)
        return lambda: self._remove(subscriber)

    def _remove(self, subscriber: Subscriber) -> None:
        with self._lock:
            if subscriber in self._subscribers:
                self._subscribers.remove(subscriber)

    def emit(self, event: Event) -> Event:
        with self._lock:
            subscribers = list(self._subscribers)
            for subscriber in subscribers:  # under the lock: lines of two threads never interleave
                subscriber(event)
        return event

    def _make(
        self,
        kind: str,
        text: str,
        stage: str,
        data: Mapping[str, Any],
        bare: bool = False,
        payload: Payload | None = None,
    ) -> Event:
        return self.emit(Event(kind, text, stage or self.stage, dict(data), bare=bare, payload=payload))

    def info(self, text: str, *, stage: str = "", payload: Payload | None = None, **data: Any) -> Event:
        return self._make("info", text, stage, data, payload=payload)

    def note(self, text: str, *, stage: str = "", **data: Any) -> Event:
        return self._make("note", text, stage, data)

    def warning(self, text: str, *, stage: str = "", **data: Any) -> Event:
        return self._make("warning", text, stage, data)

    def warning_once(self, text: str, *, stage: str = "", **data: Any) -> Event | None:
        """A warning said the first time its text comes (a benchmark's warning repeats at every run); None after."""
        with self._lock:
            if text in self._warned:
                return None
            self._warned.add(text)
        return self.warning(text, stage=stage, **data)

    def progress(self, text: str, *, stage: str = "", payload: Payload | None = None, **data: Any) -> Event:
        return self._make("progress", text, stage, data, payload=payload)

    def detail(self, text: str, *, stage: str = "", **data: Any) -> Event:
        return self._make("detail", text, stage, data)

    def phase(self, name: str) -> Event:
        """The start of one phase of a tune's time (setup, baseline, search, validation, ablation, confirmation,
        publish: PHASES), as a detail event whose data names it: a suite reads from them where each target's
        seconds went."""
        return self._make("detail", f"phase: {name}", "", {"phase": name})

    def stage_result(self, stage: str, text: str, **data: Any) -> Event:
        return self._make("stage", text, stage, data)

    def __call__(self, line: str) -> None:
        """The line interface: kind from its prefix; a trial's "[ n/N] ..." line is progress, and a line without
        "compileiq: " (a table row, a blank line) is info printed as it is."""
        if not _PREFIX.match(line):
            self._make("progress" if _PROGRESS.match(line) else "info", line, "", {}, bare=True)
            return
        text = _PREFIX.sub("", line, count=1)
        m = _KIND_PREFIX.match(text)
        kind = m.group(1) if m else "info"
        self._make(kind, text[m.end() :] if m else text, "", {})


Lines = Callable[[str], None]  # the former interface: a function called with each line
Log = EventStream | Lines  # what a stage is handed to say things: the tune's stream, or a function of a line


def as_stream(log: EventStream | Lines | None) -> EventStream:
    """`log` as an event stream: a stream as it is; a function of a line (print, a test's list.append, the
    line interface of code not converted yet) subscribed to the lines of a new stream; None: a stream that
    nobody hears."""
    if isinstance(log, EventStream):
        return log
    if log is None:
        return EventStream()
    return EventStream(lambda event: log(event.line()))


class Recorder:
    """A subscriber that keeps every event (tests, the summary)."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def __call__(self, event: Event) -> None:
        self.events.append(event)

    def of(self, *kinds: str) -> list[Event]:
        return [e for e in self.events if not kinds or e.kind in kinds]

    def texts(self, *kinds: str) -> list[str]:
        return [e.text for e in self.of(*kinds)]

    def lines(self, *kinds: str) -> list[str]:
        """The lines as a console prints them."""
        return [e.line() for e in self.of(*kinds)]

    def __iter__(self) -> Iterator[Event]:
        return iter(self.events)


def recording() -> tuple[EventStream, Recorder]:
    """A stream with a recorder subscribed (tests)."""
    recorder = Recorder()
    return EventStream(recorder), recorder
