"""The event stream of a tune (and of check, report, space): every line a user may see is an Event, emitted
once; the console, the JSON summary, the HTML report and the tests subscribe to it. Nothing here prints.

Kinds: `progress` (one line per finished trial), `info` (what the tune does and found), `note` (something the
user should know: a capability that did not run and why), `warning` (something that may make the result
worse), `stage` (a stage's result: baseline, search, finalists, publish), `detail` (shown with --verbose only).
"""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping

KINDS = ("progress", "info", "note", "warning", "stage", "detail")
_PREFIX = re.compile(r"^compileiq:\s*")
_KIND_PREFIX = re.compile(r"^(note|warning):\s*")


@dataclass(frozen=True)
class Event:
    kind: str  # one of KINDS
    text: str  # one line, without the "compileiq: " prefix and without the kind's "note: " / "warning: "
    stage: str = ""  # setup, baseline, search, finalists, publish, check, ... ("" when not in a stage)
    data: Mapping[str, Any] = field(default_factory=dict)  # what the line says, typed, for the summary and tests
    at: float = field(default_factory=time.time)

    def line(self) -> str:
        """The line as the console prints it."""
        label = f"{self.kind}: " if self.kind in ("note", "warning") else ""
        return f"compileiq: {label}{self.text}"


Subscriber = Callable[[Event], None]


class EventStream:
    """Fan-out of events to subscribers, safe to call from worker threads. Callable with a line (the former
    `log(str)` interface): a "compileiq: note: ..." / "compileiq: warning: ..." line becomes that kind."""

    def __init__(self, *subscribers: Subscriber) -> None:
        self._subscribers: list[Subscriber] = list(subscribers)
        self._lock = threading.Lock()
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

    def _make(self, kind: str, text: str, stage: str, data: Mapping[str, Any]) -> Event:
        return self.emit(Event(kind, text, stage or self.stage, dict(data)))

    def info(self, text: str, *, stage: str = "", **data: Any) -> Event:
        return self._make("info", text, stage, data)

    def note(self, text: str, *, stage: str = "", **data: Any) -> Event:
        return self._make("note", text, stage, data)

    def warning(self, text: str, *, stage: str = "", **data: Any) -> Event:
        return self._make("warning", text, stage, data)

    def progress(self, text: str, *, stage: str = "", **data: Any) -> Event:
        return self._make("progress", text, stage, data)

    def detail(self, text: str, *, stage: str = "", **data: Any) -> Event:
        return self._make("detail", text, stage, data)

    def stage_result(self, stage: str, text: str, **data: Any) -> Event:
        return self._make("stage", text, stage, data)

    def __call__(self, line: str) -> None:
        """The line interface: kind from its prefix."""
        text = _PREFIX.sub("", line, count=1)
        m = _KIND_PREFIX.match(text)
        kind = m.group(1) if m else "info"
        self._make(kind, text[m.end():] if m else text, "", {})


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

    def __iter__(self) -> Iterator[Event]:
        return iter(self.events)


def recording() -> tuple[EventStream, Recorder]:
    """A stream with a recorder subscribed (tests)."""
    recorder = Recorder()
    return EventStream(recorder), recorder
